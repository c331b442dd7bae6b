"""The per-rank CSV through pyarrow's reader: an optional fast path (the `fast` extra).

It reads only the well-formed case, from the bytes the loader has already
read beneath the spec's folder (front/files.py): it never opens a file.
Anything it does not read exactly as the numpy loader would (quotes, CR,
blank lines, a cell pyarrow cannot convert, a repeated column name, too many
rows, an empty or over-long node name) makes it return None, and the numpy
loader reads the same bytes and reports, so every diagnostic comes from one
place.  The values it does return are float64 cells converted by pyarrow's
correctly rounded parser, which gives the same double as ``float()``:
tests/test_ranks_fast.py holds the two paths to identical tables.

pyarrow is imported only here, when a per-rank table is loaded, and not at all
when ``EFFSPEC_NO_FAST_CSV`` is set to anything but ``0`` or an empty string.
"""

from __future__ import annotations

import os
from typing import Any

from effspec.ranks.table import MAX_NODE_NAME

ENV_SWITCH = "EFFSPEC_NO_FAST_CSV"


def enabled() -> bool:
    """True unless ``EFFSPEC_NO_FAST_CSV`` forces the numpy loader."""
    return os.environ.get(ENV_SWITCH, "").strip() in ("", "0")


def _pyarrow() -> Any:
    """pyarrow and its CSV module, or None when the `fast` extra is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.compute  # noqa: F401  (registers pa.compute)
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return None
    return pa


def available() -> bool:
    """Whether the fast path would be tried (switch not set, pyarrow importable)."""
    return enabled() and _pyarrow() is not None


def _plain(raw: bytes, start: int) -> bool:
    """No quotes, CR or blank lines after ``start``: what both readers split the same way."""
    return (raw.find(b'"', start) < 0 and raw.find(b"\r", start) < 0 and not raw.startswith(b"\n", start)
            and raw.find(b"\n\n", start) < 0 and start < len(raw))


def read_columns(np: Any, raw: bytes, start: int, header: list[str], numeric: tuple[str, ...],
                 max_rows: int) -> tuple[dict[str, Any], Any, tuple[str, ...]] | None:
    """The numeric columns as float64 arrays, and each row's node as an index into the
    sorted node names; None for anything but the well-formed case."""
    pa = _pyarrow() if enabled() else None
    if pa is None or len(set(header)) != len(header) or not _plain(raw, start):
        return None
    rows = raw.count(b"\n", start) + (0 if raw.endswith(b"\n") else 1)
    if rows > max_rows:
        return None
    table = _read(pa, memoryview(raw)[start:], header, numeric)
    if table is None or table.num_rows != rows:
        return None
    nodes = _nodes(np, pa, table.column("node"))
    if nodes is None:
        return None
    values = {}
    for name in numeric:  # column by column, each dropped once copied out, to keep the peak low
        column = table.column(name)
        table = table.drop_columns([name])
        if column.null_count:
            return None
        array = column.to_numpy()
        del column
        values[name] = array if array.flags.writeable else array.copy()
    return values, nodes[0], nodes[1]


def _read(pa: Any, body: memoryview, header: list[str], numeric: tuple[str, ...]) -> Any:
    """pyarrow's table of the node and numeric columns; None where pyarrow refuses the body."""
    types = {name: pa.float64() for name in numeric}
    types["node"] = pa.string()
    try:
        return pa.csv.read_csv(
            pa.py_buffer(body),
            read_options=pa.csv.ReadOptions(column_names=header, use_threads=True),
            parse_options=pa.csv.ParseOptions(delimiter=",", quote_char=False, double_quote=False, escape_char=False,
                                              newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pa.csv.ConvertOptions(column_types=types, include_columns=["node", *numeric],
                                                  null_values=[], true_values=[], false_values=[],
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                  check_utf8=False),  # the loader has checked the whole file
            memory_pool=pa.system_memory_pool())  # returns what it frees: mimalloc kept ~70 MB more at the peak
    except pa.ArrowException:
        return None


def _nodes(np: Any, pa: Any, column: Any) -> tuple[Any, tuple[str, ...]] | None:
    """Each row's index into the sorted node names; None for an empty or over-long name."""
    lengths = pa.compute.binary_length(column)
    if pa.compute.min(lengths).as_py() == 0 or pa.compute.max(lengths).as_py() > MAX_NODE_NAME:
        return None
    encoded = column.combine_chunks().dictionary_encode()
    names = encoded.dictionary.to_pylist()
    order = sorted(range(len(names)), key=names.__getitem__)
    rank_of = np.empty(len(names), np.int64)
    rank_of[order] = np.arange(len(names), dtype=np.int64)
    return rank_of[encoded.indices.to_numpy()], tuple(names[i] for i in order)
