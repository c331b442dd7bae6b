"""Why a figure rests on assumed inputs: the finding that says so, or the input's row.

A headline figure or a derivation marked "rests on assumed inputs" links to its
causes: the assumed inputs at the root of its derivation (a convention knob, a
default such as `work.padded_tokens`).  A root a finding of the same run explains
(EFF101 for the convention knobs it assumes, or a finding naming the input in
backticks) links to that finding (``#finding-N``, N its place in the findings);
any other root links to its row in the run's table of declared inputs
(``#input-R-K``), a default that the spec does not write being added to that table
as an assumed row.  Anchors are built from indexes only, never from spec text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from effspec.diagnostics import Diagnostic
    from effspec.engine.results import Input, Metric, RunResult


@dataclass(frozen=True)
class Cause:
    text: str  # "convention.preset, convention.attention and 3 more (EFF101)", or "work.padded_tokens"
    anchor: str  # "finding-3", "input-1-14"

    @property
    def code(self) -> str:
        """The code of the finding a cause links to ("EFF101"); "" for an input row."""
        if self.anchor.startswith("finding-") and self.text.endswith(")") and " (" in self.text:
            return self.text[self.text.rindex(" (") + 2:-1]
        return ""


def assumed_inputs(rr: RunResult, metric: Metric, seen: frozenset[str] = frozenset()) -> dict[str, Input[Any]]:
    """{name: input} of the written or defaulted inputs, under the derived ones, that make ``metric`` assumed."""
    out: dict[str, Input[Any]] = {}
    for inp in metric.inputs:
        if inp is None or not inp.assumed:
            continue
        below = rr.figure(inp.name) if inp.provenance == "derived" and inp.name not in seen else None
        for name, root in (assumed_inputs(rr, below, seen | {inp.name}).items() if below is not None else [(inp.name, inp)]):
            out.setdefault(name, root)
    return out


def named(names: list[str]) -> str:
    return ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")


class RunCauses:
    """The causes of the assumptions of one run (the ``index``-th of the report, from 1)."""

    def __init__(self, rr: RunResult, index: int, diagnostics: Iterable[Diagnostic], written: list[str]) -> None:
        span = rr.run.span
        first, last = (span.line, max(span.end_line, span.line)) if span is not None else (0, -1)
        self.rr, self.index, self.written = rr, index, list(written)
        self.findings = [(n, d) for n, d in enumerate(diagnostics, 1) if d.span is not None and first <= d.span.line <= last]
        self.added: dict[str, Input[Any]] = {}  # defaults the spec does not write, added to its inputs table

    def _finding(self, name: str) -> tuple[int, str] | None:
        for n, d in self.findings:
            if (d.code == "EFF101" and name.startswith("convention.")) or f"`{name}`" in d.message:
                return n, d.code
        return None

    def _row(self, name: str, inp: Input[Any]) -> str:
        if name in self.written:
            return f"input-{self.index}-{self.written.index(name) + 1}"
        self.added.setdefault(name, inp)
        return f"input-{self.index}-{len(self.written) + list(self.added).index(name) + 1}"

    def of(self, metric: Metric) -> tuple[Cause, ...]:
        """The causes of ``metric``'s assumptions: findings first (one cause per finding), then input rows."""
        roots = assumed_inputs(self.rr, metric)
        by_finding: dict[tuple[int, str], list[str]] = {}
        rows: list[Cause] = []
        for name, inp in roots.items():
            found = self._finding(name)
            if found is not None:
                by_finding.setdefault(found, []).append(name)
            else:
                rows.append(Cause(name, self._row(name, inp)))
        return tuple(Cause(f"{named(names)} ({code})", f"finding-{n}") for (n, code), names in by_finding.items()) + tuple(rows)
