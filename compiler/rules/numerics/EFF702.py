"""EFF702: a derived figure that is not a finite number."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic, Span
from effspec.engine.results import Metric
from effspec.front.ir import Run
from effspec.rules import AuditContext, Rule


def _culprit(run: Run, metric: Metric) -> Span | None:
    """The span of the input the figure rests on: the first input written in the spec, found
    by its span or, for a derived input (the step time's median, say), by the entry of that
    name, or else the claim an implied figure rests on."""
    for i in metric.inputs:
        if i.span is not None:
            return i.span
    for i in metric.inputs:
        for block in run.blocks:
            entry = block.get(i.name)
            if entry is not None:
                return entry.value_span
    for claim in run.claims:  # an implied figure: the claim it rests on (basis "claim `throughput` (line 9)")
        if metric.basis.startswith(f"claim `{claim.key}`"):
            return claim.value_span
    return None


class EFF702(Rule):
    """A derived figure is not a finite number.

    ## What it does
    Names every figure whose arithmetic left the floating-point range: an
    infinite throughput from `step_time = 1e-320 s`, an MFU that overflows, a
    ratio of two subnormals, a divisor that underflowed to zero (a subnormal
    peak times a subnormal step time), a scaling speedup over a subnormal step
    time.  Each input is in range on its own; their combination is not.  Every
    figure passes this one check before any output (text, JSON, SARIF, the
    reports) sees it: one that is not finite is listed as not recoverable and
    left out of claims, charts and reports; this finding points at the input
    that made it (for a scaling, the compared run's input nearest zero) and
    shows the derivation.

    ## Why is this bad?
    A figure of `inf` or `nan` is not a measurement: it cannot be compared with
    a claim, drawn, or written as JSON.  It nearly always means a unit slip (a
    time in seconds written where milliseconds were meant, a count in the wrong
    prefix) or a placeholder left in a spec.

    ## Example
    ```eff
    eff 1

    run tiny_step {
      work     { seq_len = 2048 token/sequence  global_batch = 512 sequence }
      timing   { step_time = 1e-320 s }
      claim throughput = 1.5e6 token/s
    }
    ```

    ## Use instead
    ```eff
    eff 1

    run tiny_step {
      work     { seq_len = 2048 token/sequence  global_batch = 512 sequence }
      timing   { step_time = 0.7 s }
      claim throughput = 1.5e6 token/s
    }
    ```
    """

    code = "EFF702"
    title = "derived figure not finite"
    severity = "error"
    name = "derived-figure-not-finite"
    nodes = ("run.timing", "run.work", "run.hardware", "run.model", "claim", "scaling")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            figures = {name: (metric, _culprit(run, metric) or run.name_span) for name, metric in result.nonfinite.items()}
            yield from self._findings(f"run `{run.id}`", figures)
        for scaling in ctx.spec.scalings:
            sr = ctx.evaluation.scalings.get(scaling.id)
            if sr is None:
                continue
            figures = {name: (metric, _scaling_culprit(ctx, sr.nonfinite, name, metric) or scaling.name_span)
                       for name, metric in sr.nonfinite.items()}
            yield from self._findings(f"scaling `{scaling.id}`", figures)

    def _findings(self, owner: str, figures: dict[str, tuple[Metric, Span]]) -> Iterator[Diagnostic]:
        """One finding per input: the figures that are not finite from it, with their derivations."""
        by_span: dict[Span, list[tuple[str, Metric]]] = {}
        for name, (metric, span) in figures.items():
            by_span.setdefault(span, []).append((name, metric))
        for span, found in by_span.items():
            shown = ", ".join(f"`{name}` ({_what(m.value)})" for name, m in found)
            inputs = {i.describe(): None for _, m in found for i in m.inputs}
            yield self.diag(
                span,
                f"{owner}: {shown} " + ("is" if len(found) == 1 else "are")
                + " not a finite number: each input is in range, their combination is not",
                "check the inputs' units and magnitudes (a time in s written for ms, a count with the wrong "
                "prefix, a placeholder left in the spec); such a figure is left out of claims and reports",
                label=f"{len(found)} figure{'s' if len(found) != 1 else ''} not finite from here",
                notes=tuple(f"{m.formula} = {m.substituted}" for _, m in found) + tuple(f"input: {d}" for d in inputs),
            )


def _scaling_culprit(ctx: AuditContext, nonfinite: dict[str, Metric], key: str, metric: Metric) -> Span | None:
    """For a scaling's figure, the input it rests on: of the run figures it compares
    (`run.ID.step_time`), the one nearest zero (the divisor that underflowed), at that run's
    entry of the name, else that figure's own input.  A figure computed from another that is
    not finite (the efficiency from the speedup) rests where that one does."""
    point = key[key.index("[") + 1:-1] if key.endswith("]") else None
    nearest: tuple[float, Run, str, Metric] | None = None
    for i in metric.inputs:
        parts = i.name.split(".")
        if len(parts) == 3 and parts[0] == "run":
            result = ctx.evaluation.runs.get(parts[1])
            figure = result.figure(parts[2]) if result is not None else None
            if result is not None and figure is not None and (nearest is None or abs(figure.value) < nearest[0]):
                nearest = (abs(figure.value), result.run, parts[2], figure)
        elif point is not None and (source := nonfinite.get(f"{i.name}[{point}]")) is not None and source is not metric:
            return _scaling_culprit(ctx, nonfinite, f"{i.name}[{point}]", source)
    if nearest is None:
        return None
    _, run, name, figure = nearest
    entry = next((e for block in run.blocks if (e := block.get(name)) is not None), None)
    return entry.value_span if entry is not None else _culprit(run, figure)


def _what(value: float) -> str:
    return "infinite" if value in (float("inf"), float("-inf")) else "not a number"
