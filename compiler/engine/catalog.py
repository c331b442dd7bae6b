"""Accelerator peak catalog: the vendor-published denominators of MFU.

The data lives in ``effspec/data/peaks.json`` (schema: ``peaks.schema.json``
beside it). Each accelerator has a canonical id (``"H100-SXM5"``), a list of
aliases, and one row per ``(dtype, sparsity)`` with the peak in TFLOP/s (TOPS
for int8) and a citation of the vendor document it comes from. This module
loads the file once and answers look-ups with :class:`PeakRow` values whose
``flops`` field is unprefixed (``989.4e12``), per device.

Name matching
-------------
:func:`canonical_accelerator` compares names after normalisation: case is
folded, spaces, dashes, underscores and slashes are ignored, and leading
vendor words ("NVIDIA", "AMD", "Google", "Cloud", "Intel", "Habana", "AWS",
"Amazon") are dropped. A name is first
tried as written (so ``"NVIDIA H100 80GB HBM3"``, the nvidia-smi name of the
SXM5 part, matches its alias), then with memory descriptors removed (``80GB``,
``141 GB``, ``HBM3``, ``HBM3e`` ...), so ``"H200 SXM 141GB"`` finds
``"H200 SXM"``. Aliases themselves are never shortened, and every key must
belong to one accelerator only (checked when the file is loaded).

Matching is deliberately strict. A bare name resolves only when every variant
it could denote has the same peaks: ``"A100"`` resolves to ``A100-SXM4``
because the A100 SXM4 and PCIe datasheet columns carry identical Tensor Core
figures, so the choice cannot change an MFU. ``"H100"`` alone returns None:
the SXM5, PCIe and NVL parts differ (989.4 vs 756 vs 835.5 dense BF16
TFLOP/s), and guessing would silently move an MFU by up to 30 %. The same
applies to bare ``"H200"`` and ``"H800"`` (NVL / PCIe variants exist) and to
bare ``"V100"`` (the PCIe part is 112 TFLOP/s FP16, the SXM2 part 125); the
caller must name the form factor (:func:`candidates` lists the catalogued ones).

A name that resolves although another catalogued part's id begins with it
(``"A100"``: A100-SXM4, and A100-PCIe; ``"Trainium"``: Trainium1, and
Trainium2) is reported by the audit as information (EFF207), naming the row
chosen and how to write the other; :func:`also_named` gives those parts.

Only the standard library is imported at module load; ``jsonschema`` is
imported lazily inside :func:`validate_catalog`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = [
    "PeakRow",
    "also_named",
    "canonical_accelerator",
    "candidates",
    "identify",
    "known_accelerators",
    "lookup",
    "rows_for",
    "validate_catalog",
]

_DATA_PACKAGE = "effspec.data"
_DATA_FILE = "peaks.json"
_SCHEMA_FILE = "peaks.schema.json"

DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "tf32", "fp32", "int8", "nvfp4", "mxfp4", "fp6")
SPARSITIES: tuple[str, ...] = ("dense", "sparse")

_TERA = 1e12

# Common spellings of the catalog's dtype and sparsity vocabulary.
_DTYPE_SYNONYMS: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "single": "fp32",
    "tensorfloat32": "tf32",
    "float8": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
}
_SPARSITY_SYNONYMS: dict[str, str] = {
    "2:4": "sparse",
    "structured": "sparse",
    "nonsparse": "dense",
}

_SEPARATORS = re.compile(r"[\s_\-/,()]+")
_VENDOR_WORDS = frozenset({"nvidia", "amd", "google", "cloud", "intel", "habana", "aws", "amazon"})
_MEMORY = re.compile(r"\b\d+(?:\.\d+)?\s*gi?b\b|\bhbm\d*e?\b")
_NON_ALNUM = re.compile(r"[^a-z0-9]")


@dataclass(frozen=True)
class PeakRow:
    """One catalog row: the peak of one accelerator for one dtype and sparsity.

    ``flops`` is per device and unprefixed (989.4 TFLOP/s is ``989.4e12``).
    For ``dtype == "int8"`` it counts integer operations per second (TOPS
    times 1e12), since the vendors quote int8 peaks in TOPS.
    """

    accelerator: str  # canonical id, e.g. "H100-SXM5"
    dtype: str  # bf16 | fp16 | fp8 | tf32 | fp32 | int8 | nvfp4 | mxfp4 | fp6
    sparsity: str  # dense | sparse
    flops: float  # FLOP/s per device, unprefixed (989.4e12)
    citation: str
    url: str | None


@dataclass(frozen=True)
class _Catalog:
    """The parsed catalog: rows per accelerator and the name index."""

    ids: tuple[str, ...]
    rows: dict[str, tuple[PeakRow, ...]]
    names: dict[str, str]  # normalised key -> canonical id


def _words(name: str) -> str:
    """Lower-case ``name``, split separators to spaces, drop vendor words."""
    words = _SEPARATORS.sub(" ", name.lower()).split()
    while words and words[0] in _VENDOR_WORDS:
        words.pop(0)
    return " ".join(words)


def _key(text: str) -> str:
    """Collapse normalised words to the comparison key (letters and digits)."""
    return _NON_ALNUM.sub("", text)


def _name_keys(name: str) -> tuple[str, ...]:
    """Keys to try for a queried name: as written, then without memory words."""
    words = _words(name)
    full = _key(words)
    reduced = _key(_MEMORY.sub(" ", words))
    return (full,) if reduced == full else (full, reduced)


def _finite_positive(value: Any) -> bool:
    """True for a real number (not bool) that is finite and > 0."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _read_json(filename: str) -> Any:
    """Read and parse one JSON file of the ``effspec.data`` package."""
    text = resources.files(_DATA_PACKAGE).joinpath(filename).read_text(encoding="utf-8")
    return json.loads(text)


def _build(raw: Any) -> _Catalog:
    """Turn the raw JSON document into a :class:`_Catalog`.

    Rows with a non-finite or non-positive figure are skipped (the schema
    rejects them too; this is a guard for a file edited without validation).
    Raises ValueError on structural problems that would make look-ups
    ambiguous: duplicate ids, duplicate (dtype, sparsity) rows, or a name key
    shared by two accelerators.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("accelerators"), list):
        raise ValueError("peaks.json: expected an object with an 'accelerators' list")
    ids: list[str] = []
    rows: dict[str, tuple[PeakRow, ...]] = {}
    names: dict[str, str] = {}
    for acc in raw["accelerators"]:
        acc_id = acc["id"]
        if acc_id in rows:
            raise ValueError(f"peaks.json: duplicate accelerator id {acc_id!r}")
        seen: set[tuple[str, str]] = set()
        acc_rows: list[PeakRow] = []
        for peak in acc["peaks"]:
            dtype, sparsity, tflops = peak["dtype"], peak["sparsity"], peak["tflops"]
            if (dtype, sparsity) in seen:
                raise ValueError(f"peaks.json: duplicate row {acc_id}/{dtype}/{sparsity}")
            seen.add((dtype, sparsity))
            if not _finite_positive(tflops):
                continue
            acc_rows.append(
                PeakRow(
                    accelerator=acc_id,
                    dtype=dtype,
                    sparsity=sparsity,
                    flops=float(tflops) * _TERA,
                    citation=peak["citation"],
                    url=peak.get("url"),
                )
            )
        ids.append(acc_id)
        rows[acc_id] = tuple(acc_rows)
        for name in (acc_id, *acc.get("aliases", ())):
            key = _key(_words(name))
            owner = names.setdefault(key, acc_id)
            if owner != acc_id:
                raise ValueError(
                    f"peaks.json: name {name!r} matches both {owner!r} and {acc_id!r}"
                )
    return _Catalog(ids=tuple(ids), rows=rows, names=names)


@functools.cache
def _catalog() -> _Catalog:
    """Load ``peaks.json`` once per process."""
    return _build(_read_json(_DATA_FILE))


def canonical_accelerator(name: str) -> str | None:
    """Return the canonical id for ``name`` (an id or alias), or None.

    Case, spaces, dashes, a leading vendor word ("NVIDIA", "AMD", "Intel", …), and
    memory descriptors such as "80GB", "141 GB" or "HBM3" are ignored. Names
    that could denote variants with different peaks (e.g. bare "H100") are
    not resolved; see the module docstring.
    """
    found = _match(name)
    return found[1] if found is not None else None


def _match(name: str) -> tuple[str, str] | None:
    """(the key that matched, the canonical id) for ``name``, or None."""
    if not isinstance(name, str):
        return None
    names = _catalog().names
    for key in _name_keys(name):
        if key and key in names:
            return key, names[key]
    return None


def also_named(name: str) -> tuple[str, ...]:
    """Other catalog parts that ``name`` could denote, when it resolves: those whose
    id begins with the name as it matched (``"A100"`` resolves to A100-SXM4 and
    could be A100-PCIe; ``"Trainium"`` is Trainium1 and could be Trainium2).
    In catalog order; () for an unambiguous or unknown name."""
    found = _match(name)
    if found is None:
        return ()
    key, acc_id = found
    return tuple(i for i in _catalog().ids if i != acc_id and _key(_words(i)).startswith(key))


def candidates(name: str) -> tuple[str, ...]:
    """Catalog parts whose id begins with ``name`` as written (``"H100"``: H100-SXM5,
    H100-PCIe, H100-NVL), for a name that resolves to none of them; in catalog order."""
    keys = [k for k in _name_keys(name) if k] if isinstance(name, str) else []
    return tuple(i for i in _catalog().ids if any(_key(_words(i)).startswith(k) for k in keys))


def _norm_dtype(dtype: str) -> str:
    """Map a dtype spelling onto the catalog vocabulary (unknown stays as is)."""
    d = _key(dtype.lower())
    return _DTYPE_SYNONYMS.get(d, d)


def _norm_sparsity(sparsity: str) -> str:
    """Map a sparsity spelling onto "dense"/"sparse" (unknown stays as is)."""
    s = sparsity.strip().lower()
    return _SPARSITY_SYNONYMS.get(s, s)


def rows_for(accelerator: str) -> tuple[PeakRow, ...]:
    """All rows of ``accelerator`` (id or alias) in catalog order; () if unknown."""
    acc_id = canonical_accelerator(accelerator)
    if acc_id is None:
        return ()
    return _catalog().rows[acc_id]


def lookup(accelerator: str, dtype: str, sparsity: str = "dense") -> PeakRow | None:
    """The row for ``(accelerator, dtype, sparsity)``, or None if not catalogued.

    ``dtype`` accepts the catalog vocabulary (bf16, fp16, fp8, tf32, fp32,
    int8) and a few spellings of it ("bfloat16", "float16", ...); ``sparsity``
    is "dense" or "sparse" ("2:4" is accepted for sparse).
    """
    if not isinstance(dtype, str) or not isinstance(sparsity, str):
        return None
    want = (_norm_dtype(dtype), _norm_sparsity(sparsity))
    for row in rows_for(accelerator):
        if (row.dtype, row.sparsity) == want:
            return row
    return None


def identify(accelerator: str, flops: float, rel_tol: float = 0.01) -> tuple[PeakRow, ...]:
    """Rows of ``accelerator`` whose figure equals ``flops`` within ``rel_tol``.

    Used to recognise which published peak a declared figure is: a declared
    624 TFLOP/s on an A100 matches the sparse bf16 and fp16 rows (and the
    dense int8 row, 624 TOPS). Several rows may match; all are returned, in
    catalog order. ``flops`` is unprefixed (624e12). A non-finite or
    non-positive ``flops``, or a negative or non-finite ``rel_tol``, matches
    nothing.
    """
    if not _finite_positive(flops):
        return ()
    if not isinstance(rel_tol, (int, float)) or not math.isfinite(rel_tol) or rel_tol < 0:
        return ()
    return tuple(
        row
        for row in rows_for(accelerator)
        if math.isclose(row.flops, float(flops), rel_tol=rel_tol, abs_tol=0.0)
    )


def known_accelerators() -> tuple[str, ...]:
    """Canonical ids of all catalogued accelerators, in file order."""
    return _catalog().ids


def validate_catalog() -> None:
    """Validate ``peaks.json`` against ``peaks.schema.json`` (Draft 2020-12).

    Raises ``jsonschema.exceptions.SchemaError`` if the schema itself is
    invalid, ``jsonschema.exceptions.ValidationError`` (the first error
    found) if the data does not conform, and ValueError if the data conforms
    but is ambiguous (duplicate ids or rows, a name shared by two
    accelerators).
    """
    from jsonschema import Draft202012Validator  # lazy: optional at import time

    schema = _read_json(_SCHEMA_FILE)
    data = _read_json(_DATA_FILE)
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(data)
    _build(data)
