"""Section 2, the declared inputs: every value as written, with where it came from.

A run's table sets two inputs a row, read down the left half then the right.
A claims-only run like an earlier one (the same formulas) prints only the
inputs that differ from that run, and names the rest by reference; an input
it does not print keeps its anchor (``#input-R-K``), so a badge's link lands
on the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from effspec.front.ir import Run
from effspec.report.assumptions import RunCauses
from effspec.report.sections.run import Earlier, RunView, differing
from effspec.report.sections.views import InputView, shown
from effspec.report.words import clean

SHOWN_SAMPLES = 5  # an inline list longer than twice this shows its first and last this many


def _samples_text(text: str, count: int) -> str:
    """An inline list of samples as written, or for a long one its head and tail: the table's
    size stays bounded whatever the list's length (the statistics use every sample)."""
    start, end = text.find("["), text.rfind("]")
    items = text[start + 1:end].split(",") if 0 <= start < end else []
    if count <= 2 * SHOWN_SAMPLES or len(items) != count:
        return f"{count} samples: {text}"
    head = ", ".join(i.strip() for i in items[:SHOWN_SAMPLES])
    tail = ", ".join(i.strip() for i in items[-SHOWN_SAMPLES:])
    return (f"{count:,} samples, the first and last {SHOWN_SAMPLES} shown: "
            f"{text[:start + 1]}{head}, … {count - 2 * SHOWN_SAMPLES:,} more …, {tail}{text[end:]}")


def declared_inputs(run: Run) -> tuple[InputView, ...]:
    """Every entry of the run's blocks, as written (a sample list cut to its head and tail)."""
    out = []
    for block in run.blocks:
        for e in block.entries:
            text = e.text
            value = getattr(e.value, "values", None)  # Samples and FileRef hold their values; a number does not
            if value is not None and getattr(e.value, "origin", "") == "file":
                text = f"{e.text} ({len(value)} rows)"
            elif value is not None:
                text = _samples_text(e.text, len(value))
            out.append(InputView(f"{block.name}.{e.key}", clean(text), clean(e.provenance.kind),
                                 clean(e.provenance.citation), e.span.line, False))
    return tuple(out)


def assumed_rows(causes: RunCauses) -> tuple[InputView, ...]:
    """The defaults a figure rests on that the spec does not write: rows of the inputs table, marked assumed."""
    rows = []
    for name, inp in causes.added.items():
        value, unit, provenance, citation = (getattr(inp, k, None) for k in ("value", "unit", "provenance", "citation"))
        rows.append(InputView(clean(name), shown(value, str(unit or "")), clean(provenance) + " (assumed)",
                              clean(citation) or "not written in the spec: effspec's default", None, True))
    return tuple(rows)


@dataclass(frozen=True)
class NumberedInput:
    number: int  # its 1-based place among the run's inputs: its ``#input-R-K`` anchor
    input: InputView

    @property
    def css(self) -> str:
        """The class its cells add: " assumed" for a default the spec does not write."""
        return " assumed" if self.input.assumed else ""


@dataclass(frozen=True)
class InputsRun:
    run: RunView
    place: int  # the run's 1-based place in the report
    earlier: Earlier | None
    changed: tuple[NumberedInput, ...]  # with an earlier run: the inputs that differ from its
    unprinted: tuple[int, ...]  # with an earlier run: the numbers of the inputs read as under it
    absent: tuple[str, ...]  # the earlier run's inputs this run does not declare
    rows: tuple[tuple[NumberedInput, ...], ...]  # without one: the two-up table's rows

    @property
    def others(self) -> int:
        """How many inputs read as under the earlier run."""
        return len(self.run.inputs) - len(self.changed)

    @property
    def columns(self) -> int:
        """The two-up table's column groups: two, or one for a single input."""
        return 2 if len(self.run.inputs) > 1 else 1


@dataclass(frozen=True)
class InputsView:
    runs: tuple[InputsRun, ...]


def changed_inputs(run: RunView, earlier: Earlier | None) -> tuple[InputView, ...]:
    """The run's declared inputs that the earlier run does not have as they are here (value,
    provenance and citation; the line is this run's own): the rest read as under the earlier run."""
    return differing(run.inputs, earlier)


def inputs_run(run: RunView, place: int, earlier: Earlier | None) -> InputsRun:
    numbered = tuple(NumberedInput(n, i) for n, i in enumerate(run.inputs, 1))
    if earlier is None:
        half = (len(numbered) + 1) // 2
        rows = tuple(tuple(numbered[n] for n in (k, k + half) if n < len(numbered)) for k in range(half))
        return InputsRun(run, place, None, (), (), (), rows)
    changed = set(changed_inputs(run, earlier))
    ours = {i.name for i in run.inputs}
    return InputsRun(run, place, earlier, tuple(x for x in numbered if x.input in changed),
                     tuple(x.number for x in numbered if x.input not in changed),
                     tuple(i.name for i in earlier.run.inputs if i.name not in ours), ())


def build(runs: tuple[RunView, ...], earlier: tuple[Earlier | None, ...]) -> InputsView:
    return InputsView(tuple(inputs_run(run, n, e) for n, (run, e) in enumerate(zip(runs, earlier, strict=True), 1)))
