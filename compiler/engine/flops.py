"""FLOP accounting: what a `convention` means, term by term.

Symbols (the language reference uses the same): m = multiply_add FLOPs,
L = layers, d = d_model, H = heads, Q = head_dim, G = kv_heads, f = d_ff,
V = vocab, s = seq_len (tokens per sequence).  Every count here is per token.
Elementwise work (norms, softmax, activations) is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from effspec.front.ir import Block, Run, Value

PRESETS: dict[str, dict[str, str]] = {
    "palm": {"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "excluded"},
    "megatron": {"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "full"},
    "kaplan": {"attention": "excluded", "logits": "excluded", "embeddings": "excluded", "recompute": "excluded"},
    "chinchilla": {"attention": "full", "logits": "included", "embeddings": "included", "recompute": "excluded"},
}
PRESET_NOTES = {
    "palm": "6N + 12·L·H·Q·s (Chowdhery et al. 2022, App. B)",
    "megatron": "96·B·s·L·d²·(1 + s/6d + V/16Ld) (Narayanan et al. 2021, eq. 3); counts full recomputation",
    "kaplan": "6 × non-embedding parameters (Kaplan et al. 2020)",
    "chinchilla": "Hoffmann et al. 2022, App. F, softmax terms ignored",
    "custom": "every knob written out",
}
STANDARD_PRESETS = ("palm", "megatron", "kaplan", "chinchilla")
KNOB_DEFAULTS: dict[str, float | str] = {
    "multiply_add": 2.0, "backward": 2.0, "padding": "excluded", "moe": "active", "optimizer": "excluded"}
CUSTOM_REQUIRED = ("attention", "logits", "embeddings", "recompute")


@dataclass(frozen=True)
class Knobs:
    preset: str
    multiply_add: float
    attention: str
    logits: str
    embeddings: str
    backward: float
    recompute: str  # excluded | none | selective | full
    padding: str
    moe: str
    optimizer: str
    origin: dict[str, str] = field(default_factory=dict, compare=False, hash=False)  # knob -> written | preset | default | assumed

    def with_preset(self, preset: str) -> Knobs:
        """The same multiply-add, backward, padding and MoE counting, under another preset."""
        knobs = dict(PRESETS[preset])
        return Knobs(preset, self.multiply_add, knobs["attention"], knobs["logits"], knobs["embeddings"],
                     self.backward, knobs["recompute"], self.padding, self.moe, self.optimizer, {})


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
    for knob in ("multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "padding", "moe", "optimizer"):
        if knob in written:
            values[knob], origin[knob] = written[knob], "written"
        elif knob in base:
            values[knob], origin[knob] = base[knob], ("assumed" if block is None else "preset")
        elif knob in KNOB_DEFAULTS:
            values[knob], origin[knob] = KNOB_DEFAULTS[knob], "default"
        else:  # custom with a knob left out: the palm value, marked assumed
            values[knob], origin[knob] = PRESETS["palm"][knob], "assumed"
    origin["preset"] = "written" if "preset" in written else "assumed"
    return Knobs(preset, _number(values["multiply_add"]), _text(values["attention"]), _text(values["logits"]),
                 _text(values["embeddings"]), _number(values["backward"]), _text(values["recompute"]), _text(values["padding"]),
                 _text(values["moe"]), _text(values["optimizer"]), origin), missing


# A knob is a quantity (multiply_add, backward) or an enum: the key table fixes which.
def _number(value: Value) -> float:
    assert isinstance(value, (int, float)), value
    return float(value)


def _text(value: Value) -> str:
    assert isinstance(value, str), value
    return value


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

    @property
    def ffn_matmuls(self) -> int:
        return 3 if self.ffn in ("swiglu", "geglu") else 2


def shape_of(model: Block | None) -> Shape | None:
    """The dense or MoE shape, or None for `custom` or an incomplete model."""
    kind = model.text("kind") if model is not None else None
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
    return Shape(
        kind=kind, layers=layers, d_model=d_model, heads=heads,
        head_dim=v("head_dim", d_model / heads), kv_heads=v("kv_heads", heads),
        ffn=ffn, d_ff=d_ff, vocab=vocab, tied_embeddings=bool(model.value("tied_embeddings", False)),
        experts=v("experts", 0) if moe else 0, top_k=v("top_k", 0) if moe else 0,
        shared_experts=v("shared_experts", 0) if moe else 0,
        d_ff_expert=v("d_ff_expert", d_ff) if moe else 0,
        moe_layers=min(v("moe_layers", layers), layers) if moe else 0,
    )


@dataclass(frozen=True)
class FlopCount:
    """Per-token FLOPs, term by term, under one set of knobs."""

    terms: tuple[tuple[str, str, float], ...]  # (term, formula, forward FLOPs per token for the whole model)
    forward: float
    training: float  # forward * (1 + backward)
    recompute: float  # extra forward work counted by the knob
    total: float  # training + recompute: the numerator per token

    def term(self, name: str) -> float:
        return next((v for n, _, v in self.terms if n == name), 0.0)


def count(shape: Shape, knobs: Knobs, seq_len: float | None, recompute: str | None = None) -> FlopCount | None:
    """FLOPs per token.  ``recompute`` overrides the knob (HFU uses what ran).

    Returns None when attention is counted but the sequence length is unknown.
    """
    m, L, d, H, Q, G = knobs.multiply_add, shape.layers, shape.d_model, shape.heads, shape.head_dim, shape.kv_heads
    if knobs.attention != "excluded" and seq_len is None:
        return None
    s = seq_len or 0.0
    moe_layers = shape.moe_layers
    dense_layers = L - moe_layers
    qkv = m * d * (H * Q + 2 * G * Q)
    out = m * H * Q * d
    attn = {"full": 2 * m * s * H * Q, "causal": m * s * H * Q, "excluded": 0.0}[knobs.attention]
    ffn_dense = shape.ffn_matmuls * m * d * shape.d_ff
    terms = [
        ("qkv_projection", "L·m·d·(H·Q + 2·G·Q)", L * qkv),
        ("attention_output", "L·m·H·Q·d", L * out),
        ("attention_scores", {"full": "L·2·m·s·H·Q", "causal": "L·m·s·H·Q", "excluded": "excluded"}[knobs.attention], L * attn),
    ]
    if dense_layers:
        terms.append(("ffn", f"{'L_dense·' if moe_layers else 'L·'}{shape.ffn_matmuls}·m·d·f", dense_layers * ffn_dense))
    if moe_layers:
        expert = shape.ffn_matmuls * m * d * shape.d_ff_expert
        if knobs.moe == "active":
            terms.append(("moe_ffn", f"L_moe·(top_k + shared)·{shape.ffn_matmuls}·m·d·f_e",
                          moe_layers * (shape.top_k + shape.shared_experts) * expert))
            terms.append(("moe_router", "L_moe·m·d·experts", moe_layers * m * d * shape.experts))
        else:
            terms.append(("moe_ffn_all_experts", f"L_moe·(experts + shared)·{shape.ffn_matmuls}·m·d·f_e",
                          moe_layers * (shape.experts + shape.shared_experts) * expert))
    per_layer_forward = sum(v for _, _, v in terms)
    terms.append(("logits", "m·d·V" if knobs.logits == "included" else "excluded",
                  m * d * shape.vocab if knobs.logits == "included" else 0.0))
    terms.append(("embeddings", "m·d·V" if knobs.embeddings == "included" else "excluded",
                  m * d * shape.vocab if knobs.embeddings == "included" else 0.0))
    forward = sum(v for _, _, v in terms)
    training = forward * (1 + knobs.backward)
    mode = knobs.recompute if recompute is None else recompute
    extra = {"selective": L * attn, "full": per_layer_forward}.get(mode, 0.0)
    return FlopCount(tuple(terms), forward, training, extra, training + extra)


def params_from_shape(shape: Shape) -> float:
    """Parameters implied by the shape: matmul weights and embeddings (norms and biases ignored)."""
    d, H, Q, G = shape.d_model, shape.heads, shape.head_dim, shape.kv_heads
    attention = d * (H * Q + 2 * G * Q) + H * Q * d
    dense_ffn = shape.ffn_matmuls * d * shape.d_ff
    moe_ffn = (shape.experts + shape.shared_experts) * shape.ffn_matmuls * d * shape.d_ff_expert + d * shape.experts
    layers = shape.layers * attention + (shape.layers - shape.moe_layers) * dense_ffn + shape.moe_layers * moe_ffn
    embeddings = shape.vocab * d * (1 if shape.tied_embeddings else 2)
    return layers + embeddings
