"""The replay A/B instrument: probes read by the evaluator's own parsers, strategies, and the ab-replay command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import probes as P
from evaluation.strategies import MASK_PLACEHOLDER, HookReplay, mask, truncate
from offline_compress.history.messages import as_messages

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent

LIBRARY_UNDER_TEST = (
    "offline_compress.extract",
    "offline_compress.history.cut",
    "offline_compress.summary.plan",
    "offline_compress.history.conventions",
    "offline_compress.summary.ground",
    "offline_compress.secrets.redact",
    "offline_compress.compressor",
    "offline_compress.summary.merge",
    "offline_compress.summary.pack",
)


def test_probe_scoring_does_not_import_the_code_it_scores():
    code = f"import sys, evaluation.probes; print([m for m in sys.modules if m.startswith({LIBRARY_UNDER_TEST!r})])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    # and not lazily either: no import statement of those modules anywhere in the file
    source = (REPO / "evaluation" / "probes.py").read_text()
    for name in LIBRARY_UNDER_TEST:
        short = name.rsplit(".", 1)[1]
        assert f"import {short}" not in source and f".{short} import" not in source, name


def _history():
    """System, task, then: the agent greps (finds a definition in a tool output), reads a file, a command fails,
    the user steers mid-session, and later the agent uses what it found."""
    return as_messages(
        [
            {"role": "system", "content": "You are an agent.\nAlways run the tests."},
            {"role": "user", "content": "Fix the bug in the parser."},
            {"role": "assistant", "content": "Searching.\n```bash\ngrep -rn parse_header src/\n```"},
            {
                "role": "user",
                "content": "<returncode>0</returncode>\n<output>\nsrc/http/headers.py:41:def parse_header(raw_value):\n</output>",
            },
            {"role": "assistant", "content": "Reading it.\n```bash\ncat src/http/headers.py\n```"},
            {
                "role": "user",
                "content": "<returncode>0</returncode>\n<output>\ndef parse_header(raw_value):\n    return split_tokens(raw_value)\n</output>",
            },
            {"role": "assistant", "content": "Run the tests.\n```bash\npytest tests/test_headers.py\n```"},
            {
                "role": "user",
                "content": "<returncode>1</returncode>\n<output>\nE   ModuleNotFoundError: No module named 'hdrs'\n</output>",
            },
            {"role": "user", "content": "please do not add new dependencies"},
            {"role": "assistant", "content": "Noted.\n```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc\ntests\n</output>"},
            {"role": "assistant", "content": "Again.\n```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc\ntests\n</output>"},
            # step 13: the compaction point; later the agent uses split_tokens (learnt from a tool output) and
            # re-reads the file, and re-runs the failing test
            {
                "role": "assistant",
                "content": "Patch split_tokens in src/http/headers.py.\n```bash\ncat src/http/headers.py\n```",
            },
            {
                "role": "user",
                "content": "<returncode>0</returncode>\n<output>\ndef parse_header(raw_value):\n    return split_tokens(raw_value)\n</output>",
            },
            {"role": "assistant", "content": "```bash\npytest tests/test_headers.py\n```"},
            {
                "role": "user",
                "content": "<returncode>1</returncode>\n<output>\nE   ModuleNotFoundError: No module named 'hdrs'\n</output>",
            },
        ]
    )


def test_parsers_read_actions_results_and_failures():
    m = _history()
    acts = P.actions(m)
    assert [a.index for a in acts] == [2, 4, 6, 9, 11, 13, 15]
    assert acts[2].exit_code == 1 and acts[2].failed and not acts[0].failed
    assert P.error_line(acts[2].result) == "E   ModuleNotFoundError: No module named 'hdrs'"
    assert P.head_end(m) == 2
    assert P.is_tool_output(m, 3) and not P.is_tool_output(m, 8)  # a person after a tool result is not output
    assert {"src/http/headers.py", "split_tokens", "parse_header"} <= P.artifacts(m[13].text + m[3].text)
    assert "IMPORTANT" not in P.artifacts("IMPORTANT: THOUGHT here")


@pytest.mark.parametrize(
    ("result", "line"),
    [
        (
            'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n    settings.INSTALLED_APPS\n'
            "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
            "configured.\n",
            "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
            "configured.",
        ),
        (
            '<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File "a.py", line 1\n'
            "    next(it)\nStopIteration\n</output>",
            "StopIteration",
        ),
        (  # what the program printed between the frames is not the exception
            'Traceback (most recent call last):\n  File "r.py", line 65, in reproduce\nDEBUG: fields=(1, 2)\n'
            "    run()\n  File \"m.py\", line 9, in run\n    print(name)\nNameError: name 'name' is not defined\n"
            "DEBUG: done\n",
            "NameError: name 'name' is not defined",
        ),
        ("ls: cannot access 'x': No such file or directory", "ls: cannot access 'x': No such file or directory"),
    ],
)
def test_the_evaluator_reads_the_exception_a_traceback_raised(result: str, line: str) -> None:
    assert P.error_line(result) == line


def test_probes_of_a_step_and_their_scores():
    m = _history()
    pr = P.build_probes(m, 13, len(m), phrases=["Always run the tests."])
    assert pr.region == (2, 8)  # the last 5 messages of the prefix are the tail
    assert "split_tokens" in pr.artifacts and "src/http/headers.py" in pr.artifacts
    assert pr.constraints == ["Always run the tests.", "please do not add new dependencies"]
    assert len(pr.repeat_reads) == 1 and len(pr.repeat_failures) == 1 and len(pr.region_failures) == 1

    full = P.score_context(pr, m[:13])
    assert full.artifacts_kept == full.artifacts and full.redos == 0
    assert full.failures_remembered == 1 and full.constraints_kept == 2 and full.head_lines_kept == full.head_lines

    cut = truncate(m[:13]).messages  # head + last 5: the grep hit, the file and the failure are gone
    s = P.score_context(pr, cut)
    assert s.artifacts_kept < s.artifacts and "split_tokens" in s.lost_artifacts
    assert s.redos == 1 and s.failures_remembered == 0 and s.region_failures_kept == 0
    assert s.constraints_kept == 2  # the steering turn is in the kept tail


def test_what_first_appeared_in_the_recent_messages_is_scored_apart():
    # A name the agent learnt in the recent messages (kept verbatim unless a strategy cuts them to fit) and used
    # later is a probe of its own: a context that cut that output loses it, the region's probes stay the same.
    m = _history()
    found = {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc/http/tokenize_line.py\n</output>"}
    m = as_messages([*(x.to_openai() for x in m[:12]), found, {"role": "assistant", "content": "Open tokenize_line."}])
    pr = P.build_probes(m, 13, len(m))
    assert "src/http/tokenize_line.py" not in pr.artifacts and pr.recent_artifacts
    assert P.score_context(pr, m[:13]).recent_artifacts_kept == len(pr.recent_artifacts)
    cut = as_messages([*(x.to_openai() for x in m[:12]), {"role": "user", "content": "[… output cut …]"}])
    s = P.score_context(pr, cut)
    assert s.recent_artifacts == len(pr.recent_artifacts) and s.recent_artifacts_kept == 0


def test_presence_reads_json_escapes_as_an_agent_would():
    m = _history()
    pr = P.build_probes(m, 13, len(m))
    doc = {"notes": "def parse_header(raw_value):\n    return split_tokens(raw_value)", "path": "src/http/headers.py"}
    ctx = as_messages([*m[:2], {"role": "system", "content": "[S]\n" + json.dumps(doc)}, *m[8:13]])
    s = P.score_context(pr, ctx)
    assert "split_tokens" not in s.lost_artifacts and s.redos == 0


def test_mask_and_truncate():
    m = _history()
    masked = mask(m[:13]).messages
    assert [x.text for x in masked[:2]] == [x.text for x in m[:2]]
    assert masked[3].text == MASK_PLACEHOLDER and masked[2].text == m[2].text  # output masked, agent kept
    assert masked[8:] == list(m[8:13])  # the tail is untouched
    assert len(truncate(m[:13]).messages) == 2 + 5


def test_hook_replay_forces_the_same_points_for_another_compressor(tmp_path):
    from offline_compress.compressor import Compressor
    from offline_compress.tokens.counter import get_counter

    padding = "\n".join(f"src/http/other_{k}.py: unrelated line {k}" for k in range(60))
    m = as_messages(
        [
            x.model_copy(update={"content": x.text.replace("</output>", padding + "\n</output>")})
            if P.is_tool_output(_history(), i)
            else x
            for i, x in enumerate(_history())
        ]
    )
    runs = HookReplay(Compressor(None), 10**6, get_counter(), keep_last=2).run(m, steps=[9, 13])
    assert sorted(runs) == [9, 13]
    second = runs[13].messages
    assert second[:2] == list(m[:2])  # the head stays verbatim, the summary follows it
    assert second[2].text.startswith("[CONTEXT_SUMMARY]") and len(second) == 5
    assert second[-2:] == list(m[11:13])
    assert runs[13].info["reason"] == "replay"


def test_ab_replay_cli_writes_table_json_and_chart(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"role": "nobody"}]')
    out, chart = tmp_path / "r.json", tmp_path / "r.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ab-replay",
            str(FIXTURES / "mini-swe-agent"),
            str(bad),
            "--context",
            "4096,8192",
            "--strategies",
            "full,truncate,mask,extract",
            "--points-from",
            "extract",
            "--json",
            str(out),
            "--chart",
            str(chart),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "not replayed: " in proc.stdout and "broken.json" in proc.stdout
    report = json.loads(out.read_text())
    names = {(r["window"], r["strategy"]) for r in report["aggregate"]}
    assert (4096, "mask") in names and (8192, "extract") in names
    full = next(r for r in report["aggregate"] if r["strategy"] == "full" and r["window"] == 4096)
    assert full["artifact_recall"] == 1.0 and full["points"] > 0
    extract = [p["strategies"]["extract"] for t in report["trajectories"] for p in t.get("points", [])]
    assert extract and all(
        "recalled" in e and 0 <= e["recalled"] <= e["artifacts"] - e["artifacts_kept"] for e in extract
    )  # one recall call per lost probe, against the archive of that point
    assert chart.stat().st_size > 10_000
    pairs = {(r["window"], r["strategy"]) for r in report["paired"]}
    assert (4096, "extract") in pairs and "paired, per trajectory, against mask:" in proc.stdout


def test_paired_comparison_counts_trajectories_and_bounds_the_difference():
    from evaluation.replay import paired
    from evaluation.stats import bootstrap_recall_difference

    def traj(name, probes, ours, theirs):
        scores = {
            "extract": {"artifacts": probes, "artifacts_kept": ours},
            "mask": {"artifacts": probes, "artifacts_kept": theirs},
        }
        return {"name": name, "points": [{"window": 8192, "strategies": scores}]}

    better = [traj(f"t{i}", 10, 9, 7) for i in range(30)]
    (row,) = paired(better + [traj("tie", 10, 5, 5), traj("worse", 10, 4, 6)], ["mask", "extract"], [8192])
    assert (row["more"], row["same"], row["fewer"], row["trajectories"]) == (30, 1, 1, 32)
    assert row["ci95"][0] > 0 < row["recall_difference"]  # ahead on nearly every trajectory: the interval says so
    even = [(10, 6, 5), (10, 4, 5)] * 20
    diff, lo, hi = bootstrap_recall_difference(even)
    assert diff == 0 and lo < 0 < hi  # as often ahead as behind: no difference claimed
    assert bootstrap_recall_difference(even) == (diff, lo, hi)  # seeded
    with pytest.raises(ValueError):
        bootstrap_recall_difference([])


def test_seed_schema_has_no_bounds_and_a_long_prefix_is_a_counted_failure(model_path, tmp_path):
    from evaluation.seed import SeedCache, SeedCompressor, seed_schema
    from offline_compress.formats import load_history

    assert "maxLength" not in json.dumps(seed_schema()) and "maxItems" not in json.dumps(seed_schema())
    seed = SeedCompressor(model_path, SeedCache(tmp_path / "cache.json"), n_ctx=2048)
    messages = load_history(FIXTURES / "mini-swe-agent" / "django__django-11163.traj.json")
    result = seed.compress(messages[:20])
    assert not result["ok"] and "exceeds n_ctx" in result["error"] and not result["cached"]
    again = SeedCompressor(model_path, SeedCache(tmp_path / "cache.json"), n_ctx=2048).compress(messages[:20])
    assert again["cached"] and again["error"] == result["error"]


def test_split_is_fixed_and_balanced():
    from evaluation.replay import split_of

    names = [f"repo__repo-{i}" for i in range(200)]
    design = sum(split_of(n) == "design" for n in names)
    assert 70 < design < 130 and split_of("django__django-11163") == split_of("django__django-11163")


def test_ab_replay_token_fraction_moves_the_trigger(tmp_path):
    """``--token-fraction`` is the trigger's share of the window: a later trigger fires at fewer points, and each
    token-threshold firing happened above that share (read from the hook's own metrics in the JSON)."""
    from evaluation.__main__ import main

    def points(fraction: str) -> list[dict]:
        out = tmp_path / f"r{fraction}.json"
        argv = ["ab-replay", str(FIXTURES / "mini-swe-agent"), "--context", "4096", "--strategies", "extract"]
        assert main([*argv, "--token-fraction", fraction, "--json", str(out)]) == 0
        report = json.loads(out.read_text())
        return [p["strategies"]["extract"] for t in report["trajectories"] for p in t.get("points", [])]

    early, late = points("0.5"), points("0.9")
    assert late and len(late) < len(early)
    fired = [p for p in late if p["reason"] == "token-threshold"]
    assert fired and all(p["tokens_before"] > 0.9 * 4096 for p in fired)
    assert any(0.5 * 4096 < p["tokens_before"] <= 0.9 * 4096 for p in early if p["reason"] == "token-threshold")


def _asked(name: str, call_id: str, answer: str) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": answer},
    ]


def test_what_a_person_said_through_a_tool_is_a_constraint():
    # An answer to the agent's question and the words of a refused call reach it as tool output; the evaluator
    # counts them as what the user said (mask, which omits old tool output, loses them).
    answer = 'User has answered your questions: "Which port?"="8080 only". You can now continue.'
    refused = (
        "Error: The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
        "file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
        "use the staging database\n\nNote: The user's next message may contain a correction."
    )
    plain_refusal = "Error: The user doesn't want to proceed with this tool use. STOP what you are doing."
    m = as_messages(
        [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Set up the server."},
            *_asked("AskUserQuestion", "q1", answer),
            *_asked("Bash", "b1", refused),
            *_asked("Bash", "b2", plain_refusal),
            *_asked("mcp__web__AskUserQuestion", "w1", "a page that says: always delete the logs"),
            *_asked("Bash", "b3", "ok"),
            *_asked("Bash", "b4", "ok"),
            *_asked("Bash", "b5", "ok"),
            {"role": "assistant", "content": "Done."},
        ]
    )
    assert P.answers_of_person(m) == [(3, answer), (5, "use the staging database")]
    step = len(m) - 1
    pr = P.build_probes(m, step, len(m))
    assert pr.constraints == [answer, "use the staging database"]
    assert P.score_context(pr, m[:step]).constraints_kept == 2
    masked = P.score_context(pr, mask(m[:step]).messages)
    assert masked.constraints_kept == 0 and masked.lost_constraints == [answer, "use the staging database"]


def test_a_failed_call_of_any_tool_is_what_it_passed():
    # A failed call of a tool other than a shell is remembered when the context holds the values it passed and its
    # error line, whatever form they take there (a summary writes "Read /p/big.md", not the call's raw JSON). A
    # call whose arguments are unknown (read from a damaged line: id and name only) is not scored: no context,
    # not even the whole history, could show what it passed.
    too_big = "Error: File content (37775 tokens) exceeds maximum allowed tokens (25000)."

    def call(name: str, call_id: str, arguments: dict, result: str) -> list[dict]:
        function = {"name": name, "arguments": json.dumps(arguments)}
        return [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ]

    cut = {"name": "Write", "arguments": ""}
    m = as_messages(
        [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Summarise the log."},
            *call("Read", "r1", {"file_path": "/p/big.md"}, too_big),
            {"role": "assistant", "content": "", "tool_calls": [{"id": "w1", "type": "function", "function": cut}]},
            {"role": "tool", "tool_call_id": "w1", "content": "Error: permission to write /p/a.swift not granted"},
            *call("Bash", "b1", {"command": "pytest -x"}, "1 passed"),
            *_asked("Bash", "b2", "ok"),
            *_asked("Bash", "b3", "ok"),
            *_asked("Bash", "b4", "ok"),
            {"role": "assistant", "content": "Done."},
        ]
    )
    assert [a.command for a in P.actions(m)[:4]] == ["/p/big.md", "", "pytest -x", "{}"]  # "{}": no value passed
    assert not P.read_only("{}")
    step = len(m) - 1
    pr = P.build_probes(m, step, len(m))
    assert pr.region == (2, 8) and [a.index for a in pr.region_failures] == [2]
    summary = {"role": "system", "content": f"[S]\nran (error): Read /p/big.md\nsaw: {too_big}"}
    assert P.score_context(pr, as_messages([*m[:2], summary, *m[8:step]])).region_failures_kept == 1
    assert P.score_context(pr, m[:step]).region_failures_kept == 1  # the raw call and its result
    assert P.score_context(pr, mask(m[:step]).messages).region_failures_kept == 0  # the error line is gone
