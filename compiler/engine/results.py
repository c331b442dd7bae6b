"""The result types every engine stage fills in and every later stage reads.

They sit at the bottom of the engine: evaluate, claims, scaling and breakdown
import them, and nothing here imports those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from effspec.diagnostics import Diagnostic, Span
from effspec.display import quantity
from effspec.engine import catalog, flops
from effspec.engine.stats import StepStats
from effspec.front.ir import Block, Claim, Run, Spec


@dataclass(frozen=True)
class Input:
    name: str
    value: object
    unit: str
    provenance: str  # declared | measured | datasheet | paper | ... | catalog | derived | default
    citation: str | None = None
    span: Span | None = None
    assumed: bool = False

    def describe(self) -> str:
        numeric = isinstance(self.value, (int, float)) and not isinstance(self.value, bool)
        shown = quantity(self.value, self.unit) if numeric else str(self.value)
        src = self.provenance + (f": {self.citation}" if self.citation else "")
        return f"{self.name} = {shown} ({src}{', assumed' if self.assumed else ''})"

    def to_json(self) -> dict:
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
    inputs: tuple[Input, ...]
    assumed: bool = False
    basis: str = "inputs"  # inputs, or the claim an implied figure rests on

    def as_input(self) -> Input:
        return Input(self.name, self.value, self.unit, "derived", None, None, self.assumed)

    def to_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "formula": self.formula,
                "substituted": self.substituted, "inputs": [i.describe() for i in self.inputs],
                "input_details": [i.to_json() for i in self.inputs], "assumed": self.assumed, "basis": self.basis}


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
    peak_input: Input | None
    catalog_row: catalog.PeakRow | None  # the row for this accelerator, dtype and sparsity
    measured_peak: float | None

    @property
    def active(self) -> float:
        return self.count - self.unavailable


@dataclass
class ClaimResult:
    claim: Claim
    claimed: float | None
    reconstructed: float | None
    status: str  # consistent | mismatch | unrecoverable
    unit: str
    tolerance: float | None = None
    basis: str = "inputs"
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {"claimed": self.claimed, "reconstructed": self.reconstructed, "status": self.status,
               "unit": self.unit, "basis": self.basis}
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        if self.missing:
            out["missing"] = list(self.missing)
        return out


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
    conventions: dict[str, dict] = field(default_factory=dict)
    claims: dict[str, ClaimResult] = field(default_factory=dict)
    breakdown: object | None = None  # breakdown.Reconciliation
    calendar: dict | None = None  # the calendar table as a dict (calendar_table.to_json())
    diagnosis: object | None = None  # ranks.Diagnosis
    calendar_table: object | None = None  # breakdown.CalendarTable
    time_to_target: Metric | None = None  # target.reached_at × step_time
    demanded: frozenset = frozenset()  # on-demand metrics some claim uses (aggregate_flops)

    def figure(self, name: str) -> Metric | None:
        """A metric reconstructed from inputs, else one implied by a claim."""
        return self.metrics.get(name) or self.implied.get(name)


@dataclass
class Evaluation:
    spec: Spec
    runs: dict[str, RunResult]
    scalings: dict[str, object]  # id -> scaling.ScalingResult
    diagnostics: list[Diagnostic]
