"""The views a run's parts are shown with, shared by the sections: inputs, figures, claims, rows.

Every number is formatted here with :mod:`effspec.display` (the functions the
diagnostics use, so a figure reads the same in the terminal and in the report).
Every string that comes from the spec stays a plain ``str``: the HTML templates
escape it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from effspec.display import metric_value, quantity, sig
from effspec.report.assumptions import Cause, RunCauses
from effspec.report.mapping import as_mapping
from effspec.report.words import clean, interval_how, interval_text, label, value_text

if TYPE_CHECKING:
    from effspec.engine.results import ClaimResult, Input, Metric


@dataclass(frozen=True)
class InputView:
    name: str
    value: str
    provenance: str
    citation: str
    line: int | None
    assumed: bool


@dataclass(frozen=True)
class MetricView:
    name: str
    label: str
    value: str
    formula: str
    substituted: str
    inputs: tuple[InputView, ...]
    assumed: bool
    basis: str  # "inputs", or the claim an implied figure rests on
    implied: bool
    causes: tuple[Cause, ...] = ()  # what makes it assumed: links to a finding or an input row
    interval: str = ""  # "[46.44 %, 50.86 %]"; "" for an exact figure
    interval_how: str = ""  # how it was formed: each uncertain input and the figure's range under it

    @property
    def shared_parts(self) -> tuple[str, str, str]:
        """The values put in and the result they give, split at the last " = " (a later run's line
        of a table of figures whose formulas an earlier run prints): (values, " = " or "", result)."""
        return self.substituted.rpartition(" = ")


@dataclass(frozen=True)
class ClaimView:
    written: str
    claimed: str
    reconstructed: str
    status: str
    basis: str
    tolerance: str
    missing: str
    provenance: str
    citation: str
    line: int

    @property
    def status_text(self) -> str:
        """The status as shown: a claim that agrees with a figure another claim implies says so."""
        return "agrees with a claim" if self.status == "consistent" and self.basis.startswith("claim") else self.status


@dataclass(frozen=True)
class Row:
    """A label/value row (statistics, calendar, diagnosis evidence)."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class Table:
    """A table for structures whose fields are not fixed here."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def shown(value: object, unit: str) -> str:
    """An input's value as the report prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value_text(float(value), unit) if unit else quantity(float(value), unit)
    return clean(value)


def bare(value: str) -> str:
    """A value without its digit grouping or multiplication sign: ``16,384 device`` as ``16384 device``."""
    return value.replace(",", "").replace("×", "").strip()


def input_view(inp: Input[Any]) -> InputView:
    return InputView(clean(inp.name), shown(inp.value, inp.unit), clean(inp.provenance), clean(inp.citation),
                     inp.span.line if inp.span else None, bool(inp.assumed))


def metric_view(metric: Metric, implied: bool = False, name: str | None = None, title: str | None = None,
                causes: RunCauses | None = None) -> MetricView:
    key = name or metric.name
    return MetricView(key, title or label(key), value_text(metric.value, metric.unit, metric.name), clean(metric.formula),
                      clean(metric.substituted), tuple(input_view(i) for i in metric.inputs if i is not None),
                      bool(metric.assumed), clean(metric.basis), implied,
                      causes.of(metric) if causes is not None and metric.assumed else (),
                      interval_text(metric, metric.name), clean(interval_how(metric)))


def claim_views(claims: Iterable[ClaimResult]) -> tuple[ClaimView, ...]:
    """Run claims, or a scaling's (`efficiency[scaled_64]`: the claim with the run it names)."""
    out = []
    for cr in claims:
        c = cr.claim
        unit = cr.unit
        name = "speedup" if c.name.endswith("speedup") else ""
        out.append(ClaimView(
            clean(c.key), value_text(cr.claimed, unit, name) if cr.claimed is not None else clean(c.text),
            value_text(cr.reconstructed, unit, name) if cr.reconstructed is not None else "—",
            cr.status, clean(cr.basis),
            ("± " + (sig(cr.tolerance) if name else metric_value(cr.tolerance, unit))) if cr.tolerance is not None else "",
            ", ".join(clean(m) for m in cr.missing), clean(c.provenance.kind), clean(c.provenance.citation),
            c.span.line))
    return tuple(out)


def cell(value: object) -> str:
    if isinstance(value, float):
        return sig(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{clean(k)}: {cell(v)}" for k, v in value.items())
    return clean(value)


def generic_table(title: str, items: Iterable[object] | None) -> Table | None:
    """A table from a list of dataclasses or dicts whose fields this module does not fix."""
    maps: list[Mapping[str, object]] = [m for m in (as_mapping(i) for i in (items or ())) if m]
    if not maps:
        return None
    columns: list[str] = []
    for m in maps:
        columns += [k for k in m if k not in columns]
    return Table(title, tuple(clean(c) for c in columns), tuple(tuple(cell(m.get(c, "")) for c in columns) for m in maps))


def consecutive(count: int, joins: Callable[[int, int], bool]) -> tuple[tuple[int, ...], ...]:
    """Places 0 to ``count`` - 1 cut into runs of consecutive places: a place joins the run before
    it when ``joins(the run's last place, place)``."""
    groups: list[list[int]] = []
    for n in range(count):
        if groups and joins(groups[-1][-1], n):
            groups[-1].append(n)
        else:
            groups.append([n])
    return tuple(tuple(g) for g in groups)
