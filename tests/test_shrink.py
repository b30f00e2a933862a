"""The cut of a recent message (``hook.shrink``): a tool output is cut by whole lines, keeping its first and
last lines and, between them, the lines that name what the kept lines do not; a thought, and a text of few or very
long lines, is cut in its middle. Checked on made-up texts; ``test_summary_room`` and ``test_compaction_loops``
drive the cut through the hook."""

from __future__ import annotations

import re

from hypothesis import event, given, settings
from hypothesis import strategies as st

from offline_compress.history.messages import as_messages
from offline_compress.hook.shrink import CUT_LINES_NOTE, CUT_NOTE, clip_lines, clip_middle, shorten_recent
from offline_compress.tokens.counter import default_counter

LINES_NOTE = re.compile(re.escape(CUT_LINES_NOTE.strip("\n")).replace(r"\{chars:,\}", r"[\d,]+"))


def file_read(n: int = 400) -> tuple[str, list[str]]:
    """A file as Claude Code's Read shows it (``   12→`` before each line): filler that repeats a few names, with
    three definitions in its middle that nothing else names."""
    body = ["    total = total + step(total)" if k % 3 else "" for k in range(n)]
    body[0] = '"""The cache of parsed headers."""'
    body[n - 1] = "__all__ = ['HeaderCache']"
    body[180] = "def parse_header_block(raw: bytes) -> HeaderBlock:"
    body[200] = "class TokenCacheEntry(NamedTuple):"
    body[220] = "MAX_HEADER_BYTES = 65536"
    return "\n".join(f"{k + 1:6d}→{x}" for k, x in enumerate(body)), body


def kept_lines(cut: str) -> list[str]:
    return [x for x in cut.split("\n") if x != "…" and not LINES_NOTE.fullmatch(x)]


def test_a_cut_by_lines_keeps_the_lines_that_name_what_the_rest_does_not():
    text, _ = file_read()
    keep = len(text) // 5
    cut = clip_lines(text, keep)
    assert len(cut) <= keep + 10
    lines = text.split("\n")
    assert cut.startswith(lines[0] + "\n") and cut.endswith("\n" + lines[-1])  # the start and the end
    assert len(LINES_NOTE.findall(cut)) == 1 and cut.split("\n").count("…") >= 1  # one note, then ``…``
    kept = kept_lines(cut)
    assert all(x in lines for x in kept) and kept == sorted(kept, key=lines.index)  # whole lines, in order
    for name in ("parse_header_block", "TokenCacheEntry", "MAX_HEADER_BYTES"):
        assert name in cut
        assert name not in clip_middle(text, keep)  # the middle cut loses them: the start and the end name none


def test_a_viewers_line_number_is_not_what_a_line_names():
    # The empty lines of the file differ only by their number: none of them is kept for it.
    text, _ = file_read()
    kept = kept_lines(clip_lines(text, len(text) // 5))
    numbers = [int(x.split("→")[0]) for x in kept]
    start = next(k for k, n in enumerate(numbers) if n != k + 1)  # the lines after the file's start
    end = next(k for k in range(len(numbers) - 1, -1, -1) if numbers[k] != 400 - (len(numbers) - 1 - k))
    between = kept[start : end + 1]  # neither the start nor the end
    assert len(between) >= 3 and all(x.split("→")[1] for x in between)


def test_a_text_of_few_or_very_long_lines_or_over_a_million_characters_is_cut_in_its_middle():
    few = "\n".join(f"line_{k} = {k}" * 40 for k in range(5))
    assert clip_lines(few, 300) == clip_middle(few, 300)
    long = "\n".join(f"row_{k} " * 900 for k in range(10))  # 10 lines of 5-6k characters
    assert clip_lines(long, 20_000) == clip_middle(long, 20_000)
    huge = "\n".join(f"value_{k} = f({k})" for k in range(60_000))  # over a million characters
    assert len(huge) > 1_000_000 and clip_lines(huge, 5_000) == clip_middle(huge, 5_000)
    short = "a\nb\nc"
    assert clip_lines(short, 100) == short  # within keep: as it was


_LINE = st.one_of(
    st.text(alphabet="abcxyz_./019 ()'→\t", min_size=20, max_size=80),
    st.from_regex(r"[ ]{0,8}[a-z_]{1,12}(\.[a-z_]{1,8})?\([0-9]{0,4}\)", fullmatch=True),
    st.text(max_size=400),  # anything, long lines too
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINE, min_size=40, max_size=200), share=st.floats(min_value=0.2, max_value=0.9))
def test_a_cut_by_lines_keeps_lines_of_the_text_in_order_within_what_it_was_asked(lines: list[str], share: float):
    text = "\n".join(lines)
    keep = max(1, int(len(text) * share))
    cut = clip_lines(text, keep)
    assert clip_lines(text, keep) == cut
    if cut == clip_middle(text, keep):
        event("cut in its middle")
        return
    event("cut by lines")
    assert len(cut) <= keep + 16  # about what was asked (the note's count may be longer than its placeholder)
    shown = kept_lines(cut)
    given_lines = text.split("\n")
    assert len(LINES_NOTE.findall(cut)) == 1
    at = 0
    for k, line in enumerate(shown):  # each kept line is a line of the text (or its start), in order
        while not (line == given_lines[at] or (line.endswith("…") and given_lines[at].startswith(line[:-1]))):
            assert k > 0, "the first line is the text's first"
            at += 1
        at += 1
    last = given_lines[-1]
    assert shown[-1] == last or (shown[-1].endswith("…") and last.startswith(shown[-1][:-1]))


def test_a_cut_by_lines_is_deterministic():
    text, _ = file_read()
    assert clip_lines(text, 2_000) == clip_lines(text, 2_000)


def test_tool_outputs_are_cut_by_lines_and_thoughts_in_their_middle():
    text, _ = file_read()
    history = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the header cache."},
        {"role": "assistant", "content": "I will read the cache. " * 300, "tool_calls": [_call()]},
        {"role": "tool", "tool_call_id": "c1", "content": text},
    ]
    counter = default_counter()
    parsed = as_messages(history)
    out, _, tokens, cut = shorten_recent(history, parsed, 2, counter.count(parsed) // 4, counter)
    assert cut == [2, 3] and tokens < counter.count(parsed) // 2
    assert CUT_NOTE.split("{")[0] in out[2]["content"] and not LINES_NOTE.search(out[2]["content"])
    assert LINES_NOTE.search(out[3]["content"]) and "parse_header_block" in out[3]["content"]
    assert out[2]["tool_calls"] == history[2]["tool_calls"] and history[3]["content"] == text  # copies


def _call() -> dict[str, object]:
    return {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "cache.py"}'}}
