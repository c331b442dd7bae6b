"""The per-rank CSV through pyarrow's reader: an optional fast path (the `fast` extra).

It reads only the well-formed case, from the bytes the loader has already
read beneath the spec's folder (front/files.py), copied a segment at a time
into pyarrow's memory: it never opens a file.
Anything it does not read exactly as the numpy loader would (quotes, CR,
blank lines, a cell pyarrow cannot convert, a repeated column name, too many
rows, an empty or over-long node name) makes it return None, and the numpy
loader reads the same bytes and reports, so every diagnostic comes from one
place.  The values it does return are float64 cells converted by pyarrow's
correctly rounded parser, which gives the same double as ``float()``:
tests/ranks/test_ranks_fast.py holds the two paths to identical tables.

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
        import pyarrow.csv  # noqa: F401  (makes pa.csv)
    except ImportError:
        return None
    return pa


def available() -> bool:
    """Whether the fast path would be tried (switch not set, pyarrow importable)."""
    return enabled() and _pyarrow() is not None


def _plain(raw: bytes, start: int) -> bool:
    """No quotes, CR or leading blank line after ``start``: what both readers split the same way."""
    # A blank line inside is a row of one cell for pyarrow, which it refuses (the header names six or more).
    return raw.find(b'"', start) < 0 and raw.find(b"\r", start) < 0 and not raw.startswith(b"\n", start) and start < len(raw)


def read_columns(np: Any, raw: bytes, start: int, header: list[str], numeric: tuple[str, ...],
                 max_rows: int) -> tuple[dict[str, Any], Any, tuple[str, ...]] | None:
    """The numeric columns as float64 arrays, and each row's node as an index into the
    sorted node names; None for anything but the well-formed case.

    The rows are counted first (one per LF), the arrays allocated once, and
    pyarrow's batches copied in and released one at a time: the peak is the
    file and the arrays, not the file, pyarrow's table and the arrays."""
    pa = _pyarrow() if enabled() else None
    if pa is None or len(set(header)) != len(header) or not _plain(raw, start):
        return None
    rows = raw.count(b"\n", start) + (0 if raw.endswith(b"\n") else 1)
    if rows > max_rows:
        return None
    values = {name: np.empty(rows, np.float64) for name in numeric}
    node = np.empty(rows, np.int64)
    names: dict[str, int] = {}  # node name → its number, in order of appearance
    done = 0
    try:
        for batch in _batches(pa, raw, start, header, numeric):
            n = batch.num_rows
            if done + n > rows or batch.column("node").null_count:
                return None
            for name in numeric:
                column = batch.column(name)
                if column.null_count:
                    return None
                values[name][done:done + n] = column.to_numpy()
            dictionary = batch.column("node").dictionary.to_pylist()
            number = np.asarray([names.setdefault(name, len(names)) for name in dictionary], np.int64)
            node[done:done + n] = number[batch.column("node").indices.to_numpy()]
            done += n
    except pa.ArrowException:  # a row pyarrow cannot split or convert: the numpy loader says which
        return None
    sorted_names = _sorted_nodes(np, node, list(names)) if done == rows else None
    return None if sorted_names is None else (values, node, sorted_names)


# The body is handed to pyarrow a segment at a time (cut after a line end), each
# read by pyarrow's threaded reader and copied out before the next: the speed of
# its parallel reader at the memory of its streaming one.
SEGMENT_BYTES = 16 << 20


def _batches(pa: Any, raw: bytes, start: int, header: list[str], numeric: tuple[str, ...]) -> Any:
    """pyarrow's record batches of the node and numeric columns of the rows from
    ``start`` on (raises ArrowException)."""
    types = {name: pa.float64() for name in numeric}
    types["node"] = pa.dictionary(pa.int32(), pa.string())  # a name is stored once per batch, not per row
    options = {
        "read_options": pa.csv.ReadOptions(column_names=header, use_threads=True),
        "parse_options": pa.csv.ParseOptions(delimiter=",", quote_char=False, double_quote=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=False),
        "convert_options": pa.csv.ConvertOptions(column_types=types, include_columns=["node", *numeric],
                                                 null_values=[], true_values=[], false_values=[],
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 check_utf8=False),  # the loader has checked the whole file
        "memory_pool": pa.system_memory_pool(),  # returns what it frees: mimalloc kept more at the peak
    }
    body = memoryview(raw)
    while start < len(raw):
        end = raw.find(b"\n", start + SEGMENT_BYTES) if start + SEGMENT_BYTES < len(raw) else -1
        end = len(raw) if end < 0 else end + 1
        yield from pa.csv.read_csv(_owned(pa, body[start:end]), **options).to_batches()
        start = end


def _owned(pa: Any, segment: memoryview) -> Any:
    """A copy of ``segment`` in memory pyarrow owns.  Handed a Python buffer
    (``py_buffer``), pyarrow's worker threads may drop the last reference to it
    after the read returns, taking the GIL from a foreign thread: on CPython
    3.11 that raced with ``tracemalloc.stop()`` and crashed the process
    (tests/ranks/test_ranks_fast.py::test_loads_under_tracemalloc_do_not_crash).
    The copy is one segment, not the file."""
    owned = pa.allocate_buffer(len(segment), memory_pool=pa.system_memory_pool())
    with memoryview(owned) as view:
        view.cast("B")[:] = segment
    return owned


def _sorted_nodes(np: Any, node: Any, names: list[str]) -> tuple[str, ...] | None:
    """Renumber ``node`` in place by sorted name, as the numpy loader numbers them, and
    give the sorted names; None for an empty or over-long name."""
    if any(not name or len(name.encode("utf-8")) > MAX_NODE_NAME for name in names):
        return None
    order = sorted(range(len(names)), key=names.__getitem__)
    rank_of = np.empty(len(names), np.int64)
    rank_of[order] = np.arange(len(names), dtype=np.int64)
    np.take(rank_of, node, out=node)
    return tuple(names[i] for i in order)
