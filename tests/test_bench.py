"""Arithmetic of the benchmark's derived figures (the timings themselves are only smoke-tested, in test_cli)."""

import pytest

from evaluation.bench import _decode_script, rate_ceiling, read_bandwidth_gb_s


def test_outside_decode_overhead_separates_the_constraint_from_the_decodes():
    bd = _decode_script()
    # unconstrained: 100 decodes of 30 ms, 0.2 ms of argmax each; constrained: the same decodes but 40% slower
    # (noise), 0.5 ms of work between decodes
    a = [{"decodes": 100, "seconds": 100 * 0.0302, "decode_seconds": 100 * 0.030}]
    c = [{"decodes": 100, "seconds": 100 * 0.0425, "decode_seconds": 100 * 0.042}]
    split = bd.outside_decode_overhead(c, a)
    assert split["outside_decode_ms_constrained"] == pytest.approx(0.5)
    assert split["outside_decode_ms_unconstrained"] == pytest.approx(0.2)
    assert split["overhead"] == pytest.approx(0.3 / 30.2)  # the slower decodes do not count
    assert split["decode_ratio"] == pytest.approx(1.4)  # but are reported
    assert split["end_to_end"] == pytest.approx(0.0425 / 0.0302 - 1)  # the plain comparison, noise included


def test_read_bandwidth_is_positive_and_restores_numba_threads():
    import numba

    before = numba.get_num_threads()
    assert read_bandwidth_gb_s(1, size_mb=16, repeats=2) > 0.1
    assert numba.get_num_threads() == before


def test_rotating_order_and_rate_ceiling():
    calls = []
    runs = _decode_script().run_rotating({k: (lambda k=k: calls.append(k) or k) for k in "xyz"}, 4)
    assert calls == list("xyzyzxzxyxyz")
    assert runs == {"x": ["x"] * 4, "y": ["y"] * 4, "z": ["z"] * 4}
    assert rate_ceiling(0.0, 0.2) == 1.0
    assert rate_ceiling(0.5, 0.2) == pytest.approx(1 / 0.6)  # half the tokens at a fifth of a decode


def test_sections_are_chosen_by_name_in_the_bench_order():
    from evaluation.bench import GPU_SECTIONS, SECTIONS, parse_sections

    assert parse_sections(None, False) == list(SECTIONS)
    assert parse_sections("server, trigger", False) == ["trigger", "server"]  # the bench's order, not the caller's
    assert parse_sections("trigger", True) == list(GPU_SECTIONS)  # --gpu-only wins
    assert set(GPU_SECTIONS) <= set(SECTIONS)
    with pytest.raises(ValueError, match="unknown bench section.*gpus.*known: trigger"):
        parse_sections("trigger,gpus", False)
