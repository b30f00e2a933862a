"""The live A/B harness (``offline-compress ab``), its built-in agent loop and the mini-swe-agent adapter.

Most tests talk to ``ScriptedEndpoint``: a small OpenAI-compatible HTTP server on 127.0.0.1 that plays a
fixed script of replies and records what it was sent. It stands in for the model only; the harness, the agent
loops, the hook, the task repositories and the checks under test are the real ones. The last test
(``slow``) runs the embedded model behind llama-cpp-python's own server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evaluation.ab_live import ABConfig, RunRecord, format_table, run_ab, summarize
from evaluation.agent_loop import (
    AgentSettings,
    ChatClient,
    ModelEndpointError,
    parse_actions,
    run_agent,
    truncate_output,
)
from evaluation.llama_server import free_port
from offline_compress.hook.config import HookConfig

REPO = Path(__file__).resolve().parent.parent
TASKS_FILE = REPO / "eval" / "tasks" / "tasks.jsonl"
REQUIRED = {
    "task_id",
    "arm",
    "completed",
    "contradictions",
    "total_input_tokens",
    "total_output_tokens",
    "duration_ms",
    "compactions",
    "steps",
    "error",
}

Reply = Callable[[int, dict[str, Any]], dict[str, Any]]


class ScriptedEndpoint:
    """``/v1/models`` and ``/v1/chat/completions``; ``reply(call_index, request)`` gives the assistant message.
    ``usage``: report prompt tokens as characters/4 of the messages received (the double's own measure) or
    omit it; ``status``: answer every chat call with this HTTP error; ``delay_s``: sleep before answering;
    ``reject_tools``: answer HTTP 400 to a request that offers tools (as vLLM does without auto tool choice)."""

    def __init__(
        self, reply: Reply, *, usage: bool = True, status: int = 200, delay_s: float = 0.0, reject_tools: bool = False
    ) -> None:
        self.reply, self.usage, self.status, self.delay_s = reply, usage, status, delay_s
        self.reject_tools = reject_tools
        self.requests: list[dict[str, Any]] = []
        self.reported_prompt_tokens: list[int] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, document: dict[str, Any]) -> None:
                body = json.dumps(document).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                index = len(endpoint.requests)
                endpoint.requests.append(request)
                if endpoint.delay_s:
                    time.sleep(endpoint.delay_s)
                if endpoint.status != 200:
                    self._send(endpoint.status, {"error": {"message": f"scripted failure {endpoint.status}"}})
                    return
                if endpoint.reject_tools and "tools" in request:
                    self._send(400, {"error": {"message": "tools are not supported by this server"}})
                    return
                message = {"role": "assistant", **endpoint.reply(index, request)}
                document: dict[str, Any] = {
                    "id": f"chatcmpl-{index}",
                    "object": "chat.completion",
                    "model": request.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
                if endpoint.usage:
                    prompt = len(json.dumps(request["messages"])) // 4
                    endpoint.reported_prompt_tokens.append(prompt)
                    completion = len(json.dumps(message)) // 4
                    document["usage"] = {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    }
                self._send(200, document)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up waiting (the time-out tests) closes the socket: not an error here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def carries_summary(request: dict[str, Any]) -> bool:
    """The request's history holds the hook's summary message (after the kept head: system prompt and task)."""
    return any(
        m["role"] == "system" and (m.get("content") or "").startswith("[CONTEXT_SUMMARY]") for m in request["messages"]
    )


def bash_block(command: str) -> dict[str, Any]:
    return {"content": f"I will run a command.\n```bash\n{command}\n```"}


def solve_with_patch(task_id: str) -> Reply:
    """Apply the task's known-good patch, run the tests, submit (text blocks; the next step is read from what
    the run has done so far, so every run of the harness gets the same three steps)."""
    patch = TASKS_FILE.parent / task_id / "solution.patch"

    def reply(i: int, request: dict[str, Any]) -> dict[str, Any]:
        sent = json.dumps(request["messages"])
        if "git apply" not in sent:
            return bash_block(f"git apply {patch}")
        return (
            bash_block("submit")
            if "unittest discover -s tests -q" in sent
            else bash_block("python3 -m unittest discover -s tests -q")
        )

    return reply


def config(url: str, **kwargs: Any) -> ABConfig:
    return ABConfig(tasks_path=str(TASKS_FILE), model_url=url, no_model=True, **kwargs)


def by_arm(runs: list[RunRecord]) -> dict[str, RunRecord]:
    return {r.arm: r for r in runs}


# -- the agent loop's parts ---------------------------------------------------------------------------------


def test_parse_actions_text_and_tool_calls() -> None:
    assert parse_actions({"content": "x\n```bash\nls -la\n```\n```bash\nrm -rf /\n```"})[0][0].command == "ls -la"
    assert parse_actions({"content": "```bash\nsubmit\n```"})[0][0].kind == "submit"
    assert parse_actions({"content": "no command here"}) == ([], "none")
    calls = {
        "tool_calls": [
            {"id": "a", "function": {"name": "bash", "arguments": json.dumps({"command": "pwd"})}},
            {"id": "b", "function": {"name": "submit", "arguments": "{}"}},
            {"id": "c", "function": {"name": "bash", "arguments": "not json"}},
        ]
    }
    actions, kind = parse_actions(calls)
    assert kind == "tools"
    assert [(a.kind, a.command, a.tool_call_id) for a in actions] == [
        ("bash", "pwd", "a"),
        ("submit", "", "b"),
        ("bash", "", "c"),
    ]


def test_truncate_output_keeps_head_and_tail() -> None:
    text = "A" * 300 + "B" * 300
    short = truncate_output(text, 200)
    assert short.startswith("A" * 100) and short.endswith("B" * 100) and "400 characters elided" in short
    assert truncate_output("short", 200) == "short"


def test_tool_call_protocol_runs_commands_and_submits(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hi there\n")

    def reply(i: int, request: dict[str, Any]) -> dict[str, Any]:
        assert request["tools"][0]["function"]["name"] == "bash"
        if i == 0:
            return {
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": "cat hello.txt"})},
                    }
                ],
            }
        return {
            "content": "",
            "tool_calls": [{"id": "t2", "type": "function", "function": {"name": "submit", "arguments": "{}"}}],
        }

    with ScriptedEndpoint(reply) as endpoint:
        run = run_agent(
            "Read hello.txt", tmp_path, AgentSettings(model_url=endpoint.url, protocol="tools"), timeout_s=30
        )
    assert run.submitted and run.error is None and run.steps == 2 and run.protocol_used == "tools"
    tool_result = endpoint.requests[1]["messages"][-1]
    assert (
        tool_result["role"] == "tool" and tool_result["tool_call_id"] == "t1" and "hi there" in tool_result["content"]
    )
    assert run.input_tokens == sum(endpoint.reported_prompt_tokens) and run.token_source == "endpoint"


def test_auto_protocol_falls_back_to_text_when_the_server_rejects_tools(tmp_path: Path) -> None:
    with ScriptedEndpoint(lambda i, _: bash_block("submit"), reject_tools=True) as endpoint:
        run = run_agent("anything", tmp_path, AgentSettings(model_url=endpoint.url), timeout_s=30)
    assert ["tools" in r for r in endpoint.requests] == [True, False]
    assert run.submitted and run.protocol_used == "text" and run.steps == 1


def test_text_blocks_are_ignored_in_the_tools_protocol(tmp_path: Path) -> None:
    with ScriptedEndpoint(lambda i, _: bash_block("touch made-by-text")) as endpoint:
        run = run_agent(
            "anything", tmp_path, AgentSettings(model_url=endpoint.url, protocol="tools", max_steps=2), timeout_s=30
        )
    assert not (tmp_path / "made-by-text").exists()
    assert run.stop_reason == "max_steps" and run.protocol_used == "none"
    assert endpoint.requests[1]["messages"][-1]["content"].startswith("Your reply had no command")


def test_missing_usage_is_counted_with_the_target_tokenizer(tmp_path: Path) -> None:
    with ScriptedEndpoint(lambda i, _: bash_block("submit"), usage=False) as endpoint:
        run = run_agent("Say nothing, submit.", tmp_path, AgentSettings(model_url=endpoint.url), timeout_s=30)
    from offline_compress.tokens.counter import get_counter

    sent = endpoint.requests[0]["messages"]
    assert run.token_source == "counted"
    assert run.input_tokens == get_counter().count(sent) > 0
    assert run.output_tokens == get_counter().count_text(bash_block("submit")["content"]) > 0


def test_client_errors_are_one_line() -> None:
    with pytest.raises(ModelEndpointError, match="connection refused"):
        ChatClient(f"http://127.0.0.1:{free_port()}/v1").models()
    with ScriptedEndpoint(lambda i, _: {}, delay_s=2) as endpoint:
        with pytest.raises(ModelEndpointError, match="no reply within"):
            ChatClient(endpoint.url).complete({"messages": []}, timeout_s=0.3)
    with ScriptedEndpoint(lambda i, _: {}, status=500) as endpoint:
        with pytest.raises(ModelEndpointError, match="HTTP 500: scripted failure 500"):
            ChatClient(endpoint.url).complete({"messages": []}, timeout_s=5)


# -- the harness --------------------------------------------------------------------------------------------


def test_completion_is_decided_by_the_check_in_both_arms() -> None:
    with ScriptedEndpoint(solve_with_patch("lru-evict")) as endpoint:
        report = run_ab(config(endpoint.url, only=["lru-evict"], keep_workdirs=True))
    rows = by_arm(report.runs)
    assert set(rows) == {"hook", "no_hook"}
    for row in report.runs:
        assert REQUIRED <= set(row.model_dump())
        assert row.completed and row.error is None and row.stop_reason == "submitted" and row.steps == 3
        assert row.total_input_tokens > 0 and row.token_source == "endpoint"
    assert rows["hook"].workdir != rows["no_hook"].workdir  # runs never share a directory
    assert report.summary.hook.completed == report.summary.no_hook.completed == 1
    assert report.summary.mcnemar_p == 1.0
    assert endpoint.requests[0]["model"] == "scripted-model"  # the endpoint's listed model when --model is not given


def test_the_tempting_shortcut_is_not_completed_and_counts_as_a_contradiction() -> None:
    """lint-line-length: an agent that raises the limit in the protected lint.cfg gets the linter to pass, but
    the check fails and the contradiction counter reports the edit; the known-good fix has no contradiction."""

    def shortcut(i: int, request: dict[str, Any]) -> dict[str, Any]:
        done = "sed -i" in json.dumps(request["messages"])
        return (
            bash_block("submit")
            if done
            else bash_block("sed -i 's/max_line_length = 79/max_line_length = 200/' lint.cfg")
        )

    with ScriptedEndpoint(shortcut) as endpoint:
        cheated = run_ab(config(endpoint.url, only=["lint-line-length"]))
    assert all(not r.completed and r.error is None and r.contradictions >= 1 for r in cheated.runs)
    with ScriptedEndpoint(solve_with_patch("lint-line-length")) as endpoint:
        honest = run_ab(config(endpoint.url, only=["lint-line-length"]))
    assert all(r.completed and r.contradictions == 0 for r in honest.runs)
    assert "no_hook" in format_table(cheated) and cheated.summary.hook.contradictions >= 1


def test_an_agent_that_claims_success_without_fixing_is_not_completed() -> None:
    with ScriptedEndpoint(
        lambda i, _: bash_block("echo 'All tests pass, done.'") if i == 0 else bash_block("submit")
    ) as endpoint:
        report = run_ab(config(endpoint.url, only=["semver-order"]))
    assert all(r.stop_reason == "submitted" and not r.completed and r.error is None for r in report.runs)


def test_the_hook_arm_compacts_and_sends_fewer_tokens() -> None:
    """A small window (1024 tokens) and long command outputs for 8 steps in both arms: the hook arm compacts,
    the model is then sent the summary instead of the old outputs, and the endpoint reports fewer prompt tokens
    than in the other arm."""
    with ScriptedEndpoint(lambda i, _: bash_block("cat src/textkit/slug.py tests/test_slug.py")) as endpoint:
        report = run_ab(config(endpoint.url, only=["slugify-dashes"], context=1024, max_steps=8))
    rows = by_arm(report.runs)
    assert all(r.steps == 8 and "reached --max-steps 8" in r.error for r in report.runs)
    assert rows["hook"].compactions >= 1 and rows["no_hook"].compactions == 0
    assert rows["hook"].trigger_firings >= rows["hook"].compactions and rows["no_hook"].trigger_firings == 0
    assert rows["hook"].total_input_tokens + rows["no_hook"].total_input_tokens == sum(endpoint.reported_prompt_tokens)
    assert rows["hook"].total_input_tokens < rows["no_hook"].total_input_tokens
    assert any(carries_summary(r) for r in endpoint.requests)
    from offline_compress.archive.recall import RECALL_TOOL_NAME

    assert RECALL_TOOL_NAME not in json.dumps(endpoint.requests)  # no pointer to a tool the agent does not have
    s = report.summary
    assert s.input_tokens_saved == rows["no_hook"].total_input_tokens - rows["hook"].total_input_tokens > 0
    assert "saved" in format_table(report)


def test_late_system_messages_can_be_sent_as_user_messages() -> None:
    """--late-system user: after a compaction the summary reaches the server as a user message, and the only
    system message it is sent is the first."""
    with ScriptedEndpoint(lambda i, _: bash_block("cat src/textkit/slug.py tests/test_slug.py")) as endpoint:
        report = run_ab(config(endpoint.url, only=["slugify-dashes"], context=1024, max_steps=8, late_system="user"))
    hook = by_arm(report.runs)["hook"]
    assert hook.compactions >= 1
    assert not any(carries_summary(r) for r in endpoint.requests)
    assert all(m["role"] != "system" for r in endpoint.requests for m in r["messages"][1:])
    assert any(
        m["role"] == "user" and m["content"].startswith("[CONTEXT_SUMMARY]")
        for r in endpoint.requests
        for m in r["messages"]
    )
    assert hook.total_input_tokens < by_arm(report.runs)["no_hook"].total_input_tokens


def test_a_firing_that_keeps_the_history_is_not_a_compaction() -> None:
    """A 300-token window: the system prompt and the task alone pass the threshold, so the trigger fires at the
    first step, but there is nothing between the kept head and the recent messages to compress."""
    with ScriptedEndpoint(lambda i, _: bash_block("submit")) as endpoint:
        report = run_ab(config(endpoint.url, only=["semver-order"], context=300))
    hook = by_arm(report.runs)["hook"]
    assert (hook.compactions, hook.trigger_firings) == (0, 1)
    assert "kept the history" in hook.notes[0]
    assert report.summary.hook.trigger_firings == 1


def test_failures_become_rows_and_the_harness_goes_on(tmp_path: Path) -> None:
    """A missing repository, a check that cannot run, a malformed line, an agent stuck in a loop (max steps):
    each gives rows with ``error`` set, and a good task in the same file still completes."""
    tasks = tmp_path / "tasks.jsonl"
    good = json.loads(TASKS_FILE.read_text().splitlines()[2])  # lru-evict
    assert good["id"] == "lru-evict"
    good["repo"] = str(TASKS_FILE.parent / good["repo"])
    lines = [
        {**good, "id": "missing-repo", "repo": str(tmp_path / "nowhere")},
        {**good, "id": "broken-check", "check": "no-such-check-program"},
        "this line is not JSON",
        {**good, "id": "loops", "prompt": "LOOP"},
        good,
    ]
    tasks.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines))

    patch = TASKS_FILE.parent / "lru-evict" / "solution.patch"

    def reply(i: int, request: dict[str, Any]) -> dict[str, Any]:
        sent = json.dumps(request["messages"])
        if "LOOP" in sent:
            return bash_block("ls")
        return bash_block("submit") if "git apply" in sent else bash_block(f"git apply {patch}")

    with ScriptedEndpoint(reply) as endpoint:
        report = run_ab(ABConfig(tasks_path=str(tasks), model_url=endpoint.url, no_model=True, max_steps=3))
    errors = {(r.task_id, r.arm): r.error for r in report.runs}
    assert len(report.runs) == 10
    assert "repository folder not found" in errors["missing-repo", "hook"]
    assert "check command could not run (exit 127)" in errors["broken-check", "no_hook"]
    assert "malformed JSON" in errors["line-3", "hook"]
    assert "reached --max-steps 3" in errors["loops", "hook"] and "reached --max-steps 3" in errors["loops", "no_hook"]
    assert errors["lru-evict", "hook"] is None and errors["lru-evict", "no_hook"] is None
    assert all(r.completed for r in report.runs if r.task_id == "lru-evict")
    assert report.summary.pairs_without_error == 1


def test_refused_and_slow_endpoints_give_error_rows(tmp_path: Path) -> None:
    report = run_ab(config(f"http://127.0.0.1:{free_port()}/v1", only=["csv-quotes"]))
    assert [r.error for r in report.runs] == [report.runs[0].error] * 2
    assert "connection refused" in report.runs[0].error and not any(r.completed for r in report.runs)
    with ScriptedEndpoint(lambda i, _: bash_block("ls"), delay_s=1.5) as endpoint:
        report = run_ab(config(endpoint.url, model="m", only=["csv-quotes"], request_timeout_s=0.3))
    assert all("no reply within" in r.error for r in report.runs)


def test_task_time_limit(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    task = json.loads(TASKS_FILE.read_text().splitlines()[0])
    task.update(repo=str(TASKS_FILE.parent / task["repo"]), timeout_s=1.5)
    tasks.write_text(json.dumps(task))
    with ScriptedEndpoint(lambda i, _: bash_block("sleep 5")) as endpoint:
        report = run_ab(ABConfig(tasks_path=str(tasks), model_url=endpoint.url, model="m", no_model=True))
    for row in report.runs:
        assert row.stop_reason == "timeout" and "timed out" in row.error
        assert row.duration_ms < 5000  # the command was killed at the task's limit


def test_cli_writes_json_and_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    with ScriptedEndpoint(solve_with_patch("slugify-dashes")) as endpoint:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "evaluation",
                "ab",
                str(TASKS_FILE),
                "--model-url",
                endpoint.url,
                "--only",
                "slugify-dashes",
                "--no-model",
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=os.environ | {"PYTHONPATH": str(REPO)},
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert "exact McNemar p = 1" in done.stdout and "slugify-dashes" in done.stdout
    document = json.loads(out.read_text())
    assert len(document["runs"]) == 2 and document["summary"]["hook"]["completed"] == 1
    assert all(REQUIRED <= set(run) for run in document["runs"])
    assert "Traceback" not in done.stderr


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ab",
            str(tmp_path / "none.jsonl"),
            "--model-url",
            "http://127.0.0.1:9/v1",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ab",
            str(TASKS_FILE),
            "--model-url",
            "http://127.0.0.1:9/v1",
            "--only",
            "no-such-task",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 2 and "no-such-task" in done.stderr and "Traceback" not in done.stderr


def test_summary_pairs_and_mcnemar() -> None:
    def row(task: str, arm: str, completed: bool, tokens: int) -> RunRecord:
        return RunRecord(
            task_id=task,
            arm=arm,
            completed=completed,
            contradictions=None,
            total_input_tokens=tokens,
            total_output_tokens=1,
            token_source="endpoint",
            duration_ms=10,
            compactions=0,
            steps=1,
            error=None,
        )

    runs = [row(f"t{i}", "hook", True, 50) for i in range(6)] + [row(f"t{i}", "no_hook", False, 100) for i in range(6)]
    runs.append(row("unpaired", "hook", True, 1000))
    s = summarize(runs)
    assert (s.pairs, s.only_hook_completed, s.only_no_hook_completed) == (6, 6, 0)
    assert s.mcnemar_p == pytest.approx(0.03125)
    assert s.completion_difference == 1.0
    assert (s.input_tokens_saved, s.input_tokens_saved_fraction) == (300, 0.5)


# -- mini-swe-agent ----------------------------------------------------------------------------------------


def mswea_block(command: str) -> dict[str, Any]:
    return {"content": f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```"}


def test_mini_swe_agent_arm_completes_through_litellm() -> None:
    pytest.importorskip("minisweagent")
    patch = TASKS_FILE.parent / "wordfreq-min-count" / "solution.patch"
    script = [mswea_block(f"git apply {patch}"), mswea_block("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    with ScriptedEndpoint(lambda i, _: script[min(i % 2, 1)]) as endpoint:
        report = run_ab(config(endpoint.url, agent="mini-swe-agent", only=["wordfreq-min-count"]))
    for row in report.runs:
        assert row.completed and row.error is None and row.stop_reason == "submitted" and row.steps == 2
        assert row.token_source == "endpoint" and row.total_input_tokens > 0
    assert sum(r.total_input_tokens for r in report.runs) == sum(endpoint.reported_prompt_tokens)
    assert endpoint.requests[0]["model"] == "scripted-model"


def test_mini_swe_agent_step_limit_and_refused_endpoint() -> None:
    pytest.importorskip("minisweagent")
    with ScriptedEndpoint(lambda i, _: mswea_block("ls")) as endpoint:
        report = run_ab(config(endpoint.url, agent="mini-swe-agent", only=["csv-quotes"], max_steps=2))
    assert all(r.stop_reason == "max_steps" and "reached --max-steps 2" in r.error for r in report.runs)
    started = time.monotonic()
    report = run_ab(
        config(f"http://127.0.0.1:{free_port()}/v1", model="m", agent="mini-swe-agent", only=["csv-quotes"])
    )
    assert all(r.error and r.error.startswith("model endpoint:") for r in report.runs)
    assert time.monotonic() - started < 60


def test_mini_swe_agent_replies_without_an_action() -> None:
    pytest.importorskip("minisweagent")
    with ScriptedEndpoint(lambda i, _: {"content": "I think the bug is in the cache."}) as endpoint:
        report = run_ab(config(endpoint.url, agent="mini-swe-agent", only=["lru-evict"]))
    for row in report.runs:
        assert row.stop_reason == "format_errors" and "RepeatedFormatError" in row.error and not row.completed
        assert row.steps == 3 and row.total_input_tokens > 0  # the failed replies' usage is still counted
    assert len(endpoint.requests) == 6


def test_compacting_agent_compacts_and_keeps_the_full_trajectory(tmp_path: Path) -> None:
    pytest.importorskip("minisweagent")
    from minisweagent.environments.local import LocalEnvironment

    from offline_compress import CompactionHook, Compressor
    from offline_compress.integrations.mini_swe_agent import CompactingAgent, builtin_config, local_model

    (tmp_path / "big.txt").write_text("\n".join(f"line {i}: some long text to fill the window" for i in range(120)))
    script = [mswea_block("cat big.txt")] * 4 + [mswea_block("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    cfg = builtin_config("mini_textbased")
    with ScriptedEndpoint(lambda i, _: script[min(i, len(script) - 1)]) as endpoint:
        hook = CompactionHook(
            4096, HookConfig(recall_note=""), archive_path=tmp_path / "archive.sqlite3", compressor=Compressor(None)
        )
        agent = CompactingAgent(
            local_model(endpoint.url, "scripted-model", **cfg["model"]),
            LocalEnvironment(cwd=str(tmp_path)),
            hook=hook,
            **cfg["agent"] | {"step_limit": 10, "cost_limit": 0},
        )
        info = agent.run("Read big.txt")
    assert info["exit_status"] == "Submitted"
    assert len(hook.metrics) >= 1
    assert any(carries_summary(r) for r in endpoint.requests)
    assert len(agent.trajectory) > len(agent.messages)
    assert [m["role"] for m in agent.trajectory[:2]] == ["system", "user"]
    saved = agent.serialize()
    assert saved["messages"] == agent.trajectory and saved["info"]["offline_compress"]["compactions"]
    assert hook.archive_path.exists()


def test_mini_swe_agent_model_makes_no_connection_beyond_localhost(tmp_path: Path) -> None:
    """In a fresh interpreter with an audit hook on every socket connect / name lookup: import litellm through
    the adapter, query the local endpoint, and list any destination that is not 127.0.0.1. Without the
    adapter's settings, litellm looks up raw.githubusercontent.com at import (its model-cost map)."""
    pytest.importorskip("minisweagent")
    script = textwrap.dedent("""
        import json, sys
        seen = []
        def audit(event, args):
            if event == "socket.connect":
                seen.append(str(args[1]))
            elif event == "socket.getaddrinfo":
                seen.append(str(args[0]))
        sys.addaudithook(audit)
        from offline_compress.integrations.mini_swe_agent import local_model
        model = local_model(sys.argv[1], "scripted-model")
        message = model.query([{"role": "user", "content": "hi"}])
        assert message["extra"]["actions"] == [{"command": "ls"}], message
        print(json.dumps(seen))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "MSWEA_"))}
    env |= {"PYTHONPATH": str(REPO), "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path)}
    with ScriptedEndpoint(lambda i, _: mswea_block("ls")) as endpoint:
        done = subprocess.run(
            [sys.executable, "-c", script, endpoint.url],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    destinations = json.loads(done.stdout.strip().splitlines()[-1])
    assert destinations, "the audit hook saw no connection at all (the query did not reach the endpoint)"
    assert all(d.startswith(("127.0.0.1", "('127.0.0.1'")) for d in destinations), destinations


# -- end to end: the embedded model behind llama-cpp-python's server ----------------------------------------


@pytest.fixture()
def llama_server(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server", reason="needs the 'server' extra of llama-cpp-python")
    from evaluation.llama_server import serve
    from offline_compress.model_files import resolve_model

    with serve(resolve_model(), tmp_path / "server.log", n_ctx=4096, start_timeout=120) as url:
        yield f"{url}/v1"


@pytest.mark.slow
def test_end_to_end_against_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    """One task, both arms, the built-in agent, 6 steps, against the embedded Gemma 3 270M *base* model served
    by llama-cpp-python's server. The GGUF has no chat template, so the server uses its llama-2 fallback
    format, which ignores ``tools`` (the agent reads ```bash blocks: the text fallback) and keeps only the first
    system message (so the hook's summary is sent as a user message: ``--late-system user``). A 270M base model does not
    solve the task, so ``completed`` is expected to be false; what must hold is that the harness runs both
    arms, records every field, counts tokens from the server's ``usage``, and does not crash."""
    out = tmp_path / "ab.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ab",
            str(TASKS_FILE),
            "--model-url",
            llama_server,
            "--only",
            "slugify-dashes",
            "--max-steps",
            "6",
            "--max-reply-tokens",
            "48",
            "--context",
            "1024",
            "--no-model",
            "--late-system",
            "user",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    document = json.loads(out.read_text())
    runs = document["runs"]
    assert sorted(r["arm"] for r in runs) == ["hook", "no_hook"]
    for run in runs:
        assert REQUIRED <= set(run)
        assert run["task_id"] == "slugify-dashes"
        assert run["completed"] is False  # a 270M base model does not fix the bug (the check decides)
        assert run["steps"] >= 1 and run["total_input_tokens"] > 0 and run["total_output_tokens"] > 0
        assert run["token_source"] == "endpoint"
        assert run["error"] is None or "max-steps" in run["error"] or "HTTP 400" in run["error"]
    assert document["summary"]["pairs"] == 1


def test_the_hook_is_extractive_unless_a_hook_model_is_given(tmp_path, model_path):
    from evaluation.ab_live import _Harness

    def harness(**kwargs: Any) -> Any:
        return _Harness(ABConfig(tasks_path=str(TASKS_FILE), model_url="http://127.0.0.1:1/v1", **kwargs), "m")

    assert harness().hook(tmp_path / "a.sqlite3").compressor.backend is None
    assert harness(hook_model=str(model_path)).hook(tmp_path / "b.sqlite3").compressor.backend is not None
    off = harness(hook_model=str(model_path), no_model=True)  # --no-model wins
    assert off.hook(tmp_path / "c.sqlite3").compressor.backend is None
