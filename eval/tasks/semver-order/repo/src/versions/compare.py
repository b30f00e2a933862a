"""Release version strings such as ``1.4.2`` or ``v2.0``."""


def parse(version: str) -> tuple:
    """The parts of ``version`` (a leading ``v`` is allowed), padded to major.minor.patch."""
    text = version.strip()
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {version!r}")
    return tuple(parts)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version ``a`` is older than, equal to or newer than ``b``."""
    pa, pb = parse(a), parse(b)
    return (pa > pb) - (pa < pb)


def latest(versions: list) -> str:
    """The newest of ``versions``."""
    return max(versions, key=parse)
