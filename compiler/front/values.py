"""Values of single statements: quantities with units and ranges, provenance, samples."""

from __future__ import annotations

import math

from effspec.diagnostics import Span
from effspec.front import keys as K
from effspec.front.context import BuildContext, suggest, unescape
from effspec.front.expr import evaluate, to_expr
from effspec.front.files import _resolve_file, load_column
from effspec.front.ir import (
    DECLARED,
    Entry,
    Expr,
    FileRef,
    Provenance,
    Ref,
    Samples,
)
from effspec.front.limits import LIMITS
from effspec.front.units import (
    DIMENSIONLESS,
    Q,
    UnitError,
    dims_of,
    format_dims,
    is_counting,
    parse_unit,
)


def _provenance(ctx: BuildContext, tree) -> Provenance:
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


def _check_range(ctx: BuildContext, key: K.Key, value: float, span: Span, written: str) -> bool:
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


def _quantity(ctx: BuildContext, key: K.Key, q: Q, span: Span, written: str) -> float | None:
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


def _constant(ctx: BuildContext, expr: Expr) -> Q | None:
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


def _samples(ctx: BuildContext, key: K.Key, tree, span: Span, written: str) -> Samples | None:
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


def build_entry(ctx: BuildContext, key: K.Key, assign) -> Entry | None:
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
