"""The summary document and how it is made from the facts: its schema (``CompressedContext``, bounded), the message
that holds it in a history (``message``: the marker, rendering, finding the previous one; ``render``: JSON or
Markdown, read back exactly), the model's optional draft (``draft``, ``prompt``) and its grounding (``ground``), and
the assembly of facts, draft and previous summary into the token budget (``merge``, with the work log packed line by
line by ``pack``), what a compaction replaces (``plan``: the ``Plan``, the head, the region and the earlier summary it
merges), and the last pass of secret redaction over a finished summary (``redaction``)."""
