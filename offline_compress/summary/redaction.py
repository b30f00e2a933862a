"""The last pass over a finished summary: every string of a ``CompressedContext`` through ``redact``.

Each field is meant to be redacted where it is built, from the full text; this pass catches what reached the
document another way (a tool name, a path, an item carried over from an earlier summary, a model sentence)
and costs little (a summary is a few kB). A marker can be longer than the secret it replaces: a string that
then exceeds its field's bound is cut at the bound (ending in "…"), so the result is always a valid document.
The pass is idempotent (``[REDACTED:kind]`` is not a secret).
"""

from __future__ import annotations

import functools
import operator

from pydantic import ValidationError

from ..secrets.redact import redact_json
from .pack import clip
from .schema import CompressedContext


def redact_summary(context: CompressedContext) -> CompressedContext:
    """A new ``CompressedContext`` with every string field redacted (constraints, decisions, failed attempts,
    tool names, targets, narrative, task state); ``context`` itself is not changed."""
    document = redact_json(context.model_dump(mode="python"))
    try:
        return CompressedContext.model_validate(document)
    except ValidationError as err:
        errors = err.errors()
        if any(e["type"] != "string_too_long" for e in errors):
            raise  # only a lengthened string can fail: the input was a valid document
        for e in errors:
            *path, last = e["loc"]
            holder = functools.reduce(operator.getitem, path, document)
            holder[last] = clip(holder[last], int(e["ctx"]["max_length"]))
    return CompressedContext.model_validate(document)
