"""`file "…"` references: confined to the spec's folder, read as regular files, decoded strictly."""

from __future__ import annotations

import csv
import io
import math
import os
import stat
from typing import TYPE_CHECKING

from effspec.diagnostics import Span, sanitize
from effspec.front.context import BuildContext, suggest
from effspec.front.limits import LIMITS

if TYPE_CHECKING:
    from _csv import Reader  # what csv.reader returns (typeshed's name)

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


def _utf8_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset (for decode errors)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[line_start:offset].decode("utf-8", errors="replace")) + 1
    return raw.count(b"\n", 0, offset) + 1, column


def read_csv_header_and_rows(ctx: BuildContext, path: str, rel: str, span: Span) -> tuple[list[str], Reader] | None:
    """Strict UTF-8 CSV with a header row; returns (header, rows) or None."""
    try:
        raw = read_regular_file(path, LIMITS.max_csv_bytes)
    except OSError as exc:
        ctx.error("EFF020", span, f"`{rel}` cannot be read: {exc.strerror or exc}", "")
        return None
    if len(raw) > LIMITS.max_csv_bytes:
        ctx.error("EFF030", span, f"`{rel}` is larger than {LIMITS.max_csv_bytes:,} bytes", "")
        return None
    try:
        text = raw.decode("utf-8-sig")  # strict: a bad byte is an error, never a replacement character
    except UnicodeDecodeError as exc:
        line, column = _utf8_position(raw, exc.start)
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                  "save the CSV as UTF-8")
        return None
    if "\x00" in text:
        line, column = _position_in(text, text.index("\x00"))
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: a NUL byte: not a CSV file", "")
        return None
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(rows)
    except StopIteration:
        ctx.error("EFF003", span, f"`{rel}` is empty: a header row naming the columns is needed", "")
        return None
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row 1: malformed header ({exc})", "")
        return None
    if len(header) > LIMITS.max_csv_columns:
        ctx.error("EFF030", span, f"`{rel}` has {len(header)} columns; the limit is {LIMITS.max_csv_columns}", "")
        return None
    return [h.strip() for h in header], rows


def _position_in(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def load_column(ctx: BuildContext, path: str, rel: str, column: str, span: Span, factor: float) -> tuple[float, ...] | None:
    """One numeric column of a CSV, converted by ``factor``; a clear error on a bad row."""
    got = read_csv_header_and_rows(ctx, path, rel, span)
    if got is None:
        return None
    header, rows = got
    if column not in header:
        hint = suggest(column, header)
        ctx.error("EFF020", span, f"`{rel}` has no column `{column}`",
                  (hint + " " if hint else "") + "columns: " + ", ".join(f"`{h}`" for h in header))
        return None
    index = header.index(column)
    where = f"column {index + 1} (`{column}`)"
    values: list[float] = []
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
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row {rows.line_num or n}: malformed CSV ({exc})", "")
        return None
    if not values:
        ctx.error("EFF003", span, f"`{rel}` column `{column}` has no rows", "")
        return None
    return tuple(values)
