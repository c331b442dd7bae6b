"""FLOP accounting: what a `convention` means, term by term.

Symbols (the language reference uses the same): m = multiply_add FLOPs,
L = layers, d = d_model, H = heads, Q = head_dim, G = kv_heads, f = d_ff,
V = vocab, s = seq_len (tokens per sequence).  Every count here is per token.
Elementwise work (norms, softmax, activations) is not counted.

MLA (multi-head latent attention, DeepSeek-V2/V3) replaces the Q, K, V
projections with low-rank down and up projections: r_q = q_lora_rank,
r_kv = kv_lora_rank, Q_n = qk_nope_head_dim, Q_r = qk_rope_head_dim,
Q_v = v_head_dim.  A sliding window W limits the keys a query sees in
`sliding_layers` layers.  `mtp_depth` adds DeepSeek-V3's multi-token
prediction modules.  `extra_flops_per_token` is added as it is written.

Framework presets (`torchtitan`, `megatron_lm`, ...) expand to the same knobs,
plus three that only some frameworks need: `windows` (a sliding window
counted or ignored), `router` (the MoE router matmul counted or not) and
`formula` (term by term from the shape, or one of the closed forms a
framework hard-codes, such as eq. 3 of Narayanan et al. 2021).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from effspec.engine.lora import Lora, applied, lora_of
from effspec.front import layers as layer_forms
from effspec.front import presets as preset_table
from effspec.front.ir import Block, Run, Value
from effspec.front.layers import Layout
from effspec.front.mixers import all_mixers

# Every preset comes from the one table in effspec.front.presets (name, knobs, upstream formula).
PRESETS: dict[str, dict[str, str]] = {p.name: dict(p.knobs) for p in preset_table.PRESETS}
PRESET_NOTES: dict[str, str] = {**{p.name: p.note for p in preset_table.PRESETS}, "custom": preset_table.CUSTOM_NOTE}
STANDARD_PRESETS = tuple(p.name for p in preset_table.PRESETS if p.paper)  # palm, megatron, kaplan, chinchilla
FRAMEWORK_PRESETS = tuple(p for p in PRESETS if p not in STANDARD_PRESETS)
PRESET_NAMES = (*PRESETS, "custom")
KNOB_DEFAULTS: dict[str, float | str] = {
    "multiply_add": 2.0, "backward": 2.0, "padding": "excluded", "moe": "active", "optimizer": "excluded",
    "windows": "counted", "router": "counted", "formula": "shape", "head_dim": "declared",
    "frozen_wgrad": "excluded", "adapters": "counted"}
CUSTOM_REQUIRED = ("attention", "logits", "embeddings", "recompute")
# Knobs added with the framework presets (and a quirk preset's `head_dim`, LoRA's `frozen_wgrad` and `adapters`):
# shown (text, JSON) only where they differ from the default.
EXTRA_KNOBS = ("windows", "router", "formula", "head_dim", "frozen_wgrad", "adapters")
KNOB_NAMES = ("multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "padding", "moe",
              "optimizer", *EXTRA_KNOBS)


@dataclass(frozen=True)
class Knobs:
    preset: str
    multiply_add: float
    attention: str
    logits: str
    embeddings: str
    backward: float
    recompute: str | float  # excluded | none | selective | full | executed, or a share of the forward pass
    padding: str
    moe: str
    optimizer: str
    origin: dict[str, str] = field(default_factory=dict, compare=False, hash=False)  # knob -> written | preset | default | assumed
    windows: str = "counted"  # counted | ignored
    router: str = "counted"  # counted | excluded
    formula: str = "shape"  # shape | eq3 | megatron_lm_2023 | megatron_deepspeed_2024
    ran: str | float = "none"  # parallelism.recompute: what `recompute = executed` counts
    head_dim: str = "declared"  # declared | d_model_over_heads (a framework quirk: Q taken as d // H in the count)
    frozen_wgrad: str = "excluded"  # model.lora: the frozen base's weight-gradient matmuls counted or not
    adapters: str = "counted"  # model.lora: the adapters' own matmuls counted or not

    def with_preset(self, preset: str) -> Knobs:
        """The same multiply-add, backward, padding, MoE and LoRA counting, under another preset."""
        knobs = {k: str(v) for k, v in {**KNOB_DEFAULTS, **PRESETS[preset]}.items()}
        return Knobs(preset, self.multiply_add, knobs["attention"], knobs["logits"], knobs["embeddings"],
                     self.backward, knobs["recompute"], self.padding, self.moe, self.optimizer, {},
                     knobs["windows"], knobs["router"], knobs["formula"], self.ran, knobs["head_dim"],
                     self.frozen_wgrad, self.adapters)

    @property
    def counted_recompute(self) -> str | float:
        """The recomputation the numerator counts, with `executed` resolved to what ran."""
        return self.ran if self.recompute == "executed" else self.recompute


def recompute_text(value: str | float) -> str:
    """A recompute knob as written: `full`, or a share as `75 %`."""
    if isinstance(value, str):
        return value
    return f"{value * 100:g} %"


def knobs_for(run: Run) -> tuple[Knobs, list[str]]:
    """Expand the run's `convention` (or the assumed `palm`) knob by knob.

    Returns the knobs and, for `custom`, the knobs that were left out.
    """
    block = run.block("convention")
    written = {e.key: e.value for e in block.entries} if block else {}
    # No block: palm, assumed (EFF101).  A block without a preset is custom,
    # which must write every knob out.
    preset = "palm" if block is None else block.text("preset", "custom")
    base = PRESETS.get(preset, {})
    missing = [k for k in CUSTOM_REQUIRED if k not in written] if preset == "custom" else []
    values: dict[str, Value] = {}
    origin: dict[str, str] = {}
    for knob in KNOB_NAMES:
        if knob in written:
            values[knob], origin[knob] = written[knob], "written"
        elif knob in base:
            values[knob], origin[knob] = base[knob], ("assumed" if block is None else "preset")
        elif knob in KNOB_DEFAULTS:
            values[knob], origin[knob] = KNOB_DEFAULTS[knob], "default"
        else:  # custom with a knob left out: the palm value, marked assumed
            values[knob], origin[knob] = PRESETS["palm"][knob], "assumed"
    for knob in EXTRA_KNOBS:  # at their default, the extra knobs stay out of the origin table (and the JSON)
        if values[knob] == KNOB_DEFAULTS[knob]:
            origin.pop(knob, None)
    origin["preset"] = "written" if "preset" in written else "assumed"
    par = run.block("parallelism")
    ran = _share_or_text(par.value("recompute", "none")) if par is not None else "none"
    return Knobs(preset, _number(values["multiply_add"]), _text(values["attention"]), _text(values["logits"]),
                 _text(values["embeddings"]), _number(values["backward"]), _share_or_text(values["recompute"]),
                 _text(values["padding"]), _text(values["moe"]), _text(values["optimizer"]), origin,
                 _text(values["windows"]), _text(values["router"]), _text(values["formula"]), ran,
                 _text(values["head_dim"]), _text(values["frozen_wgrad"]), _text(values["adapters"])), missing


# A knob is a quantity (multiply_add, backward) or an enum: the key table fixes which.
def _number(value: Value) -> float:
    assert isinstance(value, (int, float)), value
    return float(value)


def _text(value: Value) -> str:
    assert isinstance(value, str), value
    return value


def _share_or_text(value: Value) -> str | float:
    """`recompute`: a mode (text) or a share of the forward pass (a number)."""
    assert isinstance(value, (str, int, float)) and not isinstance(value, bool), value
    return value if isinstance(value, str) else float(value)


@dataclass(frozen=True)
class Hybrid:
    """A hybrid stack: how many layers of each kind (effspec.front.layers.Layout), and the mixers' sizes."""

    layout: Layout
    kinds: tuple[tuple[str, Any], ...] = ()  # (layer kind, its sizes) for each kind the stack has (effspec.front.mixers)


@dataclass(frozen=True)
class Shape:
    """The model's shape with defaults applied."""

    kind: str
    layers: int
    d_model: int
    heads: int
    head_dim: float
    kv_heads: int
    ffn: str
    d_ff: int
    vocab: int
    tied_embeddings: bool
    experts: int
    top_k: int
    shared_experts: int
    d_ff_expert: int
    moe_layers: int
    # MLA (kv_lora_rank > 0 makes the attention MLA)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_depth: int = 0
    sliding_window: float | None = None  # tokens
    sliding_layers: int = 0
    extra_flops: float = 0.0  # training FLOP/token declared as model.extra_flops_per_token
    attention_gate: bool = False  # an output gate of size H·Q on every attention layer (Qwen3-Next)
    hybrid: Hybrid | None = None  # kind = hybrid: the stack and its mixers
    lora: Lora | None = None  # model { lora { … } }: adapters trained, the base frozen (effspec.engine.lora)

    @property
    def ffn_matmuls(self) -> int:
        return 3 if self.ffn in ("swiglu", "geglu") else 2

    def as_tuple(self) -> tuple[object, ...]:
        """The shape as a comparable tuple: every field, except the frontier ones (MLA, MTP, window,
        extra FLOPs) left at their defaults, so a plain shape's tuple is the same as before them."""
        values = [getattr(self, f.name) for f in dataclasses.fields(self)]
        defaults = [f.default for f in dataclasses.fields(self)]
        while values and defaults[-1] is not dataclasses.MISSING and values[-1] == defaults[-1]:
            values.pop()
            defaults.pop()
        return tuple(values)

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self) -> float:
        """Per-head size of queries and keys (the score matmul's inner dimension)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.mla else self.head_dim

    @property
    def value_head_dim(self) -> float:
        """Per-head size of values (the weighted sum's output)."""
        return self.v_head_dim if self.mla else self.head_dim

    @property
    def windowed_layers(self) -> int:
        return self.sliding_layers if self.sliding_window is not None else 0


def shape_of(model: Block | None) -> Shape | None:
    """The dense or MoE shape, or None for `custom` or an incomplete model (a hybrid stack: its own shape)."""
    kind = model.text("kind") if model is not None else None
    if model is not None and kind == "hybrid":
        return _hybrid_shape(model)
    if model is None or kind not in ("dense_transformer", "moe_transformer"):
        return None
    v = model.integer  # the shape's keys are integers but kind, ffn and tied_embeddings
    layers, d_model, heads, ffn, vocab = v("layers"), v("d_model"), v("heads"), model.text("ffn"), v("vocab")
    if layers is None or d_model is None or heads is None or ffn is None or vocab is None:
        return None
    moe = kind == "moe_transformer"
    d_ff = v("d_ff", v("d_ff_expert") if moe else None)
    if d_ff is None:
        return None
    kv_lora = v("kv_lora_rank", 0)
    if kv_lora and any(v(k) is None for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")):
        return None
    window = model.number("sliding_window")
    return Shape(
        kind=kind, layers=layers, d_model=d_model, heads=heads,
        head_dim=v("head_dim", d_model / heads), kv_heads=v("kv_heads", heads),
        ffn=ffn, d_ff=d_ff, vocab=vocab, tied_embeddings=bool(model.value("tied_embeddings", False)),
        experts=v("experts", 0) if moe else 0, top_k=v("top_k", 0) if moe else 0,
        shared_experts=v("shared_experts", 0) if moe else 0,
        d_ff_expert=v("d_ff_expert", d_ff) if moe else 0,
        moe_layers=min(v("moe_layers", layers), layers) if moe else 0,
        q_lora_rank=v("q_lora_rank", 0) if kv_lora else 0, kv_lora_rank=kv_lora,
        qk_nope_head_dim=v("qk_nope_head_dim", 0) if kv_lora else 0,
        qk_rope_head_dim=v("qk_rope_head_dim", 0) if kv_lora else 0,
        v_head_dim=v("v_head_dim", 0) if kv_lora else 0,
        mtp_depth=v("mtp_depth", 0),
        sliding_window=float(window) if window is not None else None,
        sliding_layers=min(v("sliding_layers", layers), layers) if window is not None else 0,
        extra_flops=float(model.number("extra_flops_per_token", 0.0)),
        lora=lora_of(model.block("lora")),
        attention_gate=bool(model.value("attention_gate", False)),
    )


def _hybrid_shape(model: Block) -> Shape | None:
    """kind = hybrid: the stack resolved to its layer counts, each mixer block's sizes with their defaults."""
    v = model.integer
    layers, d_model, vocab = v("layers"), v("d_model"), v("vocab")
    if layers is None or d_model is None or vocab is None:
        return None
    blocks = {name: b for name in layer_forms.KINDS if (b := model.block(name)) is not None}
    pattern, types, interval = model.value("pattern"), model.value("layer_types"), v("full_attention_interval")
    moe = model.get("experts") is not None
    sublayers = layer_forms.sublayers_of(pattern if isinstance(pattern, str) else None,
                                         types if isinstance(types, tuple) else None, interval, layers,
                                         set(blocks), moe)
    if sublayers is None or (pattern is not None or types is not None) and len(
            pattern if isinstance(pattern, str) else types if isinstance(types, tuple) else ()) != layers:
        return None
    written = "pattern" if pattern is not None else "layer_types" if types is not None else "full_attention_interval"
    moe_layers_written = v("moe_layers")
    layout = layer_forms.layout(sublayers, written, moe_layers_written if written != "pattern" else None)
    kinds = []
    for name, block in blocks.items():
        sizes = all_mixers()[name].sizes(block, d_model)
        if sizes is None:
            return None
        kinds.append((name, sizes))
    if any(layout.count(name) and name not in blocks for name in layer_forms.KINDS):
        return None
    heads = v("heads", 1)
    if layout.attention and v("heads") is None:
        return None
    ffn = model.text("ffn", "gelu")
    d_ff = v("d_ff", v("d_ff_expert", 0))
    if (layout.mlp or layout.moe) and (model.text("ffn") is None or d_ff is None):
        return None
    if layout.moe and (v("experts") is None or v("top_k") is None):
        return None
    kv_lora = v("kv_lora_rank", 0)
    window = model.number("sliding_window")
    return Shape(
        kind="hybrid", layers=layers, d_model=d_model, heads=heads,
        head_dim=v("head_dim", d_model / heads), kv_heads=v("kv_heads", heads),
        ffn=ffn, d_ff=d_ff or 0, vocab=vocab, tied_embeddings=bool(model.value("tied_embeddings", False)),
        experts=v("experts", 0) if layout.moe else 0, top_k=v("top_k", 0) if layout.moe else 0,
        shared_experts=v("shared_experts", 0) if layout.moe else 0,
        d_ff_expert=v("d_ff_expert", d_ff or 0) if layout.moe else 0,
        moe_layers=layout.moe,
        q_lora_rank=v("q_lora_rank", 0) if kv_lora else 0, kv_lora_rank=kv_lora,
        qk_nope_head_dim=v("qk_nope_head_dim", 0) if kv_lora else 0,
        qk_rope_head_dim=v("qk_rope_head_dim", 0) if kv_lora else 0,
        v_head_dim=v("v_head_dim", 0) if kv_lora else 0,
        sliding_window=float(window) if window is not None else None,
        sliding_layers=min(v("sliding_layers", layout.attention), layout.attention) if window is not None else 0,
        extra_flops=float(model.number("extra_flops_per_token", 0.0)),
        attention_gate=bool(model.value("attention_gate", False)),
        hybrid=Hybrid(layout, tuple(kinds)),
    )


@dataclass(frozen=True)
class FlopCount:
    """Per-token FLOPs, term by term, under one set of knobs."""

    terms: tuple[tuple[str, str, float], ...]  # (term, formula, forward FLOPs per token for the whole model)
    forward: float
    training: float  # forward * (1 + backward)
    recompute: float  # extra forward work counted by the knob
    total: float  # training + recompute + extra: the numerator per token
    extra: float = 0.0  # model.extra_flops_per_token, training FLOPs added as written

    def term(self, name: str) -> float:
        return next((v for n, _, v in self.terms if n == name), 0.0)


def keys_per_query(attention: str, s: float, window: float | None) -> float:
    """Keys each query is scored against, averaged over the sequence.

    Full attention: s, or w = min(W, s) in a windowed layer.  Causal: s/2, or
    w·(1 − w/(2s)) in a windowed layer (the first w queries see 1…w keys, the
    rest w each), which is s/2 again when w = s.
    """
    if attention == "excluded":
        return 0.0
    if window is None:
        return s if attention == "full" else s / 2
    w = min(window, s)
    return w if attention == "full" else w * (1 - w / (2 * s))


def _projection_macs(shape: Shape) -> list[tuple[str, str, float]]:
    """Multiply-adds per token of one layer's attention projections (= their weights)."""
    d, H = shape.d_model, shape.heads
    if not shape.mla:
        Q, G = shape.head_dim, shape.kv_heads
        gate = [("attention_gate", "m·d·H·Q", float(d * H * Q))] if shape.attention_gate else []
        return [("qkv_projection", "m·d·(H·Q + 2·G·Q)", float(d * (H * Q + 2 * G * Q))), *gate,
                ("attention_output", "m·H·Q·d", float(H * Q * d))]
    rq, rkv = shape.q_lora_rank, shape.kv_lora_rank
    qn, qr, qv = shape.qk_nope_head_dim, shape.qk_rope_head_dim, shape.v_head_dim
    out: list[tuple[str, str, float]]
    out = ([("mla_q_down", "m·d·r_q", d * rq), ("mla_q_up", "m·r_q·H·(Q_n + Q_r)", rq * H * (qn + qr))] if rq else
           [("mla_q_projection", "m·d·H·(Q_n + Q_r)", d * H * (qn + qr))])
    return out + [("mla_kv_down", "m·d·r_kv", d * rkv), ("mla_rope_key", "m·d·Q_r", d * qr),
                  ("mla_kv_up", "m·r_kv·H·(Q_n + Q_v)", rkv * H * (qn + qv)),
                  ("attention_output", "m·H·Q_v·d", H * qv * d)]


def _mode(knobs: Knobs, recompute: str | float | None) -> str | float:
    mode = knobs.recompute if recompute is None else recompute
    return knobs.ran if mode == "executed" else mode


def _recomputed(mode: str | float, attention: float, layers: float) -> float:
    """The extra forward work a recompute mode adds: `selective` the attention scores,
    `full` every per-layer term, a share that part of every per-layer term."""
    if isinstance(mode, str):
        return {"selective": attention, "full": layers}.get(mode, 0.0)
    return float(mode) * layers


def with_and_without_recompute(shape: Shape, knobs: Knobs,
                               seq_len: float | None) -> tuple[FlopCount, FlopCount] | None:
    """(FLOPs per token as counted, without the recomputed forward pass) when the numerator counts recomputation
    (an MFU that is HFU-like: EFF102, and the report's MFU card), else None."""
    if knobs.counted_recompute in ("excluded", "none", 0.0):
        return None
    counted, without = count(shape, knobs, seq_len), count(shape, knobs, seq_len, recompute="none")
    if counted is None or without is None or counted.recompute <= 0:
        return None
    return counted, without


def count(shape: Shape, knobs: Knobs, seq_len: float | None, recompute: str | float | None = None) -> FlopCount | None:
    """FLOPs per token (``recompute`` overrides the knob: HFU uses what ran); None when attention is
    counted but the sequence length is unknown.  A hybrid stack is counted term by term (no closed form knows one)."""
    if knobs.head_dim == "d_model_over_heads" and not shape.mla:  # a framework's quirk (AutoModel's GPT-OSS)
        shape = dataclasses.replace(shape, head_dim=float(shape.d_model // shape.heads))
    fc = _count(shape, knobs, seq_len, recompute)
    return fc if fc is None or shape.lora is None else applied(fc, shape, knobs)


def _count(shape: Shape, knobs: Knobs, seq_len: float | None, recompute: str | float | None) -> FlopCount | None:
    if knobs.attention != "excluded" and seq_len is None:
        return None
    if shape.hybrid is not None:
        return _hybrid_count(shape, shape.hybrid, knobs, seq_len or 0.0, _mode(knobs, recompute))
    if knobs.formula != "shape":
        return _closed_form(shape, knobs, seq_len or 0.0, _mode(knobs, recompute))
    m, L, d, H, Q, G = knobs.multiply_add, shape.layers, shape.d_model, shape.heads, shape.head_dim, shape.kv_heads
    s = seq_len or 0.0
    moe_layers = shape.moe_layers
    dense_layers = L - moe_layers
    windowed = shape.windowed_layers if knobs.windows == "counted" else 0
    global_layers = L - windowed
    if shape.mla or windowed or shape.attention_gate:
        terms = [(name, f"L·{formula}", L * m * macs) for name, formula, macs in _projection_macs(shape)]
        per_key = m * H * (shape.qk_head_dim + shape.value_head_dim)
        kpq = keys_per_query(knobs.attention, s, None)
        where = "L_global·" if windowed else "L·"
        attn = per_key * kpq
        terms.append(("attention_scores", f"{where}m·keys·H·(Q_qk + Q_v), keys = {knobs.attention} s"
                      if knobs.attention != "excluded" else "excluded", global_layers * attn))
        if windowed:
            kpq_w = keys_per_query(knobs.attention, s, shape.sliding_window)
            terms.append(("attention_scores_windowed", f"L_window·m·keys·H·(Q_qk + Q_v), keys = {knobs.attention} window",
                          windowed * per_key * kpq_w))
        scores = sum(v for n, _, v in terms if n.startswith("attention_scores"))
    else:  # the original arithmetic, kept operation for operation so figures stay bit-identical
        qkv = m * d * (H * Q + 2 * G * Q)
        out = m * H * Q * d
        attn = {"full": 2 * m * s * H * Q, "causal": m * s * H * Q, "excluded": 0.0}[knobs.attention]
        terms = [
            ("qkv_projection", "L·m·d·(H·Q + 2·G·Q)", L * qkv),
            ("attention_output", "L·m·H·Q·d", L * out),
            ("attention_scores", {"full": "L·2·m·s·H·Q", "causal": "L·m·s·H·Q", "excluded": "excluded"}[knobs.attention], L * attn),
        ]
        scores = L * attn
    ffn_dense = shape.ffn_matmuls * m * d * shape.d_ff
    if dense_layers:
        terms.append(("ffn", f"{'L_dense·' if moe_layers else 'L·'}{shape.ffn_matmuls}·m·d·f", dense_layers * ffn_dense))
    expert = shape.ffn_matmuls * m * d * shape.d_ff_expert
    router = m * d * shape.experts if knobs.router == "counted" else 0.0
    if moe_layers:
        if knobs.moe == "active":
            terms.append(("moe_ffn", f"L_moe·(top_k + shared)·{shape.ffn_matmuls}·m·d·f_e",
                          moe_layers * (shape.top_k + shape.shared_experts) * expert))
            if router:
                terms.append(("moe_router", "L_moe·m·d·experts", moe_layers * router))
        else:
            terms.append(("moe_ffn_all_experts", f"L_moe·(experts + shared)·{shape.ffn_matmuls}·m·d·f_e",
                          moe_layers * (shape.experts + shape.shared_experts) * expert))
    per_layer_forward = sum(v for _, _, v in terms)
    logits = m * d * shape.vocab if knobs.logits == "included" else 0.0
    embeddings = m * d * shape.vocab if knobs.embeddings == "included" else 0.0
    mtp_layer = 0.0
    if shape.mtp_depth:
        # One more block like the last layer (MoE if the model has MoE layers; windowed only if every
        # layer is), a 2d -> d projection, and the shared output head and embedding, per depth.
        block = sum(m * macs for _, _, macs in _projection_macs(shape))
        block_scores = (m * H * (shape.qk_head_dim + shape.value_head_dim)
                        * keys_per_query(knobs.attention, s, shape.sliding_window if windowed == L else None))
        if moe_layers:
            ffn = ((shape.top_k + shape.shared_experts) * expert + router if knobs.moe == "active"
                   else (shape.experts + shape.shared_experts) * expert)
        else:
            ffn = ffn_dense
        mtp_layer = shape.mtp_depth * (block + block_scores + ffn + m * 2 * d * d)
        scores += shape.mtp_depth * block_scores
        terms.append(("mtp", "N_mtp·(block + m·2d·d + logits + embeddings)",
                      mtp_layer + shape.mtp_depth * (logits + embeddings)))
    terms.append(("logits", "m·d·V" if knobs.logits == "included" else "excluded", logits))
    terms.append(("embeddings", "m·d·V" if knobs.embeddings == "included" else "excluded", embeddings))
    forward = sum(v for _, _, v in terms)
    training = forward * (1 + knobs.backward)
    extra = _recomputed(_mode(knobs, recompute), scores, per_layer_forward + mtp_layer)
    total = training + extra
    if shape.extra_flops:
        total += shape.extra_flops
    return FlopCount(tuple(terms), forward, training, extra, total, shape.extra_flops)


def _hybrid_count(shape: Shape, hybrid: Hybrid, knobs: Knobs, s: float, mode: str | float) -> FlopCount:
    """A hybrid stack term by term: each kind of layer times its count (L_attn, L_mamba, L_gdn, L_mlp, L_moe).

    Attention layers count as the dense path does (GQA or MLA, windows, the output gate); Mamba-2 and
    Gated DeltaNet layers as Megatron-LM counts them (each layer kind's ``macs``, effspec.front.mixers);
    `selective` recomputation re-runs the attention scores, `full` every layer.
    """
    m, d, H = knobs.multiply_add, shape.d_model, shape.heads
    lay = hybrid.layout
    terms: list[tuple[str, str, float]] = []
    scores = 0.0
    if lay.attention:
        A = lay.attention
        windowed = min(shape.windowed_layers, A) if knobs.windows == "counted" else 0
        terms += [(name, f"L_attn·{formula}", A * m * macs) for name, formula, macs in _projection_macs(shape)]
        per_key = m * H * (shape.qk_head_dim + shape.value_head_dim)
        terms.append(("attention_scores", f"L_attn{'_global' if windowed else ''}·m·keys·H·(Q_qk + Q_v), "
                      f"keys = {knobs.attention} s" if knobs.attention != "excluded" else "excluded",
                      (A - windowed) * per_key * keys_per_query(knobs.attention, s, None)))
        if windowed:
            terms.append(("attention_scores_windowed", f"L_window·m·keys·H·(Q_qk + Q_v), keys = {knobs.attention} window",
                          windowed * per_key * keys_per_query(knobs.attention, s, shape.sliding_window)))
        scores = sum(v for n, _, v in terms if n.startswith("attention_scores"))
    for kind, sizes in hybrid.kinds:
        mixer, count = all_mixers()[kind], lay.count(kind)
        if count:
            terms += [(name, f"{mixer.symbol}·{formula}", count * m * macs) for name, formula, macs in mixer.macs(d, sizes)]
    n = shape.ffn_matmuls
    if lay.mlp:
        terms.append(("ffn", f"L_mlp·{n}·m·d·f", lay.mlp * n * m * d * shape.d_ff))
    if lay.moe:
        expert = n * m * d * shape.d_ff_expert
        if knobs.moe == "active":
            terms.append(("moe_ffn", f"L_moe·(top_k + shared)·{n}·m·d·f_e", lay.moe * (shape.top_k + shape.shared_experts) * expert))
            if knobs.router == "counted":
                terms.append(("moe_router", "L_moe·m·d·experts", lay.moe * m * d * shape.experts))
        else:
            terms.append(("moe_ffn_all_experts", f"L_moe·(experts + shared)·{n}·m·d·f_e",
                          lay.moe * (shape.experts + shape.shared_experts) * expert))
    per_layer_forward = sum(v for _, _, v in terms)
    logits = m * d * shape.vocab if knobs.logits == "included" else 0.0
    embeddings = m * d * shape.vocab if knobs.embeddings == "included" else 0.0
    terms.append(("logits", "m·d·V" if knobs.logits == "included" else "excluded", logits))
    terms.append(("embeddings", "m·d·V" if knobs.embeddings == "included" else "excluded", embeddings))
    forward = sum(v for _, _, v in terms)
    training = forward * (1 + knobs.backward)
    extra = _recomputed(mode, scores, per_layer_forward)
    return FlopCount(tuple(terms), forward, training, extra, training + extra + shape.extra_flops, shape.extra_flops)


def _hybrid_params(shape: Shape, hybrid: Hybrid) -> float:
    """Weights of a hybrid stack: each layer kind's matmul weights (and a mixer's convolution), times its count.

    Mamba-2: in_proj, the conv1d over x, B, C (K·(d_in + 2·G·N)) and out_proj; Gated DeltaNet: in_proj,
    the conv1d over q, k, v and out_proj.  Per-head vectors (A, D, dt bias), norms and biases are left out,
    as they are for the other layers.
    """
    d, lay = shape.d_model, hybrid.layout
    attention, dense_ffn, moe_ffn = _layer_params(shape)
    total = lay.attention * attention + lay.mlp * dense_ffn + lay.moe * moe_ffn
    for kind, sizes in hybrid.kinds:
        if lay.count(kind):
            total += lay.count(kind) * all_mixers()[kind].params(d, sizes)
    return total + shape.vocab * d * (1 if shape.tied_embeddings else 2)


def _closed_form(shape: Shape, knobs: Knobs, s: float, mode: str | float) -> FlopCount:
    """The frameworks' closed forms, written as the same named terms.

    They know d_model, heads, kv_heads, d_ff, vocab and s only: MLA, windows,
    experts beyond top_k and MTP are outside them, as they are in the frameworks.
    """
    m, L, d, H, G, V = knobs.multiply_add, shape.layers, shape.d_model, shape.heads, shape.kv_heads, shape.vocab
    a = {"full": 2.0, "causal": 1.0, "excluded": 0.0}[knobs.attention]
    embeddings = m * d * V if knobs.embeddings == "included" else 0.0
    if knobs.formula == "eq3":
        # 24·f·B·s·L·d²·(1 + s/6d + V/16Ld): per pass 24·L·d² + 4·L·s·d + 1.5·d·V (m = 2), so the
        # logits are scaled with the layers, and a counted recomputation re-runs the whole pass.
        terms = [("qkv_projection", "L·m·3·d²", L * m * 3 * d * d), ("attention_output", "L·m·d²", L * m * d * d),
                 ("ffn", "L·m·8·d² (two matmuls of d × 4d)", L * m * 8 * d * d),
                 ("attention_scores", f"L·{a:g}·m·s·d", L * a * m * s * d),
                 ("logits", "0.75·m·d·V (eq. 3: V/16Ld of 24·L·d²)" if knobs.logits == "included" else "excluded",
                  0.75 * m * d * V if knobs.logits == "included" else 0.0),
                 ("embeddings", "m·d·V" if embeddings else "excluded", embeddings)]
        scores = L * a * m * s * d
        recomputable = sum(v for n, _, v in terms if n != "embeddings")
        if mode == "selective":  # f = 4 for any activation checkpointing, selective included
            mode = "full"
    elif knobs.formula == "megatron_lm_2023":
        # 60·B·s·L·d²·(1 + G/5H + s/5d + V/10Ld): per pass (m = 2) 20·L·d² + 4·(G/H)·L·d² + 4·L·s·d + 2·d·V,
        # the FFN taken as two matmuls of d × 4d whatever the model's FFN is.
        terms = [("qkv_projection", "L·m·(1 + 2·G/H)·d²", L * m * (1 + 2 * G / H) * d * d),
                 ("attention_output", "L·m·d²", L * m * d * d),
                 ("ffn", "L·m·8·d² (two matmuls of d × 4d)", L * m * 8 * d * d),
                 ("attention_scores", f"L·{a:g}·m·s·d", L * a * m * s * d),
                 ("logits", "m·d·V" if knobs.logits == "included" else "excluded",
                  m * d * V if knobs.logits == "included" else 0.0),
                 ("embeddings", "m·d·V" if embeddings else "excluded", embeddings)]
        scores = L * a * m * s * d
        recomputable = sum(v for n, _, v in terms if n not in ("logits", "embeddings"))
    else:  # megatron_deepspeed_2024
        # (1 + 2 // (H // G) + 1)·d² projections, 2·(d // H)·H·s attention, n·f·d·top_k FFN, d·V logits
        # (multiply-adds); full recomputation re-runs the whole forward, selective the attention.
        # One ffn_hidden_size there, multiplied by top_k on every layer, dense layers included.
        kv = 2 // max(H // G, 1)
        Q = d // H
        k = shape.top_k if shape.moe_layers else 1
        ffn = L * shape.ffn_matmuls * m * d * shape.d_ff * k
        terms = [("qkv_projection", "L·m·(1 + 2 // (H // G))·d²", L * m * (1 + kv) * d * d),
                 ("attention_output", "L·m·d²", L * m * d * d),
                 ("ffn", "L·n·m·d·f·top_k (top_k on every layer; no shared experts, no router)", ffn),
                 ("attention_scores", f"L·{a:g}·m·s·(d // H)·H", L * a * m * s * Q * H),
                 ("logits", "m·d·V" if knobs.logits == "included" else "excluded",
                  m * d * V if knobs.logits == "included" else 0.0),
                 ("embeddings", "m·d·V" if embeddings else "excluded", embeddings)]
        scores = L * a * m * s * Q * H
        recomputable = sum(v for n, _, v in terms if n != "embeddings")
    forward = sum(v for _, _, v in terms)
    training = forward * (1 + knobs.backward)
    extra = _recomputed(mode, scores, recomputable)
    total = training + extra + shape.extra_flops
    return FlopCount(tuple(terms), forward, training, extra, total, shape.extra_flops)


def _layer_params(shape: Shape) -> tuple[float, float, float]:
    """Weights of one layer's attention, one dense FFN, and one MoE FFN (all experts, router)."""
    d = shape.d_model
    attention = sum(macs for _, _, macs in _projection_macs(shape))
    dense_ffn = shape.ffn_matmuls * d * shape.d_ff
    moe_ffn = (shape.experts + shape.shared_experts) * shape.ffn_matmuls * d * shape.d_ff_expert + d * shape.experts
    return attention, dense_ffn, moe_ffn


def params_from_shape(shape: Shape) -> float:
    """Parameters implied by the shape: matmul weights and embeddings (norms and biases ignored).

    MTP modules are not included: papers quote the main model (DeepSeek-V3's
    671B leaves out the 14B of its MTP module).
    """
    if shape.hybrid is not None:
        return _hybrid_params(shape, shape.hybrid)
    if not shape.mla and not shape.attention_gate:  # the original arithmetic, kept as it was
        d, H, Q, G = shape.d_model, shape.heads, shape.head_dim, shape.kv_heads
        attention = d * (H * Q + 2 * G * Q) + H * Q * d
    else:
        attention = _layer_params(shape)[0]
    _, dense_ffn, moe_ffn = _layer_params(shape)
    layers = shape.layers * attention + (shape.layers - shape.moe_layers) * dense_ffn + shape.moe_layers * moe_ffn
    embeddings = shape.vocab * shape.d_model * (1 if shape.tied_embeddings else 2)
    return layers + embeddings
