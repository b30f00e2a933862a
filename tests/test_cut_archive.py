"""The cut keeps tool calls with their results; the archive reads back what it was given, compaction by compaction."""

import json
import sqlite3

from offline_compress.archive.store import Archive
from offline_compress.history.cut import cut_index
from offline_compress.history.messages import as_messages


def call(i):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
    }


def result(i):
    return {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}


def test_cut_moves_before_tool_results():
    history = as_messages([{"role": "user", "content": "go"}] + [m for i in range(4) for m in (call(i), result(i))])
    # 9 messages, keep 5 -> naive cut at 4, which is a tool result: move to its call at 3.
    assert cut_index(history, 5) == 3
    assert history[3].tool_calls


def test_cut_with_parallel_results_and_mini_swe_agent_observations():
    parallel = as_messages(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", "function": {"name": "x"}}, {"id": "b", "function": {"name": "y"}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]
    )
    assert cut_index(parallel, 2) == 1
    mini = as_messages(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "```bash\ncat x\n```"},
            {"role": "user", "content": "<returncode>1</returncode>"},
        ]
    )
    assert cut_index(mini, 1) == 4
    assert cut_index(mini, 10) == 0


def test_archive_roundtrip_and_append(tmp_path):
    path = tmp_path / "deep" / "archive.sqlite3"
    msgs = [{"role": "user", "content": "héllo\nworld"}, call(1), result(1), {"role": "assistant", "content": "done"}]
    with Archive(path) as archive:
        assert archive.record_compaction("s", msgs, head=0, cut=3, reason="manual", summary_json='{"a":1}') == 1
        assert archive.record_compaction("s", msgs[:2], head=0, cut=1, reason="manual", summary_json="{}") == 2
        assert archive.replaced(1) == list(enumerate(msgs[:3]))
        assert archive.restore(1) == msgs and archive.restore(2) == msgs[:2]
        assert [(r.compaction, json.loads(r.summary)) for r in archive.compactions("s")] == [(1, {"a": 1}), (2, {})]
    # the message JSON is stored as given, byte for byte
    conn = sqlite3.connect(path)
    stored = {row[0] for row in conn.execute("SELECT json FROM contents")}
    conn.close()
    assert stored == {json.dumps(m, ensure_ascii=False) for m in msgs}
