"""Plain-text report lines for the nightly build summary."""


def format_row(name: str, passed: int, failed: int, skipped: int, seconds: float) -> str:
    """One table row: the suite name padded to 20 characters, then the counts and the time taken in seconds."""
    return f"{name:<20} passed={passed:<5} failed={failed:<5} skipped={skipped:<5} time={seconds:.1f}s"


def summary_line(rows: list) -> str:
    total_failed = sum(failed for _, _, failed, _, _ in rows)
    status = "FAILED" if total_failed else "OK"
    return f"{status}: {len(rows)} suites, {total_failed} failures (see the build log for the full list of failing tests)"
