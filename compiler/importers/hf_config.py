"""A Hugging Face ``config.json`` to the ``model`` block of a spec.

The config is untrusted: it is read bounded (``LIMITS.max_config_bytes``),
its nesting is bounded before it is parsed, every value reaches the spec only
as a validated number literal or a name from a fixed vocabulary, and text from
it (the model type) is copied only into escaped string literals, never into a
comment.  Each key cites its line: ``from log "config.json:LINE"`` (the
language has no ``file`` provenance kind; the torchtitan TOML is cited the same way).
"""

from __future__ import annotations

import json
import math

from effspec.front.limits import LIMITS
from effspec.importers.record import Field, Source

MAX_DEPTH = LIMITS.max_config_depth
FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "gemma2", "gemma3", "gemma3_text",
            "deepseek_v2", "deepseek_v3", "gpt_oss", "olmo", "olmo2", "olmo3", "nemotron_h", "qwen3_next", "mamba2")
# Hybrid stacks (`kind = hybrid`), read by _hybrid_fields: Nemotron-H (hybrid_override_pattern or layers_block_type,
# transformers' NemotronHConfig), Qwen3-Next (layer_types or full_attention_interval, Qwen3NextConfig), Mamba-2
# (HF's Mamba2Config, or mamba_ssm's own config.json with ssm_cfg.layer = "Mamba2", which has no model_type).
HYBRID = ("nemotron_h", "qwen3_next", "mamba2")
GATED = {"silu": "swiglu", "swish": "swiglu", "gelu_pytorch_tanh": "geglu", "gelu": "geglu"}


class ConfigError(ValueError):
    """The config cannot be used: ``code`` (EFF810), ``line``."""

    def __init__(self, code: str, message: str, line: int = 1):
        super().__init__(message)
        self.code, self.line = code, line


def _depth_and_lines(text: str) -> tuple[int, dict[tuple[int, str], int]]:
    """The deepest nesting, and the line of each object key as (depth, key) -> first line."""
    depth = deepest = 0
    lines: dict[tuple[int, str], int] = {}
    line, i, n = 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c in "{[":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                raise ConfigError("EFF810", f"nested deeper than {MAX_DEPTH} levels; not read", line)
        elif c in "}]":
            depth -= 1
        elif c == '"':
            j, start = i + 1, line
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] == ":":
                try:
                    key = json.loads(text[i:j + 1])
                except ValueError:
                    key = ""
                lines.setdefault((depth, key), start)
            line += text.count("\n", i, j)
            i = j
        i += 1
    return deepest, lines


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def read(data: bytes, name: str) -> list[Field]:
    """The ``model`` block's fields from a config's bytes; ConfigError when it cannot be used."""
    if len(data) > LIMITS.max_config_bytes:
        raise ConfigError("EFF810", f"{name}: a config over {LIMITS.max_config_bytes:,} bytes; not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("EFF810", f"{name}: not UTF-8 (byte {exc.start})") from None
    _, lines = _depth_and_lines(text)
    try:
        cfg = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ConfigError("EFF810", f"{name}: not JSON ({str(exc)[:120]})", getattr(exc, "lineno", 1)) from None
    if not isinstance(cfg, dict):
        raise ConfigError("EFF810", f"{name}: not a JSON object")
    depth = 1
    mtype = cfg.get("model_type")
    ssm_cfg = cfg.get("ssm_cfg")
    if mtype is None and isinstance(ssm_cfg, dict) and ssm_cfg.get("layer") == "Mamba2":
        mtype = "mamba2"  # mamba_ssm's MambaConfig (state-spaces/mamba2-*): read with mamba_ssm's defaults
    if isinstance(cfg.get("text_config"), dict) and mtype in ("gemma3",):
        cfg, depth = cfg["text_config"], 2
    if mtype not in FAMILIES:
        read_keys = ", ".join(sorted(k for k in cfg if isinstance(k, str))[:40])
        raise ConfigError("EFF810", f"{name}: model_type {json.dumps(str(mtype))[:60]} is not one effspec maps; "
                          f"families: {', '.join(FAMILIES)}; keys read: {read_keys}", lines.get((1, "model_type"), 1))
    if mtype in HYBRID:
        return _hybrid_fields(cfg, str(mtype), lines, name)
    return _fields(cfg, str(mtype), depth, lines, name)


def _fields(cfg: dict, mtype: str, depth: int, lines: dict, name: str) -> list[Field]:  # noqa: C901 - one mapping, key by key
    out: list[Field] = []

    def src(key: str) -> Source:
        return Source("log", f"{name}:{lines.get((depth, key), lines.get((1, key), 1))}")

    def integer(key: str, required: bool = True, zero: bool = False) -> int | None:
        value = cfg.get(key)
        if value is None:
            if required:
                raise ConfigError("EFF810", f"{name}: `{key}` is missing; a {mtype} config has it")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value != int(value) or value < 0 or (value == 0 and not zero) or value > 1e9:
            raise ConfigError("EFF810", f"{name}: `{key}` is not a whole number in range", lines.get((depth, key), 1))
        return int(value)

    def put(key: str, cfg_key: str, required: bool = True, value: int | None = None, note: str = "") -> None:
        v = integer(cfg_key, required) if value is None else value
        if v is not None:
            out.append(Field.number(key, str(v), "", src(cfg_key), note))

    moe_experts = next((k for k in ("n_routed_experts", "num_local_experts", "num_experts") if cfg.get(k)), None)
    out.append(Field.name("kind", "moe_transformer" if moe_experts else "dense_transformer", src("model_type"),
                          "model_type " + mtype))
    put("layers", "num_hidden_layers")
    put("d_model", "hidden_size")
    put("heads", "num_attention_heads")
    mla = mtype.startswith("deepseek") and cfg.get("kv_lora_rank")
    if not mla:
        put("kv_heads", "num_key_value_heads", required=False)
        if cfg.get("head_dim") is not None:
            put("head_dim", "head_dim")
    act_key = "hidden_activation" if cfg.get("hidden_activation") else "hidden_act"
    act = cfg.get(act_key)
    ffn = GATED.get(act) if isinstance(act, str) else None
    if mtype == "gpt_oss":
        ffn = "swiglu"  # GPT-OSS's experts are gated (a clamped SwiGLU): three matmuls
    if ffn is None:
        raise ConfigError("EFF810", f"{name}: `{act_key}` is not an activation effspec maps (silu, gelu_pytorch_tanh)",
                          lines.get((depth, act_key), 1))
    out.append(Field.name("ffn", ffn, src(act_key if act_key in cfg else "model_type")))
    put("d_ff", "intermediate_size")
    put("vocab", "vocab_size")
    if isinstance(cfg.get("tie_word_embeddings"), bool):
        out.append(Field.name("tied_embeddings", "true" if cfg["tie_word_embeddings"] else "false", src("tie_word_embeddings")))
    if moe_experts:
        put("experts", moe_experts)
        put("top_k", "num_experts_per_tok")
        if cfg.get("moe_intermediate_size"):
            put("d_ff_expert", "moe_intermediate_size")
        if cfg.get("n_shared_experts") is not None:
            put("shared_experts", "n_shared_experts")
        shared = integer("shared_expert_intermediate_size", required=False, zero=True)
        expert = integer("moe_intermediate_size", required=False)
        if shared and expert:
            if shared % expert:
                raise ConfigError("EFF810", f"{name}: the shared expert ({shared}) is not a whole number of experts "
                                  f"({expert}); the language has one expert size", lines.get((depth, "shared_expert_intermediate_size"), 1))
            put("shared_experts", "shared_expert_intermediate_size", value=shared // expert,
                note=f"{shared} / moe_intermediate_size {expert}: one shared expert as {shared // expert} experts' width")
        _moe_layers(cfg, mtype, integer, put, lines, depth, name)
    if mla:
        q = integer("q_lora_rank", required=False)
        if q:
            put("q_lora_rank", "q_lora_rank")
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            put(key, key)
    mtp = integer("num_nextn_predict_layers", required=False, zero=True)
    if mtp:
        put("mtp_depth", "num_nextn_predict_layers")
    window = integer("sliding_window", required=False)
    if window and cfg.get("use_sliding_window", True) is not False:
        types = cfg.get("layer_types")
        layers = integer("num_hidden_layers") or 0
        note = ""
        if isinstance(types, list):
            sliding, key = sum(1 for t in types if t == "sliding_attention"), "layer_types"
        elif mtype == "gemma2":
            sliding, key = layers // 2, "model_type"  # Gemma 2 alternates local and global layers
        elif mtype == "olmo3":
            # Olmo3Config's default layer_types: three sliding-window layers, then one full (layer i full when
            # i % 4 == 3), the cycle maxtext's olmo3.py also builds.
            sliding, key = layers - layers // 4, "model_type"
            note = f"Olmo3Config's default layer_types: 3 sliding, 1 full; {layers // 4} of {layers} full"
        elif integer("sliding_window_pattern", required=False) or mtype in ("gemma3", "gemma3_text"):
            # Every p-th layer is global. A Gemma 3 config that writes neither layer_types nor the pattern gets
            # Gemma3TextConfig's default pattern, 6 (five local layers, then one global).
            p = integer("sliding_window_pattern", required=False) or 6
            sliding, key = layers - layers // p, "sliding_window_pattern"
            if "sliding_window_pattern" not in cfg:
                key, note = "model_type", f"Gemma3TextConfig's default sliding_window_pattern 6: {layers // p} of {layers} global"
        else:
            sliding, key = layers, "sliding_window"
        out.append(Field.number("sliding_window", str(window), "token", src("sliding_window")))
        put("sliding_layers", key, value=sliding, note=note)
    return out


def _moe_layers(cfg: dict, mtype: str, integer, put, lines: dict, depth: int, name: str) -> None:  # noqa: ANN001
    """`moe_layers` when some layers keep a dense MLP, counted the way transformers builds the stack.

    DeepSeek-V2/V3: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.  Qwen2-MoE and
    Qwen3-MoE: layer i is MoE when i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
    """
    layers = integer("num_hidden_layers") or 0
    if mtype.startswith("deepseek"):
        k = integer("first_k_dense_replace", required=False, zero=True) or 0
        freq = integer("moe_layer_freq", required=False) or 1
        n = sum(1 for i in range(layers) if i >= k and i % freq == 0)
        key = "first_k_dense_replace" if k else "moe_layer_freq"
        note = f"num_hidden_layers - first_k_dense_replace {k}" if freq == 1 else \
            f"layers i >= first_k_dense_replace {k} with i % moe_layer_freq {freq} == 0"
    elif mtype in ("qwen2_moe", "qwen3_moe"):
        dense = cfg.get("mlp_only_layers") or []
        if not isinstance(dense, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense):
            raise ConfigError("EFF810", f"{name}: `mlp_only_layers` is not a list of layer numbers",
                              lines.get((depth, "mlp_only_layers"), 1))
        step = integer("decoder_sparse_step", required=False) or 1
        n = sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)
        key = "mlp_only_layers" if dense else "decoder_sparse_step"
        note = f"layers not in mlp_only_layers ({len(set(dense))} listed), every decoder_sparse_step {step}-th"
    else:
        return
    if n != layers:
        if n == 0:
            raise ConfigError("EFF810", f"{name}: `{key}` leaves no MoE layer in a config with experts",
                              lines.get((depth, key), 1))
        put("moe_layers", key, value=n, note=note)


# mamba_ssm's Mamba2 module defaults (mamba_ssm/modules/mamba2.py): what its config.json leaves out.
MAMBA_SSM_DEFAULTS = {"d_state": 128, "d_conv": 4, "expand": 2, "headdim": 64, "ngroups": 1, "chunk_size": 256}
_HF_LAYER_TYPES = {"full_attention", "linear_attention", "mlp", "moe", "attention", "mamba"}


def _hybrid_fields(cfg: dict, mtype: str, lines: dict, name: str) -> list[Field]:  # noqa: C901 - one mapping, key by key
    """`kind = hybrid` and its mixer blocks, for Nemotron-H, Qwen3-Next and Mamba-2 configs."""
    from effspec.front import layers as layer_forms

    out: list[Field] = []
    ssm = cfg.get("ssm_cfg") if isinstance(cfg.get("ssm_cfg"), dict) else None

    def src(key: str) -> Source:
        return Source("log", f"{name}:{lines.get((1, key), lines.get((2, key), 1))}")

    def integer(key: str, required: bool = True, table: dict | None = None) -> int | None:
        value = (table if table is not None else cfg).get(key)
        if value is None:
            if required:
                raise ConfigError("EFF810", f"{name}: `{key}` is missing; a {mtype} config has it")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value != int(value) or value <= 0 or value > 1e9:
            raise ConfigError("EFF810", f"{name}: `{key}` is not a whole number in range", lines.get((1, key), 1))
        return int(value)

    def put(key: str, cfg_key: str | None, value: int | None = None, note: str = "", required: bool = True) -> None:
        v = integer(cfg_key, required) if value is None and cfg_key is not None else value
        if v is not None:
            out.append(Field.number(key, str(v), "", src(cfg_key or "model_type") if cfg_key else None, note))

    def experts_of(count_key: str, shared_key: str) -> None:
        """The routed experts (count, top-k, width) and the shared expert as a whole number of experts; Nemotron-H
        and Qwen3-Next name the count and the shared width differently."""
        put("experts", count_key)
        put("top_k", "num_experts_per_tok")
        expert = integer("moe_intermediate_size")
        put("d_ff_expert", "moe_intermediate_size")
        shared = integer(shared_key, required=False)
        if shared and expert:
            if shared % expert:
                raise ConfigError("EFF810", f"{name}: the shared expert ({shared}) is not a whole number of experts "
                                  f"({expert})", lines.get((1, shared_key), 1))
            put("shared_experts", shared_key, value=shared // expert, note=f"{shared} / moe_intermediate_size {expert}")

    first = next((k for k in ("num_hidden_layers", "n_layer") if k in cfg), "num_hidden_layers")
    out.append(Field.name("kind", "hybrid", src("model_type" if "model_type" in cfg else first), "model_type " + mtype))
    d_key = "d_model" if "d_model" in cfg and "hidden_size" not in cfg else "hidden_size"
    pattern = cfg.get("hybrid_override_pattern")
    types = cfg.get("layers_block_type") if mtype == "nemotron_h" else cfg.get("layer_types")
    if mtype == "nemotron_h" and pattern is None and isinstance(types, list):
        layers = len(types)
    else:
        layers = integer(first) or 0
    out.append(Field.number("layers", str(layers), "", src(first)))
    put("d_model", d_key)
    vocab = integer("vocab_size") or 0
    multiple = integer("pad_vocab_size_multiple", required=False) if mtype == "mamba2" and ssm is not None else None
    if multiple and vocab % multiple:
        padded = vocab + multiple - vocab % multiple
        put("vocab", "vocab_size", value=padded, note=f"vocab_size {vocab} padded to a multiple of {multiple}, as mamba_ssm does")
    else:
        put("vocab", "vocab_size")
    tie = cfg.get("tie_word_embeddings", cfg.get("tie_embeddings"))
    if isinstance(tie, bool):
        out.append(Field.name("tied_embeddings", "true" if tie else "false",
                              src("tie_word_embeddings" if "tie_word_embeddings" in cfg else "tie_embeddings")))
    if mtype == "mamba2":
        out.append(Field.string("pattern", "M" * layers, src(first), "every layer a Mamba-2 mixer, no MLP"))
        if ssm is not None:  # mamba_ssm: the ssm_cfg overrides, else the module's defaults
            got = {k: integer(k, required=False, table=ssm) or v for k, v in MAMBA_SSM_DEFAULTS.items()}
            sub = [("state_size", "d_state"), ("head_dim", "headdim"), ("expand", "expand"),
                   ("groups", "ngroups"), ("conv_kernel", "d_conv"), ("chunk_size", "chunk_size")]
            out += [Field.number(f"mamba2.{k}", str(got[m]), "", src("ssm_cfg"),
                                 "" if m in ssm else f"mamba_ssm Mamba2's default {m}") for k, m in sub]
            return out
        m2 = [("state_size", "state_size"), ("heads", "num_heads"), ("head_dim", "head_dim"), ("groups", "n_groups"),
              ("conv_kernel", "conv_kernel"), ("chunk_size", "chunk_size")]
        for key, cfg_key in m2:
            put(f"mamba2.{key}", cfg_key, required=key == "state_size")
        return out
    # attention layers
    put("heads", "num_attention_heads")
    put("kv_heads", "num_key_value_heads", required=False)
    head_dim_key = next((k for k in ("head_dim", "attention_head_dim") if cfg.get(k) is not None), None)
    if head_dim_key:
        put("head_dim", head_dim_key)
    if mtype == "nemotron_h":
        if isinstance(pattern, str):
            bad = next((c for c in pattern if c not in layer_forms.PATTERN_LETTERS), None)
            if bad is not None or len(pattern) != layers:
                raise ConfigError("EFF810", f"{name}: `hybrid_override_pattern` is not {layers} layer letters "
                                  "(M, *, -, E)", lines.get((1, "hybrid_override_pattern"), 1))
            out.append(Field.string("pattern", pattern, src("hybrid_override_pattern")))
        elif isinstance(types, list) and types and all(isinstance(t, str) and t in _HF_LAYER_TYPES for t in types):
            out.append(Field("layer_types", "[" + ", ".join(types) + "]", src("layers_block_type")))
        else:
            raise ConfigError("EFF810", f"{name}: neither `hybrid_override_pattern` nor `layers_block_type` names the "
                              "layers", lines.get((1, "model_type"), 1))
        act = cfg.get("mlp_hidden_act", cfg.get("hidden_act"))
        if act not in ("relu2", "relu"):
            raise ConfigError("EFF810", f"{name}: `mlp_hidden_act` is not relu2, the MLP effspec maps for Nemotron-H",
                              lines.get((1, "mlp_hidden_act"), 1))
        out.append(Field.name("ffn", "relu", src("mlp_hidden_act" if "mlp_hidden_act" in cfg else "hidden_act"),
                              "squared ReLU: two matmuls"))
        stack = pattern if isinstance(pattern, str) else "".join({"moe": "E", "mlp": "-"}.get(t, "") for t in types or [])
        moe_in_stack = "E" in stack  # the pattern, or the layers_block_type list as its letters (both valid here)
        put("d_ff", "intermediate_size", required="-" in stack)
        experts = integer("n_routed_experts", required=False)
        if experts and moe_in_stack:
            experts_of("n_routed_experts", "moe_shared_expert_intermediate_size")
        m2 = [("state_size", "ssm_state_size"), ("heads", "mamba_num_heads"), ("head_dim", "mamba_head_dim"),
              ("groups", "n_groups"), ("conv_kernel", "conv_kernel"), ("chunk_size", "chunk_size")]
        for key, cfg_key in m2:
            put(f"mamba2.{key}", cfg_key, required=key == "state_size")
        return out
    # qwen3_next
    out.append(Field.name("attention_gate", "true", src("model_type"),
                          "Qwen3-Next's attention gates its output (q_proj is 2·H·Q wide)"))
    if isinstance(types, list) and types:
        if not all(isinstance(t, str) and t in ("linear_attention", "full_attention") for t in types):
            raise ConfigError("EFF810", f"{name}: `layer_types` has a type other than linear_attention and "
                              "full_attention", lines.get((1, "layer_types"), 1))
        out.append(Field("layer_types", "[" + ", ".join(types) + "]", src("layer_types")))
    else:
        put("full_attention_interval", "full_attention_interval", value=integer("full_attention_interval", required=False) or 4,
            note="" if "full_attention_interval" in cfg else "Qwen3NextConfig's default")
    act = cfg.get("hidden_act")
    if GATED.get(act) != "swiglu" if isinstance(act, str) else True:
        raise ConfigError("EFF810", f"{name}: `hidden_act` is not silu", lines.get((1, "hidden_act"), 1))
    out.append(Field.name("ffn", "swiglu", src("hidden_act")))
    put("d_ff", "intermediate_size", required=False)
    if integer("num_experts", required=False):
        experts_of("num_experts", "shared_expert_intermediate_size")
        dense = cfg.get("mlp_only_layers") or []
        step = integer("decoder_sparse_step", required=False) or 1
        if not isinstance(dense, list):
            raise ConfigError("EFF810", f"{name}: `mlp_only_layers` is not a list", lines.get((1, "mlp_only_layers"), 1))
        moe_layers = sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)
        if moe_layers != layers:
            put("moe_layers", "decoder_sparse_step", value=moe_layers, note="layers not in mlp_only_layers, every "
                "decoder_sparse_step-th")
    g = [("key_heads", "linear_num_key_heads"), ("value_heads", "linear_num_value_heads"),
         ("key_head_dim", "linear_key_head_dim"), ("value_head_dim", "linear_value_head_dim"),
         ("conv_kernel", "linear_conv_kernel_dim")]
    for key, cfg_key in g:
        put(f"gated_deltanet.{key}", cfg_key, required=key != "conv_kernel")
    return out
