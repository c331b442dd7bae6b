"""Stage 2: syntax tree to typed, unit-checked IR.

Everything a single statement can get wrong is found here: unknown names
(EFF002), bad values and missing keys (EFF003), wrong dimensions (EFF010),
out-of-range numbers (EFF011), unresolved references and files (EFF020), and
exceeded limits (EFF030).  Cross-run and cross-metric checks come later.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field

from . import keys as K
from .diagnostics import Diagnostic, Span, sanitize
from .ir import (
    DECLARED, BinOp, Block, Claim, Entry, Expr, FileRef, Neg, Number, Provenance, Ref, Run,
    Samples, Scaling, Spec,
)
from .limits import LIMITS
from .units import DIMENSIONLESS, Q, UnitError, dims_of, format_dims, is_counting, parse_unit

_MODEL_REQUIRED = {
    "dense_transformer": ("layers", "d_model", "heads", "ffn", "d_ff", "vocab"),
    "moe_transformer": ("layers", "d_model", "heads", "ffn", "vocab", "experts", "top_k"),
    "custom": ("flops_per_token",),
}


def suggest(word: str, choices) -> str:
    """`did you mean` text for the closest valid name, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


def unescape(token: str) -> str:
    body = token[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\") if "\\" in body else body


_UNIT_TERM = re.compile(r"[A-Za-z%]+(?:\^(-?[0-9]))?")


@functools.cache
def _unit_problem(text: str) -> str:
    """Why a UNIT token exceeds the unit limits, or "" (memoized: units repeat)."""
    terms = _UNIT_TERM.findall(text)
    written = max((abs(int(e)) for e in terms if e), default=1)
    if len(terms) > LIMITS.max_unit_terms:
        return f"has {len(terms)} words; the limit is {LIMITS.max_unit_terms}"
    if written > LIMITS.max_unit_exponent:
        return f"has the exponent {written}; the limit is {LIMITS.max_unit_exponent}"
    # The grammar allows only single-digit exponents; this bounds what a chain
    # like `s^4*s^4` adds up to, so no factor overflows on the way.
    worst = max((abs(e) for _, e in parse_unit(text)[1]), default=0)
    if worst > LIMITS.max_unit_exponent:
        return f"raises a dimension to the power {worst}; the limit is {LIMITS.max_unit_exponent}"
    return ""


def prescan(tree) -> Diagnostic | None:
    """EFF030 for the first node nested deeper than the limit or the first unit
    beyond the unit limits.  One iterative walk: the tree may be deep here."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > LIMITS.max_expression_depth + 8:  # 8: start/run/block/assign levels
            return Diagnostic("EFF030", "error", Span.of(node),
                              f"expressions nest more than {LIMITS.max_expression_depth} levels deep",
                              "simplify the expression")
        for child in node.children:
            if hasattr(child, "children"):
                stack.append((child, depth + 1))
            elif getattr(child, "type", None) == "UNIT":
                problem = _unit_problem(str(child))
                if problem:
                    return Diagnostic("EFF030", "error", Span.of(child), f"the unit `{child}` {problem}",
                                      "write the unit the way it is printed, e.g. `TFLOP/s` or `token/s`")
    return None


@dataclass
class _Ctx:
    text: str
    folder: str | None  # the spec's folder, for `file` references; None for text input
    diags: list[Diagnostic] = field(default_factory=list)

    def error(self, code, span, message, help_="", label=""):
        self.diags.append(Diagnostic(code, "error", span, message, help_, label))

    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Split once: `source` runs per entry and per list item, and splitting
        # the whole text each time made a 5 MiB spec quadratic (minutes).
        self.lines = self.text.split("\n")

    def source(self, span: Span) -> str:
        """The source text under a span (single or multi-line)."""
        lines = self.lines
        if span.line == span.end_line:
            return lines[span.line - 1][span.column - 1 : span.end_column - 1]
        parts = [lines[span.line - 1][span.column - 1 :]] + lines[span.line : span.end_line - 1]
        parts.append(lines[span.end_line - 1][: span.end_column - 1])
        return " ".join(p.strip() for p in parts)


# ----------------------------------------------------------------------------
# Expressions


def to_expr(tree) -> Expr:
    """Convert an expression subtree (depth already bounded)."""
    kind = getattr(tree, "data", None)
    span = Span.of(tree)
    if kind == "quantity":
        number, *unit = tree.children
        return Number(float(str(number).replace("_", "")), str(unit[0]) if unit and unit[0] is not None else "", str(number), span)
    if kind == "ref":
        return Ref(tuple(str(t) for t in tree.children[0].children), span)
    if kind in ("add", "sub", "mul", "div"):
        op = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[kind]
        return BinOp(op, to_expr(tree.children[0]), to_expr(tree.children[1]), span)
    if kind == "neg":
        return Neg(to_expr(tree.children[0]), span)
    raise ValueError(f"not an expression: {kind}")


def evaluate(expr: Expr, resolve) -> Q:
    """Evaluate an expression; ``resolve(Ref) -> Q`` supplies references.

    Raises UnitError, ZeroDivisionError, or LookupError (from resolve).
    """
    if isinstance(expr, Number):
        if not expr.unit:
            return Q(expr.value)
        factor, dims = parse_unit(expr.unit)
        return Q(expr.value * factor, dims)
    if isinstance(expr, Ref):
        return resolve(expr)
    if isinstance(expr, Neg):
        return -evaluate(expr.operand, resolve)
    left, right = evaluate(expr.left, resolve), evaluate(expr.right, resolve)
    if expr.op == "+":
        return left + right
    if expr.op == "-":
        return left - right
    if expr.op == "*":
        return left * right
    return left / right


def refs_in(expr: Expr) -> list[Ref]:
    out, stack = [], [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            out.append(node)
        elif isinstance(node, BinOp):
            stack += [node.right, node.left]
        elif isinstance(node, Neg):
            stack.append(node.operand)
    return out


# ----------------------------------------------------------------------------
# Values


def _provenance(ctx: _Ctx, tree) -> Provenance:
    if tree is None:
        return DECLARED
    kind_tok, citation = tree.children
    kind = str(kind_tok)
    if kind not in K.PROVENANCE_KINDS:
        hint = suggest(kind, K.PROVENANCE_KINDS)
        ctx.error(
            "EFF003", Span.of(kind_tok), f"unknown provenance `{kind}`",
            (hint + " " if hint else "") + "provenance is one of " + ", ".join(f"`{k}`" for k in K.PROVENANCE_KINDS),
        )
        kind = "declared"
    return Provenance(kind, unescape(str(citation)))


def _check_range(ctx: _Ctx, key: K.Key, value: float, span: Span, written: str) -> bool:
    unit = key.unit
    shown = f"{value:g}{' ' + unit if unit else ''}"
    if not math.isfinite(value):
        ctx.error("EFF011", span, f"`{key.name}` is not a finite number: `{written}`",
                  "write a finite value; numbers beyond about 1.8e308 overflow to infinity")
        return False
    if abs(value) > LIMITS.max_magnitude:
        ctx.error("EFF011", span, f"`{key.name}` = {shown} is beyond any plausible value",
                  f"values above {LIMITS.max_magnitude:g} in base units are rejected; check the exponent and unit")
        return False
    if value < key.minimum:
        ctx.error("EFF011", span, f"`{key.name}` cannot be negative: `{written}`", "write a value of zero or more")
        return False
    if key.positive and value <= 0:
        ctx.error("EFF011", span, f"`{key.name}` must be greater than zero: `{written}`", "")
        return False
    if key.maximum is not None and value > key.maximum:
        ctx.error("EFF011", span, f"`{key.name}` = {shown} is out of range (at most {key.maximum:g}{' ' + unit if unit else ''})",
                  "check the exponent and the unit")
        return False
    return True


def _quantity(ctx: _Ctx, key: K.Key, q: Q, span: Span, written: str) -> float | None:
    """Check a quantity's dimension against the key; return it in the key's unit."""
    accepted = (key.unit,) + key.alt_units
    if q.dims not in {dims_of(u) for u in accepted}:
        want = dims_of(key.unit)
        # A bare number for a counting unit (`count = 64`) means that unit.
        if q.dims == DIMENSIONLESS and is_counting(want):
            q = Q(q.magnitude, want)
        else:
            expected = " or ".join(f"`{u}`" if u else "a plain number or %" for u in accepted)
            actual = f"`{q.unit}`" if q.dims else "a plain number"
            hint = f"write the value in {expected}"
            if key.unit == "FLOP/s" and q.unit == "FLOP":
                hint = "a peak or rate is FLOP per second: write e.g. `989.4 TFLOP/s`"
            elif key.unit == "s" and not q.dims:
                hint = "times need a unit: `s`, `ms`, `min`, `h` or `day`"
            elif key.unit == "sequence" and q.unit == "sample":
                hint = "for language-model batches write `sequence`"
            ctx.error("EFF010", span, f"`{key.name}` expects {expected}, found {actual}", hint,
                      label=f"this is {q.unit or 'dimensionless'}")
            return None
    if not _check_range(ctx, key, q.magnitude, span, written):
        return None
    return q.magnitude


def _constant(ctx: _Ctx, expr: Expr) -> Q | None:
    def no_refs(ref: Ref) -> Q:
        raise LookupError(ref)

    try:
        q = evaluate(expr, no_refs)
    except LookupError as exc:
        ref = exc.args[0]
        ctx.error("EFF020", ref.span, f"`{ref.dotted}` cannot be used here",
                  "a declared value is a number with its unit; references are for claims")
        return None
    except UnitError as exc:
        ctx.error("EFF010", expr.span, str(exc), "")
        return None
    except ZeroDivisionError:
        ctx.error("EFF011", expr.span, "division by zero", "")
        return None
    except OverflowError:
        ctx.error("EFF011", expr.span, "the value overflows", "")
        return None
    return q


# Pseudo-filesystems are never data, even when a spec sits at their root.
_FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", "/run")


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _resolve_file(ctx: _Ctx, rel: str, span: Span) -> str | None:
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


def read_csv_header_and_rows(ctx: _Ctx, path: str, rel: str, span: Span):
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


def load_column(ctx: _Ctx, path: str, rel: str, column: str, span: Span, factor: float) -> tuple[float, ...] | None:
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
    values = []
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


def _samples(ctx: _Ctx, key: K.Key, tree, span: Span, written: str) -> Samples | None:
    kind = getattr(tree, "data", None)
    if kind == "file":
        name_tok, *rest = tree.children
        column_tok = rest[0] if rest else None
        unit_tok = rest[1] if len(rest) > 1 else None
        rel = unescape(str(name_tok))
        if column_tok is None:
            ctx.error("EFF003", span, f"`{key.name} = file \"{rel}\"` needs a column",
                      f'write `file "{rel}" column "<name>"`')
            return None
        factor = 1.0
        if unit_tok is not None:
            f, dims = parse_unit(str(unit_tok))
            if dims != dims_of("s"):
                ctx.error("EFF010", Span.of(unit_tok), f"`{key.name}` expects a time unit, found `{unit_tok}`", "write `s` or `ms`")
                return None
            factor = f
        path = _resolve_file(ctx, rel, Span.of(name_tok))
        if path is None:
            return None
        values = load_column(ctx, path, rel, unescape(str(column_tok)), span, factor)
        return None if values is None else Samples(values, "file", rel, unescape(str(column_tok)))
    items = tree.children if kind == "list" else [tree]
    list_unit = ""
    if kind == "list":
        if items and getattr(items[-1], "type", None) == "UNIT":
            list_unit = str(items[-1])
            items = items[:-1]
        items = [c for c in items if c is not None]
        if len(items) > LIMITS.max_list_length:
            ctx.error("EFF030", span, f"the list has {len(items):,} items; the limit is {LIMITS.max_list_length:,}",
                      "put long sample series in a CSV file")
            return None
        if not items:
            ctx.error("EFF003", span, f"`{key.name}` is an empty list", "give at least one sample")
            return None
    values = []
    for item in items:
        if getattr(item, "data", None) not in ("quantity", "add", "sub", "mul", "div", "neg", "ref"):
            ctx.error("EFF003", Span.of(item), f"`{key.name}` takes numbers with a time unit", "")
            return None
        q = _constant(ctx, to_expr(item))
        if q is None:
            return None
        if list_unit:
            if q.dims:
                ctx.error("EFF003", Span.of(item), "a unit after the list applies to every item: write bare numbers inside",
                          f"write `[…] {list_unit}`")
                return None
            factor, dims = parse_unit(list_unit)
            q = Q(q.magnitude * factor, dims)
        v = _quantity(ctx, key, q, Span.of(item), ctx.source(Span.of(item)))
        if v is None:
            return None
        values.append(v)
    return Samples(tuple(values), "inline")


def build_entry(ctx: _Ctx, key: K.Key, assign) -> Entry | None:
    name_tok, value_tree, *prov = assign.children
    provenance = _provenance(ctx, prov[0] if prov else None)
    span = Span.of(name_tok)
    value_span = Span.of(value_tree)
    written = ctx.source(value_span)
    kind = getattr(value_tree, "data", None)
    is_name = kind == "ref" and len(value_tree.children[0].children) == 1
    name_value = str(value_tree.children[0].children[0]) if is_name else None

    def make(value, unit=""):
        return Entry(key.name, key.kind, value, unit, written, provenance, span, value_span)

    if key.kind == "string":
        if kind != "string":
            ctx.error("EFF003", value_span, f"`{key.name}` takes a \"string\"", f'write `{key.name} = "…"`')
            return None
        return make(unescape(str(value_tree.children[0])))
    if key.kind == "enum":
        if name_value not in key.choices:
            shown = name_value or written
            hint = suggest(shown, key.choices)
            ctx.error("EFF003", value_span, f"`{shown}` is not a valid `{key.name}`",
                      (hint + " " if hint else "") + "valid values: " + ", ".join(f"`{c}`" for c in key.choices))
            return None
        return make(name_value)
    if key.kind == "bool":
        if name_value not in ("true", "false"):
            ctx.error("EFF003", value_span, f"`{key.name}` is `true` or `false`", "")
            return None
        return make(name_value == "true")
    if key.kind in ("run", "runs"):
        items = value_tree.children if kind == "list" else [value_tree]
        names = []
        for item in items:
            if item is None or getattr(item, "type", None) == "UNIT":
                continue
            if getattr(item, "data", None) != "ref" or len(item.children[0].children) != 1:
                ctx.error("EFF003", Span.of(item), f"`{key.name}` names runs by their id", "")
                return None
            names.append(str(item.children[0].children[0]))
        if key.kind == "run":
            if kind == "list" or len(names) != 1:
                ctx.error("EFF003", value_span, "`baseline` names one run", "")
                return None
            return make(names[0])
        if kind != "list":
            ctx.error("EFF003", value_span, "`runs` is a list: `runs = [a, b]`", f"write `runs = [{written}]`")
            return None
        return make(tuple(names))
    if key.kind == "file":
        if kind != "file":
            ctx.error("EFF003", value_span, f"`{key.name}` takes `file \"…\"`", "")
            return None
        rel = unescape(str(value_tree.children[0]))
        path = _resolve_file(ctx, rel, Span.of(value_tree.children[0]))
        return None if path is None else make(FileRef(rel, path, None))
    if key.kind == "samples":
        samples = _samples(ctx, key, value_tree, value_span, written)
        return None if samples is None else make(samples, "s")
    if key.kind == "peak" and name_value == "catalog":
        return make("catalog", "FLOP/s")
    # quantity, integer, peak
    if kind not in ("quantity", "add", "sub", "mul", "div", "neg", "ref"):
        ctx.error("EFF003", value_span, f"`{key.name}` takes a number" + (f" in `{key.unit}`" if key.unit else ""), "")
        return None
    if is_name:
        hint = f"did you mean `{key.name} = catalog`?" if key.kind == "peak" else ""
        ctx.error("EFF003", value_span, f"`{key.name}` takes a number, found the name `{name_value}`", hint)
        return None
    q = _constant(ctx, to_expr(value_tree))
    if q is None:
        return None
    if key.kind == "integer":
        if q.dims:
            ctx.error("EFF010", value_span, f"`{key.name}` is a plain count, found `{q.unit}`", "write a whole number with no unit")
            return None
        if not _check_range(ctx, key, q.magnitude, value_span, written):
            return None
        if q.magnitude != int(q.magnitude):
            ctx.error("EFF003", value_span, f"`{key.name}` must be a whole number, found `{written}`", "")
            return None
        return make(int(q.magnitude))
    value = _quantity(ctx, key, q, value_span, written)
    if value is None:
        return None
    unit = key.unit if q.dims == dims_of(key.unit) or not q.dims and is_counting(dims_of(key.unit)) else format_dims(q.dims)
    return make(value, unit)


# ----------------------------------------------------------------------------
# Blocks, runs, the file


def _statements(ctx: _Ctx, block_name: str, stmts) -> tuple[list[Entry], list[Block], list, set[str]]:
    """Entries of a block, nested blocks (run level only), claim trees, and
    the key names written (valid or not)."""
    table = K.BLOCKS[block_name]
    entries: list[Entry] = []
    blocks: list[Block] = []
    claims = []
    seen: dict[str, Span] = {}
    for stmt in stmts:
        kind = stmt.data
        if kind == "claim":
            if block_name != "run":
                ctx.error("EFF002", Span.of(stmt), f"a `claim` belongs in a run, not in `{block_name}`",
                          "move the claim to the run's body")
            else:
                claims.append(stmt)
            continue
        name_tok = stmt.children[0]
        name = str(name_tok)
        span = Span.of(name_tok)
        if kind == "block":
            if block_name == "run" and name in K.RUN_BLOCKS:
                if name in seen and name not in K.REPEATABLE_BLOCKS:
                    ctx.error("EFF003", span, f"block `{name}` appears twice in this run",
                              "merge them; only `hardware` may repeat (a heterogeneous pool)")
                    continue
                seen[name] = span
                sub_entries, _, _, written = _statements(ctx, name, stmt.children[1:])
                blocks.append(Block(name, tuple(sub_entries), Span.of(stmt)))
                _check_required(ctx, name, sub_entries, written, Span.of(name_tok))
                continue
            if name in table:
                ctx.error("EFF002", span, f"`{name}` is a key, not a block", f"write `{name} = <value>`")
                continue
            where = "a run" if block_name == "run" else f"`{block_name}`"
            hint = suggest(name, K.RUN_BLOCKS) if block_name == "run" else ""
            ctx.error("EFF002", span, f"unknown block `{name}` in {where}",
                      hint or ("blocks nest one level: " + ", ".join(f"`{b}`" for b in K.RUN_BLOCKS) + " sit directly in a run"))
            continue
        # assignment
        key = table.get(name)
        if key is None:
            if block_name == "run" and name in K.RUN_BLOCKS:
                ctx.error("EFF002", span, f"`{name}` is a block, not a key", f"write `{name} {{ … }}`")
                continue
            owner = next((b for b, t in K.BLOCKS.items() if name in t and b != block_name), None)
            hint = suggest(name, table)
            if not hint and owner:
                hint = f"`{name}` belongs in `{owner}`" + (" { … }" if owner != "scaling" else "")
            where = f"`{block_name}`" if block_name not in ("run", "scaling") else f"a {block_name}"
            ctx.error("EFF002", span, f"unknown key `{name}` in {where}",
                      hint or "valid keys: " + ", ".join(f"`{k}`" for k in table))
            continue
        if name in seen:
            ctx.error("EFF003", span, f"`{name}` is set twice", f"the first is on line {seen[name].line}; keep one")
            continue
        seen[name] = span
        entry = build_entry(ctx, key, stmt)
        if entry is not None:
            entries.append(entry)
    return entries, blocks, claims, set(seen)


def _check_required(ctx: _Ctx, name: str, entries: list[Entry], written: set[str], span: Span) -> None:
    """EFF003 for required keys that were not written at all (a key that was
    written but failed its own check has its diagnostic already)."""
    required = list(K.REQUIRED.get(name, ()))
    if name == "model":
        kind = next((e.value for e in entries if e.key == "kind"), None)
        if "kind" not in written:
            required.insert(0, "kind")
        required += _MODEL_REQUIRED.get(kind, ())
    missing = [k for k in required if k not in written]
    if name == "model" and kind == "moe_transformer" and not written & {"d_ff", "d_ff_expert"}:
        missing.append("d_ff_expert")  # (or d_ff): an expert's FFN size sets its FLOPs
    if missing:
        ctx.error("EFF003", span, f"`{name}` is missing " + ", ".join(f"`{k}`" for k in missing),
                  "add " + ("it" if len(missing) == 1 else "them") + f" to the `{name}` block")


def _claim(ctx: _Ctx, tree) -> Claim | None:
    dotted, value_tree, *prov = tree.children
    path = [str(t) for t in dotted.children]
    written = ".".join(path)
    name_span = Span.of(dotted)
    if len(path) == 1:
        name = K.CLAIM_ALIASES.get(path[0], path[0])
        if name not in K.CLAIMABLE:
            hint = suggest(path[0], list(K.CLAIMABLE) + list(K.CLAIM_ALIASES))
            ctx.error("EFF002", name_span, f"`{written}` is not a metric that can be claimed",
                      hint or "claimable: " + ", ".join(f"`{m}`" for m in K.CLAIMABLE) + ", and `breakdown.<category>`")
            return None
    elif len(path) == 2 and path[0] == "breakdown":
        if path[1] not in K.BREAKDOWN_CATEGORIES:
            hint = suggest(path[1], K.BREAKDOWN_CATEGORIES)
            ctx.error("EFF002", name_span, f"`{path[1]}` is not a breakdown category",
                      hint or "categories: " + ", ".join(f"`{c}`" for c in K.BREAKDOWN_CATEGORIES))
            return None
        name = written
    else:
        ctx.error("EFF002", name_span, f"`{written}` is not a metric that can be claimed",
                  "claim a metric of this run (`mfu`, `throughput`, …) or `breakdown.<category>`")
        return None
    kind = getattr(value_tree, "data", None)
    if kind not in ("quantity", "add", "sub", "mul", "div", "neg", "ref"):
        ctx.error("EFF003", Span.of(value_tree), f"claim `{written}` takes a number or an expression", "")
        return None
    expr = to_expr(value_tree)
    for ref in refs_in(expr):
        head = K.CLAIM_ALIASES.get(ref.path[0], ref.path[0])
        ok = (len(ref.path) == 1 and head in K.CLAIMABLE) or (
            len(ref.path) == 2 and ref.path[0] in K.BLOCKS and ref.path[0] != "run") or (
            len(ref.path) >= 3 and ref.path[0] == "run")
        if not ok:
            hint = suggest(ref.path[0], list(K.CLAIMABLE) + list(K.CLAIM_ALIASES))
            ctx.error("EFF020", ref.span, f"`{ref.dotted}` is not a metric or declared value",
                      hint or "refer to a metric (`mfu`), a declared key (`work.seq_len`) or another run (`run.base_8.step_time`)")
            return None
    return Claim(name, written, expr, ctx.source(Span.of(value_tree)), _provenance(ctx, prov[0] if prov else None),
                 Span.of(tree), name_span, Span.of(value_tree))


def _run(ctx: _Ctx, tree) -> Run:
    _, name_tok, *stmts = tree.children
    entries, blocks, claim_trees, _ = _statements(ctx, "run", stmts)
    claims = [c for c in (_claim(ctx, t) for t in claim_trees) if c is not None]
    if len(claims) > LIMITS.max_claims:
        ctx.error("EFF030", Span.of(name_tok), f"run has {len(claims)} claims; the limit is {LIMITS.max_claims}", "")
        claims = claims[: LIMITS.max_claims]
    seen_claims: dict[str, Claim] = {}
    for c in claims:
        if c.name in seen_claims:
            ctx.error("EFF003", c.name_span, f"`{c.written}` is claimed twice",
                      f"the first claim is on line {seen_claims[c.name].span.line}; declare one claim per metric")
        seen_claims.setdefault(c.name, c)
    claims = list(seen_claims.values())
    values = {e.key: e.value for e in entries}
    return Run(str(name_tok), values.get("title"), values.get("source"), tuple(blocks), tuple(claims),
               Span.of(tree), Span.of(name_tok))


def _scaling(ctx: _Ctx, tree) -> Scaling:
    name_tok, *stmts = tree.children
    entries, _, _, written = _statements(ctx, "scaling", stmts)
    _check_required(ctx, "scaling", entries, written, Span.of(name_tok))
    values = {e.key: e.value for e in entries}
    return Scaling(str(name_tok), values.get("kind"), values.get("baseline"), tuple(values.get("runs", ())),
                   tuple(entries), Span.of(tree), Span.of(name_tok))


def build_ir(tree, text: str, file: str, folder: str | None) -> tuple[Spec | None, list[Diagnostic]]:
    """Build the checked IR from a parse tree.  ``folder`` anchors `file` paths."""
    ctx = _Ctx(text, folder)
    too_big = prescan(tree)
    if too_big is not None:
        return None, [too_big]
    header, *items = tree.children
    version_tok = header.children[0]
    if str(version_tok) != "1":
        ctx.error("EFF003", Span.of(version_tok), f"unsupported language version `eff {version_tok}`",
                  "this effspec reads `eff 1`")
        return None, ctx.diags
    if len(items) > LIMITS.max_runs:
        ctx.error("EFF030", Span.of(items[LIMITS.max_runs]), f"the file declares {len(items):,} runs and scalings; the limit is {LIMITS.max_runs:,}", "split the file")
        return None, ctx.diags
    runs: list[Run] = []
    scalings: list[Scaling] = []
    ids: dict[str, Span] = {}
    for item in items:
        built = _run(ctx, item) if item.data == "run" else _scaling(ctx, item)
        if built.id in ids:
            ctx.error("EFF003", built.name_span, f"`{built.id}` is declared twice",
                      f"the first is on line {ids[built.id].line}; ids must be unique in a file")
            continue
        ids[built.id] = built.name_span
        (runs if isinstance(built, Run) else scalings).append(built)
    run_ids = [r.id for r in runs]
    for s in scalings:
        for key in ("baseline", "runs"):
            entry = s.get(key)
            if entry is None:
                continue
            for rid in (entry.value,) if key == "baseline" else entry.value:
                if rid not in run_ids:
                    hint = suggest(rid, run_ids)
                    ctx.error("EFF020", entry.value_span, f"no run `{rid}` in this file",
                              hint or ("runs here: " + ", ".join(f"`{r}`" for r in run_ids) if run_ids else "declare the run first"))
    for r in runs:
        for c in r.claims:
            for ref in refs_in(c.expr):
                if ref.path[0] == "run" and ref.path[1] not in run_ids:
                    hint = suggest(ref.path[1], run_ids)
                    ctx.error("EFF020", ref.span, f"no run `{ref.path[1]}` in this file", hint)
    return Spec(file, 1, tuple(runs), tuple(scalings)), ctx.diags
