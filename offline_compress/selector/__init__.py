"""The learned line selector: which pieces of the work log the agent will use again, scored by a small head on
the embedded Gemma's token embeddings joined with the packer's rule features.

embed.py     the token-embedding matrix of the GGUF (memory-mapped, Q8_0 rows dequantised on use), pooled per piece
features.py  a piece's features: kind, names, tokens, recency, error line, closeness to the task, its embedding
head.py      the logistic-regression head (numpy), its training (full-batch Adam, no randomness) and its file
score.py     ``Selector``: scores cached per piece text, filled by a worker thread as messages arrive; what
             ``summary.pack`` multiplies a piece's worth by
train.py     training on recorded runs (``offline-compress train-selector``), labels from ``evaluation``
head.json    the shipped head (its training data's digest and validation scores inside)

Off by default: ``Compressor(selector="default")`` turns it on (docs/selector.md has the measured go/no-go).
"""

from .head import Head
from .score import Selector, TaskScorer, candidates, task_text

__all__ = ["Head", "Selector", "TaskScorer", "candidates", "task_text"]
