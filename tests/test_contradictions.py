"""The contradiction counter: constraints -> typed rules, actions -> contradictions, ``final`` from the tree."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from offline_compress import count_contradictions
from offline_compress.cli import main
from offline_compress.contradictions import derive_rules, is_config_path, is_test_path, parse_shell
from offline_compress.formats import load_history

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini-swe-agent"
DO_NOT_MODIFY = "- DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)"


def mini(instruction: str, *commands: str, outputs: dict[int, str] | None = None) -> list[dict]:
    """A mini-swe-agent history: the task with ``instruction``, then one ```bash block per command, each
    answered by a ``<returncode>0`` user message (or ``outputs[k]`` for the k-th command)."""
    history = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer shell."},
        {
            "role": "user",
            "content": f"<pr_description>Fix the bug.</pr_description>\n<instructions>\n{instruction}\n</instructions>",
        },
    ]
    for k, command in enumerate(commands):
        history.append({"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{command}\n```"})
        output = (outputs or {}).get(k, "")
        history.append({"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}</output>"})
    return history


def hits(report, rule: str | None = None) -> list[tuple[int, str, bool]]:
    return [(c.step, c.target, c.final) for c in report.contradictions if rule is None or c.rule == rule]


# ---------------------------------------------------------------------------------------- definitions


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_x.py",
        "pkg/tests/helpers.py",
        "testing/conftest.py",
        "test_repro.py",
        "pkg/foo_test.py",
        "app/tests.py",
        "conftest.py",
        "web/a.spec.ts",
        "go/x_test.go",
        "/testbed/sympy/core/tests/test_basic.py",
    ],
)
def test_test_files(path):
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/testing_utils.py",
        "test.py",
        "contest.py",
        "pkg/attest/a.py",
        "test_data.json",
        "reproduce.py",
        "test_app/models.py",
    ],
)
def test_not_test_files(path):
    assert not is_test_path(path)


def test_config_files():
    for path in (
        "pyproject.toml",
        "a/setup.cfg",
        "setup.py",
        "tox.ini",
        "requirements-dev.txt",
        ".github/workflows/ci.yml",
    ):
        assert is_config_path(path), path
    for path in ("src/config.py", "settings.py", "docs/conf.py"):
        assert not is_config_path(path), path


# --------------------------------------------------------------------------------------- constraints


@pytest.mark.parametrize(
    "text, names",
    [
        (DO_NOT_MODIFY, ["protected-path:tests", "protected-path:config"]),
        ("Do not modify the tests directory.", ["protected-path:tests"]),
        ("Never edit src/legacy/ or `vendor/lib.py`.", ["protected-path:src/legacy/", "protected-path:vendor/lib.py"]),
        ("Your task is to make changes to non-test files.", ["protected-path:tests"]),
        ("The migrations folder `db/migrations/` must not be modified.", ["protected-path:db/migrations/"]),
        ("Only change files under src/.", ["only-under:src/"]),
        ("Please restrict your changes to the `lib` folder.", ["only-under:lib"]),
        ("Don't install other packages.", ["no-install"]),
        ("Do not install numpy or pandas.", ["no-install:numpy,pandas"]),
        ("No new dependencies, please.", ["no-install"]),
        ("Never push to main.", ["no-push:main,master"]),
        ("Do not push to the release-1.x branch.", ["no-push:release-1.x"]),
        ("Never push to the remote.", ["no-push"]),
        ("Use httpx, not requests.", ["forbidden-name:requests"]),
        ("Use pytest instead of unittest for new tests.", ["forbidden-name:unittest"]),
        ("don't use --no-git in those tests", ["forbidden-name:--no-git"]),
    ],
)
def test_constraints_become_rules(text, names):
    rules, unchecked = derive_rules([(text, 1)])
    assert [r.name for r in rules] == names
    assert all(r.constraint == text.strip() for r in rules) and unchecked == []


def test_uncheckable_instructions_are_listed_not_counted():
    rules, unchecked = derive_rules(
        [
            (
                "Fix the parser.\nAlways use non-interactive flags (-y, -f) for commands.\n"
                "Do not change the public API.\nAvoid interactive tools like vi, nano.\nThe function should not crash.",
                1,
            )
        ]
    )
    assert rules == []
    assert unchecked == [
        "Always use non-interactive flags (-y, -f) for commands.",
        "Do not change the public API.",
        "Avoid interactive tools like vi, nano.",
    ]


def test_constraints_come_from_genuine_text_only():
    history = [
        {"role": "user", "content": "Fix the build."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat NOTES"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "NOTE: do not modify tests. Never push to main."},
        {"role": "assistant", "content": "I will also never push to main. Use httpx, not requests."},
    ]
    assert count_contradictions(history).rules == []
    # mini-swe-agent: results come back as user messages
    assert (
        count_contradictions(mini("Fix it.", "cat README", outputs={0: "Do not install other packages.\n"})).rules == []
    )


def test_a_fence_left_open_in_the_task_does_not_hide_the_instructions():
    task = (
        "<pr_description>\nRepro:\n```\n>>> f()\n</pr_description>\n<instructions>\n"
        + DO_NOT_MODIFY
        + "\n</instructions>"
    )
    rules, _ = derive_rules([(task, 1)])
    assert [r.name for r in rules] == ["protected-path:tests", "protected-path:config"]


# -------------------------------------------------------------------------------------- protected paths


def test_edit_then_revert_is_not_final():
    report = count_contradictions(
        mini(
            DO_NOT_MODIFY,
            "sed -i 's/1/2/' tests/test_x.py",
            "python -m pytest tests/test_x.py",
            "git checkout tests/test_x.py",
        )
    )
    assert hits(report) == [(2, "tests/test_x.py", False)]
    c = report.contradictions[0]
    assert c.rule == "protected-path:tests" and c.constraint == DO_NOT_MODIFY
    assert c.evidence == "sed -i 's/1/2/' tests/test_x.py"


def test_edit_left_in_place_is_final_and_an_untouched_config_is_nothing():
    report = count_contradictions(mini(DO_NOT_MODIFY, "echo 'x = 1' >> pkg/tests/test_a.py", "cat setup.cfg"))
    assert hits(report) == [(2, "pkg/tests/test_a.py", True)]


def test_scratch_test_file_created_then_removed_vs_kept():
    removed = count_contradictions(
        mini(DO_NOT_MODIFY, "cat <<'EOF' > test_repro.py\nimport pkg\nEOF", "python test_repro.py", "rm test_repro.py")
    )
    assert hits(removed) == [(2, "test_repro.py", False)]
    kept = count_contradictions(
        mini(DO_NOT_MODIFY, "cat <<'EOF' > test_repro.py\nimport pkg\nEOF", "python test_repro.py")
    )
    assert hits(kept) == [(2, "test_repro.py", True)]  # git add -A puts untracked files in the submitted patch


def test_backup_copy_restored_over_the_file_undoes_it():
    report = count_contradictions(
        mini(
            DO_NOT_MODIFY,
            "cp tests/test_x.py /tmp/test_x.bak && sed -i 's/a/b/' tests/test_x.py",
            "cp /tmp/test_x.bak tests/test_x.py",
        )
    )
    assert hits(report) == [(2, "tests/test_x.py", False)]


def test_deleting_a_test_file_that_existed_is_final_but_rm_of_a_missing_file_is_nothing():
    gone = count_contradictions(mini(DO_NOT_MODIFY, "rm tests/test_old.py"))
    assert hits(gone) == [(2, "tests/test_old.py", True)]
    missing = count_contradictions(
        mini(
            DO_NOT_MODIFY, "rm test_tmp.py", outputs={0: "rm: cannot remove 'test_tmp.py': No such file or directory\n"}
        )
    )
    assert hits(missing) == []


def test_stash_and_pop():
    popped = count_contradictions(mini(DO_NOT_MODIFY, "sed -i 's/a/b/' tests/test_x.py", "git stash", "git stash pop"))
    assert hits(popped) == [(2, "tests/test_x.py", True)]
    dropped = count_contradictions(mini(DO_NOT_MODIFY, "sed -i 's/a/b/' tests/test_x.py", "git stash"))
    assert hits(dropped) == [(2, "tests/test_x.py", False)]


def test_python_script_written_then_run_edits_the_file_it_names():
    script = "cat <<'EOF' > fix.py\npath = 'tests/test_x.py'\ntext = open(path).read()\nwith open(path, 'w') as f:\n    f.write(text)\nEOF"
    report = count_contradictions(mini(DO_NOT_MODIFY, script, "python fix.py && rm fix.py"))
    assert hits(report) == [(4, "tests/test_x.py", True)]
    assert report.contradictions[0].evidence == "python fix.py"


def test_cd_and_absolute_paths_name_the_same_file():
    report = count_contradictions(
        mini(
            DO_NOT_MODIFY,
            "cd /testbed/pkg && sed -i 's/a/b/' tests/test_x.py",
            "git checkout pkg/tests/test_x.py",
        )
    )
    assert hits(report) == [(2, "/testbed/pkg/tests/test_x.py", False)]


def test_scratch_files_outside_the_tree_never_count():
    report = count_contradictions(mini(DO_NOT_MODIFY, "cat <<'EOF' > /tmp/test_scratch.py\nx = 1\nEOF"))
    assert hits(report) == []


def test_a_reply_with_several_blocks_is_not_run():
    history = mini(DO_NOT_MODIFY)
    history.append({"role": "assistant", "content": "```bash\nsed -i 's/a/b/' tests/test_x.py\n```\n```bash\nls\n```"})
    history.append(
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}
    )
    assert count_contradictions(history).contradictions == []


def test_sed_backup_suffix_leaves_a_new_file_behind():
    report = count_contradictions(
        mini(DO_NOT_MODIFY, "sed -i.bak 's/a/b/' tests/test_x.py", "git checkout tests/test_x.py")
    )
    assert hits(report) == [(2, "tests/test_x.py.bak", True), (2, "tests/test_x.py", False)]


def test_a_shell_block_in_a_plain_chat_is_a_suggestion_not_an_action():
    # A chat (3+ replies, fewer than half with a shell block): the block is a suggestion, the reply the user's.
    # (In a history of fewer than 3 replies a reply to a shell block is taken for its output, the safe side against
    # injection: ``history.conventions``, the definition the compressor uses too.)
    history = [
        {"role": "user", "content": "How do I reset my test? Do not modify the tests."},
        {"role": "assistant", "content": "Which test do you mean?"},
        {"role": "user", "content": "The one in tests/test_x.py."},
        {"role": "assistant", "content": "Then it is a plain file."},
        {"role": "user", "content": "So how do I reset it?"},
        {"role": "assistant", "content": "You could run:\n```bash\nrm tests/test_x.py\n```"},
        {"role": "user", "content": "No, do not install anything either."},
    ]
    report = count_contradictions(history)
    assert report.contradictions == []
    assert [r.name for r in report.rules] == ["protected-path:tests", "no-install"]  # the reply is the user's


def test_git_diff_output_reveals_a_change_no_parsed_command_made():
    diff = "diff --git a/tests/test_x.py b/tests/test_x.py\nindex 1..2 100644\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
    report = count_contradictions(mini(DO_NOT_MODIFY, "./tools/regen.sh", "git diff", outputs={1: diff}))
    assert hits(report) == [(4, "tests/test_x.py", True)]
    assert report.contradictions[0].evidence == "diff --git a/tests/test_x.py b/tests/test_x.py"


def test_a_whole_tree_diff_shows_what_no_longer_differs():
    report = count_contradictions(
        mini(
            DO_NOT_MODIFY,
            "sed -i 's/no-such-text/x/' tests/test_x.py",  # sed rewrote nothing
            "git diff",
            outputs={1: "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"},
        )
    )
    assert hits(report) == [(2, "tests/test_x.py", False)]


def test_constraint_applies_only_after_it_was_given():
    history = mini("Fix it.", "sed -i 's/a/b/' tests/test_x.py")
    history.append({"role": "user", "content": "From now on, do not modify the tests."})
    history.append({"role": "assistant", "content": "```bash\nsed -i 's/c/d/' tests/test_y.py\n```"})
    history.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"})
    assert hits(count_contradictions(history)) == [(5, "tests/test_y.py", True)]


# ------------------------------------------------------------------------------------ other formats


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def test_openai_tool_calls_editor_and_shell():
    history = [
        {"role": "system", "content": "Do not modify the tests. Only change files under src/."},
        {"role": "user", "content": "Add a --verbose flag."},
        _call(
            "c1", "str_replace_editor", {"command": "create", "path": "/repo/tests/test_new.py", "file_text": "x = 1\n"}
        ),
        {"role": "tool", "tool_call_id": "c1", "content": "File created."},
        _call(
            "c2",
            "str_replace_editor",
            {"command": "str_replace", "path": "/repo/src/cli.py", "old_str": "a", "new_str": "b"},
        ),
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        _call("c3", "execute_bash", {"command": "cd /repo && rm tests/test_new.py && echo hi > README.md"}),
        {"role": "tool", "tool_call_id": "c3", "content": "hi"},
    ]
    report = count_contradictions(history)
    assert [(c.rule, c.step, c.target, c.final) for c in report.contradictions] == [
        ("protected-path:tests", 2, "/repo/tests/test_new.py", False),
        ("only-under:src/", 2, "/repo/tests/test_new.py", False),
        ("only-under:src/", 6, "/repo/README.md", True),
    ]
    assert report.contradictions[0].evidence.startswith('str_replace_editor {"command": "create"')


def test_swe_agent_text_actions_edit_the_open_file():
    messages = load_history(FIXTURES / "swe-agent" / "swe-agent__test-repo-i1.traj")
    report = count_contradictions(messages, constraints=["Do not modify the tests."])
    assert [(c.step, c.target, c.final, c.evidence) for c in report.contradictions] == [
        (6, "tests/missing_colon.py", True, "edit 4:4")
    ]
    assert report.rules[0].message_index is None


def test_aider_edits_checked_for_a_forbidden_flag():
    session = """# aider chat started at 2024-08-06 08:55:14

#### don't use --no-git in the tests

Here is the change:

tests/test_main.py
```python
<<<<<<< SEARCH
def test_a():
    main([])
=======
def test_a():
    main(["--no-git"])
>>>>>>> REPLACE
```

> Applied edit to tests/test_main.py  
"""
    from offline_compress.formats import parse_history

    report = count_contradictions(parse_history(session, "session.md"))
    # final: the flag went into a file that is still changed at the end
    assert [(c.rule, c.final) for c in report.contradictions] == [("forbidden-name:--no-git", True)]
    assert report.contradictions[0].evidence == "Applied edit to tests/test_main.py"


# ------------------------------------------------------------------------------ install, push, names


def test_no_install():
    report = count_contradictions(
        mini(
            "Don't install other packages.",
            "pip install -e . && pip install requests==2.31",
            "python -m pip install 'rich[jupyter]>=13'",
            "pip uninstall -y rich",
            "apt-get install -y jq",
        )
    )
    assert [(c.step, c.target, c.final) for c in report.contradictions] == [
        (2, "requests", True),
        (4, "rich", False),
        (8, "jq", True),
    ]
    assert report.contradictions[0].evidence == "pip install requests==2.31"


def test_no_push_to_main():
    report = count_contradictions(
        mini(
            "Never push to main.",
            "git push origin feature-x",
            "git push origin HEAD:main",
            "git checkout master && git push",
            "git checkout -b fix && git push",
        )
    )
    # main and master both stand for the default branch
    assert [(c.step, c.target, c.final) for c in report.contradictions] == [(4, "main", True), (6, "master", True)]
    history = mini("Never push to release.", "git checkout release", "git push", "git push origin main")
    assert [(c.step, c.target) for c in count_contradictions(history).contradictions] == [(4, "release")]


def test_forbidden_library_in_written_and_run_code():
    report = count_contradictions(
        mini(
            "Use httpx, not requests.",
            "cat <<'EOF' > src/client.py\nimport requests\nEOF",
            "python -c 'import requests.adapters'",
            "cat <<'EOF' > src/other.py\nimport requests_toolbelt\nEOF",
        )
    )
    assert [(c.step, c.evidence, c.final) for c in report.contradictions] == [
        (2, "import requests", True),
        (4, "import requests.adapters", False),
    ]
    removed = count_contradictions(
        mini("Use httpx, not requests.", "cat <<'EOF' > src/client.py\nimport requests\nEOF", "rm src/client.py")
    )
    assert [c.final for c in removed.contradictions] == [False]


# -------------------------------------------------------------------------------------- properties


def test_shell_parser_keeps_heredoc_bodies_out_of_the_commands():
    cmds = parse_shell("cat <<'EOF' > a.py\nrm -rf /\nEOF\nsed -i 's/x/y/' b.py && echo 'a; b' | tee c.txt")
    assert [c.words for c in cmds] == [["cat"], ["sed", "-i", "s/x/y/", "b.py"], ["echo", "a; b"], ["tee", "c.txt"]]
    assert cmds[0].redirects == [("<<", "rm -rf /\n"), (">", "a.py")]


def test_a_redirection_keeps_its_descriptor_and_the_counter_still_reads_a_write():
    # The lexer (shared with the extractor) keeps ``2>``; the counter reads it as ``>`` (a file written), as
    # ``>&`` with a file; a copied descriptor (``2>&1``) is no file at all.
    cmds = parse_shell("pytest 2> tests/log.txt >&tests/out.txt 2>&1")
    assert cmds[0].redirects == [("2>", "tests/log.txt"), (">&", "tests/out.txt")]
    report = count_contradictions(mini(DO_NOT_MODIFY, "pytest 2> tests/log.txt >&tests/out.txt 2>&1"))
    assert [c.target for c in report.contradictions] == ["tests/log.txt", "tests/out.txt"]


def test_same_input_same_report_and_the_input_is_not_modified():
    history = mini(DO_NOT_MODIFY, "sed -i 's/a/b/' tests/test_x.py", "pip install x")
    before = copy.deepcopy(history)
    first = count_contradictions(history).model_dump_json()
    assert count_contradictions(history).model_dump_json() == first
    assert history == before


def test_the_counter_does_not_import_the_extractor():
    code = "import sys, offline_compress.contradictions; print('offline_compress.extract' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent
    )
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------------- real runs


def _patch_test_files(path: Path) -> set[str]:
    """The test files of the run's submitted patch, read with a parser of this test (not the counter's)."""
    submission = json.loads(path.read_text())["info"]["submission"]
    files = re.findall(r"^diff --git a/\S+ b/(\S+)", submission, re.M)
    return {f for f in files if "/tests/" in f"/{f}" or f.split("/")[-1].startswith("test_")}


@pytest.mark.parametrize(
    "name", ["scikit-learn__scikit-learn-12585", "astropy__astropy-7336", "psf__requests-2317", "django__django-11163"]
)
def test_real_runs_final_state_matches_the_submitted_patch(name):
    path = MINI / f"{name}.traj.json"
    messages = load_history(path)
    last = max(i for i, m in enumerate(messages) if m.role == "assistant")
    report = count_contradictions(messages[: last + 1])  # without the submit command's output (the patch itself)
    final = {c.target for c in report.contradictions if c.final and c.rule == "protected-path:tests"}
    assert final == _patch_test_files(path)
    assert [r.name for r in report.rules] == ["protected-path:tests", "protected-path:config"]
    if name == "scikit-learn__scikit-learn-12585":
        assert final == {"sklearn/tests/test_base.py"}
        assert any(not c.final for c in report.contradictions)  # a scratch test file, removed before submitting
    if name == "astropy__astropy-7336":
        assert report.contradictions and not final  # scratch test files, all removed


# --------------------------------------------------------------------------------------------- CLI


def test_cli_one_line_per_file_and_a_bad_file_is_one_line_on_stderr(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code = main(
        [
            "contradictions",
            str(MINI / "scikit-learn__scikit-learn-12585.traj.json"),
            str(bad),
            str(MINI / "django__django-11163.traj.json"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "bad.json" in err and "Traceback" not in err
    lines = out.splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["file"].endswith("scikit-learn__scikit-learn-12585.traj.json")
    assert {"rule", "constraint", "step", "evidence", "final"} <= set(first["contradictions"][0])
    assert any(c["final"] for c in first["contradictions"]) and second["contradictions"] == []
    assert isinstance(first["unchecked"], list)


def test_cli_json_is_one_array(capsys):
    assert main(["contradictions", "--json", str(MINI / "django__django-11163.traj.json")]) == 0
    document = json.loads(capsys.readouterr().out)
    assert isinstance(document, list) and document[0]["contradictions"] == []
