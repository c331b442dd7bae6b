"""Values of single statements: quantities with units and ranges, provenance, samples."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from effspec.diagnostics import Span
from effspec.front import keys as K
from effspec.front import layers
from effspec.front.context import BuildContext, suggest, unescape
from effspec.front.expr import evaluate, to_expr
from effspec.front.files import _resolve_file, load_column
from effspec.front.ir import (
    DECLARED,
    Entry,
    Expr,
    FileRef,
    PlusMinus,
    Provenance,
    Ref,
    Samples,
    Value,
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

if TYPE_CHECKING:
    from effspec.front.syntax import Node


def _provenance(ctx: BuildContext, tree: Node) -> Provenance:
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


_EXPRESSION_KINDS = ("quantity", "add", "sub", "mul", "div", "neg", "ref")


def _file_samples(ctx: BuildContext, key: K.Key, tree: Node, span: Span) -> Samples | None:
    """`file "x.csv" column "t" [unit]`: a column of a CSV beside the spec."""
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
    loaded = load_column(ctx, path, rel, unescape(str(column_tok)), span, factor)
    return None if loaded is None else Samples(loaded[0], "file", rel, unescape(str(column_tok)), loaded[1])


def _list_items(ctx: BuildContext, key: K.Key, tree: Node, span: Span) -> tuple[list[Node], str] | None:
    """The items of a written list and the unit written after it, within the limits."""
    items, list_unit = list(tree.children), ""
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
    return items, list_unit


def _sample_value(ctx: BuildContext, key: K.Key, item: Node, list_unit: str) -> float | None:
    if getattr(item, "data", None) not in _EXPRESSION_KINDS:
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
    return _quantity(ctx, key, q, Span.of(item), ctx.source(Span.of(item)))


def _samples(ctx: BuildContext, key: K.Key, tree: Node, span: Span) -> Samples | None:
    kind = getattr(tree, "data", None)
    if kind == "file":
        return _file_samples(ctx, key, tree, span)
    items, list_unit = [tree], ""
    if kind == "list":
        listed = _list_items(ctx, key, tree, span)
        if listed is None:
            return None
        items, list_unit = listed
    values: list[float] = []
    for item in items:
        v = _sample_value(ctx, key, item, list_unit)
        if v is None:
            return None
        values.append(v)
    return Samples(tuple(values), "inline", lines=tuple(Span.of(item).line for item in items))


@dataclass(frozen=True)
class _Written:
    """A statement's value as written: its syntax kind, span and text, and the bare name if it is one."""

    tree: Node
    kind: str | None
    span: Span
    text: str
    name: str | None


class _NoValue(enum.Enum):
    """A builder's "error reported" (None is never a built value here)."""

    NO_VALUE = enum.auto()


_NO_VALUE: Final = _NoValue.NO_VALUE
_Built = tuple[Value, str] | Literal[_NoValue.NO_VALUE]  # the value and its canonical unit


def _string_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    if w.kind != "string":
        ctx.error("EFF003", w.span, f"`{key.name}` takes a \"string\"", f'write `{key.name} = "…"`')
        return _NO_VALUE
    return unescape(str(w.tree.children[0])), ""


def _enum_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    if key.shares and w.name is None:
        return _share_value(ctx, key, w)
    if w.name not in key.choices:
        shown = w.name or w.text
        hint = suggest(shown, key.choices)
        ctx.error("EFF003", w.span, f"`{shown}` is not a valid `{key.name}`",
                  (hint + " " if hint else "") + "valid values: " + ", ".join(f"`{c}`" for c in key.choices)
                  + (", or a share such as `75 %`" if key.shares else ""))
        return _NO_VALUE
    return w.name, ""


def _share_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    """The share an enum-or-share key (`recompute`) takes instead of a name: `75 %` or `0.75`.
    It is stored as a dimensionless quantity (the entry's kind is `quantity`)."""
    if w.kind not in _EXPRESSION_KINDS:
        ctx.error("EFF003", w.span, f"`{key.name}` takes a mode or a share",
                  "valid values: " + ", ".join(f"`{c}`" for c in key.choices) + ", or a share such as `75 %`")
        return _NO_VALUE
    q = _constant(ctx, to_expr(w.tree))
    if q is None:
        return _NO_VALUE
    if q.dims:
        ctx.error("EFF010", w.span, f"`{key.name}` as a share is a plain number or %, found `{q.unit}`",
                  "write the share of the forward pass, e.g. `75 %`", label=f"this is {q.unit}")
        return _NO_VALUE
    if not _check_range(ctx, key, q.magnitude, w.span, w.text):
        return _NO_VALUE
    return float(q.magnitude), ""


def _bool_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    if w.name not in ("true", "false"):
        ctx.error("EFF003", w.span, f"`{key.name}` is `true` or `false`", "")
        return _NO_VALUE
    return w.name == "true", ""


def _run_names(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    items = w.tree.children if w.kind == "list" else [w.tree]
    names: list[str] = []
    for item in items:
        if item is None or getattr(item, "type", None) == "UNIT":
            continue
        if getattr(item, "data", None) != "ref" or len(item.children[0].children) != 1:
            ctx.error("EFF003", Span.of(item), f"`{key.name}` names runs by their id", "")
            return _NO_VALUE
        names.append(str(item.children[0].children[0]))
    if key.kind == "run":
        if w.kind == "list" or len(names) != 1:
            ctx.error("EFF003", w.span, "`baseline` names one run", "")
            return _NO_VALUE
        return names[0], ""
    if w.kind != "list":
        ctx.error("EFF003", w.span, "`runs` is a list: `runs = [a, b]`", f"write `runs = [{w.text}]`")
        return _NO_VALUE
    return tuple(names), ""


def _pattern_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    """A hybrid_override_pattern string: every letter one of Megatron-LM's layer symbols, a wrong one
    reported at its own column."""
    if w.kind != "string":
        ctx.error("EFF003", w.span, f"`{key.name}` takes a \"string\" of layer letters",
                  f'write `{key.name} = "M-M*-M-"`: M mamba2, * attention, - dense MLP, E MoE')
        return _NO_VALUE
    raw = str(w.tree.children[0])
    text = unescape(raw)
    if not text:
        ctx.error("EFF003", w.span, f"`{key.name}` is empty", "write one letter a layer: M, *, - or E")
        return _NO_VALUE
    for i, letter in enumerate(text):
        if letter in layers.PATTERN_LETTERS:
            continue
        # columns: the opening quote, then the letters (an escape makes the offset approximate: the letter's index)
        at = w.span.column + 1 + (i if "\\" not in raw else raw.find(letter, 1) - 1)
        span = Span(w.span.line, at, w.span.line, at + 1)
        extra = (" (`/` starts Megatron's MTP layers; write them as `mtp_depth`)" if letter == "/" else "")
        ctx.error("EFF003", span, f"`{letter}` at position {i + 1} of `{key.name}` is not a layer letter{extra}",
                  "the letters are " + ", ".join(f"`{c}` {k}" for c, k in layers.PATTERN_LETTERS.items())
                  + " (Megatron-LM's hybrid_override_pattern)", label="not a layer letter")
        return _NO_VALUE
    return text, ""


def _names_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    """A list of layer types: names or "strings", each one of the known types."""
    if w.kind != "list":
        ctx.error("EFF003", w.span, f"`{key.name}` is a list of layer types",
                  f"write `{key.name} = [linear_attention, full_attention, …]`")
        return _NO_VALUE
    names: list[str] = []
    for item in w.tree.children:
        if item is None:
            continue
        if getattr(item, "type", None) == "UNIT":
            ctx.error("EFF003", Span.of(item), f"`{key.name}` takes no unit", "")
            return _NO_VALUE
        data = getattr(item, "data", None)
        if data == "string":
            name = unescape(str(item.children[0]))
        elif data == "ref" and len(item.children[0].children) == 1:
            name = str(item.children[0].children[0])
        else:
            ctx.error("EFF003", Span.of(item), f"`{key.name}` lists layer types by name", "e.g. `full_attention`")
            return _NO_VALUE
        if len(names) >= LIMITS.max_list_length:
            ctx.error("EFF030", w.span, f"`{key.name}` has more than {LIMITS.max_list_length} items", "")
            return _NO_VALUE
        if name not in layers.LAYER_TYPES:
            hint = suggest(name, layers.LAYER_TYPES)
            ctx.error("EFF003", Span.of(item), f"`{name}` is not a layer type",
                      (hint + " " if hint else "") + "layer types: " + ", ".join(f"`{n}`" for n in layers.LAYER_TYPES))
            return _NO_VALUE
        names.append(name)
    if not names:
        ctx.error("EFF003", w.span, f"`{key.name}` is empty", "list one layer type a layer")
        return _NO_VALUE
    return tuple(names), ""


def _words_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    """A list of words from the key's choices (`targets = [q, k, v, o]`), each once."""
    items = w.tree.children if w.kind == "list" else [w.tree]
    names: list[str] = []
    for item in items:
        if item is None or getattr(item, "type", None) == "UNIT":
            continue
        word = str(item.children[0].children[0]) if (getattr(item, "data", None) == "ref"
                                                    and len(item.children[0].children) == 1) else None
        if word is None or word not in key.choices:
            hint = suggest(word, key.choices) if word else ""
            ctx.error("EFF003", Span.of(item), f"`{key.name}` takes " + ", ".join(f"`{c}`" for c in key.choices),
                      hint or f"write e.g. `{key.name} = [{', '.join(key.choices[:4])}]`")
            return _NO_VALUE
        if word in names:
            ctx.error("EFF003", Span.of(item), f"`{word}` is listed twice in `{key.name}`", "list each once")
            return _NO_VALUE
        names.append(word)
    if w.kind != "list" or not names:
        ctx.error("EFF003", w.span, f"`{key.name}` is a list: `{key.name} = [q, v]`", "")
        return _NO_VALUE
    return tuple(names), ""


def _file_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    if w.kind != "file":
        ctx.error("EFF003", w.span, f"`{key.name}` takes `file \"…\"`", "")
        return _NO_VALUE
    rel = unescape(str(w.tree.children[0]))
    path = _resolve_file(ctx, rel, Span.of(w.tree.children[0]))
    return _NO_VALUE if path is None else (FileRef(rel, path, None), "")


def _samples_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    samples = _samples(ctx, key, w.tree, w.span)
    return _NO_VALUE if samples is None else (samples, "s")


def _numeric_value(ctx: BuildContext, key: K.Key, w: _Written) -> _Built:
    """quantity, integer and peak keys: a constant expression with its unit checked."""
    if key.kind == "peak" and w.name == "catalog":
        return "catalog", "FLOP/s"
    if w.kind not in _EXPRESSION_KINDS:
        ctx.error("EFF003", w.span, f"`{key.name}` takes a number" + (f" in `{key.unit}`" if key.unit else ""), "")
        return _NO_VALUE
    if w.name is not None:
        hint = f"did you mean `{key.name} = catalog`?" if key.kind == "peak" else ""
        ctx.error("EFF003", w.span, f"`{key.name}` takes a number, found the name `{w.name}`", hint)
        return _NO_VALUE
    q = _constant(ctx, to_expr(w.tree))
    if q is None:
        return _NO_VALUE
    if key.kind == "integer":
        if q.dims:
            ctx.error("EFF010", w.span, f"`{key.name}` is a plain count, found `{q.unit}`", "write a whole number with no unit")
            return _NO_VALUE
        if not _check_range(ctx, key, q.magnitude, w.span, w.text):
            return _NO_VALUE
        if q.magnitude != int(q.magnitude):
            ctx.error("EFF003", w.span, f"`{key.name}` must be a whole number, found `{w.text}`", "")
            return _NO_VALUE
        return int(q.magnitude), ""
    value = _quantity(ctx, key, q, w.span, w.text)
    if value is None:
        return _NO_VALUE
    if key.whole and value != int(value):
        ctx.error("EFF003", w.span, f"`{key.name}` counts whole {key.unit}s, found `{w.text}`",
                  f"write a whole number of {key.unit}s, e.g. `{key.name} = {max(1, round(value))} {key.unit}`")
        return _NO_VALUE
    unit = key.unit if q.dims == dims_of(key.unit) or not q.dims and is_counting(dims_of(key.unit)) else format_dims(q.dims)
    return value, unit


# One builder per key kind; any other kind (quantity, integer, peak) is numeric.
_BUILDERS: dict[str, Callable[[BuildContext, K.Key, _Written], _Built]] = {
    "string": _string_value, "enum": _enum_value, "bool": _bool_value, "run": _run_names, "runs": _run_names,
    "file": _file_value, "samples": _samples_value, "pattern": _pattern_value, "names": _names_value,
    "words": _words_value}


PLACEHOLDER = "TODO"


def fill_in_help(block: str, key: K.Key) -> str:
    """What to write in place of a `TODO`, from the key's table entry."""
    if key.kind == "peak":
        what = ("a quantity in `FLOP/s` (e.g. `989.4 TFLOP/s`), or `catalog` "
                "(the built-in figure for `accelerator`, `dtype` and `sparsity`)")
    elif key.kind == "string":
        what = f'a "string": {key.doc}'
    elif key.kind == "enum":
        what = "one of " + ", ".join(f"`{c}`" for c in key.choices)
    elif key.kind == "bool":
        what = "`true` or `false`"
    elif key.kind == "integer":
        what = "a whole number"
    elif key.kind == "samples":
        what = "step times: a quantity in `s`, a list `[…] s`, or `file \"…\" column \"…\"`"
    elif key.kind == "file":
        what = '`file "…"`'
    else:
        what = f"a quantity in `{key.unit}`" if key.unit else "a number"
    return f"replace `{PLACEHOLDER}` with {what}, and say where it comes from (`from datasheet \"…\"`, `from log \"…\"`, …)"


def _placeholder(ctx: BuildContext, block: str, key: K.Key, w: _Written) -> bool:
    """EFF040 for a value left as `TODO` (what `effspec import` writes where a log is silent)."""
    if w.name != PLACEHOLDER:
        return False
    where = f"{block}.{key.name}" if block not in ("", "run", "scaling") else key.name
    meaning = f": {key.doc}" if key.doc and key.kind != "string" else ""
    ctx.error("EFF040", w.span, f"`{where}` is left to fill in{meaning}", fill_in_help(block, key), "fill in this value")
    return True


def _plus_minus(ctx: BuildContext, key: K.Key, tree: Node, value: Value, unit: str) -> PlusMinus | None | bool:
    """The `± N [UNIT]` after a value: its half-width in the value's canonical unit (for step-time samples,
    each sample's; `%` of each sample is kept relative, ``PlusMinus.relative``). False: reported as an error."""
    number_tok, *rest = tree.children
    unit_tok = rest[0] if rest and rest[0] is not None else None
    span = Span.of(tree)
    written = ctx.source(span).lstrip("±").strip()
    where = f"`{key.name} = … ± {written}`"
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key.kind == "integer" or (key.kind != "samples" and not numeric) or key.whole:
        ctx.error("EFF003", span, f"{where}: `{key.name}` is " + (
            "a count, exact as written" if key.kind == "integer" or key.whole else "not a measured quantity") + ": it takes no `±`",
                  "write `±` on a measured quantity (a time, a rate, a peak, a parameter count)", "no `±` here")
        return False
    try:
        amount = float(str(number_tok).replace("_", ""))
    except ValueError:
        amount = math.inf
    if not math.isfinite(amount):
        ctx.error("EFF011", span, f"{where} is not a finite number", "")
        return False
    samples = isinstance(value, Samples)
    if unit_tok is not None and str(unit_tok) == "%":
        if not amount < 100:
            ctx.error("EFF011", span, f"{where} reaches zero or below: the half-width must be smaller than the value",
                      "a `±` states how far the true value may be from the written one", "too wide")
            return False
        if samples:
            return PlusMinus(amount / 100, written, span, relative=True)
        assert isinstance(value, (int, float))  # numeric, checked above
        half = amount / 100 * abs(float(value))
    else:
        factor, dims = parse_unit(str(unit_tok)) if unit_tok is not None else (1.0, DIMENSIONLESS)
        if dims != dims_of(unit):
            ctx.error("EFF010", span, f"{where}: the `±` is in {f'`{unit_tok}`' if unit_tok is not None else 'no unit'}, "
                      f"the value in {f'`{unit}`' if unit else 'no unit'}",
                      f"write the `±` in a unit of the value's dimension (`{unit}`) or in `%` of the value" if unit else
                      "write the `±` as a plain number or in `%` of the value", "incompatible unit")
            return False
        half = amount * factor
    assert isinstance(value, (Samples, int, float))
    least = min(value.values) if isinstance(value, Samples) else abs(float(value))
    if not half < least:
        ctx.error("EFF011", span, f"{where} reaches zero or below: the half-width must be smaller than the value",
                  "a `±` states how far the true value may be from the written one", "too wide")
        return False
    return PlusMinus(half, written, span)


def build_entry(ctx: BuildContext, key: K.Key, assign: Node, block: str = "") -> Entry | None:
    """One `key = value [± …] [from …]` statement as an Entry, or None with the error reported."""
    name_tok, value_tree, *rest = assign.children
    plus_minus_tree = next((t for t in rest if getattr(t, "data", None) == "plusminus"), None)
    prov = [t for t in rest if t is not plus_minus_tree]
    provenance = _provenance(ctx, prov[0] if prov else None)
    value_span = Span.of(value_tree)
    kind = getattr(value_tree, "data", None)
    is_name = kind == "ref" and len(value_tree.children[0].children) == 1
    w = _Written(value_tree, kind, value_span, ctx.source(value_span), str(value_tree.children[0].children[0]) if is_name else None)
    if _placeholder(ctx, block, key, w):
        return None
    built = _BUILDERS.get(key.kind, _numeric_value)(ctx, key, w)
    if built is _NO_VALUE:
        return None
    value, unit = built
    kind_built = "quantity" if key.kind == "enum" and not isinstance(value, str) else key.kind  # a share
    plus_minus = None
    if plus_minus_tree is not None:
        pm = _plus_minus(ctx, key, plus_minus_tree, value, unit)
        if pm is False:
            return None
        plus_minus = pm if isinstance(pm, PlusMinus) else None
    return Entry(key.name, kind_built, value, unit, w.text, provenance, Span.of(name_tok), value_span, plus_minus)
