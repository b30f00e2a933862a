"""URL slugs for article titles."""

import unicodedata


def slugify(title: str, max_length: int = 60) -> str:
    """Lower-case ASCII slug of ``title``: accents removed, words joined by single dashes,
    no leading or trailing dash, at most ``max_length`` characters."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = "".join(ch if ch.isalnum() else "-" for ch in text.lower())
    return slug[:max_length]
