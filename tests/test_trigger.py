"""Trigger rules: the defaults (85%, nothing else: issue 47's churn), the seed's rules when set, configurable
thresholds, heavy-tool detection."""

import pytest

from offline_compress.history.messages import as_messages
from offline_compress.hook.trigger import TriggerConfig, decide, evaluate_compression, last_tool_name


class FixedCounter:
    """Stands in for the tokenizer only: these tests are about the rule, the counter has its own tests."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    def count(self, messages) -> int:
        return self.tokens


def tool_history(tool_name: str, *, with_name: bool = False):
    result = {"role": "tool", "tool_call_id": "c1", "content": "lots of output"}
    if with_name:
        result["name"] = tool_name
    return [
        {"role": "user", "content": "find the bug"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": tool_name, "arguments": "{}"}}],
        },
        result,
    ]


@pytest.mark.parametrize(
    "tokens, turns, expected",
    [
        (8501, 0, "token-threshold"),
        (8500, 0, "skip"),  # strictly more than 85%
        (6001, 0, "skip"),  # the seed's 60% is no longer the default
        (5000, 10_000, "skip"),  # no turn limit by default: a small history is not rewritten for its age
        (9000, 30, "token-threshold"),
    ],
)
def test_default_rules(tokens, turns, expected):
    decision = decide(tokens, 10_000, turns, None)
    assert decision.reason == expected
    assert decision.should_compress == (expected != "skip")
    assert decision.estimated_tokens == tokens
    assert decide(8000, 10_000, 0, "read_file").reason == "skip"  # no heavy-tool rule by default


# the seed design's rules, when set (they were the defaults until 2026-12-07)
SEED = TriggerConfig(token_fraction=0.6, tool_event_fraction=0.4, turn_limit=30)


@pytest.mark.parametrize(
    "tokens, turns, expected",
    [
        (6001, 0, "token-threshold"),
        (6000, 0, "skip"),
        (5000, 29, "skip"),
        (5000, 30, "turn-limit"),
        (9000, 30, "token-threshold"),
    ],
)
def test_the_seed_rules_when_set(tokens, turns, expected):
    assert decide(tokens, 10_000, turns, None, SEED).reason == expected


def test_heavy_tool_rule_needs_its_share():
    assert decide(4001, 10_000, 0, "search_codebase", SEED).reason == "tool-event"
    assert decide(4000, 10_000, 0, "search_codebase", SEED).reason == "skip"
    assert decide(5000, 10_000, 0, "apply_patch", SEED).reason == "skip"  # not a tool whose results are large


@pytest.mark.parametrize("tool", ["Read", "Grep", "WebFetch", "str_replace_editor", "ViewCode", "view", "read_file"])
def test_the_heavy_tools_of_the_common_harnesses_are_known(tool):
    assert decide(4001, 10_000, 0, tool, SEED).reason == "tool-event"
    only_grep = TriggerConfig(tool_event_fraction=0.4, heavy_tools=frozenset({"grep"}))
    assert decide(4001, 10_000, 0, tool, only_grep).reason == ("tool-event" if tool == "Grep" else "skip")


def test_last_tool_name_from_call_id_or_name():
    assert last_tool_name(as_messages(tool_history("read_many_files"))) == "read_many_files"
    assert last_tool_name(as_messages(tool_history("x", with_name=True))) == "x"
    assert last_tool_name(as_messages([{"role": "user", "content": "hi"}])) is None


def test_evaluate_compression_uses_counter_and_config():
    config = TriggerConfig(token_fraction=0.9, tool_event_fraction=0.1, heavy_tools=frozenset({"grep"}), turn_limit=3)
    history = tool_history("grep")
    assert evaluate_compression(history, 1000, 0, config=config, counter=FixedCounter(150)).reason == "tool-event"
    assert evaluate_compression(history[:1], 1000, 3, config=config, counter=FixedCounter(50)).reason == "turn-limit"
    assert (
        evaluate_compression(history[:1], 1000, 0, config=config, counter=FixedCounter(901)).reason == "token-threshold"
    )


def test_bad_numbers_are_errors():
    with pytest.raises(ValueError, match="model_max_tokens"):
        decide(1, 0, 0, None)
    with pytest.raises(ValueError, match="turns_since_last_compression"):
        decide(1, 10, -1, None)
    with pytest.raises(ValueError):
        TriggerConfig(token_fraction=1.5)


def test_evaluate_compression_does_not_mutate_input():
    history = tool_history("grep")
    snapshot = repr(history)
    evaluate_compression(history, 1000, 0, counter=FixedCounter(10))
    assert repr(history) == snapshot


def test_last_tool_name_of_a_result_without_an_id_is_its_calls_in_order():
    # A harness that writes no ids answers calls in order (history.conventions): the only call before the result
    call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "Read"}}]}
    assert last_tool_name(as_messages([{"role": "user", "content": "go"}, call, {"role": "tool", "content": "x"}])) == (
        "Read"
    )
    two = {**call, "tool_calls": call["tool_calls"] * 2}
    assert (
        last_tool_name(as_messages([{"role": "user", "content": "go"}, two, {"role": "tool", "content": "x"}])) is None
    )


def test_last_tool_name_looks_for_its_call_in_the_turn_before_it():
    # The calls of a turn may be messages of their own, their results between them; a call before a user's turn
    # answers none of the results after it (and the look back stays within the turn: linear in a long history).
    def call(call_id: str, name: str) -> dict:
        return {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "function": {"name": name}}]}

    turn = [call("a", "Read"), {"role": "tool", "tool_call_id": "a", "content": "x"}, call("b", "Grep")]
    assert last_tool_name(as_messages([*turn, {"role": "tool", "tool_call_id": "a", "content": "y"}])) == "Read"
    late = [
        call("a", "Read"),
        {"role": "user", "content": "go on"},
        {"role": "tool", "tool_call_id": "a", "content": "y"},
    ]
    assert last_tool_name(as_messages(late)) is None
