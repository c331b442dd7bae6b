"""The editor features, as functions of an :class:`~effspec.lsp.analysis.Analysis`.

Each returns lsprotocol types; the server only routes requests here.  Claims,
figures and catalog rows come from the checked Result (the same objects the
CLI's JSON prints); keys, completion and go-to-definition read the tolerant
token stream, so they work while the text does not parse.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types as T

from effspec.diagnostics import Diagnostic, Span
from effspec.display import metric_value, quantity
from effspec.front import keys as K
from effspec.lsp import scan
from effspec.lsp.analysis import Analysis
from effspec.report.rulepages import effective_base, rule_page  # the rule pages the reports link to
from effspec.rules.fixes import claim_units

if TYPE_CHECKING:
    from effspec.engine.results import ClaimResult, Metric
    from effspec.front.ir import Claim

_SEVERITY = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
             "info": T.DiagnosticSeverity.Information}
_MARK = {"consistent": "✓", "mismatch": "✗"}


@dataclass
class Settings:
    """What the client may configure (initializationOptions, or `effspec` in workspace/didChangeConfiguration)."""

    inlay_hints: bool = True  # a hint after each claim
    inlay_status: bool = True  # ✓ / ✗ after the figure
    inlay_unrecoverable: bool = False  # `≈ ?` after a claim the inputs cannot reconstruct
    debounce_ms: float = 30.0  # wait for typing to pause before re-checking

    def update(self, options: object) -> None:
        if not isinstance(options, dict):
            return
        options = options.get("effspec", options)
        if not isinstance(options, dict):
            return
        hints = options.get("inlayHints")
        if isinstance(hints, bool):
            self.inlay_hints = hints
        elif isinstance(hints, dict):
            self.inlay_hints = bool(hints.get("enabled", self.inlay_hints))
            self.inlay_status = bool(hints.get("status", self.inlay_status))
            self.inlay_unrecoverable = bool(hints.get("unrecoverable", self.inlay_unrecoverable))
        debounce = options.get("debounceMs")
        if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 5000:
            self.debounce_ms = float(debounce)


# ----------------------------------------------------------------------------
# Positions


def _position(a: Analysis, line1: int, col1: int) -> T.Position:
    """A 1-based code-point position as an LSP (0-based, UTF-16) Position."""
    line = max(0, line1 - 1)
    text = a.lines[line] if line < len(a.lines) else ""
    return T.Position(line=line, character=scan.to_utf16(text, max(0, col1 - 1)))


def span_range(a: Analysis, span: Span | None) -> T.Range:
    if span is None:
        return T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0))
    return T.Range(start=_position(a, span.line, span.column), end=_position(a, span.end_line, span.end_column))


def cursor(a: Analysis, pos: T.Position) -> tuple[int, int]:
    """An LSP Position as 0-based (line, code-point column)."""
    text = a.lines[pos.line] if 0 <= pos.line < len(a.lines) else ""
    return pos.line, scan.from_utf16(text, pos.character)


# ----------------------------------------------------------------------------
# Diagnostics


def lsp_diagnostic(a: Analysis, d: Diagnostic) -> T.Diagnostic:
    rng = span_range(a, None if d.file else d.span)  # a position in another file (the configuration): the document's start
    related = [T.DiagnosticRelatedInformation(location=T.Location(uri=a.uri, range=rng), message=note) for note in d.notes]
    message = d.message + (f"\nhelp: {d.help}" if d.help else "")
    # A link only under a configured documentation base (`doc_base` in [tool.effspec]): never a guessed URL.
    page = rule_page(d.code, effective_base(None, [a.result] if a.result is not None else []))
    return T.Diagnostic(
        range=rng, message=message, severity=_SEVERITY.get(d.severity, T.DiagnosticSeverity.Error), code=d.code,
        code_description=T.CodeDescription(href=page.url) if page is not None and page.url else None,
        source="effspec", related_information=related or None,
        data=d.to_json(),  # the diagnostic exactly as `effspec check --format json` prints it
    )


def diagnostics(a: Analysis) -> list[T.Diagnostic]:
    return [lsp_diagnostic(a, d) for d in a.diagnostics]


# ----------------------------------------------------------------------------
# Claims: where each one's result is


@dataclass(frozen=True)
class ClaimView:
    claim: Claim
    owner: str  # "run `x`" or "scaling `y`"
    result: ClaimResult | None
    metric: Metric | None  # the figure it was checked against


def claim_views(a: Analysis) -> list[ClaimView]:
    spec, ev = a.spec, a.evaluation
    if spec is None:
        return []
    out: list[ClaimView] = []
    for run in spec.runs:
        rr = ev.runs.get(run.id) if ev is not None else None
        for claim in run.claims:
            # each claim's own result: a metric claimed again from another source has its own (`NAME#2`)
            cr = next((c for c in rr.claims.values() if c.claim is claim), None) if rr is not None else None
            metric = None
            if rr is not None:
                if claim.name.startswith("breakdown."):
                    metric = rr.breakdown.share_metric(claim.name.split(".", 1)[1]) if rr.breakdown is not None else None
                else:
                    metric = rr.figure(claim.name)
            out.append(ClaimView(claim, f"run `{run.id}`", cr, metric))
    for scaling in spec.scalings:
        sr = ev.scalings.get(scaling.id) if ev is not None else None
        for claim in scaling.claims:
            cr = sr.claims.get(claim.key) if sr is not None else None
            metric = None
            if sr is not None:
                point = (next((r for r in sr.runs if r.run_id == claim.point), None) if claim.point else sr.final_point)
                metric = point.metrics.get(claim.name) if point is not None else None
            out.append(ClaimView(claim, f"scaling `{scaling.id}`", cr, metric))
    return out


def _claim_markdown(view: ClaimView) -> str:
    claim, cr, metric = view.claim, view.result, view.metric
    head = f"**claim `{claim.key}`** of {view.owner}"
    if cr is None:
        return head + "\n\nNot evaluated: the spec has errors that stop the check (see the diagnostics)."
    unit = cr.unit
    lines = [head, ""]
    if cr.status == "unrecoverable":
        lines.append("**unrecoverable**: the declared inputs stop short of this figure")
        if cr.missing:
            lines.append("\nmissing: " + ", ".join(f"`{m}`" for m in cr.missing))
        if cr.claimed is not None:
            lines.append(f"\nclaimed: {metric_value(cr.claimed, unit)}")
        return "\n".join(lines)
    mark = _MARK.get(cr.status, "")
    assert cr.reconstructed is not None and cr.claimed is not None  # consistent or mismatch: both known
    lines.append(f"reconstructed: **{metric_value(cr.reconstructed, unit)}** {mark} {cr.status}")
    lines.append("")
    lines.append(f"claimed: {metric_value(cr.claimed, unit)} ± {metric_value(cr.tolerance or 0.0, unit)} (tolerance: half the last"
                 " written digit + 1 % of the claim)")
    if cr.basis and cr.basis != "inputs":
        lines.append(f"\nbasis: {cr.basis}")
    if metric is not None:
        lines += ["", f"`{metric.name} = {metric.formula}`", "", "```text", f"{metric.substituted}", "```"]
        if metric.inputs:
            lines.append("inputs:")
            lines += [f"- {inp.describe()}" for inp in metric.inputs]
    if cr.explanations:
        lines.append("\nreproduced by one change:")
        lines += [f"- {e.change}: {metric_value(e.value, unit)}" for e in cr.explanations]
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Hover


def hover(a: Analysis, pos: T.Position) -> T.Hover | None:
    line, col = cursor(a, pos)
    for view in claim_views(a):
        if scan.contains(view.claim.span, line, col):
            return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=_claim_markdown(view)),
                           range=span_range(a, view.claim.span))
    tok, toks, i = scan.token_at(a.text, line, col)
    if tok is None or tok.kind != "name":
        return None
    rng = T.Range(start=_position(a, tok.line + 1, tok.col + 1), end=_position(a, tok.end_line + 1, tok.end_col + 1))
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    prev = toks[i - 1] if i >= 1 else None
    block = scan.Context("statement", scan.frames_before(toks[:i])).block
    text = None
    if tok.text == "catalog" and prev is not None and prev.text == "=" and i >= 2 and toks[i - 2].text == "peak":
        text = _peak_markdown(a, tok)
    elif nxt is not None and nxt.text == "=" and block is not None:
        text = key_markdown(block, tok.text)
        if tok.text == "peak" and block == "hardware":
            text = (text or "") + "\n\n---\n\n" + (_peak_markdown(a, tok) or "")
    elif nxt is not None and nxt.text == "{" and (block == "run" or block == "model" and tok.text in K.MODEL_BLOCKS):
        text = _block_markdown(tok.text)
    elif tok.text in run_ids(a.text) and (nxt is None or nxt.text not in ("=", "{") or (prev is not None and prev.text == "run")):
        text = _run_markdown(a, tok.text)
    if not text:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text), range=rng)


@functools.cache
def reference_tables() -> dict[tuple[str, str], dict[str, str]]:
    """The key tables of spec/language.md: (block, key) -> {kind, unit, range, default, meaning}."""
    import effspec.spec as spec_package

    path = os.path.join(os.path.dirname(spec_package.__file__ or ""), "language.md")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return {}
    out: dict[tuple[str, str], dict[str, str]] = {}
    block = None
    for row in text.split("\n"):
        heading = re.match(r"^#### `(\w+)", row)
        if heading:
            block = heading.group(1)
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        if block and len(cells) == 6 and cells[0].startswith("`") and cells[0] != "key":
            name = cells[0].strip("`")
            out[(block, name)] = dict(zip(("kind", "unit", "range", "default", "meaning"),
                                          (c.replace("\\|", "|") for c in cells[1:]), strict=True))
    return out


def key_markdown(block: str, name: str) -> str | None:
    table = K.BLOCKS.get(block)
    key = table.get(name) if table else None
    if key is None:
        return None
    row = reference_tables().get((block, name), {})
    lines = [f"**`{name}`** in `{block}`: {row.get('meaning') or key.doc}", ""]
    kind = row.get("kind") or key.kind
    lines.append(f"- kind: {kind}")
    unit = row.get("unit") or (f"`{key.unit}`" if key.unit else "")
    if unit:
        lines.append(f"- unit: {unit}")
    if row.get("range"):
        lines.append(f"- range: {row['range']}")
    if row.get("default"):
        lines.append(f"- default (when not written): {row['default']}")
    required = name in K.REQUIRED.get(block, ())
    if required:
        lines.append("- required")
    lines.append("\nSee spec/language.md, section 5.")
    return "\n".join(lines)


_RUN_FIGURES = ("mfu", "hfu", "valid_tokens_per_second", "step_time", "achieved_flops_per_device", "aggregate_peak")


def _run_markdown(a: Analysis, run_id: str) -> str | None:
    """A run's title and its main reconstructed figures (where a run id is declared or named)."""
    ev = a.evaluation
    rr = ev.runs.get(run_id) if ev is not None else None
    if rr is None:
        return f"**run `{run_id}`**"
    lines = [f"**run `{run_id}`**" + (f": {rr.run.title}" if rr.run.title else ""), ""]
    for name in _RUN_FIGURES:
        metric = rr.figure(name)
        if metric is not None:
            lines.append(f"- {name} = {metric_value(metric.value, metric.unit)}"
                         + (" (implied by a claim)" if metric.basis != "inputs" else ""))
    return "\n".join(lines)


def _block_markdown(name: str) -> str | None:
    if name not in K.BLOCKS or name in ("run", "scaling"):
        return None
    keys = ", ".join(f"`{k}`" for k in K.BLOCKS[name])
    required = K.REQUIRED.get(name)
    return f"**`{name} {{ … }}`** block\n\nkeys: {keys}" + (f"\n\nrequired: {', '.join(f'`{k}`' for k in required)}" if required else "")


def _pool_at(a: Analysis, tok: scan.Tok):
    """The hardware pool (engine Pool) whose block holds the token, and its run result."""
    ev = a.evaluation
    if ev is None:
        return None, None
    for rr in ev.runs.values():
        for pool in rr.pools:
            if scan.contains(pool.block.span, tok.line, tok.col):
                return pool, rr
    return None, None


def _peak_markdown(a: Analysis, tok: scan.Tok) -> str | None:
    from effspec.engine import catalog

    pool, _rr = _pool_at(a, tok)
    if pool is None:
        return "**`peak = catalog`**: the per-device peak from the built-in catalog (fix the errors to see the row)"
    row = pool.catalog_row
    if row is None:
        rows = catalog.rows_for(pool.accelerator or "")
        known = "\n".join(f"- {r.dtype} {r.sparsity}: {quantity(r.flops, 'FLOP/s')}" for r in rows)
        return (f"**catalog**: no row for `{pool.accelerator}` at {pool.dtype} {pool.sparsity}"
                + (f"\n\nits rows:\n{known}" if rows else "\n\nthe accelerator is not in the catalog"))
    written = pool.peak_input is not None and pool.peak_input.provenance != "catalog"
    head = "**catalog row**" if not written else (
        f"written: **{quantity(pool.peak or 0.0, 'FLOP/s')}** ({pool.peak_input.provenance}"
        f"{': ' + pool.peak_input.citation if pool.peak_input.citation else ''}); for comparison, the **catalog row**")
    lines = [f"{head} `{row.accelerator}` · {row.dtype} · {row.sparsity}", "",
             f"peak: **{quantity(row.flops, 'FLOP/s' if row.dtype != 'int8' else 'OP/s')}** per device",
             f"× {pool.active:g} active devices = {quantity(row.flops * pool.active, 'FLOP/s')}", "",
             f"source: {row.citation}"]
    if row.url:
        lines.append(f"\n<{row.url}>")
    if pool.dtype_assumed:
        lines.append("\n(dtype not written: bf16 assumed)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Inlay hints


def inlay_hints(a: Analysis, rng: T.Range, settings: Settings) -> list[T.InlayHint]:
    if not settings.inlay_hints:
        return []
    out: list[T.InlayHint] = []
    for view in claim_views(a):
        cr, span = view.result, view.claim.span
        if cr is None or not rng.start.line <= span.end_line - 1 <= rng.end.line:
            continue
        if cr.reconstructed is None:
            if not settings.inlay_unrecoverable:
                continue
            label = "≈ ?"
        else:
            label = f"≈ {metric_value(cr.reconstructed, cr.unit)}"
            if settings.inlay_status and cr.status in _MARK:
                label += f" {_MARK[cr.status]}"
        out.append(T.InlayHint(position=_position(a, span.end_line, span.end_column), label=label,
                               padding_left=True, tooltip=f"effspec: {cr.status}"))
    return out


# ----------------------------------------------------------------------------
# Completion


def run_ids(text: str) -> dict[str, scan.Tok]:
    """Each run id declared at the top level, with its name token (read from tokens: works on broken text)."""
    toks = [t for t in scan.tokens(text) if t.kind != "comment"]
    out: dict[str, scan.Tok] = {}
    depth = 0
    for i, t in enumerate(toks):
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and t.text == "run" and i + 2 < len(toks) and toks[i + 1].kind == "name" and toks[i + 2].text == "{":
            out.setdefault(toks[i + 1].text, toks[i + 1])
    return out


@functools.cache
def units_for(block: str, name: str) -> tuple[str, ...]:
    """Unit spellings the grammar accepts whose dimension fits the key (its unit or alternatives)."""
    from effspec.front.units import UnitError, dims_of, parse_unit, unit_words

    key = K.BLOCKS.get(block, {}).get(name)
    if key is None or key.kind not in ("quantity", "peak", "samples"):
        return ()
    wanted = [dims_of(u) for u in (key.unit, *key.alt_units)]
    words = unit_words()
    candidates = ["%", *words, *(f"{a}/{b}" for a in words for b in words if a != b)]
    out = []
    for unit in candidates:
        try:
            dims = parse_unit(unit)[1]
        except (UnitError, KeyError, ValueError):
            continue
        if dims in wanted:
            out.append(unit)
    canonical = [u for u in (key.unit, *key.alt_units) if u in out]
    return tuple(dict.fromkeys(canonical + out))


def _items(names, kind: T.CompletionItemKind, detail=None, ctx: scan.Context | None = None, a: Analysis | None = None,
           line: int = 0, col: int = 0) -> list[T.CompletionItem]:
    out = []
    for i, name in enumerate(names):
        item = T.CompletionItem(label=name, kind=kind, detail=detail(name) if detail else None, sort_text=f"{i:04d}")
        if ctx is not None and a is not None and ctx.prefix:
            text = a.lines[line] if line < len(a.lines) else ""
            item.text_edit = T.TextEdit(
                range=T.Range(start=T.Position(line=line, character=scan.to_utf16(text, ctx.prefix_start)),
                              end=T.Position(line=line, character=scan.to_utf16(text, col))),
                new_text=name)
        out.append(item)
    return out


def completion(a: Analysis, pos: T.Position) -> T.CompletionList:
    line, col = cursor(a, pos)
    ctx = scan.context_at(a.text, line, col)
    names, kind, detail = _completion_names(a, ctx)
    items = _items(names, kind, detail, ctx, a, line, col)
    return T.CompletionList(is_incomplete=False, items=items)


def _key_detail(block: str):
    def detail(name: str) -> str | None:
        key = K.BLOCKS.get(block, {}).get(name)
        if key is not None:
            return key.doc
        if name in K.BLOCKS:
            return f"{name} {{ … }} block"
        return "claim METRIC = VALUE" if name == "claim" else None
    return detail


def _completion_names(a: Analysis, ctx: scan.Context):
    """(labels, item kind, detail function) for a context: structure (blocks, keys, claims) or a key's value."""
    block = ctx.block
    C = T.CompletionItemKind
    if ctx.where == "top":
        return (["eff 1"] if not a.text.lstrip().startswith("eff") else []) + ["run", "scaling"], C.Keyword, None
    if ctx.where == "provenance":
        return list(K.PROVENANCE_KINDS), C.EnumMember, lambda _n: 'from KIND "citation"'
    if ctx.where == "claim":
        if block == "scaling":
            return ["efficiency", *K.SCALING_CLAIMABLE], C.Field, None
        return [*K.CLAIMABLE, *K.CLAIM_ALIASES, *(f"breakdown.{c}" for c in K.BREAKDOWN_CATEGORIES)], C.Field, None
    if ctx.where == "statement":
        if block == "run":
            return ["claim", *K.RUN_BLOCKS, *K.BLOCKS["run"]], C.Property, _key_detail("run")
        if block == "scaling":
            return ["claim", *K.BLOCKS["scaling"]], C.Property, _key_detail("scaling")
        if block == "model":  # its keys, then the mixer blocks a hybrid stack may hold
            return [*K.BLOCKS["model"], *K.MODEL_BLOCKS], C.Property, _key_detail("model")
        return list(K.BLOCKS.get(block or "", {})), C.Property, _key_detail(block or "")
    return _value_names(a, ctx)


def _value_names(a: Analysis, ctx: scan.Context):
    """What may follow `key =`: enum values, `catalog`, run ids, accelerators; or, after a number, its units."""
    from effspec.engine import catalog

    block = ctx.block
    C = T.CompletionItemKind
    key = K.BLOCKS.get(block or "", {}).get(ctx.key or "")
    if key is None:
        return [], C.Text, None
    if key.kind == "words" and ctx.where in ("value", "list"):
        return list(key.choices), C.EnumMember, None
    if ctx.where == "unit":
        return list(units_for(block or "", key.name)), C.Unit, None
    if key.kind == "enum" and ctx.where == "value":
        return list(key.choices), C.EnumMember, None
    if key.kind == "bool" and ctx.where == "value":
        return ["true", "false"], C.Value, None
    if key.kind == "peak" and ctx.where == "value":
        return ["catalog"], C.Value, lambda _n: "the per-device peak from the built-in catalog"
    if key.kind in ("run", "runs"):
        ids = list(run_ids(a.text))
        return ids if key.kind == "run" or ctx.where == "list" else [f"[{', '.join(ids)}]", *ids], C.Reference, None
    if key.name == "accelerator" and ctx.where in ("value", "string"):
        def detail(name: str) -> str:
            rows = catalog.rows_for(name.strip('"'))
            return ", ".join(f"{r.dtype} {r.sparsity} {quantity(r.flops, 'FLOP/s')}" for r in rows[:3])
        return [f'"{acc}"' for acc in catalog.known_accelerators()], C.Value, detail
    return [], C.Text, None


# ----------------------------------------------------------------------------
# Code actions


def _claim_unit_at(a: Analysis):  # tests/lsp/test_lsp_fixes.py reads the candidates with it
    """The unit each claim's value must have ("" for a ratio): what the bare-ratio fix reads."""
    return claim_units(a.spec)


def code_actions(a: Analysis, rng: T.Range) -> list[T.CodeAction]:
    """The fixes for the diagnostics that touch ``rng``; one action per edit, naming every diagnostic it fixes."""
    out: dict[tuple[Span, str], T.CodeAction] = {}
    for offer in a.offers:  # vetted: a fix whose result brings a new error on its edit is not offered
        d, fix = offer.diag, offer.fix
        drange = span_range(a, d.span)
        if (drange.end.line, drange.end.character) < (rng.start.line, rng.start.character) \
                or (drange.start.line, drange.start.character) > (rng.end.line, rng.end.character):
            continue
        action = out.get((fix.span, fix.new_text))
        if action is not None:
            action.diagnostics = [*(action.diagnostics or ()), lsp_diagnostic(a, d)]
            continue
        edit = T.TextEdit(range=span_range(a, fix.span), new_text=fix.new_text)
        out[(fix.span, fix.new_text)] = T.CodeAction(
            title=fix.title, kind=T.CodeActionKind.QuickFix, diagnostics=[lsp_diagnostic(a, d)],  # a list: appended to above
            is_preferred=fix.preferred and fix.safe, edit=T.WorkspaceEdit(changes={a.uri: [edit]}))
    return list(out.values())


# ----------------------------------------------------------------------------
# Symbols and definitions


def _tok_range(a: Analysis, start: scan.Tok, end: scan.Tok) -> T.Range:
    return T.Range(start=_position(a, start.line + 1, start.col + 1), end=_position(a, end.end_line + 1, end.end_col + 1))


def document_symbols(a: Analysis) -> list[T.DocumentSymbol]:
    """Runs and scalings, with their blocks and claims as children (from tokens: works on broken text)."""
    toks = [t for t in scan.tokens(a.text) if t.kind != "comment"]
    out: list[T.DocumentSymbol] = []
    stack: list[tuple[T.DocumentSymbol, list[T.DocumentSymbol]]] = []  # open symbols and their children
    S = T.SymbolKind
    for i, t in enumerate(toks):
        if t.text == "{":
            prev, prev2 = (toks[i - 1] if i >= 1 else None), (toks[i - 2] if i >= 2 else None)
            if not stack and prev2 is not None and prev2.text in ("run", "scaling") and prev is not None and prev.kind == "name":
                sym = T.DocumentSymbol(name=prev.text, detail=prev2.text, kind=S.Class if prev2.text == "run" else S.Module,
                                       range=_tok_range(a, prev2, t), selection_range=_tok_range(a, prev, prev))
                out.append(sym)
            elif stack and prev is not None and prev.kind == "name":
                sym = T.DocumentSymbol(name=prev.text, detail="block", kind=S.Struct, range=_tok_range(a, prev, t),
                                       selection_range=_tok_range(a, prev, prev))
                stack[-1][1].append(sym)
            else:  # a brace with no name before it (broken text): kept for the nesting, not listed
                sym = T.DocumentSymbol(name="{", kind=S.Object, range=_tok_range(a, t, t), selection_range=_tok_range(a, t, t))
            stack.append((sym, []))
        elif t.text == "}" and stack:
            sym, children = stack.pop()
            sym.range = T.Range(start=sym.range.start, end=_tok_range(a, t, t).end)
            sym.children = children
        elif t.text == "claim" and stack and i + 1 < len(toks) and toks[i + 1].kind == "name":
            name_tok = toks[i + 1]
            j = i + 2
            while j + 1 < len(toks) and toks[j].text == "." and toks[j + 1].kind == "name":
                j += 2
            name = a.text[name_tok.start:toks[j - 1].end]
            stack[-1][1].append(T.DocumentSymbol(
                name=f"claim {name}", kind=S.Field, range=_tok_range(a, t, toks[j - 1]),
                selection_range=_tok_range(a, name_tok, toks[j - 1])))
    for sym, children in stack:  # not closed yet (typing)
        sym.children = children
    return out


def definition(a: Analysis, pos: T.Position) -> T.Location | None:
    """A run id where it is used (baseline, runs, `run.ID.metric`, `claim x[ID]`) -> its declaration."""
    line, col = cursor(a, pos)
    tok, toks, i = scan.token_at(a.text, line, col)
    if tok is None or tok.kind != "name":
        return None
    decl = run_ids(a.text).get(tok.text)
    if decl is None or decl.start == tok.start:
        return None
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is not None and nxt.text in ("=", "{"):
        return None  # a key or a block of that name
    return T.Location(uri=a.uri, range=_tok_range(a, decl, decl))


def formatting(text: str) -> list[T.TextEdit] | None:
    """`effspec fmt`'s layout as one edit over the whole document; none when the text has errors
    the formatter cannot fix, or the layout would not mean the same (as `effspec fmt` refuses)."""
    from effspec.fmt import FormatterError, format_text

    try:
        formatted = format_text(text)
    except FormatterError:
        return None
    if formatted.text is None or formatted.text == text:
        return [] if formatted.text is not None else None
    lines = text.split("\n")
    end = T.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
    return [T.TextEdit(range=T.Range(start=T.Position(line=0, character=0), end=end), new_text=formatted.text)]
