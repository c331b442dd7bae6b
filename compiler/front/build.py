"""Stage 2: syntax tree to typed, unit-checked IR.

Everything a single statement can get wrong is found here: unknown names
(EFF002), bad values and missing keys (EFF003), wrong dimensions (EFF010),
out-of-range numbers (EFF011), unresolved references and files (EFF020), and
exceeded limits (EFF030).  Cross-run and cross-metric checks come later.
"""

from __future__ import annotations

import functools
import re
from collections.abc import MutableMapping
from typing import TYPE_CHECKING

from effspec.diagnostics import Diagnostic, Span
from effspec.front import keys as K
from effspec.front import layers, mixers
from effspec.front.context import BuildContext, suggest
from effspec.front.expr import refs_in, to_expr
from effspec.front.ir import (
    Block,
    Claim,
    Entry,
    Run,
    Scaling,
    Spec,
    Value,
)
from effspec.front.limits import LIMITS
from effspec.front.units import (
    parse_unit,
)
from effspec.front.values import _provenance, build_entry

if TYPE_CHECKING:
    from effspec.front.syntax import Node

_MODEL_REQUIRED = {
    "dense_transformer": ("layers", "d_model", "heads", "ffn", "d_ff", "vocab"),
    "moe_transformer": ("layers", "d_model", "heads", "ffn", "vocab", "experts", "top_k"),
    "hybrid": ("layers", "d_model", "vocab"),
    "custom": ("flops_per_token",),
}


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


def prescan(tree: Node) -> Diagnostic | None:
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


def _statements(ctx: BuildContext, block_name: str, stmts: list[Node]) -> tuple[list[Entry], list[Block], list[Node], set[str]]:
    """Entries of a block, nested blocks (run level only), claim trees, and
    the key names written (valid or not)."""
    table = K.BLOCKS[block_name]
    entries: list[Entry] = []
    blocks: list[Block] = []
    claims: list[Node] = []
    seen: dict[str, Span] = {}
    for stmt in stmts:
        kind = stmt.data
        if kind == "claim":
            if block_name not in ("run", "scaling"):
                ctx.error("EFF002", Span.of(stmt), f"a `claim` belongs in a run or a scaling, not in `{block_name}`",
                          "move the claim to the run's body")
            else:
                claims.append(stmt)
            continue
        name_tok = stmt.children[0]
        name = str(name_tok)
        span = Span.of(name_tok)
        if kind == "block":
            if block_name == "model" and name in K.MODEL_BLOCKS:
                _model_block(ctx, stmt, seen, blocks)
                continue
            if block_name == "run" and name in K.RUN_BLOCKS:
                if name in seen and name not in K.REPEATABLE_BLOCKS:
                    ctx.error("EFF003", span, f"block `{name}` appears twice in this run",
                              "merge them; only `hardware` may repeat (a heterogeneous pool)")
                    continue
                seen[name] = span
                sub_entries, sub_blocks, _, written = _statements(ctx, name, stmt.children[1:])
                blocks.append(Block(name, tuple(sub_entries), Span.of(stmt), tuple(sub_blocks)))
                _check_required(ctx, name, sub_entries, written, Span.of(name_tok))
                if name == "model":
                    _check_hybrid(ctx, sub_entries, sub_blocks, Span.of(name_tok), written)
                continue
            if name in table:
                ctx.error("EFF002", span, f"`{name}` is a key, not a block", f"write `{name} = <value>`")
                continue
            _unknown_block(ctx, block_name, name, span)
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
        entry = build_entry(ctx, key, stmt, block_name)
        if entry is not None:
            entries.append(entry)
    return entries, blocks, claims, set(seen)


def _unknown_block(ctx: BuildContext, block_name: str, name: str, span: Span) -> None:
    where = "a run" if block_name == "run" else f"`{block_name}`"
    hint = (suggest(name, K.RUN_BLOCKS) if block_name == "run" else
            suggest(name, K.MODEL_BLOCKS) if block_name == "model" else "")
    if block_name == "model" and not hint:
        hint = "the blocks of `model` are " + ", ".join(f"`{b}`" for b in K.MODEL_BLOCKS)
    ctx.error("EFF002", span, f"unknown block `{name}` in {where}",
              hint or ("blocks nest one level: " + ", ".join(f"`{b}`" for b in K.RUN_BLOCKS) + " sit directly in a run"))


def _model_block(ctx: BuildContext, stmt: Node, seen: dict[str, Span], blocks: list[Block]) -> None:
    """A mixer block inside `model` (`mamba2 { … }`), once each."""
    name_tok = stmt.children[0]
    name, span = str(name_tok), Span.of(name_tok)
    if name in seen:
        ctx.error("EFF003", span, f"block `{name}` appears twice in `model`", "merge them")
        return
    seen[name] = span
    sub_entries, _, _, written = _statements(ctx, name, stmt.children[1:])
    blocks.append(Block(name, tuple(sub_entries), Span.of(stmt)))
    _check_required(ctx, name, sub_entries, written, span)


def _check_required(ctx: BuildContext, name: str, entries: list[Entry], written: set[str], span: Span) -> None:
    """EFF003 for required keys that were not written at all (a key that was
    written but failed its own check has its diagnostic already)."""
    required = list(K.REQUIRED.get(name, ()))
    if name == "model":
        kind = next((e.value for e in entries if e.key == "kind"), None)
        if "kind" not in written:
            required.insert(0, "kind")
        required += _MODEL_REQUIRED.get(kind, ()) if isinstance(kind, str) else ()
    missing = [k for k in required if k not in written]
    if name == "model" and kind == "moe_transformer" and not written & {"d_ff", "d_ff_expert"}:
        missing.append("d_ff_expert")  # (or d_ff): an expert's FFN size sets its FLOPs
    if name == "model" and written & set(_MLA_KEYS):
        missing += [k for k in _MLA_REQUIRED if k not in written and k not in missing]
    if missing:
        ctx.error("EFF003", span, f"`{name}` is missing " + ", ".join(f"`{k}`" for k in missing),
                  "add " + ("it" if len(missing) == 1 else "them") + f" to the `{name}` block")
    if name == "model":
        _check_model_shape(ctx, entries)


_MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_MLA_REQUIRED = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _check_model_shape(ctx: BuildContext, entries: list[Entry]) -> None:
    """Keys that contradict each other within `model`: MLA beside GQA sizes, a window's
    layer count without a window, more windowed layers than layers."""
    by_key = {e.key: e for e in entries}
    if "kv_lora_rank" in by_key:
        for key in ("head_dim", "kv_heads"):
            if key in by_key:
                ctx.error("EFF003", by_key[key].span, f"`{key}` does not apply to MLA attention (`kv_lora_rank` is set)",
                          "MLA's per-head sizes are `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim`, and "
                          "every head has its own keys and values; remove `" + key + "`")
    sliding = by_key.get("sliding_layers")
    if sliding is not None and "sliding_window" not in by_key:
        ctx.error("EFF003", sliding.span, "`sliding_layers` needs `sliding_window`",
                  "write the window, e.g. `sliding_window = 4096 token`, or remove `sliding_layers`")
    layers = by_key.get("layers")
    for key in ("sliding_layers", "moe_layers"):
        entry = by_key.get(key)
        if (entry is not None and layers is not None and isinstance(entry.value, int) and isinstance(layers.value, int)
                and entry.value > layers.value):
            ctx.error("EFF011", entry.value_span, f"`{key}` = {entry.value} exceeds `layers` = {layers.value}",
                      f"`{key}` counts some of the model's layers")


def _check_hybrid(ctx: BuildContext, entries: list[Entry], sub_blocks: list[Block], span: Span,
                  written_keys: set[str]) -> None:
    """A hybrid stack's pattern against `layers`, and the blocks and keys its layers need (EFF003);
    the pattern keys and the mixer blocks outside `kind = hybrid`."""
    by_key = {e.key: e for e in entries}
    kind = by_key["kind"].value if "kind" in by_key else None
    sub_blocks = [b for b in sub_blocks if b.name in K.HYBRID_BLOCKS]  # `lora` goes with any shape
    subs = {b.name: b for b in sub_blocks}
    written = [by_key[k] for k in layers.PATTERN_KEYS if k in by_key]
    if kind != "hybrid":
        for entry in written:
            ctx.error("EFF003", entry.span, f"`{entry.key}` describes a hybrid stack; this model is `{kind}`",
                      f"write `kind = hybrid`, or remove `{entry.key}`")
        for b in sub_blocks:
            ctx.error("EFF003", b.span, f"a `{b.name}` block is a layer of a hybrid stack; this model is `{kind}`",
                      f"write `kind = hybrid` and a `pattern`, or remove the `{b.name}` block")
        return
    if not written and not written_keys & set(layers.PATTERN_KEYS):
        ctx.error("EFF003", span, "`model` (kind = hybrid) is missing its stack: `pattern`, `layer_types` or "
                  "`full_attention_interval`", 'e.g. `pattern = "M-M-M*-"` (M mamba2, * attention, - MLP, E MoE)')
        return
    if not written:  # written, with an error of its own: nothing more to check
        return
    for entry in written[1:]:
        ctx.error("EFF003", entry.span, f"`{entry.key}` and `{written[0].key}` both describe the stack",
                  f"keep one; the first is on line {written[0].span.line}")
    entry = written[0]
    n_layers = by_key["layers"].value if "layers" in by_key else None
    if "mtp_depth" in by_key and by_key["mtp_depth"].value:
        ctx.error("EFF003", by_key["mtp_depth"].span, "`mtp_depth` is not counted for a hybrid stack yet",
                  "add the MTP modules' FLOPs as `extra_flops_per_token`, or remove `mtp_depth`")
    if entry.key in ("pattern", "layer_types") and isinstance(n_layers, int):
        length = len(entry.value) if isinstance(entry.value, (str, tuple)) else 0
        if length != n_layers:
            ctx.error("EFF003", entry.value_span,
                      f"`{entry.key}` names {length} layers; `layers` = {n_layers}",
                      "one entry a layer: write the whole stack, or correct `layers`", label=f"{length} layers")
            return
    if not isinstance(n_layers, int):
        return
    value = entry.value
    sublayers = layers.sublayers_of(
        value if isinstance(value, str) else None, value if isinstance(value, tuple) else None,
        value if isinstance(value, int) and not isinstance(value, bool) else None,
        n_layers, set(subs), "experts" in by_key)
    if sublayers is None:
        linear = [m for m in mixers.all_mixers().values() if m.linear]
        ctx.error("EFF003", entry.span, f"`linear_attention` in `{entry.key}` means the model's linear mixer, and "
                  + ("there is none" if not {m.name for m in linear} & set(subs) else "there are two"),
                  "write one mixer block: " + " or ".join(", ".join(f"`{m.name} {{ … }}` ({m.model})" for m in linear)
                                                          .rsplit(", ", 1)))
        return
    _check_stack_needs(ctx, by_key, subs, sublayers, entry, span)


def _check_stack_needs(ctx: BuildContext, by_key: dict[str, Entry], subs: dict[str, Block], sublayers: list[str],
                       entry: Entry, span: Span) -> None:
    """The mixer blocks and the keys the stack's layers need; windows within its attention layers."""
    used = set(sublayers)
    for mixer in layers.KINDS:
        if mixer in used and mixer not in subs:
            ctx.error("EFF003", entry.span, f"the stack has {mixer} layers and `model` has no `{mixer}` block",
                      f"add `{mixer} {{ … }}` with its sizes to `model`")
    needs = ([("attention", "heads")] + [("mlp", k) for k in ("ffn", "d_ff")]
             + [("moe", k) for k in ("ffn", "experts", "top_k")])
    missing = list(dict.fromkeys(k for kind_, k in needs if kind_ in used and k not in by_key))
    if "moe" in used and not {"d_ff", "d_ff_expert"} & set(by_key):
        missing.append("d_ff_expert")
    if missing:
        ctx.error("EFF003", span, "`model` is missing " + ", ".join(f"`{k}`" for k in missing)
                  + " for the layers its stack names", "add " + ("it" if len(missing) == 1 else "them"))
    sliding = by_key.get("sliding_layers")
    attention = sublayers.count("attention")
    if sliding is not None and isinstance(sliding.value, int) and sliding.value > attention:
        ctx.error("EFF011", sliding.value_span, f"`sliding_layers` = {sliding.value} exceeds the stack's "
                  f"{attention} attention layers", "`sliding_layers` counts some of the attention layers")


def _claim_parts(tree: Node) -> tuple[Node, Node | None, Node, Node | None]:
    """(dotted, point tree or None, value tree, provenance tree or None) of a `claim` statement."""
    dotted, *rest = tree.children
    point = rest.pop(0) if rest and getattr(rest[0], "data", None) == "point" else None
    value_tree, *prov = rest
    return dotted, point, value_tree, (prov[0] if prov else None)


_PER_DEVICE_RATE = re.compile(r"(tokens?|throughput|tps)(_per_(second|sec|s))?_per_(device|gpu|chip|accelerator|rank)",
                              re.IGNORECASE)


def _per_device_rate(name: str, value_tree: object) -> str:
    """The help for another spelling of a per-device token rate (`tokens_per_gpu`, `tps_per_device`): the metric
    is `tokens_per_second_per_device`, which keeps the per-device figure's own written precision. "Did you mean
    `tokens_per_second`?" would claim one device's rate for the whole run."""
    if not _PER_DEVICE_RATE.fullmatch(name):
        return ""
    children = getattr(value_tree, "children", ()) if getattr(value_tree, "data", None) == "quantity" else ()
    number = str(children[0]) if children and getattr(children[0], "type", "") == "NUMBER" else "…"
    return (f"one device's token rate is `claim tokens_per_second_per_device = {number} token/s`; "
            f"the run's total is `claim throughput = {number} token/s/device * hardware.count`")


def _claim(ctx: BuildContext, tree: Node) -> Claim | None:
    dotted, point, value_tree, prov = _claim_parts(tree)
    path = [str(t) for t in dotted.children]
    written = ".".join(path)
    name_span = Span.of(dotted)
    if point is not None:
        ctx.error("EFF003", Span.of(point), f"claim `{written}`: `[{point.children[0]}]` names a run of a scaling "
                  "series; a run's claim is about the run itself", "write the claim without `[…]`")
        return None
    if len(path) == 1:
        name = K.CLAIM_ALIASES.get(path[0], path[0])
        if name not in K.CLAIMABLE:
            hint = _per_device_rate(path[0], value_tree) or suggest(path[0], list(K.CLAIMABLE) + list(K.CLAIM_ALIASES))
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
    return Claim(name, written, expr, ctx.source(Span.of(value_tree)), _provenance(ctx, prov),
                 Span.of(tree), name_span, Span.of(value_tree))


def _check_lora(ctx: BuildContext, blocks: list[Block]) -> None:
    """`model.lora` targets the shape has: a gated FFN for `gate`, GQA/MHA projections for q, k, v, o; a shape at all."""
    model = next((b for b in blocks if b.name == "model"), None)
    lora = model.block("lora") if model is not None else None
    targets = lora.get("targets") if lora is not None else None
    if lora is None or model is None:
        return
    if model.text("kind") == "custom":
        ctx.error("EFF003", lora.span, "`lora` needs the model's shape; `kind = custom` gives only a total",
                  "write the shape (`kind = dense_transformer` …), or fold the LoRA count into `flops_per_token`")
        return
    if model.text("kind") == "hybrid":  # the adapters are counted on dense and MoE stacks only
        ctx.error("EFF003", lora.span, "`lora` is not counted on a hybrid stack (its Mamba-2 and Gated DeltaNet "
                  "projections have no adapter targets yet)",
                  "count the adapters' FLOPs in `extra_flops_per_token`, or leave the block out")
        return
    if targets is None or not isinstance(targets.value, tuple):
        return
    if "gate" in targets.value and model.text("ffn") in ("gelu", "relu"):
        ctx.error("EFF003", targets.value_span, f"`gate` is not a matmul of a `{model.text('ffn')}` FFN",
                  "a two-matmul FFN has `up` and `down`; `gate` is the third matmul of `swiglu` and `geglu`")
    mla = [t for t in targets.value if t in ("q", "k", "v") and model.get("kv_lora_rank") is not None]
    if mla:
        ctx.error("EFF003", targets.value_span, f"{', '.join(f'`{t}`' for t in mla)}: MLA attention has no such "
                  "projection (`kv_lora_rank` is set)", "adapt `o` and the FFN, or count the adapters in "
                  "`extra_flops_per_token`")


def _distinct_claims(ctx: BuildContext, claims: list[Claim]) -> list[Claim]:
    """A metric may be claimed again from another source (a table and the text, two roundings of one rate), and
    each claim is checked; the same metric twice from the same source (or with none) is EFF003, and the repeat
    is dropped."""
    seen: dict[str, list[Claim]] = {}
    out = []
    for c in claims:
        earlier = seen.setdefault(c.name, [])
        same = next((e for e in earlier if (e.provenance.kind, e.provenance.citation)
                     == (c.provenance.kind, c.provenance.citation) or c.provenance.citation is None), None)
        if same is not None:
            ctx.error("EFF003", c.name_span, f"`{c.written}` is claimed twice"
                      + (" from the same source" if c.provenance.citation is not None else ""),
                      f"the first claim is on line {same.span.line}; claim a metric again only from another source "
                      '(`from paper "…, Table 2"`, `from paper "…, text"`)')
            continue
        earlier.append(c)
        out.append(c)
    return out


def _scaling_claim(ctx: BuildContext, tree: Node, kind: str | None, members: tuple[str, ...]) -> Claim | None:
    """`claim efficiency = 91.7 %`, `claim speedup[scaled_64] = 6.6` inside a scaling: a number, no references."""
    dotted, point, value_tree, prov = _claim_parts(tree)
    path = [str(t) for t in dotted.children]
    written = ".".join(path)
    name_span = Span.of(dotted)
    names = ("efficiency", *K.SCALING_CLAIMABLE)
    if len(path) != 1 or path[0] not in names:
        hint = suggest(written, names)
        ctx.error("EFF002", name_span, f"`{written}` is not a metric a scaling can claim",
                  hint or "a scaling claims " + ", ".join(f"`{n}`" for n in names))
        return None
    name = K.SCALING_CLAIM_ALIASES["efficiency"].get(kind or "", "efficiency") if written == "efficiency" else written
    kind_of = getattr(value_tree, "data", None)
    if kind_of not in ("quantity", "add", "sub", "mul", "div", "neg"):
        ctx.error("EFF003", Span.of(value_tree), f"claim `{written}` in a scaling takes a number (`91.7 %`, `0.917`)",
                  "a scaling's claim states the figure the source prints; references are for run claims")
        return None
    run_id = None
    if point is not None:
        run_id = str(point.children[0])
        if run_id not in members:
            hint = suggest(run_id, members)
            ctx.error("EFF020", Span.of(point), f"`{run_id}` is not a run of this scaling",
                      hint or "name the baseline or one of `runs`: " + ", ".join(f"`{m}`" for m in members))
            return None
    return Claim(name, written, to_expr(value_tree), ctx.source(Span.of(value_tree)), _provenance(ctx, prov),
                 Span.of(tree), name_span, Span.of(value_tree), run_id)


def _string(values: dict[str, Value], key: str) -> str | None:
    """A string, enum or run key's value (the key table fixes the kind), or None when not written."""
    value = values.get(key)
    assert value is None or isinstance(value, str), key
    return value


def _run(ctx: BuildContext, tree: Node) -> Run:
    _, name_tok, *stmts = tree.children
    entries, blocks, claim_trees, _ = _statements(ctx, "run", stmts)
    claims = [c for c in (_claim(ctx, t) for t in claim_trees) if c is not None]
    if len(claims) > LIMITS.max_claims:
        ctx.error("EFF030", Span.of(name_tok), f"run has {len(claims)} claims; the limit is {LIMITS.max_claims}", "")
        claims = claims[: LIMITS.max_claims]
    claims = _distinct_claims(ctx, claims)
    _check_lora(ctx, blocks)
    values = {e.key: e.value for e in entries}
    return Run(str(name_tok), _string(values, "title"), _string(values, "source"), tuple(blocks), tuple(claims),
               Span.of(tree), Span.of(name_tok))


def _scaling(ctx: BuildContext, tree: Node) -> Scaling:
    name_tok, *stmts = tree.children
    entries, _, claim_trees, written = _statements(ctx, "scaling", stmts)
    _check_required(ctx, "scaling", entries, written, Span.of(name_tok))
    values = {e.key: e.value for e in entries}
    kind, baseline = _string(values, "kind"), _string(values, "baseline")
    runs = values.get("runs", ())
    assert isinstance(runs, tuple)
    per_device = next((e for e in entries if e.key == "per_device"), None)
    if per_device is not None and kind == "strong":
        ctx.error("EFF003", per_device.span, "`per_device` says what weak scaling holds fixed; this scaling is strong",
                  "drop `per_device`, or write `kind = weak`")
    members = tuple(dict.fromkeys(([baseline] if baseline else []) + [str(r) for r in runs]))
    claims: dict[str, Claim] = {}
    for t in claim_trees[: LIMITS.max_claims]:
        c = _scaling_claim(ctx, t, kind, members)
        if c is None:
            continue
        if c.key in claims:
            ctx.error("EFF003", c.name_span, f"`{c.key}` is claimed twice",
                      f"the first claim is on line {claims[c.key].span.line}; declare one claim per figure")
            continue
        claims[c.key] = c
    if len(claim_trees) > LIMITS.max_claims:
        ctx.error("EFF030", Span.of(name_tok), f"scaling has {len(claim_trees)} claims; the limit is {LIMITS.max_claims}", "")
    return Scaling(str(name_tok), kind, baseline, tuple(runs),
                   tuple(entries), Span.of(tree), Span.of(name_tok), tuple(claims.values()))


_FILE_REFERENCE = re.compile(r'\bfile\s*"')

# A memo of built items: (kind, first line, exact lines, folder) -> the Run or Scaling and its diagnostics.
BuildMemo = MutableMapping[tuple[str, int, str, str | None], tuple[Run | Scaling, tuple[Diagnostic, ...]]]


def _memo_key(ctx: BuildContext, item: Node) -> tuple[str, int, str, str | None] | None:
    """An item's memo key: the exact lines it spans, where they are, and the folder; None for an
    item with a `file` reference, whose IR depends on the file's content as well."""
    span = Span.of(item)
    lines = "\n".join(ctx.lines[span.line - 1: span.end_line])
    if _FILE_REFERENCE.search(lines):
        return None
    return str(item.data), span.line, lines, ctx.folder


def _item(ctx: BuildContext, item: Node, memo: BuildMemo | None) -> Run | Scaling:
    """One run or scaling, from the memo when the same lines at the same place were built before
    (its spans are lines and columns, so identical lines give an identical IR and diagnostics)."""
    key = _memo_key(ctx, item) if memo is not None else None
    if key is not None and memo is not None:
        hit = memo.get(key)
        if hit is not None:
            ctx.diags.extend(hit[1])
            return hit[0]
    before = len(ctx.diags)
    built = _run(ctx, item) if item.data == "run" else _scaling(ctx, item)
    if key is not None and memo is not None:
        memo[key] = (built, tuple(ctx.diags[before:]))
    return built


def build_ir(tree: Node, text: str, file: str, folder: str | None,
             memo: BuildMemo | None = None) -> tuple[Spec | None, list[Diagnostic]]:
    """Build the checked IR from a parse tree.  ``folder`` anchors `file` paths.

    ``memo`` (kept by a caller that checks successive versions of one text: the
    language server) lets a run or scaling whose lines did not change be reused."""
    ctx = BuildContext(text, folder)
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
        ctx.error("EFF030", Span.of(items[LIMITS.max_runs]),
                  f"the file declares {len(items):,} runs and scalings; the limit is {LIMITS.max_runs:,}", "split the file")
        return None, ctx.diags
    runs: list[Run] = []
    scalings: list[Scaling] = []
    ids: dict[str, Span] = {}
    for item in items:
        built = _item(ctx, item, memo)
        if built.id in ids:
            ctx.error("EFF003", built.name_span, f"`{built.id}` is declared twice",
                      f"the first is on line {ids[built.id].line}; ids must be unique in a file")
            continue
        ids[built.id] = built.name_span
        if isinstance(built, Run):
            runs.append(built)
        else:
            scalings.append(built)
    _check_run_references(ctx, runs, scalings)
    return Spec(file, 1, tuple(runs), tuple(scalings)), ctx.diags


def _check_run_references(ctx: BuildContext, runs: list[Run], scalings: list[Scaling]) -> None:
    """EFF020 for a scaling or claim that names a run this file does not declare."""
    run_ids = [r.id for r in runs]
    for s in scalings:
        for key in ("baseline", "runs"):
            entry = s.get(key)
            if entry is None:
                continue
            value = entry.value
            rids = (value,) if isinstance(value, str) else value  # baseline names one run, runs a tuple
            assert isinstance(rids, tuple)
            for rid in rids:
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
