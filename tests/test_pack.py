"""The work log packed into a token budget by what each line adds (``pack.py``): lines, not whole steps, go;
what a line adds is judged by the names it brings that nothing taken (or kept verbatim) already names."""

from __future__ import annotations

from offline_compress.summary import schema as S
from offline_compress.summary.pack import ELLIPSIS, Material, collapse_repeats, names, pack
from offline_compress.tokens.counter import get_counter

count = get_counter()


def _script(lines: int) -> str:
    body = [f"value_{i} = compute_{i}(x)" if i % 10 == 0 else "print('working')" for i in range(lines)]
    return "cat <<'EOF' > repro.py\n" + "\n".join(body) + "\nEOF"


def test_a_long_command_keeps_the_lines_that_name_something_and_marks_the_gaps():
    m = Material.of("", [], _script(60), [], "success")
    (step,) = pack([m], 120, count)
    lines = step.ran.split("\n")
    assert lines[0] == "cat <<'EOF' > repro.py"  # what was done, always
    assert "value_0 = compute_0(x)" in lines and "print('working')" not in lines  # filler adds no name
    assert ELLIPSIS in lines  # the reader sees that lines were left out
    assert all(ln == ELLIPSIS or ln in m.ran for ln in lines)  # every other line verbatim


def test_the_budget_holds_and_newer_steps_win_ties():
    material = [
        Material.of(
            f"Found `helper_{i}` in `lib/mod_{i}.py`.",
            [],
            f"cat lib/mod_{i}.py",
            [f"lib/mod_{i}.py:3: def helper_{i}():"],
            "success",
        )
        for i in range(100, 140)
    ]
    steps = pack(material, 400, count)
    doc = S.CompressedContext(work_log=steps)
    assert count.count_text(doc.to_json()) <= 400 + 40  # per-piece costs; the caller (merge.fit) checks the exact total
    kept = [i for i in range(100, 140) if any(f"helper_{i}" in (s.said + " ".join(s.saw)) for s in steps)]
    assert kept and kept == list(range(140 - len(kept), 140))  # equal pieces: the newest steps


def test_a_failed_steps_error_line_is_kept_before_filler():
    m = Material.of(
        "",
        [],
        "python run.py",
        ["Traceback (most recent call last):", "ModuleNotFoundError: No module named 'yaml'"],
        "error",
        failed_line=1,
    )
    (step,) = pack([m], 40, count)
    assert step.saw[-1] == "ModuleNotFoundError: No module named 'yaml'"
    assert step.outcome == "error"


def test_known_names_add_nothing_and_nothing_is_invented():
    m = Material.of("`alpha_fn` calls `beta_fn`.", ["def alpha_fn(): pass"], "grep -n alpha_fn pkg/a.py", [], "success")
    (known,) = pack([m], 500, count, known={"alpha_fn", "beta_fn", "pkg/a.py"})
    assert known == S.Step(ran="grep -n alpha_fn pkg/a.py", outcome="success")  # only what was done: no new name
    (step,) = pack([m], 500, count)
    assert step.said == "`alpha_fn` calls `beta_fn`." and step.ran == "grep -n alpha_fn pkg/a.py"
    assert step.code == []  # its only name is said already


def test_pack_is_deterministic_and_within_the_schema():
    material = [
        Material.of(
            " ".join(f"Sentence about `name_{i}_{j}`." for j in range(60)),
            [f"code_{i}_{j} = 1" for j in range(50)],
            _script(300),
            [f"out_{i}_{j}.py:1: x" for j in range(40)],
            "partial",
        )
        for i in range(3)
    ]
    a, b = pack(material, 3000, count), pack(material, 3000, count)
    assert a == b and a
    for step in a:
        S.Step.model_validate(step.model_dump())  # within every bound of the schema
        assert len(step.saw) <= S.MAX_SAW_LINES and len(step.code) <= S.MAX_CODE_LINES


def test_a_budget_with_room_keeps_a_long_outputs_named_lines_up_to_the_schemas_bound():
    # a file view whose 30 lines each define something: with room to spare, the step keeps as many as the schema
    # allows (it kept 9: the lines past it were the ones the agent used later, on the design split), in order
    saw = [f"{10 + i}\tdef handler_{i}(request):" for i in range(30)]
    (step,) = pack([Material.of("", [], "ViewCode app/views.py 10-40", saw, "success")], 4000, count)
    assert step.saw == saw[: S.MAX_SAW_LINES] and S.MAX_SAW_LINES == 20
    (small,) = pack([Material.of("", [], "ViewCode app/views.py 10-40", saw, "success")], 120, count)
    assert 0 < len(small.saw) < S.MAX_SAW_LINES  # a tight budget takes fewer


def test_names_are_code_names_and_numbers():
    assert names("see django/db/models.py line 1234 in `Collector.collect`") >= {
        "django/db/models.py",
        "1234",
        "Collector.collect",
    }
    assert "12" not in names("took 12 s")


# ------------------------------------------------------------------------------------------------ repeated calls


def _poll(saw: list[str], outcome: str = "success", said: str = "") -> Material:
    failed = len(saw) - 1 if outcome == "error" and saw else None
    return Material.of(said, [], "BashOutput bash_id=d66418", saw, outcome, failed)


def test_a_call_repeated_in_a_row_with_nothing_said_is_one_step_with_its_count():
    material = [
        Material.of("Start it in the background.", [], "Bash: ssh router docker ps", [], "success"),
        _poll(["<status>running</status>", "<timestamp>08:30:01</timestamp>"]),
        _poll(["<status>running</status>", "<timestamp>08:30:02</timestamp>"]),
        _poll(["<status>running</status>", "<timestamp>08:30:03</timestamp>"]),
        Material.of("", [], "KillShell shell_id=d66418", [], "success"),
    ]
    out = collapse_repeats(material)
    assert [m.ran for m in out] == [material[0].ran, material[1].ran, material[4].ran]
    run = out[1]
    assert run.times == 3
    # every distinct line seen, in order, once
    assert run.saw == (
        "<status>running</status>",
        "<timestamp>08:30:01</timestamp>",
        "<timestamp>08:30:02</timestamp>",
        "<timestamp>08:30:03</timestamp>",
    )
    assert run.whole().times == 3 and out[0].whole().times == 1


def test_what_breaks_a_run_keeps_its_steps_apart():
    said = _poll([], said="Still running; `docker ps` hangs, I will wait once more.")
    failed = _poll(["Error: unexpected parameter `block`"], outcome="error")
    out = collapse_repeats([_poll([]), said, _poll([]), failed, _poll([])])
    # a new sentence of the agent starts a new step (the repeat before it merges); another outcome does too
    assert [(m.times, m.outcome, bool(m.said)) for m in out] == [
        (1, "success", False),
        (2, "success", True),
        (1, "error", False),
        (1, "success", False),
    ]


def test_a_repeated_failure_keeps_its_error_line_last():
    first = _poll(["partial output", "Error: timeout after 10s"], outcome="error")
    second = _poll(["more output", "Error: timeout after 10s"], outcome="error")
    (run,) = collapse_repeats([first, second])
    assert run.times == 2 and run.saw == ("partial output", "more output", "Error: timeout after 10s")
    assert run.failed_line == 2


def test_a_collapsed_step_packs_with_its_count_and_reads_back():
    run = collapse_repeats([_poll(["lib/job.py:12: waiting"]) for _ in range(5)])
    (step,) = pack(run, 200, count)
    assert step.times == 5 and '"times":5' in S.CompressedContext(work_log=[step]).to_json()
    assert "times" not in S.CompressedContext(work_log=[run[0].whole().model_copy(update={"times": 1})]).to_json()
    again = collapse_repeats([Material.of_step(step), *(_poll(["lib/job.py:12: waiting"]) for _ in range(3))])
    assert [m.times for m in again] == [8]  # a run that goes on past a compaction keeps counting


def test_a_line_of_code_keeps_the_path_line_that_heads_it():
    # a search's output: each file's name, then its lines; the files are named elsewhere (known), so their path
    # lines add nothing, but a line of code is shown with the file it is from
    m = Material.of(
        "",
        [],
        'SemanticSearch "choices display"',
        [
            "django/db/models/enums.py",
            "62\tclass Choices(enum.Enum, metaclass=ChoicesMeta):",
            "django/db/models/fields/__init__.py",
            "9\tfrom functools import partialmethod, total_ordering",
        ],
        "success",
    )
    known = names("django/db/models/enums.py django/db/models/fields/__init__.py")
    (step,) = pack([m], 10_000, get_counter(), known=known)
    assert step.saw == list(m.saw)
    # a chosen line with no path line before it stays as it is, and a path line alone is not a header
    assert m.step(saw=[0]).saw == ["django/db/models/enums.py"]
    assert m.step(saw=[3]).saw == ["django/db/models/fields/__init__.py", m.saw[3]]
    bare = Material.of(
        "", [], "grep -rn ChoicesMeta .", ["62\tclass Choices(enum.Enum, metaclass=ChoicesMeta):"], "success"
    )
    assert bare.step(saw=[0]).saw == list(bare.saw)


def test_an_edit_shows_the_new_text_of_a_changed_line_not_the_old():
    # the old and the new line name the same things (a regex's quantifier changed): the reader must see what the
    # file holds now; a removed line stays only for the names the new text no longer holds
    edit = Material.of(
        "",
        [],
        "\n".join(
            [
                "apply_patch src/textkit/slug.py",
                "*** Update File: src/textkit/slug.py",
                '-    return re.sub(r"[^a-z0-9]", "-", text.lower()).strip("-")',
                '+    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")',
                "-    legacy_fold(text)",
                "+    fold_case(text)",
            ]
        ),
        [],
        "success",
    )
    (step,) = pack([edit], 10_000, count)
    lines = step.ran.split("\n")
    assert '+    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")' in lines
    assert not any(ln.startswith("-    return") for ln in lines)
    # legacy_fold is gone from the new text, so its removed line stays
    assert "-    legacy_fold(text)" in lines and "+    fold_case(text)" in lines
    # a diff in what a call printed reads the same way; '---' / '+++' file lines are not removed / added lines
    diff = Material.of(
        "",
        [],
        "git diff",
        ["--- a/pkg/io.py", "+++ b/pkg/io.py", "-    open_stream(path, 'r')", "+    open_stream(path, 'rb')"],
        "success",
    )
    (step,) = pack([diff], 10_000, count)
    assert "+    open_stream(path, 'rb')" in step.saw and "-    open_stream(path, 'r')" not in step.saw
    # a removed line with no added line beside it keeps its names
    (step,) = pack([Material.of("", [], "Edit a.py\n- drop_me(x)", [], "success")], 10_000, count)
    assert step.ran == "Edit a.py\n- drop_me(x)"
