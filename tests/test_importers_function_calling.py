"""Importers for function-calling runs: mini-swe-agent 2.x tool calling, Moatless Tools, debug-gym, and OpenHands
0.15 litellm completion logs.

Each format runs on one real file (tests/fixtures, see ATTRIBUTION.md). Expected values come from the raw JSON
read here in a few lines, never from the importer: the user turns, the calls and their results, the final call.
Tests over the whole collection ../shared/trajectories skip when it is absent.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_TRAJECTORIES

from offline_compress.errors import InputError
from offline_compress.formats import (
    debug_gym,
    load_history,
    load_history_report,
    load_history_with_format,
    mini_swe_agent,
    moatless,
    openhands_completions,
    parse_history_report,
    parse_history_with_format,
)
from offline_compress.history.conventions import is_tool_output
from offline_compress.history.messages import Message

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini-swe-agent" / "sqlfluff__sqlfluff-2419.traj.json.gz"
MOATLESS = FIXTURES / "moatless" / "django__django-15819.trajectory.json.gz"
DEBUG_GYM = FIXTURES / "debug-gym" / "astropy__astropy-6938.debug_gym.jsonl.gz"
OH_COMPLETIONS = (
    FIXTURES
    / "openhands-completions"
    / "django__django-11211.litellm_proxy__claude-3-5-sonnet-20241022-1733344840.288009.json.gz"
)
CASES = {
    "mini-swe-agent": MINI,
    "moatless": MOATLESS,
    "debug-gym": DEBUG_GYM,
    "openhands-completions": OH_COMPLETIONS,
}


def raw(path: Path) -> Any:
    return json.loads(gzip.decompress(path.read_bytes()))


def unanswered(messages: list[Message]) -> list[str]:
    """Ids of the calls without a result. Fails when a call has no id or arguments that are not JSON, when a tool
    message answers no pending call, or when an id recurs while its call is pending (Moatless repeats the id of an
    identical repeated call, after the first one was answered)."""
    pending: list[str] = []
    for m in messages:
        for call in m.tool_calls or ():
            assert call.id and call.id not in pending, f"missing id, or id {call.id!r} reused while pending"
            json.loads(call.function.arguments)
            pending.append(call.id)
        if m.role == "tool":
            assert m.tool_call_id in pending, f"tool message answers no pending call ({m.tool_call_id!r})"
            pending.remove(m.tool_call_id)
    return pending


def users(messages: list[Message]) -> list[str]:
    return [m.text for m in messages if m.role == "user"]


def assert_no_user_is_tool_output(messages: list[Message]) -> None:
    assert not any(is_tool_output(messages, i) for i, m in enumerate(messages) if m.role == "user")


# --- every format ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "path"), CASES.items(), ids=list(CASES))
def test_auto_detects_and_is_deterministic(fmt, path):
    detected, messages = load_history_with_format(path)
    assert detected == fmt
    assert load_history(path, fmt) == messages
    again = load_history(path)
    assert json.dumps([m.to_openai() for m in again]) == json.dumps([m.to_openai() for m in messages])
    assert_no_user_is_tool_output(messages)
    for other in CASES:
        if other != fmt:
            with pytest.raises(InputError):
                load_history(path, other)


@pytest.mark.parametrize(
    ("module", "path"),
    [(moatless, MOATLESS), (debug_gym, DEBUG_GYM), (openhands_completions, OH_COMPLETIONS), (mini_swe_agent, MINI)],
    ids=["moatless", "debug-gym", "openhands-completions", "mini-swe-agent"],
)
def test_messages_share_no_state_with_the_file(module, path):
    data = raw(path)
    pristine = copy.deepcopy(data)
    convert = getattr(module, "import_data", None) or module.messages_from_data
    result = convert(data, path.name)
    messages = result if isinstance(result, list) else result.messages
    before = json.dumps([m.to_openai() for m in messages])
    assert data == pristine

    def scramble(value: Any) -> None:
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in list(items):
            if isinstance(item, (dict, list)):
                scramble(item)
            elif isinstance(item, str):
                value[key] = "SCRAMBLED"

    scramble(data)
    assert json.dumps([m.to_openai() for m in messages]) == before


# --- mini-swe-agent 2.x tool calling -----------------------------------------------------------------------


def test_mini_tool_calling_keeps_messages_and_drops_the_exit_record():
    data = raw(MINI)
    records = data["messages"]
    assert records[-1]["role"] == "exit"
    loaded = load_history_report(MINI)
    messages = loaded.messages
    kept = records[:-1]
    assert [(m.role, m.content) for m in messages] == [(r["role"], r["content"]) for r in kept]
    assert [[(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()] for m in messages] == [
        [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in r.get("tool_calls") or ()] for r in kept
    ]
    assert [m.tool_call_id for m in messages] == [r.get("tool_call_id") for r in kept]
    assert users(messages) == [r["content"] for r in records if r["role"] == "user"]
    assert any("exit" in note for note in loaded.notes)
    # reasoning_content is not content: the reasoner's text appears in no message
    thoughts = [r["reasoning_content"] for r in kept if r.get("reasoning_content")]
    assert thoughts
    texts = "\n".join(m.text for m in messages)
    assert not any(t in texts for t in thoughts if len(t) > 40)
    # the submit call is the one call left without a result; the exit record's patch is not a message
    (last,) = unanswered(messages)
    final = [c for m in messages for c in m.tool_calls or ()][-1]
    assert last == final.id and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in final.function.arguments
    assert messages[-1].role == "assistant"
    assert mini_swe_agent.read_info(gzip.decompress(MINI.read_bytes()).decode())["submission"] == records[-1]["content"]


def test_mini_damaged_tool_calls_name_the_field():
    data = raw(MINI)
    data["messages"][2]["tool_calls"] = "bash"
    with pytest.raises(InputError) as err:
        parse_history_with_format(json.dumps(data), "run.traj.json", "mini-swe-agent")
    assert (err.value.source, err.value.index, err.value.field) == ("run.traj.json", 2, "tool_calls")
    data = raw(MINI)
    data["messages"] = [data["messages"][-1]]  # only the exit record
    with pytest.raises(InputError, match="empty"):
        mini_swe_agent.messages_from_data(data, "run.traj.json")


def test_mini_shortened_outputs_stay_as_the_model_saw_them():
    path = (
        SHARED_TRAJECTORIES
        / "SWE-agent__mini-swe-agent/output/deepseek_lite_dev_noparallel/sqlfluff__sqlfluff-1733"
        / "sqlfluff__sqlfluff-1733.traj.json.gz"
    )
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared trajectories are not in CI)")
    records = raw(path)["messages"]
    elided = [r for r in records if r["role"] == "tool" and "<elided_chars>" in r["content"]]
    assert elided
    messages = load_history(path)
    tool_texts = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    for r in elided:
        assert tool_texts[r["tool_call_id"]] == r["content"] != r["extra"]["raw_output"]


# --- Moatless Tools --------------------------------------------------------------------------------------


def _moatless_path(data: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = {n["node_id"]: n for n in data["nodes"]}
    path = [data["nodes"][-1]]
    while path[-1]["parent_id"] is not None:
        path.append(nodes[path[-1]["parent_id"]])
    return path[::-1]


def test_moatless_takes_the_final_branch_of_a_restarted_tree():
    data = raw(MOATLESS)
    path = _moatless_path(data)
    assert [n["node_id"] for n in path][:2] == [0, 12]  # the run went back to the root once
    abandoned = [n for n in data["nodes"] if n not in path]
    loaded = load_history_report(MOATLESS)
    messages = loaded.messages
    assert messages[0].role == "system" and messages[0].content == data["agent"]["system_prompt"]
    assert messages[1].role == "user" and messages[1].content == data["nodes"][0]["message"]
    calls = [c for m in messages for c in m.tool_calls or ()]
    assert len(calls) == sum(1 for n in path if n.get("action"))  # one call per action on the final branch
    first = json.loads(calls[0].function.arguments)
    assert first["query"] == path[1]["action"]["query"] != data["nodes"][1]["action"]["query"]
    assert any(f"{len(abandoned)} nodes of abandoned branches" in note for note in loaded.notes)
    assert any("execute_action" in note for note in loaded.notes)


def test_moatless_history_results_and_final_turn_match_the_file():
    data = raw(MOATLESS)
    last = _moatless_path(data)[-1]
    build = last["completions"]["build_action"]
    messages = load_history(MOATLESS)
    history_users = [m["content"] for m in build["input"] if m["role"] == "user" and isinstance(m["content"], str)]
    assert users(messages) == history_users
    results = [b for m in build["input"] if isinstance(m["content"], list) for b in m["content"]]
    results = [b for b in results if b["type"] == "tool_result"]
    tools = [m for m in messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tools[:-1]] == [(b["tool_use_id"], b["content"]) for b in results]
    # the final turn is the API response: its id (toolu_…) is kept and its result pairs with it
    (use,) = [b for b in build["response"]["content"] if b["type"] == "tool_use"]
    final = messages[-2]
    assert final.role == "assistant" and final.tool_calls[0].id == use["id"] and use["id"].startswith("toolu_")
    assert json.loads(final.tool_calls[0].function.arguments) == use["input"]
    assert tools[-1].tool_call_id == use["id"]
    assert tools[-1].content == f"<observation>\n{last['observation']['message']}\n</observation>"
    assert unanswered(messages) == []
    assert_no_user_is_tool_output(messages)


def test_moatless_unexecuted_last_node_leaves_its_call_open():
    data = raw(MOATLESS)
    del data["nodes"][-1]["observation"]
    messages = moatless.import_data(data, "t.json").messages
    (use,) = [
        b for b in data["nodes"][-1]["completions"]["build_action"]["response"]["content"] if b["type"] == "tool_use"
    ]
    assert unanswered(messages) == [use["id"]]
    assert messages[-1].role == "assistant"


def test_moatless_parallel_calls_and_mixed_user_turn():
    tool_use = [
        {"type": "tool_use", "id": "call_a", "name": "ViewCode", "input": {"files": [{"file_path": "a.py"}]}},
        {"type": "tool_use", "id": "call_b", "name": "FindClass", "input": {"class_name": "B"}},
    ]
    history = [
        {"role": "user", "content": "<task>\nfix B\n</task>"},
        {"role": "assistant", "content": [{"type": "text", "text": "<thoughts>two</thoughts>"}, *tool_use]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "<observation>\na\n</observation>"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": [{"type": "text", "text": "b"}]},
                {"type": "text", "text": "and mind the tests"},
            ],
        },
    ]
    response = {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Finish", "input": {"finish_reason": "x"}}]}
    data = {
        "agent": {"system_prompt": "sys"},
        "nodes": [
            {"node_id": 0, "parent_id": None, "message": "<task>\nfix B\n</task>"},
            {"node_id": 1, "parent_id": 0, "completions": {"build_action": {"input": history, "response": response}}},
        ],
    }
    messages = moatless.import_data(data, "t.json").messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assert [c.id for c in messages[2].tool_calls] == ["call_a", "call_b"] and messages[
        2
    ].content == "<thoughts>two</thoughts>"
    assert [m.content for m in messages[3:6]] == ["<observation>\na\n</observation>", "b", "and mind the tests"]
    assert unanswered(messages) == ["toolu_1"]


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda d: d["nodes"][-1]["completions"]["build_action"]["input"][1]["content"][1].update(input="x"), "input"),
        (lambda d: d["nodes"][-1]["completions"]["build_action"].update(input={}), "completions.build_action.input"),
        (lambda d: d["nodes"][-1].update(parent_id=999), "parent_id"),
        (lambda d: d["nodes"][-1]["observation"].update(message=["x"]), "observation.message"),
        (lambda d: d["agent"].update(system_prompt=3), "agent.system_prompt"),
        (lambda d: d.update(nodes="x"), "nodes"),
    ],
    ids=["tool-use-input", "input", "parent", "observation", "system-prompt", "nodes"],
)
def test_moatless_damaged_file_names_the_field(damage, field):
    data = raw(MOATLESS)
    damage(data)
    with pytest.raises(InputError) as err:
        parse_history_report(json.dumps(data), "trajectory.json", "moatless")
    assert err.value.source == "trajectory.json"
    assert err.value.field is not None and err.value.field.endswith(field)


# --- debug-gym ---------------------------------------------------------------------------------------------


def test_debug_gym_run_is_the_log_actions_and_outputs():
    data = raw(DEBUG_GYM)
    steps = [s for s in data["log"] if s["action"] is not None]
    prompt = data["log"][1]["prompt_response_pairs"][0]["prompt"]
    loaded = load_history_report(DEBUG_GYM)
    messages = loaded.messages
    assert users(messages) == [next(m["content"] for m in prompt if m["role"] == "user")]
    assert "Overall task" in messages[0].text and messages[0].role == "user"
    calls = [c for m in messages for c in m.tool_calls or ()]
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (s["action"]["id"], s["action"]["name"], s["action"]["arguments"]) for s in steps
    ]
    assert [(m.tool_call_id, m.content) for m in messages if m.role == "tool"] == [
        (s["action"]["id"], s["obs"]) for s in steps
    ]
    assert unanswered(messages) == []
    assert any("step 0" in note for note in loaded.notes)  # the reset output is in the task message already
    assert_no_user_is_tool_output(messages)


def test_debug_gym_python_repr_arguments_and_open_last_call():
    data = raw(DEBUG_GYM)
    data["log"][2]["action"]["arguments"] = "{'command': 'b 300', 'flag': True, 'n': None}"
    del data["log"][-1]["obs"]
    messages = debug_gym.import_data(data, "run.json").messages
    call = [c for m in messages for c in m.tool_calls or ()][1]
    assert json.loads(call.function.arguments) == {"command": "b 300", "flag": True, "n": None}
    assert unanswered(messages) == [data["log"][-1]["action"]["id"]]


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda d: d["log"][3]["action"].update(arguments="not a dict"), "action.arguments"),
        (lambda d: d["log"][3]["action"].update(arguments=[1]), "action.arguments"),
        (lambda d: d["log"][3].update(obs={"text": "x"}), "obs"),
        (lambda d: d["log"][3]["action"].update(name=None), "action.name"),
        (lambda d: d["log"][1].update(prompt_response_pairs="x"), "prompt_response_pairs"),
        (lambda d: d.update(log={}), "log"),
    ],
    ids=["arguments-text", "arguments-list", "obs", "name", "prompts", "log"],
)
def test_debug_gym_damaged_file_names_the_field(damage, field):
    data = raw(DEBUG_GYM)
    damage(data)
    with pytest.raises(InputError) as err:
        parse_history_report(json.dumps(data), "run.json", "debug-gym")
    assert (err.value.source, err.value.field) == ("run.json", field)


# --- OpenHands 0.15 completion logs ------------------------------------------------------------------------


def test_openhands_completions_messages_plus_the_final_response():
    data = raw(OH_COMPLETIONS)
    prompt = data["messages"]
    final = data["response"]["choices"][0]["message"]
    messages = load_history(OH_COMPLETIONS)
    assert len(messages) == len(prompt) + 1
    assert [m.role for m in messages] == [m["role"] for m in prompt] + ["assistant"]

    def text(content: Any) -> str | None:
        return "\n".join(b["text"] for b in content) if isinstance(content, list) else content

    assert users(messages) == [text(m["content"]) for m in prompt if m["role"] == "user"]
    assert all(isinstance(m.content, str) or m.content is None for m in messages)  # cache_control blocks -> text
    assert [(m.tool_call_id, m.content) for m in messages if m.role == "tool"] == [
        (m["tool_call_id"], text(m["content"])) for m in prompt if m["role"] == "tool"
    ]
    calls = [c for m in messages for c in m.tool_calls or ()]
    assert [(c.id, c.function.arguments) for c in calls] == [
        (c["id"], c["function"]["arguments"]) for m in [*prompt, final] for c in m.get("tool_calls") or ()
    ]
    (last,) = unanswered(messages)
    assert last == final["tool_calls"][0]["id"] and calls[-1].function.name == "finish"
    assert_no_user_is_tool_output(messages)


def test_openhands_completions_detection_needs_the_log_keys():
    data = raw(OH_COMPLETIONS)
    plain = {"messages": data["messages"]}
    assert parse_history_with_format(json.dumps(plain), "chat.json")[0] == "openai"
    for key in ("timestamp", "response"):
        partial = {k: v for k, v in data.items() if k != key}
        with pytest.raises(InputError, match=key):
            openhands_completions.load_openhands_completions(json.dumps(partial), "log.json")
    without_kwargs = {k: v for k, v in data.items() if k not in ("kwargs", "args")}
    with pytest.raises(InputError, match="kwargs"):
        openhands_completions.load_openhands_completions(json.dumps(without_kwargs), "log.json")


def test_openhands_completions_image_parts_stay_parts():
    data = raw(OH_COMPLETIONS)
    data["messages"][1]["content"].append(
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}, "cache_control": {"type": "x"}}
    )
    messages = openhands_completions.messages_from_data(data, "log.json")
    parts = messages[1].content
    assert isinstance(parts, list) and parts[-1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
    }
    assert all("cache_control" not in p for p in parts)


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda d: d["response"].update(choices="x"), "response.choices"),
        (lambda d: d["response"].update(choices=[{"message": 3}]), "response.choices[0].message"),
        (lambda d: d.update(response=[]), "response"),
        (lambda d: d["messages"][2].update(tool_calls="x"), "tool_calls"),
        (lambda d: d["messages"][1]["content"][0].update(text=5), "content[0].text"),
        (lambda d: d.update(messages={}), "messages"),
    ],
    ids=["choices", "message", "response", "tool-calls", "text", "messages"],
)
def test_openhands_completions_damaged_file_names_the_field(damage, field):
    data = raw(OH_COMPLETIONS)
    damage(data)
    with pytest.raises(InputError) as err:
        parse_history_report(json.dumps(data), "log.json", "openhands-completions")
    assert (err.value.source, err.value.field) == ("log.json", field)


# --- the whole collection -----------------------------------------------------------------------------------

SHARED_KINDS = {
    "SWE-agent__mini-swe-agent/output": ("mini-swe-agent", 16),
    "SWE-agent__mini-swe-agent/eval": ("mini-swe-agent", 1),
    "aorwall__moatless-tools": ("moatless", 15),
    "microsoft__debug-gym": ("debug-gym", 1),
    "OpenHands__OpenHands": ("openhands-completions", 2),
}


@pytest.mark.parametrize("folder", SHARED_KINDS)
def test_every_shared_run_of_these_formats(folder):
    root = SHARED_TRAJECTORIES / folder
    if not root.is_dir():
        pytest.skip(f"{root} is absent (the shared trajectories are not in CI)")
    fmt, count = SHARED_KINDS[folder]
    files = sorted(p for p in root.rglob("*.gz"))
    assert len(files) == count
    for path in files:
        detected, messages = load_history_with_format(path)
        assert detected == fmt, path
        open_calls = unanswered(messages)
        calls = [c for m in messages for c in m.tool_calls or ()]
        assert open_calls in ([], [calls[-1].id]), path  # only the final call may stay open
        assert_no_user_is_tool_output(messages)
