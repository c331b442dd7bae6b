"""`file "…"` references: confined to the spec's folder, read as regular files, decoded strictly."""

from __future__ import annotations

import codecs
import csv
import io
import math
import os
import stat
from array import array

from effspec.diagnostics import Span, clip, name_list, sanitize
from effspec.front.context import BuildContext, suggest
from effspec.front.limits import LIMITS

# Pseudo-filesystems are never data, even when a spec sits at their root.
_FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", "/run")


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _resolve_file(ctx: BuildContext, rel: str, span: Span) -> str | None:
    """Resolve a `file` path inside the spec's folder (symlinks too), or EFF020."""
    if ctx.folder is None:
        ctx.error("EFF020", span, f"`file \"{rel}\"` needs the spec to be read from a file",
                  "files resolve relative to the .eff file's folder")
        return None
    if not rel or os.path.isabs(rel) or "\x00" in rel or rel.startswith("~") or len(rel) > 4096:
        ctx.error("EFF020", span, f"`{rel[:200]}` is not a relative path inside the spec's folder",
                  "write a path relative to the .eff file, without leaving its folder")
        return None
    try:
        root = os.path.realpath(ctx.folder)
        path = os.path.realpath(os.path.join(root, rel))  # follows every symlink on the way
        inside = _inside(root, path)
    except (OSError, ValueError):  # e.g. a symlink loop or a name too long
        inside, path = False, ""
    if not inside:
        ctx.error("EFF020", span, f"`{rel}` leaves the spec's folder",
                  "a `file` must lie in the .eff file's folder or below it (symlinks are followed)")
        return None
    if any(_inside(r, path) for r in _FORBIDDEN_ROOTS if os.path.isabs(r)):
        ctx.error("EFF020", span, f"`{rel}` lies in a system pseudo-filesystem", "devices, /proc and /sys are never read")
        return None
    try:
        st = os.stat(path)
    except OSError:
        folder = os.path.dirname(path)
        try:
            near = suggest(os.path.basename(rel), os.listdir(folder)) if os.path.isdir(folder) else ""
        except OSError:
            near = ""
        ctx.error("EFF020", span, f"file `{rel}` not found", near or "the path is relative to the .eff file")
        return None
    if not stat.S_ISREG(st.st_mode):
        ctx.error("EFF020", span, f"`{rel}` is not a regular file", "devices, FIFOs, sockets and folders are not read")
        return None
    if st.st_size > LIMITS.max_csv_bytes:
        ctx.error("EFF030", span, f"`{rel}` is {st.st_size:,} bytes; the limit is {LIMITS.max_csv_bytes:,}", "")
        return None
    return path


def read_regular_file(path: str, limit: int, follow_symlinks: bool = False) -> bytes:
    """At most ``limit + 1`` bytes of a regular file.

    Opened non-blocking (and, unless ``follow_symlinks``, without following a
    final symlink), then checked with fstat, so a FIFO or device, or a file
    swapped for one after `_resolve_file` looked at it, is refused instead of
    blocking.  Raises IsADirectoryError for a folder, OSError otherwise.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a directory", path)
        if not stat.S_ISREG(mode):
            raise OSError(0, "not a regular file")
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_csv_header_and_rows(ctx: BuildContext, path: str, rel: str, span: Span):
    """Strict UTF-8 CSV with a header row; returns (header, rows) or None."""
    try:
        raw = read_regular_file(path, LIMITS.max_csv_bytes)
    except OSError as exc:
        ctx.error("EFF020", span, f"`{rel}` cannot be read: {exc.strerror or exc}", "")
        return None
    if len(raw) > LIMITS.max_csv_bytes:
        ctx.error("EFF030", span, f"`{rel}` is larger than {LIMITS.max_csv_bytes:,} bytes", "")
        return None
    return csv_header_and_rows(ctx, raw, rel, span)


# ----------------------------------------------------------------------------
# Parsing a CSV's bytes in bounded memory: the bytes are held once (as read),
# but never the whole decoded text (four bytes a character once one emoji is
# in it) nor a list of its rows.  A 245 MB step-time CSV took 2.1 GB.

_CHUNK = 1 << 20
# No valid row is longer than this: the csv module's field limit times the column limit.
MAX_CSV_LINE_CHARS = 131_072 * 64
_CONTINUATION = bytes(range(0x80, 0xC0))


def first_invalid_utf8(raw: bytes) -> int | None:
    """The offset of the first byte of ``raw`` that is not UTF-8, or None; decoded a chunk at a time."""
    view = memoryview(raw)
    pos = 0
    while pos < len(raw):
        try:
            _, used = codecs.utf_8_decode(view[pos:pos + _CHUNK], "strict", pos + _CHUNK >= len(raw))
        except UnicodeDecodeError as exc:
            return pos + exc.start
        pos += used
    return None


def utf8_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset, counted in the valid UTF-8 before it
    (a leading byte-order mark is not a column)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    if line_start == 0 and raw.startswith(b"\xef\xbb\xbf") and offset >= 3:
        line_start = 3
    # Characters are the bytes that do not continue a sequence: no decoded copy of a long line.
    column = len(raw[line_start:offset].translate(None, _CONTINUATION)) + 1
    return raw.count(b"\n", 0, offset) + 1, column


class CsvLineTooLong(ValueError):
    """A physical line longer than ``MAX_CSV_LINE_CHARS``: no CSV row is that long."""


def bounded_lines(stream, limit: int = MAX_CSV_LINE_CHARS):
    """The stream's lines, each at most ``limit`` characters (else CsvLineTooLong)."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(("\n", "\r")):
            raise CsvLineTooLong(limit)
        yield line


def csv_header_and_rows(ctx: BuildContext, raw: bytes, rel: str, span: Span):
    """The header and a row reader of a CSV's bytes, or None after an error.

    UTF-8 and NUL are checked over the whole file first (a bad byte anywhere is
    reported before any row), then rows are decoded as they are read.
    """
    bad = first_invalid_utf8(raw)  # strict: a bad byte is an error, never a replacement character
    if bad is not None:
        line, column = utf8_position(raw, bad)
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: not valid UTF-8 (byte 0x{raw[bad]:02x})",
                  "save the CSV as UTF-8")
        return None
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, column = utf8_position(raw, nul)
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: a NUL byte: not a CSV file", "")
        return None
    # newline="" as the csv module asks; BytesIO shares the bytes, it does not copy them.
    text = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", newline="")
    rows = csv.reader(bounded_lines(text), strict=True)
    try:
        header = next(rows)
    except StopIteration:
        ctx.error("EFF003", span, f"`{rel}` is empty: a header row naming the columns is needed", "")
        return None
    except CsvLineTooLong:
        ctx.error("EFF030", span, f"`{rel}` row 1 is longer than {MAX_CSV_LINE_CHARS:,} characters", "")
        return None
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row 1: malformed header ({exc})", "")
        return None
    if len(header) > LIMITS.max_csv_columns:
        ctx.error("EFF030", span, f"`{rel}` has {len(header)} columns; the limit is {LIMITS.max_csv_columns}", "")
        return None
    return [h.strip() for h in header], rows


def load_column(ctx: BuildContext, path: str, rel: str, column: str, span: Span, factor: float) -> tuple[float, ...] | None:
    """One numeric column of a CSV, converted by ``factor``; a clear error on a bad row."""
    got = read_csv_header_and_rows(ctx, path, rel, span)
    if got is None:
        return None
    header, rows = got
    if column not in header:
        # difflib on two long names is slow, and a suggestion that long helps no one.
        hint = suggest(column, [h for h in header if len(h) <= 100]) if len(column) <= 100 else ""
        ctx.error("EFF020", span, f"`{rel}` has no column `{clip(column, 100)}`",
                  (hint + " " if hint else "") + "columns: " + name_list(header))
        return None
    index = header.index(column)
    where = f"column {index + 1} (`{clip(column, 100)}`)"
    values = array("d")  # the floats only: 8 bytes a row, not a Python object each
    n = 1
    try:
        for row in rows:
            n = rows.line_num  # the physical line, so quoted newlines keep the count honest
            if not row:
                continue
            if len(values) >= LIMITS.max_csv_rows:
                ctx.error("EFF030", span, f"`{rel}` has more than {LIMITS.max_csv_rows:,} rows", "")
                return None
            if len(row) > LIMITS.max_csv_columns:
                ctx.error("EFF030", span, f"`{rel}` row {n} has {len(row)} columns; the limit is {LIMITS.max_csv_columns}", "")
                return None
            cell = row[index].strip() if index < len(row) else ""
            shown = sanitize(cell[:40])
            try:
                v = float(cell)
            except ValueError:
                ctx.error("EFF003", span, f"`{rel}` row {n}, {where}: `{shown}` is not a number",
                          "every row needs a number in this column")
                return None
            v *= factor
            if not math.isfinite(v) or v <= 0 or v > LIMITS.max_magnitude:
                ctx.error("EFF011", span, f"`{rel}` row {n}, {where}: `{shown}` is not a positive finite time",
                          "step times are finite and greater than zero")
                return None
            values.append(v)
    except CsvLineTooLong:
        ctx.error("EFF030", span, f"`{rel}` row {rows.line_num + 1} is longer than {MAX_CSV_LINE_CHARS:,} characters", "")
        return None
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row {rows.line_num or n}: malformed CSV ({exc})", "")
        return None
    if not values:
        ctx.error("EFF003", span, f"`{rel}` column `{column}` has no rows", "")
        return None
    return tuple(values)
