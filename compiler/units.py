"""Units: pint defines them, the grammar tokenizes them.

Every unit word the grammar accepts (``UNIT_WORD`` in ``grammar/eff.lark``) is
resolved through a pint registry that adds ``FLOP`` and the counting units as
dimensions of their own.  pint never sees a raw user string: the lexer has
already split the text into allow-listed words, and only a single word at a
time is handed to pint, once, then memoized.

Arithmetic on quantities during evaluation uses :class:`Q`, a float magnitude
in base units with a dimension vector taken from pint.  That keeps per-file cost
in microseconds rather than pint's per-operation overhead, while every factor
and dimension still comes from pint.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from functools import cache

# The project's own dimensions.  FLOP must not be dimensionless: otherwise
# 989 TFLOP/s silently equals 9.89e14 Hz and a peak in FLOP passes as FLOP/s.
_DEFINITIONS = (
    "FLOP = [flop]",
    "token = [token]",
    "sequence = [sequence]",
    "sample = [sample]",
    "step = [step]",
    "device = [device]",
    "param = [param]",
)

# Display names of base dimensions, in the order they are printed.
_BASE_NAMES = {
    "[flop]": "FLOP",
    "[token]": "token",
    "[sequence]": "sequence",
    "[sample]": "sample",
    "[param]": "param",
    "[step]": "step",
    "[device]": "device",
    "[time]": "s",
    "[mass]": "kg",
    "[length]": "m",
}
COUNTING_DIMENSIONS = frozenset({"[token]", "[sequence]", "[sample]", "[step]", "[device]", "[param]"})

Dims = tuple[tuple[str, int], ...]  # sorted (dimension, exponent), no zeros
DIMENSIONLESS: Dims = ()


def _cache_folder() -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "effspec", "pint")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        # pint's cache is a pickle: only load it from a directory we own.
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        return folder
    except OSError:
        return None


@cache
def registry():
    """The pint registry with the project's dimensions (built once, cached on disk)."""
    import pint

    folder = _cache_folder()
    try:
        ureg = pint.UnitRegistry(cache_folder=folder) if folder else pint.UnitRegistry()
    except Exception:  # a corrupt or foreign cache must not stop a check
        ureg = pint.UnitRegistry()
    for line in _DEFINITIONS:
        name = line.split("=")[0].strip()
        if name not in ureg:
            ureg.define(line)
    return ureg


def _dims(mapping) -> Dims:
    return tuple(sorted((str(k), int(v)) for k, v in dict(mapping).items() if v))


@cache
def word(name: str) -> tuple[float, Dims]:
    """Factor to base units and dimension of one allow-listed unit word."""
    if name == "%":
        return 0.01, DIMENSIONLESS
    ureg = registry()
    base = ureg.Quantity(1.0, name).to_base_units()
    return float(base.magnitude), _dims(base.dimensionality)


_PIECE = re.compile(r"([/*]?)([A-Za-z%]+)(?:\^(-?[0-9]))?")


@cache
def parse_unit(text: str) -> tuple[float, Dims]:
    """Factor and dimension of a UNIT token such as ``TFLOP/s`` or ``token/sequence``."""
    if text == "%":
        return word("%")
    factor, dims = 1.0, {}
    for op, name, exp in _PIECE.findall(text):
        power = int(exp or 1) * (-1 if op == "/" else 1)
        f, d = word(name)
        factor *= f**power
        for k, v in d:
            dims[k] = dims.get(k, 0) + v * power
    return factor, _dims(dims)


@cache
def format_dims(dims: Dims) -> str:
    """A readable unit for a dimension vector: ``FLOP/s``, ``token/sequence``, ``W``."""
    if not dims:
        return ""
    if dict(dims) == {"[mass]": 1, "[length]": 2, "[time]": -3}:
        return "W"
    order = list(_BASE_NAMES)
    items = sorted(dims, key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    num = [(_BASE_NAMES.get(k, k), v) for k, v in items if v > 0]
    den = [(_BASE_NAMES.get(k, k), -v) for k, v in items if v < 0]

    def join(parts: list[tuple[str, int]]) -> str:
        return "*".join(n if e == 1 else f"{n}^{e}" for n, e in parts)

    if not num:
        return "1/" + join(den) if len(den) == 1 else "1/(" + join(den) + ")"
    if not den:
        return join(num)
    return join(num) + "/" + (join(den) if len(den) == 1 else "(" + join(den) + ")")


@cache
def dims_of(unit: str) -> Dims:
    """Dimension of a canonical unit string used inside the compiler (``FLOP/s``)."""
    if unit == "":
        return DIMENSIONLESS
    if unit == "W":
        return (("[length]", 2), ("[mass]", 1), ("[time]", -3))
    return parse_unit(unit)[1]


def is_counting(dims: Dims) -> bool:
    """True when a dimension is built from counting units only (token, device, ...)."""
    return bool(dims) and all(k in COUNTING_DIMENSIONS for k, _ in dims)


class UnitError(ValueError):
    """Arithmetic between quantities of incompatible dimensions."""


@dataclass(frozen=True)
class Q:
    """A magnitude in base units and its dimension vector."""

    magnitude: float
    dims: Dims = DIMENSIONLESS

    @property
    def unit(self) -> str:
        return format_dims(self.dims)

    def _combine(self, other: "Q", sign: int) -> Dims:
        d = dict(self.dims)
        for k, v in other.dims:
            d[k] = d.get(k, 0) + sign * v
        return _dims(d)

    def __add__(self, other: "Q") -> "Q":
        if self.dims != other.dims:
            raise UnitError(f"cannot add `{self.unit or 'dimensionless'}` and `{other.unit or 'dimensionless'}`")
        return Q(self.magnitude + other.magnitude, self.dims)

    def __sub__(self, other: "Q") -> "Q":
        if self.dims != other.dims:
            raise UnitError(f"cannot subtract `{other.unit or 'dimensionless'}` from `{self.unit or 'dimensionless'}`")
        return Q(self.magnitude - other.magnitude, self.dims)

    def __mul__(self, other: "Q") -> "Q":
        return Q(self.magnitude * other.magnitude, self._combine(other, 1))

    def __truediv__(self, other: "Q") -> "Q":
        if other.magnitude == 0:
            raise ZeroDivisionError("division by zero")
        return Q(self.magnitude / other.magnitude, self._combine(other, -1))

    def __neg__(self) -> "Q":
        return Q(-self.magnitude, self.dims)

    def finite(self) -> bool:
        return math.isfinite(self.magnitude)
