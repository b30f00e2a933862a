"""What compaction costs the agent's own model (issue 47, "compaction churn"): the tokens its server must prefill
over a run when it caches the previous call's context perfectly, against the no-compaction lower bound, and the
steps between compactions.

The run is the ``extract`` strategy stepped through the real hook with the trigger deciding
(``HookReplay.run(steps=None)``, as ``ab-replay`` steps it), one call of the agent's model per assistant message.

- **prefill**: at each call, the tokens of the context that are not a prefix of the previous call's context (the
  first call reads its whole context, BOS included). Counted by chat-template turn: the messages from the first one
  that differs from the previous call's (backed up over system messages, which fold into the turn after them) are
  read whole, with the target tokenizer's exact counts.
- **lower bound**: the same count over the uncompacted history (each message's tokens once, in the order they
  arrive: the whole history at the last call, read once). Without compaction, prefill equals it.
- **own**: the same two with the agent's own last message counted as cached (a server keeps what it generated);
  the issue's figures count it as read, so the plain ratio is the headline.
- **steps between compactions**: the gaps, in model calls, between consecutive compactions of one run (the open
  stretch after a run's last compaction is not a gap), pooled over runs.
- **changed**: calls whose context does not start with the whole previous context although the hook did not
  compact at that call (the prefix must stay stable between compactions: should be 0).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

SYSTEM_ROLES = ("system", "developer")


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading messages ``a`` and ``b`` share (the same object or equal)."""
    n = min(len(a), len(b))
    for k in range(n):
        x, y = a[k], b[k]
        if x is not y and x != y:
            return k
    return n


class PrefillMeter:
    """The tokens one stream of model calls prefills with perfect prefix caching (module docstring)."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.bos = getattr(getattr(counter, "template", None), "bos_tokens", 0)
        self.previous: list[Any] | None = None
        self.calls = 0
        self.tokens = 0  # prefilled, the agent's own last message counted as read
        self.tokens_own = 0  # prefilled, the agent's own last message counted as cached
        self.changed = 0  # calls whose context does not start with the whole previous one
        self.per_call: list[int] = []
        self.sizes: list[int] = []  # each call's whole context, in tokens
        self.counts: list[int] = []  # the previous context's tokens, message by message
        self.last_changed = False

    @staticmethod
    def _turn_start(context: Sequence[Any], start: int) -> int:
        """``start`` backed up over the system messages before it: they fold into the turn that changed."""
        while start and _role(context[start - 1]) in SYSTEM_ROLES:
            start -= 1
        return start

    def read(self, context: Sequence[Any], generated: Any = None) -> int:
        """Record one call with ``context``; ``generated``: the agent's message since the previous call (what the
        server generated, so holds in its cache). Returns the tokens this call prefills; sets ``last_changed``."""
        context = list(context)
        previous = self.previous
        shared = 0 if previous is None else common_prefix(previous, context)
        self.last_changed = previous is not None and shared < len(previous)
        start = self._turn_start(context, shared)
        counts = self.counts[:start] + (self.counter.message_counts(context[start:]) if start < len(context) else [])
        new = sum(counts[start:]) + (self.bos if start == 0 else 0)
        own = new
        if previous is not None and generated is not None:
            at = self._turn_start(context, common_prefix([*previous, generated], context))
            own = sum(counts[at:]) + (self.bos if at == 0 else 0)
        self.changed += self.last_changed
        self.previous, self.counts = context, counts
        self.calls += 1
        self.tokens += new
        self.tokens_own += own
        self.per_call.append(new)
        self.sizes.append(self.bos + sum(counts))
        return new


class ChurnRecorder:
    """``HookReplay.run(on_step=...)``: the hook's contexts and the uncompacted history, metered call by call."""

    def __init__(self, counter: Any, window: int) -> None:
        self.window = window
        self.hooked = PrefillMeter(counter)
        self.full = PrefillMeter(counter)
        self.history: list[Any] = []
        self.compactions: list[int] = []  # call numbers (0-based) where the hook compacted
        self.reasons: dict[str, int] = {}
        self.after: list[int] = []  # the history's tokens after each compaction
        self.changed_without_compaction = 0
        self.calls = 0

    def on_step(self, step: int, arrived: Sequence[Any], context: Sequence[Any], fired: Sequence[Any]) -> None:
        generated = arrived[0] if self.calls and arrived and _role(arrived[0]) == "assistant" else None
        self.history.extend(arrived)
        self.full.read(self.history, generated)
        self.hooked.read(context, generated)
        compacted = [m for m in fired if getattr(m, "outcome", None) == "compacted"]
        if compacted:
            self.compactions.append(self.calls)
            reason = getattr(compacted[-1], "reason", "?")
            self.after.append(getattr(compacted[-1], "tokens_after", 0))
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
        elif self.hooked.last_changed:
            self.changed_without_compaction += 1
        self.calls += 1

    def result(self) -> dict[str, Any]:
        c = self.compactions
        return {
            "window": self.window,
            "calls": self.calls,
            "compactions": len(c),
            "gaps": [b - a for a, b in zip(c, c[1:])],
            "first_compaction": c[0] if c else None,
            "reasons": dict(self.reasons),
            "tokens_after": list(self.after),
            "largest_call": max(self.hooked.sizes, default=0),
            "calls_over_90": sum(1 for n in self.hooked.sizes if n > 0.9 * self.window),
            "prefill": self.hooked.tokens,
            "lower_bound": self.full.tokens,
            "prefill_own": self.hooked.tokens_own,
            "lower_bound_own": self.full.tokens_own,
            "changed_without_compaction": self.changed_without_compaction,
            "full_changed": self.full.changed,  # the uncompacted stream only grows: 0 by construction
        }


# -------------------------------------------------------------------------------------------- aggregate


def _ratio(a: float, b: float) -> float | None:
    return None if not b else a / b


def _share(tokens: Sequence[int], window: int) -> float | None:
    return statistics.median(tokens) / window if tokens else None


def aggregate_churn(trajectories: Sequence[dict[str, Any]], windows: Sequence[int]) -> list[dict[str, Any]]:
    """One row per window over the runs' ``churn`` records: pooled prefill over pooled lower bound, the median of
    the runs' own ratios, compactions, the pooled gaps' median, steps per compaction."""
    out = []
    for window in windows:
        runs = [c for t in trajectories for c in t.get("churn", []) if c["window"] == window]
        if not runs:
            continue
        gaps = [g for c in runs for g in c["gaps"]]
        calls, compactions = sum(c["calls"] for c in runs), sum(c["compactions"] for c in runs)
        reasons: dict[str, int] = {}
        for c in runs:
            for k, v in c["reasons"].items():
                reasons[k] = reasons.get(k, 0) + v
        ratios = [c["prefill"] / c["lower_bound"] for c in runs if c["lower_bound"]]
        per_run = [c["calls"] / c["compactions"] for c in runs if c["compactions"]]
        out.append(
            {
                "window": window,
                "runs": len(runs),
                "runs_compacted": sum(1 for c in runs if c["compactions"]),
                "calls": calls,
                "compactions": compactions,
                "steps_per_compaction": _ratio(calls, compactions),
                "run_steps_per_compaction": statistics.median(per_run) if per_run else None,
                "gaps": len(gaps),
                "gap_median": statistics.median(gaps) if gaps else None,
                "gap_p25": statistics.quantiles(gaps, n=4)[0] if len(gaps) > 1 else None,
                "prefill": sum(c["prefill"] for c in runs),
                "lower_bound": sum(c["lower_bound"] for c in runs),
                "prefill_ratio": _ratio(sum(c["prefill"] for c in runs), sum(c["lower_bound"] for c in runs)),
                "prefill_ratio_run_median": statistics.median(ratios) if ratios else None,
                "prefill_ratio_own": _ratio(
                    sum(c["prefill_own"] for c in runs), sum(c["lower_bound_own"] for c in runs)
                ),
                "changed_without_compaction": sum(c["changed_without_compaction"] for c in runs),
                "largest_call": max(c.get("largest_call", 0) for c in runs) / window,
                "calls_over_90": sum(c.get("calls_over_90", 0) for c in runs),
                "after_median": _share([a for c in runs for a in c.get("tokens_after", [])], window),
                "reasons": reasons,
            }
        )
    return out


CHURN_COLUMNS = (
    "window",
    "runs",
    "compacted",
    "steps",
    "compactions",
    "steps/comp",
    "run-med",
    "gap-med",
    "gap-p25",
    "prefill",
    "lower",
    "ratio",
    "run-ratio",
    "own",
    "after",
    "max",
    ">90%",
    "changed",
    "reasons",
)


def format_churn(rows: Sequence[dict[str, Any]], *, legend: bool = True) -> str:
    def num(x: float | None, fmt: str = "{:.0f}") -> str:
        return "-" if x is None else fmt.format(x)

    body = [
        [
            str(r["window"]),
            str(r["runs"]),
            str(r["runs_compacted"]),
            str(r["calls"]),
            str(r["compactions"]),
            num(r["steps_per_compaction"], "{:.1f}"),
            num(r["run_steps_per_compaction"], "{:.1f}"),
            num(r["gap_median"], "{:.1f}"),
            num(r["gap_p25"], "{:.1f}"),
            f"{r['prefill']:,}",
            f"{r['lower_bound']:,}",
            num(r["prefill_ratio"], "{:.2f}x"),
            num(r["prefill_ratio_run_median"], "{:.2f}x"),
            num(r["prefill_ratio_own"], "{:.2f}x"),
            "-" if r.get("after_median") is None else f"{100 * r['after_median']:.0f}%",
            f"{100 * r['largest_call']:.0f}%",
            str(r["calls_over_90"]),
            str(r["changed_without_compaction"]),
            " ".join(f"{k}:{v}" for k, v in sorted(r["reasons"].items())) or "-",
        ]
        for r in rows
    ]
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(CHURN_COLUMNS)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(CHURN_COLUMNS, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(b, widths)) for b in body]
    if legend:
        lines += [
            "",
            "churn (the extract hook, trigger deciding): steps: the agent's model calls; compacted: runs with a "
            "compaction; steps/comp: steps / compactions, pooled; run-med: the median over the runs that compact of "
            "a run's steps per compaction (the issue's figure); gap-med / gap-p25: median / first quartile of the "
            "calls between consecutive compactions, pooled over runs; prefill: tokens the agent's model reads with "
            "perfect prefix caching (each call, the turns after the longest prefix it shares with the previous "
            "call's context); lower: the same without compaction (the whole history read once); ratio: prefill / "
            "lower, pooled; run-ratio: the median run's ratio; own: the ratio with the agent's own last message "
            "counted as cached; after: the median history after a compaction, as a share of the window; max: the largest "
            "context handed to the agent's model, as a share of the window; >90%: calls with more than 90% of the "
            "window in the context (the reply's room under a tenth); changed: "
            "calls whose context changed before its newest messages without a compaction (should be 0).",
        ]
    return "\n".join(lines)


__all__ = ["ChurnRecorder", "PrefillMeter", "aggregate_churn", "common_prefix", "format_churn"]
