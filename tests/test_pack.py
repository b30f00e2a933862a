"""The work log packed into a token budget by what each line adds (``pack.py``): lines, not whole steps, go;
what a line adds is judged by the names it brings that nothing taken (or kept verbatim) already names."""

from __future__ import annotations

from offline_compress.summary import schema as S
from offline_compress.summary.pack import ELLIPSIS, Material, names, pack
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


def test_names_are_code_names_and_numbers():
    assert names("see django/db/models.py line 1234 in `Collector.collect`") >= {
        "django/db/models.py",
        "1234",
        "Collector.collect",
    }
    assert "12" not in names("took 12 s")
