"""The typed IR: frozen dataclasses, each node with its source span.

Values are stored converted to their key's canonical unit (FLOP/s, s,
token, ...), which is always a base unit, beside the text as written.  The JSON
form (:func:`to_json`) is what ``spec/eff-ir.schema.json`` describes.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TypeVar, overload

from effspec.diagnostics import Span

D = TypeVar("D")


@dataclass(frozen=True)
class Provenance:
    kind: str = "declared"  # declared | measured | datasheet | paper | profiler | log | estimate | assumed | catalog | derived
    citation: str | None = None


DECLARED = Provenance()


# Expressions (claims keep theirs: they may name metrics evaluated later).
@dataclass(frozen=True)
class Number:
    value: float  # as written, before the unit
    unit: str  # the UNIT token, "" for a bare number
    text: str  # the literal as written: its last digit sets a claim's precision
    span: Span


@dataclass(frozen=True)
class Ref:
    path: tuple[str, ...]
    span: Span

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * /
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True)
class Neg:
    operand: Expr
    span: Span


Expr = Number | Ref | BinOp | Neg


@dataclass(frozen=True)
class Samples:
    """Step-time samples, seconds, in file or list order (warm-up not yet removed)."""

    values: tuple[float, ...]
    origin: str  # inline | file
    file: str | None = None
    column: str | None = None
    # The line of each value: the CSV's physical line, or the spec's line of a list item; () when not known
    # (an IR file). For findings that name a sample (EFF505); not part of the IR JSON.
    lines: tuple[int, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class FileRef:
    file: str  # as written
    path: str  # resolved, inside the spec's folder
    column: str | None = None


# By key kind: quantity and peak float (or "catalog"), integer int, string and
# enum str, bool, run str, runs tuple of run ids, samples Samples, file FileRef.
Value = float | int | str | bool | tuple[str, ...] | Samples | FileRef


@dataclass(frozen=True)
class PlusMinus:
    """An explicit `± …` on a value: its half-width, in the entry's canonical unit (the half-width of
    each sample for step-time samples), and the text after the `±` as written."""

    half: float
    text: str  # `0.2 s`, `2 %`
    span: Span
    relative: bool = False  # step-time samples only: `half` is a fraction of each sample (`± 2 %`)


@dataclass(frozen=True)
class Entry:
    key: str
    kind: str
    value: Value
    unit: str  # canonical unit of value; "" when dimensionless or not a quantity
    text: str  # the value as written
    provenance: Provenance
    span: Span  # the key
    value_span: Span
    plus_minus: PlusMinus | None = None  # an explicit `± …`; None: the written precision applies


@dataclass(frozen=True)
class Block:
    name: str
    entries: tuple[Entry, ...]
    span: Span
    # Blocks inside this one: only `model` has them (`mamba2`, `gated_deltanet`). Left out of the JSON when empty.
    blocks: tuple[Block, ...] = ()

    def block(self, name: str) -> Block | None:
        return next((b for b in self.blocks if b.name == name), None)

    def get(self, key: str) -> Entry | None:
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    @overload
    def value(self, key: str) -> Value | None: ...
    @overload
    def value(self, key: str, default: D) -> Value | D: ...
    def value(self, key: str, default: object = None) -> object:
        entry = self.get(key)
        return default if entry is None else entry.value

    # Typed reads: the key table fixes each key's kind, so a written value of
    # the kind asked for is an invariant of the IR (asserted, never converted).
    @overload
    def number(self, key: str) -> float | None: ...
    @overload
    def number(self, key: str, default: D) -> float | D: ...
    def number(self, key: str, default: object = None) -> object:
        """The value of a quantity or integer key, or ``default`` when it is not written."""
        entry = self.get(key)
        if entry is None:
            return default
        assert isinstance(entry.value, (int, float)), key
        return entry.value

    @overload
    def integer(self, key: str) -> int | None: ...
    @overload
    def integer(self, key: str, default: D) -> int | D: ...
    def integer(self, key: str, default: object = None) -> object:
        """The value of an integer key, or ``default`` when it is not written."""
        entry = self.get(key)
        if entry is None:
            return default
        assert isinstance(entry.value, int), key
        return entry.value

    @overload
    def text(self, key: str) -> str | None: ...
    @overload
    def text(self, key: str, default: D) -> str | D: ...
    def text(self, key: str, default: object = None) -> object:
        """The value of a string or enum key, or ``default`` when it is not written."""
        entry = self.get(key)
        if entry is None:
            return default
        assert isinstance(entry.value, str), key
        return entry.value


@dataclass(frozen=True)
class Claim:
    name: str  # canonical: a metric name, or breakdown.<category>
    written: str  # as written: `throughput`, `breakdown.exposed_comm`
    expr: Expr
    text: str
    provenance: Provenance
    span: Span  # the whole claim
    name_span: Span
    value_span: Span
    point: str | None = None  # scalings: `claim efficiency[RUN] = …` names the run of the series

    @property
    def key(self) -> str:
        """The claim as the output names it: `efficiency`, or `efficiency[scaled_64]` for one point."""
        return f"{self.written}[{self.point}]" if self.point else self.written


@dataclass(frozen=True)
class Run:
    id: str
    title: str | None
    source: str | None
    blocks: tuple[Block, ...]
    claims: tuple[Claim, ...]
    span: Span
    name_span: Span

    def block(self, name: str) -> Block | None:
        for b in self.blocks:
            if b.name == name:
                return b
        return None

    def blocks_named(self, name: str) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.name == name)


@dataclass(frozen=True)
class Scaling:
    id: str
    kind: str | None
    baseline: str | None
    runs: tuple[str, ...]
    entries: tuple[Entry, ...]
    span: Span
    name_span: Span
    claims: tuple[Claim, ...] = ()  # `claim efficiency = …`, `claim speedup = …`

    def get(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)

    @property
    def per_device(self) -> str:
        """What weak scaling holds fixed per device: `tokens` (the default) or `flops` (the model grows)."""
        entry = self.get("per_device")
        return str(entry.value) if entry is not None else "tokens"


@dataclass(frozen=True)
class Spec:
    file: str
    version: int
    runs: tuple[Run, ...]
    scalings: tuple[Scaling, ...]

    @functools.cached_property
    def _runs_by_id(self) -> dict[str, Run]:
        # Built once; rules look runs up per scaling reference, and a scan
        # per lookup made the audit quadratic in the number of runs.
        return {r.id: r for r in self.runs}

    def run(self, run_id: str) -> Run | None:
        return self._runs_by_id.get(run_id)


_EXPR_NODES: dict[type, str] = {Number: "number", Ref: "ref", BinOp: "binop", Neg: "neg"}


N = TypeVar("N")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields :func:`evolve` copies; None for a class it leaves to dataclasses.replace (one that
    computes in ``__post_init__`` or keeps a field out of ``__init__``)."""
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields) or hasattr(cls, "__slots__"):
        return None
    return tuple(f.name for f in fields)


def evolve(node: N, **changes: object) -> N:
    """``dataclasses.replace(node, **changes)`` for an IR node (or any plain frozen dataclass), without
    the round trip through ``__init__``: the variants the searches build (engine.gap, engine.intervals,
    engine.sensitivity) number about a hundred a run, and replace cost 4.3 us each against 1.8 here.
    The same fields, the same values; a cached property is not carried over (it is not a field)."""
    cls: type = type(node)
    names = _field_names(cls)
    if names is None:
        return dataclasses.replace(node, **changes)  # type: ignore[type-var]
    old = node.__dict__
    new: N = object.__new__(cls)
    fresh = new.__dict__
    for name in names:
        fresh[name] = old[name]
    for name, value in changes.items():
        if name not in fresh:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        fresh[name] = value
    return new


def to_json(node: object) -> object:
    """The JSON form of any IR node (closed objects; expressions tagged by `node`)."""
    if isinstance(node, Span):
        return {"line": node.line, "column": node.column, "end_line": node.end_line, "end_column": node.end_column}
    if dataclasses.is_dataclass(node):
        out: dict[str, object] = {}
        if type(node) in _EXPR_NODES:
            out["node"] = _EXPR_NODES[type(node)]
        for f in dataclasses.fields(node):
            if isinstance(node, Block) and f.name == "blocks" and not node.blocks:
                continue  # a block without blocks inside: the JSON form from before they existed
            out[f.name] = to_json(getattr(node, f.name))
        if isinstance(node, Entry):
            out["value"] = _value_json(node.value)
            if node.plus_minus is None:  # written only where the spec writes one: older documents read the same
                del out["plus_minus"]
        return out
    if isinstance(node, tuple):
        return [to_json(x) for x in node]
    return node


def _value_json(value: Value) -> object:
    if isinstance(value, Samples):
        return {"samples": list(value.values), "origin": value.origin, "file": value.file, "column": value.column}
    if isinstance(value, FileRef):
        return {"file": value.file, "column": value.column}
    if isinstance(value, tuple):
        return list(value)
    return value
