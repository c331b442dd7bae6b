"""Reading a per-rank CSV strictly, vectorized.

Plain CSV (no quotes) takes the fast path; anything else (quoted cells, stray
whitespace, exponents) is still read exactly, cell by cell.  A bad cell is
EFF003 (EFF011 for a negative or non-finite time) naming the file row and
column.  numpy is imported lazily, so a spec without `ranks` never imports it.
When pyarrow is installed (the `fast` extra), a well-formed file is read by
its CSV reader instead (ranks/fast_csv.py), from the same bytes, unless
``EFFSPEC_NO_FAST_CSV=1``; anything else comes here, and so do all the
diagnostics.
"""

from __future__ import annotations

import csv
import io

from effspec.diagnostics import Diagnostic, Span, name_list, sanitize
from effspec.front.limits import LIMITS
from effspec.ranks.table import (
    BREAKDOWN_COLUMNS,
    COLUMNS,
    MAX_COMMENT_CHARS,
    MAX_COMMENT_LINES,
    MAX_NODE_NAME,
    OPTIONAL_COLUMNS,
    TIME_COLUMNS,
    RankTable,
)


class _Bad(Exception):
    """A coded problem with the CSV, raised inside the loader."""

    def __init__(self, code: str, message: str, help: str = ""):
        super().__init__(message)
        self.code, self.message, self.help = code, message, help


def load_rank_table(path: str, rel: str, span: Span | None, diags: list[Diagnostic]) -> RankTable | None:
    """Read the per-rank CSV strictly; a problem becomes one diagnostic at ``span``."""
    try:
        return _load(path, rel)
    except _Bad as bad:
        diags.append(Diagnostic(bad.code, "error", span, bad.message, bad.help))
        return None


def _read(path: str, rel: str) -> bytes:
    """The file's bytes: UTF-8, no NUL, BOM dropped, line ends as LF."""
    from effspec.front.files import first_invalid_utf8, read_regular_file

    try:  # beneath its folder (see front/files.py), one name, non-blocking, regular files only
        raw = read_regular_file(path, LIMITS.max_csv_bytes)
    except OSError as exc:
        raise _Bad("EFF020", f"`{rel}` cannot be read: {exc.strerror}") from None
    if len(raw) > LIMITS.max_csv_bytes:
        raise _Bad("EFF030", f"`{rel}` is larger than {LIMITS.max_csv_bytes:,} bytes")
    bad = first_invalid_utf8(raw)  # checked a chunk at a time: never the whole text decoded
    if bad is not None:
        line = raw.count(b"\n", 0, bad) + 1
        raise _Bad("EFF003", f"`{rel}` line {line}: not valid UTF-8", "save the CSV as UTF-8")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if b"\x00" in raw:
        raise _Bad("EFF003", f"`{rel}` contains NUL bytes: not a CSV file")
    return raw.replace(b"\r\n", b"\n") if b"\r" in raw else raw


def _comments(raw: bytes, rel: str) -> tuple[tuple[str, ...], bytes]:
    """The ``#`` lines before the header (provenance), kept without the ``# ``, and the rest."""
    lines: list[str] = []
    pos = 0
    while raw.startswith(b"#", pos):
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end
        if len(lines) >= MAX_COMMENT_LINES:
            raise _Bad("EFF030", f"`{rel}` has more than {MAX_COMMENT_LINES:,} comment lines before the header")
        text = sanitize(raw[pos + 1:end].decode("utf-8").strip())
        if len(text) > MAX_COMMENT_CHARS:
            raise _Bad("EFF030", f"`{rel}` line {len(lines) + 1}: a comment longer than {MAX_COMMENT_CHARS:,} characters")
        lines.append(text)
        pos = end + 1
    return tuple(lines), raw[pos:]


def _header(raw: bytes, rel: str, first: int = 2) -> tuple[list[str], bytes]:
    """The header's names, checked for the required columns, and the body after it."""
    header, end = _header_names(raw, rel, first)
    body = b"" if end < 0 else raw[end + 1:]
    if body and not body.endswith(b"\n"):
        body += b"\n"
    return header, body


def _header_names(raw: bytes, rel: str, first: int = 2) -> tuple[list[str], int]:
    """The header's names, checked for the required columns, and where the header line ends (-1: no LF)."""
    from effspec.front.files import MAX_CSV_LINE_CHARS

    end = raw.find(b"\n")
    if (len(raw) if end < 0 else end) > MAX_CSV_LINE_CHARS:
        raise _Bad("EFF030", f"`{rel}` row 1 is longer than {MAX_CSV_LINE_CHARS:,} bytes")
    header_text = (raw if end < 0 else raw[:end]).decode("utf-8")
    try:
        header = [h.strip() for h in next(csv.reader([header_text]))] if header_text.strip() else []
    except csv.Error as exc:
        raise _Bad("EFF003", f"`{rel}` row {first - 1}: malformed header ({exc})") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise _Bad("EFF020", f"`{rel}` has no column{'s' if len(missing) > 1 else ''} "
                   + ", ".join(f"`{c}`" for c in missing),
                   "the header must name rank, node, step, compute, comm, stall; found: "
                   + (name_list(header) or "an empty first row"))
    if len(header) > LIMITS.max_csv_columns:
        raise _Bad("EFF030", f"`{rel}` has {len(header)} columns; the limit is {LIMITS.max_csv_columns}")
    return header, end


def _check_ranges(np, values: dict, cell_text, rel: str, first: int = 2, times: tuple[str, ...] = TIME_COLUMNS) -> None:
    """rank and step are whole numbers ≥ 0; times are finite and ≥ 0."""
    for name in ("rank", "step"):
        v = values[name]
        bad = np.flatnonzero((v != np.floor(v)) | (v < 0) | (v > 2**53))
        if bad.size:
            r = int(bad[0])
            raise _Bad("EFF003", f"`{rel}` row {r + first}, column `{name}`: `{cell_text(r, name)}` "
                       "is not a whole number ≥ 0", f"`{name}` is an integer index")
    for name in times:
        v = values[name]
        bad = np.flatnonzero(~np.isfinite(v) | (v < 0))
        if bad.size:
            r = int(bad[0])
            raise _Bad("EFF011", f"`{rel}` row {r + first}, column `{name}`: `{cell_text(r, name)}` "
                       "is not a finite time ≥ 0 s", "times are seconds, never negative")
    total = values[TIME_COLUMNS[0]] + values[TIME_COLUMNS[1]] + values[TIME_COLUMNS[2]]
    empty = np.flatnonzero(~(total > 0))
    if empty.size:
        r = int(empty[0])
        raise _Bad("EFF011", f"`{rel}` row {r + first}: " + " + ".join(f"`{n}`" for n in TIME_COLUMNS)
                   + " is 0 s: a rank's step takes time", "a row splits the time one rank spent on one step")


def _load(path: str, rel: str) -> RankTable:
    import numpy as np

    comments, raw = _comments(_read(path, rel), rel)
    first = len(comments) + 2  # the file line of the first data row
    checks = _provenance_checks(path, comments)
    fast = _load_fast(np, raw, rel, comments, checks)
    if fast is not None:
        return fast
    header, body = _header(raw, rel, first)
    del raw
    index = {c: header.index(c) for c in COLUMNS}
    optional = [c for c in OPTIONAL_COLUMNS if c in header]
    index.update({c: header.index(c) for c in optional})
    plain = b'"' not in body and b"\r" not in body and not body.startswith(b"\n") and b"\n\n" not in body
    cells = _split_fast(np, body, len(header), rel, first) if plain else None
    if cells is None:
        cells = _split_slow(np, body, len(header), rel, first)
    starts, ends, buf = cells
    del cells, body  # the slow path's buffer is a re-encoded copy: the body is no longer needed
    rows = len(starts)
    if rows == 0:
        raise _Bad("EFF003", f"`{rel}` has a header but no rows", "one row per rank and step")
    if rows > LIMITS.max_csv_rows:
        raise _Bad("EFF030", f"`{rel}` has more than {LIMITS.max_csv_rows:,} rows")
    values = {}
    for name in ("rank", "step", *TIME_COLUMNS, *optional):
        j = index[name]
        values[name] = _parse_numbers(np, buf, starts[:, j], ends[:, j], rel, name, first)
    _check_ranges(np, values, lambda r, name: _cell(buf, starts[r, index[name]], ends[r, index[name]]), rel, first,
                  (*TIME_COLUMNS, *optional))
    _check_exposed(np, values, lambda r, name: _cell(buf, starts[r, index[name]], ends[r, index[name]]), rel, first)
    rank = values["rank"].astype(np.int64)
    step = values["step"].astype(np.int64)
    node, node_names = _nodes(np, buf, starts[:, index["node"]], ends[:, index["node"]], rank, rel, first)
    return RankTable(rank, node, node_names, step, values["compute"], values["comm"], values["stall"],
                     step_time=values.get("step_time"), comm_exposed=values.get("comm_exposed"), idle=values.get("idle"),
                     other=values.get("other"), breakdown=_breakdown(values), provenance=comments,
                     provenance_checks=checks, first_row=first)


def _breakdown(values: dict) -> tuple:
    """The idle-split and kernel-type columns the header names, in BREAKDOWN_COLUMNS order."""
    return tuple((c, values[c]) for c in BREAKDOWN_COLUMNS if c in values)


def _provenance_checks(path: str, comments: tuple[str, ...]) -> tuple[str, ...]:
    """Whether each `file=` line's trace lies beside the CSV with that size and SHA-256 (ranks/provenance.py)."""
    if not any(" file=" in line for line in comments):
        return ()
    from effspec.ranks import provenance

    return provenance.check(path, comments)


def _check_exposed(np, values: dict, cell_text, rel: str, first: int = 2) -> None:
    """comm_exposed, when given, is at most comm."""
    if "comm_exposed" in values:
        over = np.flatnonzero(values["comm_exposed"] > values["comm"] * (1 + 1e-9) + 1e-12)
        if over.size:
            r = int(over[0])
            raise _Bad("EFF003", f"`{rel}` row {r + first}: `comm_exposed` ({cell_text(r, 'comm_exposed')} s) "
                       f"exceeds `comm` ({cell_text(r, 'comm')} s)",
                       "comm_exposed is the part of comm that no compute overlaps")


def _load_fast(np, raw: bytes, rel: str, comments: tuple[str, ...], checks: tuple[str, ...] = ()) -> RankTable | None:
    """The table through pyarrow (ranks/fast_csv.py) when it is installed and the file is
    well-formed; None sends the same bytes down the numpy path, which reports any problem."""
    from effspec.ranks import fast_csv

    if not fast_csv.enabled():
        return None
    first = len(comments) + 2
    header, end = _header_names(raw, rel, first)  # its problems are raised the same way on either path
    optional = tuple(c for c in OPTIONAL_COLUMNS if c in header)
    if end < 0:
        return None
    read = fast_csv.read_columns(np, raw, end + 1, header, ("rank", "step", *TIME_COLUMNS, *optional),
                                 LIMITS.max_csv_rows)
    if read is None:
        return None
    values, node, node_names = read
    try:
        _check_ranges(np, values, lambda r, name: "", rel, first, (*TIME_COLUMNS, *optional))
        _check_exposed(np, values, lambda r, name: "", rel, first)
    except _Bad:
        return None
    rank = values["rank"].astype(np.int64)
    _ranks, first_of, rank_index = np.unique(rank, return_index=True, return_inverse=True)
    if (node != node[first_of[rank_index]]).any():  # a rank on two nodes
        return None
    return RankTable(rank, node, node_names, values["step"].astype(np.int64), values["compute"], values["comm"],
                     values["stall"], step_time=values.get("step_time"), comm_exposed=values.get("comm_exposed"),
                     idle=values.get("idle"), other=values.get("other"), breakdown=_breakdown(values),
                     provenance=comments, provenance_checks=checks, first_row=first)


def _cell(buf, start, end) -> str:
    return bytes(buf[int(start):int(end)]).decode("utf-8", "replace")[:40]


def _split_fast(np, body: bytes, ncols: int, rel: str, first: int = 2):
    """Cell boundaries of a quote-free CSV, found with array operations."""
    buf = np.frombuffer(body, dtype=np.uint8)
    seps = np.flatnonzero((buf == 44) | (buf == 10))
    newline_at = np.flatnonzero(buf[seps] == 10)  # which separators end a line
    rows = len(newline_at)
    if rows == 0:
        return np.zeros((0, ncols), np.int64), np.zeros((0, ncols), np.int64), buf
    per_line = np.diff(newline_at, prepend=-1)  # cells per line
    wrong = np.flatnonzero(per_line != ncols)
    if wrong.size:
        r = int(wrong[0])
        raise _Bad("EFF003", f"`{rel}` row {r + first}: {int(per_line[r])} cells, the header names {ncols}",
                   "every row needs one cell per header column")
    seps = seps.reshape(rows, ncols)
    starts = np.empty_like(seps)
    starts.flat[0] = 0
    starts.flat[1:] = seps.flat[:-1] + 1
    return starts, seps, buf


# Cells gathered into int64 offsets at a time on the slow path: a Python int
# per cell for the whole file cost more than the file itself, ten times over.
_SLOW_CHUNK_CELLS = 1 << 18


def _split_slow(np, body: bytes, ncols: int, rel: str, first: int = 2):
    """The csv module's reading (quotes, blank lines), re-encoded as one buffer with boundaries.

    The body is decoded as it is read (never whole), and the cell offsets are
    packed into int64 arrays a chunk at a time: memory is about the re-encoded
    cells plus 16 bytes a cell (a 135 MB quoted file took 2.2 GB).
    """
    from effspec.front.files import MAX_CSV_LINE_CHARS, CsvLineTooLong, bounded_lines

    out = bytearray()
    # Every cell ends at a comma or a line end, so their count bounds the cells:
    # the offsets are written in place, never gathered and concatenated.
    capacity = body.count(b",") + body.count(b"\n") + 1
    all_starts, all_ends = np.empty(capacity, np.int64), np.empty(capacity, np.int64)
    filled = 0
    starts, ends = [], []
    # newline="\n": lines end at LF only (as io.StringIO's did), and BytesIO shares the body.
    reader = csv.reader(bounded_lines(io.TextIOWrapper(io.BytesIO(body), encoding="utf-8", newline="\n")))
    row_number = first - 1
    rows = 0
    try:
        for row in reader:
            row_number = reader.line_num + first - 1
            if not row or all(not c.strip() for c in row) and len(row) == 1:
                continue
            if len(row) != ncols:
                raise _Bad("EFF003", f"`{rel}` row {row_number}: {len(row)} cells, the header names {ncols}",
                           "every row needs one cell per header column")
            rows += 1
            if rows > LIMITS.max_csv_rows:
                raise _Bad("EFF030", f"`{rel}` has more than {LIMITS.max_csv_rows:,} rows")
            for cell in row:
                b = cell.strip().encode("utf-8")
                starts.append(len(out))
                out += b
                ends.append(len(out))
                out += b","
            if len(starts) >= _SLOW_CHUNK_CELLS:
                filled = _flush(np, starts, ends, all_starts, all_ends, filled)
    except CsvLineTooLong:
        raise _Bad("EFF030", f"`{rel}` row {row_number + 1} is longer than {MAX_CSV_LINE_CHARS:,} characters") from None
    except csv.Error as exc:
        raise _Bad("EFF003", f"`{rel}` row {row_number}: malformed CSV ({exc})") from None
    filled = _flush(np, starts, ends, all_starts, all_ends, filled)
    out += bytes(32)  # room past the last cell, so _parse_numbers never copies the buffer to pad it
    buf = np.frombuffer(out, dtype=np.uint8)  # a view of the bytearray, not a copy
    return all_starts[:filled].reshape(rows, ncols), all_ends[:filled].reshape(rows, ncols), buf


def _flush(np, starts: list, ends: list, all_starts, all_ends, filled: int) -> int:
    """Move a chunk of cell offsets into the preallocated arrays; the new fill."""
    n = len(starts)
    all_starts[filled:filled + n] = starts
    all_ends[filled:filled + n] = ends
    starts.clear()
    ends.clear()
    return filled + n


_POW10 = tuple(10.0 ** k for k in range(23))


def _parse_numbers(np, buf, starts, ends, rel: str, column: str, first: int = 2):
    """Decimal cells to float64, exactly as ``float()`` reads them.

    Plain decimals of up to 15 digits take the vectorized path: the digits
    form an integer below 2**53 and one division by an exact power of ten
    rounds once, so the result is the correctly rounded value.  Any other cell
    (exponent, spaces, more digits) is read by ``float()`` one by one.
    """
    n = len(starts)
    starts = np.ascontiguousarray(starts)
    length = ends - starts
    width = min(int(length.max()) if n else 0, 24)
    padded = buf if len(buf) > int(starts.max(initial=0)) + width else np.concatenate((buf, np.zeros(width + 1, np.uint8)))
    mantissa = np.zeros(n, np.float64)  # exact: at most 15 digits stay below 2**53
    digits = np.zeros(n, np.int8)
    frac = np.zeros(n, np.int8)
    dots = np.zeros(n, np.int8)
    odd = length == 0
    negative = np.zeros(n, bool)
    for j in range(width):
        inside = length > j
        ch = padded[starts + j]
        d = ch - np.uint8(48)  # wraps below '0', so one comparison tests for a digit
        is_digit = (d < 10) & inside
        is_dot = (ch == 46) & inside
        if j == 0:
            negative = inside & (ch == 45)
            odd |= inside & ~(is_digit | is_dot | negative)
        else:
            odd |= inside & ~(is_digit | is_dot)
        mantissa = np.where(is_digit, mantissa * 10.0 + d, mantissa)
        digits += is_digit
        frac += is_digit & (dots > 0)
        dots += is_dot
    odd |= (length > 24) | (digits == 0) | (digits > 15) | (dots > 1)
    pow10 = np.asarray(_POW10)
    value = mantissa / pow10[np.minimum(frac, 22)]
    value = np.where(negative, -value, value)
    for r in np.flatnonzero(odd).tolist():
        text = _cell(buf, starts[r], ends[r]) if length[r] <= 40 else bytes(buf[starts[r]:ends[r]]).decode("utf-8", "replace")
        try:
            value[r] = float(text.strip())
        except ValueError:
            raise _Bad("EFF003", f"`{rel}` row {r + first}, column `{column}`: `{text[:40]}` is not a number",
                       "every row needs a number in this column") from None
    return value


def _nodes(np, buf, starts, ends, rank, rel: str, first: int = 2):
    """Node index per row, and the node names; each rank must stay on one node."""
    length = ends - starts
    empty = np.flatnonzero(length == 0)
    if empty.size:
        raise _Bad("EFF003", f"`{rel}` row {int(empty[0]) + first}, column `node`: empty", "name the node of every row")
    width = int(length.max())
    if width > MAX_NODE_NAME:
        r = int(np.argmax(length))
        raise _Bad("EFF003", f"`{rel}` row {r + first}, column `node`: longer than {MAX_NODE_NAME} bytes")
    ranks, first_of, rank_index = np.unique(rank, return_index=True, return_inverse=True)
    ref = first_of[rank_index]  # the first row of the same rank
    differs = length != length[ref]
    last = len(buf) - 1
    for j in range(width):
        inside = j < length
        differs |= inside & (buf[np.minimum(starts + j, last)] != buf[np.minimum(starts[ref] + j, last)])
    if differs.any():
        r = int(np.flatnonzero(differs)[0])
        raise _Bad("EFF003", f"`{rel}` row {r + first}: rank {int(rank[r])} is on node `{_cell(buf, starts[r], ends[r])}`, "
                   f"but on `{_cell(buf, starts[ref[r]], ends[ref[r]])}` in row {int(ref[r]) + first}",
                   "a rank stays on one node for the whole file")
    names_per_rank = [bytes(buf[s:e]).decode("utf-8") for s, e in zip(starts[first_of].tolist(), ends[first_of].tolist(), strict=False)]
    node_names = tuple(sorted(set(names_per_rank)))
    lookup = {name: i for i, name in enumerate(node_names)}
    node_of_rank = np.asarray([lookup[n] for n in names_per_rank], np.int64)
    return node_of_rank[rank_index], node_names
