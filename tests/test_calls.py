"""Calls understood as calls (issue 20 item 2): the common harnesses' vocabularies read onto the same facts, and a
call shown as a person reads it, never as a bare JSON object. The argument shapes are those of the real runs in
``../shared/trajectories`` (Claude Code, OpenHands, SWE-agent, mini-swe-agent, Moatless, debug-gym, Codex)."""

from __future__ import annotations

import json
import re

import pytest

from offline_compress.extract.calls import read_call
from offline_compress.extract.commands import ShellState
from offline_compress.extract.events import extract_tool_events
from offline_compress.extract.facts import extract_facts
from offline_compress.extract.function_calls import analyse_function_call
from offline_compress.history.messages import parse_messages


def call(name: str, args: object) -> list[str]:
    return read_call(name, args if isinstance(args, str) else json.dumps(args)).lines()


@pytest.mark.parametrize(
    ("name", "args", "kind"),
    [
        ("bash", {"command": "ls"}, "shell"),
        ("execute_bash", {"command": "ls"}, "shell"),
        ("Bash", {"command": "ls", "description": "list"}, "shell"),
        ("shell", {"command": ["bash", "-lc", "ls"]}, "shell"),
        ("exec_command", {"cmd": "ls"}, "shell"),
        ("str_replace_editor", {"command": "str_replace", "path": "a.py", "old_str": "x", "new_str": "y"}, "edit"),
        ("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, "edit"),
        ("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "x", "new_string": "y"}]}, "edit"),
        ("Write", {"file_path": "a.py", "content": "x"}, "write"),
        ("Read", {"file_path": "a.py"}, "read"),
        ("view", {"path": "a.py"}, "read"),
        ("create", {"path": "a.py", "file_text": "x"}, "write"),
        ("str_replace", {"path": "a.py", "old_str": "x", "new_str": "y"}, "edit"),
        ("apply_patch", "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch", "edit"),
        ("Grep", {"pattern": "def f", "path": "src"}, "search"),
        ("Glob", {"pattern": "**/*.py"}, "search"),
        ("find", {"pattern": "x"}, "search"),
        ("search_codebase", {"query": "parser"}, "search"),
        ("TodoWrite", {"todos": [{"content": "a", "status": "pending"}]}, "todo"),
        ("think", {"thought": "hmm"}, "todo"),
        ("task_tracker", {"command": "plan", "task_list": [{"title": "a", "status": "todo"}]}, "todo"),
        ("Task", {"description": "explore", "prompt": "look around"}, "agent"),
        ("mcp__github__search_code", {"q": "x"}, "other"),
    ],
)
def test_each_vocabulary_maps_onto_its_kind(name: str, args: object, kind: str) -> None:
    assert read_call(name, args if isinstance(args, str) else json.dumps(args)).kind == kind


def test_a_call_reads_as_a_person_reads_it() -> None:
    assert call("Bash", {"command": "pytest -x tests/test_x.py", "description": "run"}) == [
        "Bash: pytest -x tests/test_x.py"
    ]
    assert call("Read", {"file_path": "src/x.py", "offset": 40, "limit": 41}) == ["Read src/x.py 40-80"]
    assert call("str_replace_editor", {"command": "view", "path": "src/x.py", "view_range": [40, 80]}) == [
        "str_replace_editor src/x.py 40-80"
    ]
    assert call("Edit", {"file_path": "django/forms/models.py", "old_string": "a\nb", "new_string": "c"}) == [
        "Edit django/forms/models.py",
        "- a",
        "- b",
        "+ c",
    ]
    assert call("Grep", {"pattern": "def parse_header", "path": "src", "glob": "*.py"}) == [
        'Grep "def parse_header" in src *.py'
    ]
    assert call("TodoWrite", {"todos": [{"content": "write the test", "status": "completed", "activeForm": "x"}]}) == [
        "TodoWrite",
        "[completed] write the test",
    ]
    assert call("shell", {"command": ["bash", "-lc", "ls -la src"], "workdir": "/w"}) == ["shell: ls -la src"]
    assert call("shell", {"command": ["rg", "-n", "a b"]}) == ["shell: rg -n 'a b'"]


def test_no_call_is_shown_as_a_bare_json_object() -> None:
    shapes = [
        ("WebFetch", {"url": "https://example.org/doc", "prompt": "the install steps"}),
        ("AskUserQuestion", {"questions": [{"question": "which?", "options": ["a", "b"]}]}),
        ("FindFunction", {"function_name": "parse", "class_name": "Parser", "file_pattern": "*.py"}),
        ("ViewCode", {"files": [{"file_path": "a/b.py", "start_line": 3, "end_line": 9, "span_ids": []}]}),
        ("eval", {}),
        ("rewrite", {"path": "a.py", "start": 3, "end": 4, "new_code": "x = 1"}),
    ]
    for name, args in shapes:
        lines = call(name, args)
        assert lines[0].startswith(name), lines
        assert not any(re.search(r'[\[{]\s*"', line) for line in lines), lines  # no JSON object or array of strings
    assert call("ViewCode", {"files": [{"file_path": "a/b.py", "start_line": 3, "end_line": 9}]}) == [
        "ViewCode a/b.py 3-9"
    ]
    assert call("FindFunction", {"function_name": "parse", "file_pattern": "*.py"}) == ["FindFunction parse in *.py"]


def test_an_unknown_tool_shows_its_name_and_salient_values_verbatim() -> None:
    lines = call("deploy_service", {"service": "api-gateway", "replicas": 3, "config": "a: 1\nb: 2", "dry": True})
    assert lines[0] == "deploy_service replicas=3 service=api-gateway"
    assert lines[1:] == ["config:", "a: 1", "b: 2"]


def test_nested_arguments_read_as_their_strings_a_line_each() -> None:
    # Claude Code's AskUserQuestion: its questions and options, not a JSON array; its target is the first question
    questions = [
        {
            "question": "Should I install tmux via Homebrew?",
            "header": "Install tmux",
            "options": [
                {"label": "Yes, install it", "description": "Run 'brew install tmux'"},
                {"label": "I'll install it myself", "description": "Later"},
            ],
            "multiSelect": False,
        }
    ]
    assert call("AskUserQuestion", {"questions": questions}) == [
        "AskUserQuestion",
        "questions:",
        "question: Should I install tmux via Homebrew?",
        "header: Install tmux",
        "label: Yes, install it",
        "description: Run 'brew install tmux'",
        "label: I'll install it myself",
        "description: Later",
    ]
    facts = analyse_function_call("AskUserQuestion", json.dumps({"questions": questions}), ShellState())
    assert facts.target == "Should I install tmux via Homebrew?"
    assert call("frob", [1, "x", {"y": None, "z": True}]) == ["frob", "input:", "1", "x"]  # flags and nulls say nothing


def test_python_repr_arguments_are_read_too() -> None:
    # debug-gym's prompt history stores arguments as Python repr strings
    assert call("view", "{'path': 'astropy/io/fits/fitsrec.py'}") == ["view astropy/io/fits/fitsrec.py"]


def test_the_work_log_and_failures_show_readable_calls_while_the_exact_command_is_kept() -> None:
    edit = {"file_path": "pkg/mod.py", "old_string": "return a", "new_string": "return b"}
    messages = parse_messages(
        [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "Fixing it.",
                "tool_calls": [
                    {"id": "1", "type": "function", "function": {"name": "Edit", "arguments": json.dumps(edit)}},
                    {
                        "id": "2",
                        "type": "function",
                        "function": {
                            "name": "Bash",
                            "arguments": json.dumps({"command": "pytest -q tests/test_mod.py", "description": "test"}),
                        },
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "1", "content": "Error: String to replace not found in file."},
            {"role": "tool", "tool_call_id": "2", "content": "E   AssertionError\n1 failed"},
        ]
    )
    events = extract_tool_events(messages)
    assert events[0].command == json.dumps(edit) and events[0].shown.startswith("Edit pkg/mod.py")
    assert events[1].command == "pytest -q tests/test_mod.py" and events[1].shell
    facts = extract_facts(messages)
    assert [s.ran for s in facts.steps] == [
        "Edit pkg/mod.py\n- return a\n+ return b",
        "Bash: pytest -q tests/test_mod.py",
    ]
    approaches = [f.approach for f in facts.failed_attempts]
    assert approaches[0].startswith("Edit pkg/mod.py") and "pytest -q tests/test_mod.py" in approaches
    assert facts.files_changed == [] and events[0].tool == "Edit"  # a failed single edit changed nothing


# ---------------------------------------------------------------- what a failed edit tried


def test_an_edits_approach_is_what_it_changed() -> None:
    from offline_compress.extract.calls import changed_lines

    shown = "\n".join(
        [
            "Edit pkg/mod.py",
            "- def f(x):",
            "-     y = x + 1",
            "-     return y",
            "+ def f(x):",
            "+     y = x + 2",
            "+     return y",
        ]
    )
    assert changed_lines(shown) == "Edit pkg/mod.py\n…\n-     y = x + 1\n…\n+     y = x + 2\n…"
    # indentation is a change (Python); a line that only moved is not
    assert changed_lines("Edit a.py\n- if x:\n-     go()\n+ if x:\n+         go()") == (
        "Edit a.py\n…\n-     go()\n…\n+         go()"
    )
    # a patch: its file lines, hunk headers, context lines and blank lines are left out, the change kept
    patch = "apply_patch a.py\n*** Begin Patch\n*** Update File: a.py\n@@\n def g():\n-    return 1\n+    return 2\n*** End Patch\n"
    assert changed_lines(patch) == "apply_patch a.py\n…\n-    return 1\n+    return 2\n…"
    # nothing to leave out, or nothing that changed: as it was
    for unchanged in (
        "Write new.py\n+ print(1)\n+ print(2)",
        "bash: sed -n 1,40p a.py",
        "Read src/x.py 40-80",
        "Edit a.py\n- x = 1\n- x = 1\n+ x = 1",  # a duplicate line removed: no line reads differently
    ):
        assert changed_lines(unchanged) == unchanged


def test_a_refused_edit_is_a_failed_attempt_that_shows_what_it_tried() -> None:
    """Moatless refuses a str_replace whose old text is not in the file (``fail_reason`` in its raw JSON, "String
    '…' not found in <path>" in what the agent saw). Each such refusal of the run is a failed attempt, and its
    approach (cut to a few hundred characters) shows the change it tried, not the code around it that its old and
    new text share. Checked on the Moatless fixture against its raw JSON."""
    import gzip
    from pathlib import Path

    from offline_compress import Compressor
    from offline_compress.formats import load_history

    path = Path(__file__).parent / "fixtures" / "moatless" / "django__django-15819.trajectory.json.gz"
    history = load_history(path)
    called = "\n".join(c.function.arguments for m in history for c in (m.tool_calls or []))
    nodes = json.loads(gzip.decompress(path.read_bytes()))["nodes"]
    refused = [
        n["action"]
        for n in nodes
        if (n.get("observation") or {}).get("properties", {}).get("fail_reason") == "string_not_found"
        and json.dumps(n["action"]["old_str"])[1:-1] in called  # a call of the run's final path
    ]
    assert len(refused) >= 5
    summary = Compressor(summary_tokens=None).compress(history, keep_last=2)
    failed = [f for f in summary.failed_attempts if "not found in" in f.reason_failed]
    assert failed and all(f.approach.startswith("str_replace_editor ") for f in failed)
    for action in refused:
        old = set(action["old_str"].split("\n"))
        change = next(ln for ln in action["new_str"].split("\n") if ln not in old and ln.strip())
        assert any(" ".join(change.split()) in f.approach for f in failed), (change, failed)


def test_an_applied_edit_whose_tests_failed_still_changed_its_file() -> None:
    """Moatless applies an edit, then runs the tests and reports both in one result: the step failed (its tests
    did), but the file changed. A refused edit changed nothing."""

    def facts_of(result: str):
        edit = {"command": "str_replace", "path": "pkg/mod.py", "old_str": "return a", "new_str": "return b"}
        call = {
            "id": "1",
            "type": "function",
            "function": {"name": "str_replace_editor", "arguments": json.dumps(edit)},
        }
        return extract_facts(
            parse_messages(
                [
                    {"role": "user", "content": "task"},
                    {"role": "assistant", "content": "Fixing it.", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "1", "content": result},
                ]
            )
        )

    applied = facts_of(
        "<observation>\nThe file pkg/mod.py has been edited. Here's the result of running `cat -n` on a snippet:\n"
        "    12\t    return b\n\nRunning tests for the following files:\n * tests/test_mod.py\n\n"
        "* FAILED tests/test_mod.py test_mod>\n```\nAssertionError\n```\n\n3 passed. 1 failed. 0 errors.\n</observation>"
    )
    assert applied.tool_events[0].outcome == "error" and applied.files_changed == ["pkg/mod.py"]
    assert [f.reason_failed for f in applied.failed_attempts] == ["AssertionError"]
    refused = facts_of("<observation>\nString 'return a' not found in pkg/mod.py\n</observation>")
    assert refused.tool_events[0].outcome == "error" and refused.files_changed == []


def test_swe_agent_function_calling_edits_name_the_open_file_and_their_change() -> None:
    """SWE-agent 1.x function calling edits the file it has open: ``edit`` {search, replace}, ``insert`` {text},
    and ``find_file`` looks for {file_name} (tests/fixtures/swe-agent, marshmallow-1867, read here as raw JSON).
    The work log names the file and shows the change (it was a bare ``edit`` before), and the tool-call list's
    target of an edit is the file, not its search text."""
    import gzip
    from pathlib import Path

    from offline_compress import Compressor
    from offline_compress.formats import load_history

    path = Path(__file__).parent / "fixtures" / "swe-agent" / "marshmallow-1867-function-calling.traj.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))["history"]
    calls = {
        c["function"]["name"]: json.loads(c["function"]["arguments"])
        for h in raw
        if not h.get("is_demo")
        for c in h.get("tool_calls") or []
    }
    edit, insert, find = calls["edit"], calls["insert"], calls["find_file"]
    summary = Compressor(summary_tokens=None).compress(load_history(path), keep_last=2)
    ran = {s.ran.split(None, 1)[0]: s.ran for s in summary.work_log}
    edited = ran["edit"].split("\n")
    assert edited[0].startswith("edit ") and edited[0].endswith("src/marshmallow/fields.py")
    assert edited[1:] == [f"- {ln}" for ln in edit["search"].split("\n")] + [
        f"+ {ln}" for ln in edit["replace"].split("\n")
    ]
    inserted = ran["insert"].split("\n")
    assert inserted[0].startswith("insert ") and inserted[0].endswith("reproduce.py")
    assert inserted[1:] == [f"+ {ln}" for ln in insert["text"].split("\n")]
    assert ran["find_file"] == f"find_file {find['file_name']} in {find['dir']}"
    targets = {(t.tool, t.target) for t in summary.tool_calls_summary}
    assert ("edit", "src/marshmallow/fields.py") in targets and ("find_file", find["file_name"]) in targets
