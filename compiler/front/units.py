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

import contextlib
import json
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # pint is imported only when the unit table is (re)built
    import pint

from effspec.front.cachedir import cache_root, keyed_name, owned_folder, prune

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


# Bump when the layout of the cached unit table changes.
_TABLE_FORMAT = 1
_TABLE_STEM = "units-v1"
_DIM_NAME = re.compile(r"\[[a-z_]+\]")


def _cache_folder() -> str | None:
    """pint's own (pickle) cache folder inside ours."""
    root = owned_folder(cache_root())
    return owned_folder(os.path.join(root, "pint")) if root else None


def _import_pint() -> ModuleType:
    """pint, without its optional dask support.  With dask installed (the
    `scale` extra of `effspec traces`), pint imports dask.base, and jinja2
    with it, when it is imported; effspec never hands pint a dask array, so
    dask is hidden from pint's `find_spec("dask")` while pint is imported
    (a None entry in sys.modules), unless something imported dask already."""
    if "pint" in sys.modules or "dask" in sys.modules:
        import pint

        return pint
    sys.modules["dask"] = None  # type: ignore[assignment]
    try:
        import pint
    finally:
        del sys.modules["dask"]
    return pint


@cache
def registry() -> pint.UnitRegistry[float]:
    """The pint registry with the project's dimensions (built once, cached on disk)."""
    pint_module = _import_pint()

    folder = _cache_folder()
    ureg: pint.UnitRegistry[float]
    try:
        ureg = pint_module.UnitRegistry(cache_folder=folder) if folder else pint_module.UnitRegistry()
    except Exception:  # a corrupt or foreign cache must not stop a check
        ureg = pint_module.UnitRegistry()
    for line in _DEFINITIONS:
        name = line.split("=")[0].strip()
        if name not in ureg:
            ureg.define(line)
    return ureg


def _dims(mapping: Mapping[str, Any]) -> Dims:  # Any: pint types exponents as any Scalar (complex too)
    return tuple(sorted((str(k), int(v)) for k, v in dict(mapping).items() if v))


# ------------------------------------------------------------------------
# The unit-word table: pint's factor and dimension for every word the grammar
# allows, cached as JSON so that a check with a warm cache never imports pint
# (pint with numpy is most of a cold start).  pint stays the source of every
# number: the table is only ever written from pint's answers, and it is keyed
# by pint's installed files, our definitions and the word list, so any change
# to one of them rebuilds it.


@cache
def unit_words() -> tuple[str, ...]:
    """Every alternative of ``UNIT_WORD`` in ``grammar/eff.lark``, in grammar order."""
    # A plain file read: importlib.resources costs ~25 ms of imports (zipfile,
    # tempfile, typing), more than the rest of a warm-cache unit lookup.
    from effspec.front.syntax import grammar_text

    text = grammar_text()
    rule = re.search(r"^UNIT_WORD:(.*?)(?=^\S)", text, flags=re.M | re.S)
    return tuple(re.findall(r'"([^"]+)"', rule.group(1))) if rule else ()


def _pint_fingerprint() -> list[object]:
    """What identifies the installed pint without importing it: its version
    (from the dist-info folder name) and the size and mtime of its files that
    hold the code and the unit definitions."""
    from importlib.util import find_spec

    spec = find_spec("pint")
    if spec is None or not spec.origin:
        return ["missing"]
    package = os.path.dirname(spec.origin)
    site = os.path.dirname(package)
    try:
        version = sorted(n[5:-10] for n in os.listdir(site) if n.startswith("pint-") and n.endswith(".dist-info"))
    except OSError:
        version = []
    stats: list[list[str | int | None]] = []
    for name in ("__init__.py", "default_en.txt", "constants_en.txt"):
        try:
            st = os.stat(os.path.join(package, name))
            stats.append([name, st.st_size, st.st_mtime_ns])
        except OSError:
            stats.append([name, None, None])
    return [package, version, stats]


class TableKey(TypedDict):
    format: int
    pint: list[object]
    definitions: list[str]
    words: list[str]


def table_key() -> TableKey:
    """The key a cached table must carry to be used."""
    return {"format": _TABLE_FORMAT, "pint": _pint_fingerprint(), "definitions": list(_DEFINITIONS),
            "words": list(unit_words())}


def _pint_word(name: str) -> tuple[float, Dims]:
    base = registry().Quantity(1.0, name).to_base_units()
    return float(base.magnitude), _dims(base.dimensionality)


def pint_table(words: tuple[str, ...] | None = None) -> dict[str, tuple[float, Dims]]:
    """Factor and dimension of each word, straight from pint (imports pint)."""
    return {w: _pint_word(w) for w in (unit_words() if words is None else words)}


def _valid_entry(entry: object) -> tuple[float, Dims] | None:
    """A table entry as read from JSON, or None if it is not exactly the expected shape."""
    if not (isinstance(entry, list) and len(entry) == 2):
        return None
    factor, dims = entry
    if type(factor) not in (int, float) or not math.isfinite(factor) or factor <= 0:
        return None
    if not isinstance(dims, list):
        return None
    out = []
    for item in dims:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and _DIM_NAME.fullmatch(item[0]) and type(item[1]) is int and item[1] != 0 and abs(item[1]) <= 8):
            return None
        out.append((item[0], item[1]))
    if out != sorted(out) or len({k for k, _ in out}) != len(out):
        return None
    return float(factor), tuple(out)


def read_table(path: str, key: TableKey) -> dict[str, tuple[float, Dims]] | None:
    """The table stored at ``path`` if it is ours, intact and made for ``key``; else None.

    Never raises: an unreadable, foreign, stale or malformed file is ignored
    (and later overwritten).  JSON only, never pickle, so reading it cannot
    run code.
    """
    try:
        if owned_folder(os.path.dirname(path)) is None:
            return None
        st = os.stat(path)
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        if st.st_size > 1 << 20:
            return None
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("units"), dict):
        return None
    units = doc["units"]
    if set(units) != set(key["words"]):
        return None
    table = {}
    for name, entry in units.items():
        value = _valid_entry(entry)
        if value is None:
            return None
        table[name] = value
    return table


def write_table(path: str, key: TableKey, table: dict[str, tuple[float, Dims]]) -> bool:
    """Store ``table`` at ``path`` atomically (a reader sees the old file or the new one)."""
    folder = owned_folder(os.path.dirname(path))
    if folder is None:
        return False
    doc = {"key": key, "units": {w: [f, [list(d) for d in dims]] for w, (f, dims) in table.items()}}
    tmp = None
    try:
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=".units-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, allow_nan=False)
        os.replace(tmp, path)
        return True
    except (OSError, ValueError):
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False


@cache
def unit_table() -> dict[str, tuple[float, Dims]]:
    """Factor and dimension of every grammar unit word: from the JSON cache when
    it matches the installed pint, else from pint (and then cached)."""
    key = table_key()
    root = owned_folder(cache_root())
    path = os.path.join(root, table_file(key)) if root else None
    table = read_table(path, key) if path else None
    if table is None:
        table = pint_table(tuple(key["words"]))
        if root and path and write_table(path, key, table):
            prune(root, _TABLE_STEM)
    return table


def table_file(key: TableKey | None = None) -> str:
    """The name of this install's unit-table file in the cache folder (one per pint install)."""
    return keyed_name(_TABLE_STEM, json.dumps(key if key is not None else table_key(), sort_keys=True))


@cache
def word(name: str) -> tuple[float, Dims]:
    """Factor to base units and dimension of one allow-listed unit word."""
    if name == "%":
        return 0.01, DIMENSIONLESS
    known = unit_table().get(name)
    # A word outside the grammar's list (never from user text) goes to pint directly.
    return known if known is not None else _pint_word(name)


_PIECE = re.compile(r"([/*]?)([A-Za-z%]+)(?:\^(-?[0-9]))?")


@cache
def parse_unit(text: str) -> tuple[float, Dims]:
    """Factor and dimension of a UNIT token such as ``TFLOP/s`` or ``token/sequence``."""
    if text == "%":
        return word("%")
    factor = 1.0
    dims: dict[str, int] = {}
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

    def _combine(self, other: Q, sign: int) -> Dims:
        d = dict(self.dims)
        for k, v in other.dims:
            d[k] = d.get(k, 0) + sign * v
        return _dims(d)

    def __add__(self, other: Q) -> Q:
        if self.dims != other.dims:
            raise UnitError(f"cannot add `{self.unit or 'dimensionless'}` and `{other.unit or 'dimensionless'}`")
        return Q(self.magnitude + other.magnitude, self.dims)

    def __sub__(self, other: Q) -> Q:
        if self.dims != other.dims:
            raise UnitError(f"cannot subtract `{other.unit or 'dimensionless'}` from `{self.unit or 'dimensionless'}`")
        return Q(self.magnitude - other.magnitude, self.dims)

    def __mul__(self, other: Q) -> Q:
        return Q(self.magnitude * other.magnitude, self._combine(other, 1))

    def __truediv__(self, other: Q) -> Q:
        if other.magnitude == 0:
            raise ZeroDivisionError("division by zero")
        return Q(self.magnitude / other.magnitude, self._combine(other, -1))

    def __neg__(self) -> Q:
        return Q(-self.magnitude, self.dims)

    def finite(self) -> bool:
        return math.isfinite(self.magnitude)
