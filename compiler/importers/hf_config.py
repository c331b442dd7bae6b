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
            "deepseek_v2", "deepseek_v3", "gpt_oss", "olmo", "olmo2")
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
    if isinstance(cfg.get("text_config"), dict) and mtype in ("gemma3",):
        cfg, depth = cfg["text_config"], 2
    if mtype not in FAMILIES:
        read_keys = ", ".join(sorted(k for k in cfg if isinstance(k, str))[:40])
        raise ConfigError("EFF810", f"{name}: model_type {json.dumps(str(mtype))[:60]} is not one effspec maps; "
                          f"families: {', '.join(FAMILIES)}; keys read: {read_keys}", lines.get((1, "model_type"), 1))
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
        k = integer("first_k_dense_replace", required=False, zero=True)
        if k:
            put("moe_layers", "first_k_dense_replace", value=integer("num_hidden_layers") - k,  # type: ignore[operator]
                note=f"num_hidden_layers - first_k_dense_replace {k}")
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
        if isinstance(types, list):
            sliding, key = sum(1 for t in types if t == "sliding_attention"), "layer_types"
        elif mtype == "gemma2":
            sliding, key = layers // 2, "model_type"  # Gemma 2 alternates local and global layers
        elif integer("sliding_window_pattern", required=False):
            p = integer("sliding_window_pattern") or 1
            sliding, key = layers - layers // p, "sliding_window_pattern"
        else:
            sliding, key = layers, "sliding_window"
        out.append(Field.number("sliding_window", str(window), "token", src("sliding_window")))
        put("sliding_layers", key, value=sliding)
    return out
