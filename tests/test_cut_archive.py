"""The cut keeps tool calls with their results; the archive is append-only, whole lines, read back intact."""

import json

from offline_compress.archive import archive_messages, read_archive
from offline_compress.cut import cut_index
from offline_compress.messages import as_messages


def call(i):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}


def result(i):
    return {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}


def test_cut_moves_before_tool_results():
    history = as_messages([{"role": "user", "content": "go"}] + [m for i in range(4) for m in (call(i), result(i))])
    # 9 messages, keep 5 -> naive cut at 4, which is a tool result: move to its call at 3.
    assert cut_index(history, 5) == 3
    assert history[3].tool_calls


def test_cut_with_parallel_results_and_mini_swe_agent_observations():
    parallel = as_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "function": {"name": "x"}}, {"id": "b", "function": {"name": "y"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "content": "done"},
    ])
    assert cut_index(parallel, 2) == 1
    mini = as_messages([
        {"role": "system", "content": "s"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "```bash\nls\n```"}, {"role": "user", "content": "<returncode>0</returncode>"},
        {"role": "assistant", "content": "```bash\ncat x\n```"}, {"role": "user", "content": "<returncode>1</returncode>"},
    ])
    assert cut_index(mini, 1) == 4
    assert cut_index(mini, 10) == 0


def test_archive_roundtrip_and_append(tmp_path):
    path = tmp_path / "deep" / "archive.jsonl"
    msgs = [{"role": "user", "content": "héllo\nworld"}, call(1), result(1)]
    archive_messages(path, msgs, compaction=1, summary_json='{"a":1}')
    archive_messages(path, msgs[:1], compaction=2, first_index=0)
    records = read_archive(path)
    assert [r["message"] for r in records if r.get("compaction") == 1 and "message" in r] == msgs
    assert records[3] == {"compaction": 1, "summary": {"a": 1}}
    assert records[-1]["compaction"] == 2
    assert all(line.endswith("}") for line in path.read_text(encoding="utf-8").splitlines())
    json.loads(path.read_text(encoding="utf-8").splitlines()[0])
