"""The result types every engine stage fills in and every later stage reads.

They sit at the bottom of the engine: evaluate, claims, scaling and breakdown
import them, and nothing here imports those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, NotRequired, TypedDict, TypeVar

from effspec.diagnostics import Diagnostic, Span
from effspec.display import quantity
from effspec.engine import catalog, flops
from effspec.engine.stats import StepStats
from effspec.front.ir import Block, Claim, Run, Spec, Value

if TYPE_CHECKING:  # the stages that fill these in import this module
    from effspec.engine.breakdown import CalendarTable, Reconciliation
    from effspec.engine.intervals import Interval
    from effspec.engine.scaling import ScalingResult
    from effspec.engine.sensitivity import Flip
    from effspec.ranks.stats import Diagnosis

V = TypeVar("V", bound=Value, covariant=True)


@dataclass(frozen=True)
class Input(Generic[V]):
    """One input of a formula: a number for the inputs a formula computes with
    (Input[float]), else what was written (an enum, a sample summary)."""

    name: str
    value: V
    unit: str
    provenance: str  # declared | measured | datasheet | paper | ... | catalog | derived | default
    citation: str | None = None
    span: Span | None = None
    assumed: bool = False

    def describe(self) -> str:
        value = self.value
        shown = quantity(value, self.unit) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        src = self.provenance + (f": {self.citation}" if self.citation else "")
        return f"{self.name} = {shown} ({src}{', assumed' if self.assumed else ''})"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "provenance": self.provenance,
                "citation": self.citation, "assumed": self.assumed,
                "line": self.span.line if self.span else None}


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    formula: str
    substituted: str
    inputs: tuple[Input[Value], ...]
    assumed: bool = False
    basis: str = "inputs"  # inputs, or the claim an implied figure rests on
    # The figure's interval (engine.intervals): set once the run is evaluated; None in re-evaluations.
    interval: Interval | None = field(default=None, compare=False)

    def as_input(self) -> Input[float]:
        return Input(self.name, self.value, self.unit, "derived", None, None, self.assumed)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "value": self.value, "unit": self.unit, "formula": self.formula,
            "substituted": self.substituted, "inputs": [i.describe() for i in self.inputs],
            "input_details": [i.to_json() for i in self.inputs], "assumed": self.assumed, "basis": self.basis}
        if self.interval is not None:
            out.update(self.interval.to_json())
        return out


@dataclass(frozen=True)
class Pool:
    """One hardware block: its share of the denominator."""

    block: Block
    accelerator: str | None
    count: float
    unavailable: float
    dtype: str
    dtype_assumed: bool
    sparsity: str
    peak: float | None
    peak_input: Input[float] | None
    catalog_row: catalog.PeakRow | None  # the row for this accelerator, dtype and sparsity
    measured_peak: float | None

    @property
    def active(self) -> float:
        return self.count - self.unavailable


@dataclass(frozen=True)
class Explanation:
    """Explain the gap (engine.gap): one change under which a claim is reproduced, and the figure it then gives."""

    change: str  # "kv_heads = heads (GQA ignored)"
    value: float  # the claim's metric under the change, in its unit
    candidate: str  # the table entry it came from ("gqa", "preset", …)
    kind: str = "convention"  # how plausible a cause it is: engine.gap.KINDS

    def to_json(self) -> dict[str, object]:
        return {"change": self.change, "value": self.value, "kind": self.kind}


@dataclass
class ClaimResult:
    claim: Claim
    claimed: float | None
    reconstructed: float | None
    status: str  # consistent | mismatch | inconclusive | unrecoverable
    unit: str
    tolerance: float | None = None
    basis: str = "inputs"
    missing: tuple[str, ...] = ()
    # A mismatch only (engine.gap): the single changes that reproduce the claim, and the
    # claim's metric under each standard preset (MFU and HFU claims).
    explanations: tuple[Explanation, ...] = ()
    searched: bool = False  # False for a mismatch past the spec's search budget
    by_preset: dict[str, float] = field(default_factory=dict)
    # engine.intervals: the reconstruction's interval; for an inconclusive claim, what would decide it.
    interval: tuple[float, float] | None = None
    decided_by: str | None = None
    # engine.sensitivity (mismatch and inconclusive): the inputs whose smallest relative change makes it consistent.
    flips: tuple[Flip, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"claimed": self.claimed, "reconstructed": self.reconstructed, "status": self.status,
                                  "unit": self.unit, "basis": self.basis}
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        if self.interval is not None:
            out["interval"] = list(self.interval)
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        if self.flips:
            out["sensitivity"] = [f.to_json() for f in self.flips]
        if self.missing:
            out["missing"] = list(self.missing)
        if self.explanations:
            out["explanations"] = [e.to_json() for e in self.explanations]
        return out


class ConventionFigures(TypedDict):
    """One row of the convention table: a preset's count and, with a step time and a peak, its MFU."""

    preset: str
    flops_per_token: float | None
    knobs: dict[str, str]
    mfu: NotRequired[float]
    basis: NotRequired[str]


@dataclass(frozen=True)
class ImplausibleSample:
    """A step-time sample shorter than the FLOPs of a step need at the hardware's peak."""

    index: int  # 0-based position among the samples, in file or list order
    value: float  # seconds
    line: int | None  # the CSV's line, or the spec's line of the list item
    utilization: float  # (FLOPs of a step / sample) / aggregate peak: above 1
    work: str  # the figure the FLOPs are: executed_flops_per_step or model_flops_per_step


@dataclass
class RunResult:
    run: Run
    knobs: flops.Knobs
    knobs_missing: list[str]
    shape: flops.Shape | None
    flop_count: flops.FlopCount | None
    executed_count: flops.FlopCount | None
    params_from_shape: float | None
    pools: list[Pool]
    step_stats: StepStats | None
    metrics: dict[str, Metric] = field(default_factory=dict)
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    implied: dict[str, Metric] = field(default_factory=dict)
    # Figures whose arithmetic left the floats (inf, nan): taken out of metrics/implied, kept
    # here with their derivation for EFF702, and listed as not recoverable.
    nonfinite: dict[str, Metric] = field(default_factory=dict)
    conventions: dict[str, ConventionFigures] = field(default_factory=dict)
    claims: dict[str, ClaimResult] = field(default_factory=dict)
    breakdown: Reconciliation | None = None
    calendar: dict[str, object] | None = None  # the calendar table as a dict (calendar_table.to_json())
    diagnosis: Diagnosis | None = None
    calendar_table: CalendarTable | None = None
    time_to_target: Metric | None = None  # target.reached_at × step_time
    demanded: frozenset[str] = frozenset()  # on-demand metrics some claim uses (aggregate_flops)
    # Step-time samples left out before the statistics: faster than the peak allows (EFF505).
    implausible: tuple[ImplausibleSample, ...] = ()

    def figure(self, name: str) -> Metric | None:
        """A metric reconstructed from inputs, else one implied by a claim."""
        return self.metrics.get(name) or self.implied.get(name)


@dataclass
class Evaluation:
    spec: Spec
    runs: dict[str, RunResult]
    scalings: dict[str, ScalingResult]
    diagnostics: list[Diagnostic]
