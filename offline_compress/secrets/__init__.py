"""Secrets: detection (``patterns``: vendor key shapes, private-key blocks, assignments and flags; ``detectors``:
detect-secrets' plugins, keyword and entropy detectors, run offline, their regexes with bounded repetitions,
``bounded``) over a line index of the text (``line_view``), and redaction to ``[REDACTED:kind]`` of texts,
messages and tool-call arguments (``redact``); a finished summary's last pass is ``summary.redaction``'s.
Linear in the text, whatever it holds. Nothing here touches the network."""

from __future__ import annotations

from .redact import find_secrets, redact, redact_message, redact_messages

__all__ = ["find_secrets", "redact", "redact_message", "redact_messages"]
