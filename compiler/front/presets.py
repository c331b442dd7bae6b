"""The convention presets: one table, from which everything else derives.

A preset is a named set of FLOP-counting knobs (`convention { preset = … }`).
This table is the only place a preset is written: the language's allowed
values (effspec.front.keys), the engine's expansion (effspec.engine.flops),
the convention notes in reports, `effspec explain PRESET` and the preset table
of spec/language.md are all read from it.  Adding a preset is one entry here
(plus a test that computes the upstream formula by hand and compares).

Each entry gives:

- ``name``: what a spec writes; a framework preset whose upstream formula
  changed carries the version boundary in its name (`maxtext_pre1988`);
- ``knobs``: the knobs it sets.  `attention`, `logits`, `embeddings` and
  `recompute` are required; `windows`, `router` and `formula` default to
  `counted`, `counted` and `shape`.  `multiply_add`, `backward`, `padding`,
  `moe` and `optimizer` are never set by a preset (the run keeps its own);
- ``formula``: the formula it reproduces, in the reference's symbols;
- ``upstream``: where that formula is, a paper's section or a repository's
  file and commit (`owner/repo@commit path function`);
- ``description``: what it counts differently, or cannot reproduce, in a line;
- ``paper``: True for the four published conventions that the convention
  comparison (the report's table, EFF601's first note) puts side by side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Preset:
    name: str
    knobs: Mapping[str, str]
    formula: str
    upstream: str
    description: str = ""
    paper: bool = False
    # A framework preset's version boundary, as data (`effspec import` chooses among a framework's presets
    # by it): ``framework`` names the family, ``since`` is the commit date (YYYY-MM-DD) from which the
    # upstream formula is this one ("" for the oldest form read), ``since_commit`` that commit.
    framework: str = ""
    since: str = ""
    since_commit: str = ""
    # A quirk preset: the framework's count at a version that a later commit fixed (``until``, YYYY-MM-DD, and
    # ``until_commit``); its known quirk is set as a knob (`embeddings = included`, `head_dim = d_model_over_heads`)
    # and said in ``quirk``, so a row printed before the fix is reproduced without a wrong input.
    until: str = ""
    until_commit: str = ""
    quirk: str = ""

    @property
    def note(self) -> str:
        """One line for reports: the formula and where it is from."""
        return (f"{self.formula} ({self.upstream})" + (f"; {self.description}" if self.description else "")
                + (f"; quirk until {self.until} ({self.until_commit}): {self.quirk}" if self.quirk else ""))


# Knobs a preset may set, with the value a preset that does not set them gets.
PRESET_KNOBS: Mapping[str, str | None] = {
    "attention": None, "logits": None, "embeddings": None, "recompute": None,  # required
    "windows": "counted", "router": "counted", "formula": "shape", "head_dim": "declared",
}

_LAYERS = {"logits": "included", "embeddings": "excluded"}  # what nearly every framework counts

PRESETS: tuple[Preset, ...] = (
    # The published conventions (the convention comparison's rows).
    Preset(name="palm", paper=True,
           knobs={"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "excluded"},
           formula="6N + 12·L·H·Q·s", upstream="Chowdhery et al. 2022, App. B"),
    Preset(name="megatron", paper=True,
           knobs={"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "full"},
           formula="96·B·s·L·d²·(1 + s/6d + V/16Ld)", upstream="Narayanan et al. 2021, eq. 3",
           description="counts full recomputation"),
    Preset(name="kaplan", paper=True,
           knobs={"attention": "excluded", "logits": "excluded", "embeddings": "excluded", "recompute": "excluded"},
           formula="6 × non-embedding parameters", upstream="Kaplan et al. 2020"),
    Preset(name="chinchilla", paper=True,
           knobs={"attention": "full", "logits": "included", "embeddings": "included", "recompute": "excluded"},
           formula="every matmul, the embedding included", upstream="Hoffmann et al. 2022, App. F",
           description="softmax terms ignored"),
    # Framework presets: each reproduces one function at one commit.
    Preset(name="nanogpt",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored"},
           formula="6N + 12·L·H·Q·T with tied embeddings",
           upstream="karpathy/nanoGPT@3adf61e model.py estimate_mfu (L289-303)",
           description="N also counts norm weights and biases, which effspec leaves out"),
    Preset(name="torchtitan",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored"},
           formula="6·N_matmul + 6·L·H·(Q_qk + Q_v)·s, full attention on every layer",
           upstream="pytorch/torchtitan@b5bcd76 torchtitan/models/utils.py get_dense_model_nparams_and_flops, "
                    "get_moe_model_nparams_and_flops",
           description="N also counts norm weights; sliding windows counted at full length (changed after this "
                       "commit by pytorch/torchtitan#4300)"),
    Preset(name="torchtitan_pre280",
           knobs={"attention": "full", "logits": "included", "embeddings": "included", "recompute": "excluded",
                  "windows": "ignored"},
           formula="6·N + 12·L·H·Q·s, N every parameter (the embedding table included)",
           upstream="pytorch/torchtitan@528cab939 torchtitan/utils.py get_num_params, get_num_flop_per_token; "
                    "train.py (get_num_params(model), 2024-04-16)",
           description="N also counts norm weights, which effspec leaves out",
           until="2024-04-26", until_commit="pytorch/torchtitan@0c6ca903ff (PR #280)",
           quirk="the token embedding's parameters are in the 6·N (`embeddings = included`): the April 2024 rows of "
                 "docs/performance.md count it"),
    Preset(name="megatron_lm",
           framework="megatron_lm", since="2025-03-06", since_commit="NVIDIA/Megatron-LM@8873b55d6a",
           knobs={"attention": "causal", **_LAYERS, "recompute": "excluded", "windows": "ignored", "router": "excluded"},
           formula="3·2·Σ GEMMs, causal core attention, no router, logits × (1 + MTP)",
           upstream="NVIDIA/Megatron-LM@d98e8a6 megatron/training/training.py num_floating_point_operations "
                    "(causal since 8873b55d6a, ADLR/megatron-lm!2789, 2025-03-06)",
           description="MLA's latent norms and MTP's norms are counted there as multiply-adds, not here"),
    Preset(name="megatron_lm_2024",
           framework="megatron_lm", since="2024-03-25", since_commit="NVIDIA/Megatron-LM@e116d81ed7",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored", "router": "excluded"},
           formula="12·B·s·L·d²·((1 + G/H + s/d)·HQ/d + f·k·g/d + f_sh·g/d + V/2Ld), full attention, no router",
           upstream="NVIDIA/Megatron-LM@8873b55d6a^ megatron/training/training.py num_floating_point_operations "
                    "(this form since 1fa9464e7c, 2024-09-11; the same value since e116d81ed7, 2024-03-25, when "
                    "H·Q = d and no shared experts; until 8873b55d6a, 2025-03-06)",
           description="with experts, every layer is an MoE layer there (f = moe_ffn_hidden_size); effspec keeps "
                       "the declared dense layers dense"),
    Preset(name="megatron_lm_2023",
           framework="megatron_lm", since="2023-11-26", since_commit="NVIDIA/Megatron-LM@2748e7c7d4",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "formula": "megatron_lm_2023"},
           formula="60·B·s·L·d²·(1 + G/5H + s/5d + V/10Ld), FFN taken as 4d GELU",
           upstream="NVIDIA/Megatron-LM@2748e7c7d4 megatron/training.py num_floating_point_operations "
                    "(authored 2023-11-26, committed 2023-11-28; until 9677b3bbc2, 2024-02-28, which took f from "
                    "ffn_hidden_size; a dense 4d GELU model with H·Q = d keeps the value until 8873b55d6a)"),
    Preset(name="maxtext",
           framework="maxtext", since="2025-07-22", since_commit="AI-Hypercomputer/maxtext@2adc3bab1",
           knobs={"attention": "causal", **_LAYERS, "recompute": "excluded"},
           formula="3 × (weight matmuls + causal attention + unembedding), router and sliding windows counted",
           description="windows are counted in the Gemma 2/3/4, GPT-OSS and DeepSeek-V4 paths only (others at full s)",
           upstream="AI-Hypercomputer/maxtext@e591f30 src/maxtext/utils/maxtext_utils.py "
                    "calculate_tflops_training_per_device (causal since PR #1988, 2adc3bab1, 2025-07-22)"),
    Preset(name="maxtext_pre1988",
           framework="maxtext",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded"},
           formula="3 × (weight matmuls + full attention + unembedding), router counted, windows as s·min(W, s)",
           upstream="AI-Hypercomputer/maxtext@33339821e MaxText/maxtext_utils.py calculate_tflops_training_per_device "
                    "(first parent of 2adc3bab1, the merge of PR #1988, 2025-07-22)",
           description="windows are counted for Gemma 2 only (Gemma 3 and others at full s: write windows = ignored)"),
    Preset(name="llm_foundry",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored"},
           formula="(2·N_active·s + 4·L·d·s²)·3 per sequence, embedding lookup not counted",
           upstream="mosaicml/llm-foundry@8c8dd48 llmfoundry/models/mpt/modeling_mpt.py flops_per_batch, "
                    "llmfoundry/models/utils/mpt_param_count.py",
           description="N also counts norm weights and biases, and a learned position table if there is one"),
    Preset(name="olmo_core",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded"},
           formula="6 × parameters of each block + 12·H·Q·min(W, s) per layer, bottom-up",
           upstream="allenai/OLMo-core@fa6c501 src/olmo_core/nn/transformer/model.py Transformer.num_flops_per_token "
                    "(sum of the blocks' and lm_head's; attention in src/olmo_core/nn/attention/__init__.py "
                    "Attention.num_flops_per_token; since dc84ab401, PR #511, 2025-12-22)",
           description="the final norm (in lm_head) and any QK-norm weights are counted there and left out here"),
    Preset(name="olmo_core_pre511",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored"},
           formula="6·N_non-embedding + 12·L·H·(d/H)·s",
           upstream="allenai/OLMo-core@dc84ab401^ src/olmo_core/nn/transformer/model.py Transformer.num_flops_per_token "
                    "(the same formula at 2f253f81, 2024-09-25; until dc84ab401, PR #511, 2025-12-22)",
           description="N also counts norm weights, and every expert of an MoE (write moe = all)"),
    Preset(name="gpt_neox",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "formula": "eq3"},
           formula="72·B·s·L·d²·(1 + s/6d + V/16Ld) for MFU (eq. 3 with f = 3; HFU uses f = 4 when checkpointing ran)",
           upstream="EleutherAI/gpt-neox@ea7aefd megatron/logging.py get_forward_backward_flops, get_actual_flops"),
    Preset(name="nemo",
           framework="nemo", since="2025-08-09", since_commit="NVIDIA/NeMo@6251117f4c",
           knobs={"attention": "causal", **_LAYERS, "recompute": "excluded", "windows": "ignored", "router": "excluded"},
           formula="B·s·L·d²·(12 + 12·G/H + 18·f/d + 6·s/d + 6·V/Ld) (llama3; causal)",
           upstream="NVIDIA/NeMo@8cfedd7 nemo/utils/flops_formulas.py llama3 (causal since 6251117f4c, PR #14424, "
                    "2025-08-09)",
           description="V comes from a per-family table there (llama3: 128256): declare that V"),
    Preset(name="nemo_pre14424",
           framework="nemo",
           knobs={"attention": "full", **_LAYERS, "recompute": "excluded", "windows": "ignored", "router": "excluded"},
           formula="B·s·L·d²·(12 + 12·G/H + 18·f/d + 12·s/d + 6·V/Ld) (llama3; full attention)",
           upstream="NVIDIA/NeMo@6251117f4c^ nemo/utils/flops_formulas.py llama3 (before PR #14424, 2025-08-09)"),
    Preset(name="automodel",
           framework="automodel", since="2026-07-15", since_commit="NVIDIA-NeMo/Automodel@6e5d52b5b",
           knobs={"attention": "causal", **_LAYERS, "recompute": "excluded", "router": "excluded"},
           formula="6 × (qkv + proj + causal or windowed scores + top_k·3·d·f + d·V) per token (gpt_oss_flops)",
           upstream="NVIDIA-NeMo/Automodel@6e5d52b5b nemo_automodel/components/utils/flops_utils.py gpt_oss_flops, "
                    "attention_flops_calculator (head_dim from the config since PR #3091, 2026-07-15)",
           description="GPT-OSS's path (other families have their own functions there); causal keys (s+1)/2 there, "
                       "s/2 here; no router, no embedding"),
    Preset(name="automodel_pre3091",
           framework="automodel", since="2025-10-02", since_commit="NVIDIA-NeMo/Automodel@79d0ccfdb",
           knobs={"attention": "causal", **_LAYERS, "recompute": "excluded", "router": "excluded",
                  "head_dim": "d_model_over_heads"},
           formula="gpt_oss_flops with kv_channels = hidden_size // num_attention_heads",
           upstream="NVIDIA-NeMo/Automodel@6e5d52b5b^ nemo_automodel/components/utils/flops_utils.py gpt_oss_flops "
                    "(from 79d0ccfdb, PR #548, 2025-10-02)",
           description="GPT-OSS's path; causal keys (s+1)/2 there, s/2 here; no router, no embedding",
           until="2026-07-15", until_commit="NVIDIA-NeMo/Automodel@6e5d52b5b (PR #3091)",
           quirk="kv_channels = hidden_size // num_attention_heads (2880 // 64 = 45 for GPT-OSS, whose head_dim is 64) "
                 "in the projections and the scores (`head_dim = d_model_over_heads`): the printed TFLOP/s are 7 % low"),
    Preset(name="megatron_deepspeed",
           framework="megatron_deepspeed", since="2024-08-19", since_commit="microsoft/Megatron-DeepSpeed@b7b2d5ef",
           knobs={"attention": "full", **_LAYERS, "recompute": "executed", "formula": "megatron_deepspeed_2024"},
           formula="2 × (3 fwd MACs + recomputed fwd) with K/V counted as (2 // (H/G))·d²",
           upstream="microsoft/Megatron-DeepSpeed@f4157be megatron/utils.py throughput_calculator "
                    "(since b7b2d5ef, PR #371, 2024-08-19)",
           description="top_k multiplies every layer's FFN there (one ffn_hidden_size); no shared experts, no router"),
    Preset(name="megatron_deepspeed_pre371",
           framework="megatron_deepspeed",
           knobs={"attention": "full", **_LAYERS, "recompute": "executed", "formula": "eq3"},
           formula="24·f·B·s·L·d²·(1 + s/6d + V/16Ld), f = 4 when activation checkpointing ran, else 3",
           upstream="microsoft/Megatron-DeepSpeed@cc3a94c megatron/utils.py throughput_calculator "
                    "(from 7041c862, PR #69, 2022-08-08; f = 4 for recompute_granularity selective or full "
                    "since b91bfd4d, PR #243, 2023-09-10; until b7b2d5ef, PR #371, 2024-08-19)"),
)  # end of PRESETS

CUSTOM_NOTE = "every knob written out"


def names() -> tuple[str, ...]:
    """Every preset's name, in table order, then `custom`: the values `preset` takes."""
    return (*(p.name for p in PRESETS), "custom")


def family(framework: str) -> tuple[Preset, ...]:
    """A framework's version presets, newest boundary first (the oldest form, with no ``since``, last)."""
    return tuple(sorted((p for p in PRESETS if p.framework == framework), key=lambda p: p.since, reverse=True))


def by_name(name: str) -> Preset | None:
    return next((p for p in PRESETS if p.name == name), None)


def expanded(preset: Preset) -> dict[str, str]:
    """The preset's knobs with the optional ones filled in."""
    out = {}
    for knob, default in PRESET_KNOBS.items():
        value = preset.knobs.get(knob, default)
        assert value is not None, f"preset {preset.name} does not set `{knob}`"
        out[knob] = value
    return out


def page(name: str) -> str | None:
    """`effspec explain PRESET`: what the preset counts and where its formula is from."""
    preset = by_name(name)
    if preset is None:
        return None
    knobs = expanded(preset)
    lines = [f"# preset = {preset.name}: {'a published convention' if preset.paper else 'a framework convention'}",
             "", f"Reproduces: {preset.upstream}", "", f"Formula: {preset.formula}", ""]
    if preset.description:
        lines += [f"Note: {preset.description}", ""]
    if preset.quirk:
        lines += [f"Quirk (until {preset.until}, fixed by {preset.until_commit}): {preset.quirk}", ""]
    lines += ["Knobs (a written knob overrides the preset's):", ""]
    lines += [f"  {knob:<11} = {value}" for knob, value in knobs.items()
              if knob != "head_dim" or value != PRESET_KNOBS["head_dim"]]
    lines += ["", "multiply_add, backward, padding and moe keep the run's own values (2 FLOP, 2, excluded, active "
              "unless written). See section 6 of the language reference."]
    return "\n".join(lines)


TABLE_BEGIN = "<!-- preset table: generated from compiler/front/presets.py by scripts/write_language_reference.py -->"
TABLE_END = "<!-- end of preset table -->"


def reference_table() -> str:
    """The preset table of spec/language.md (section 6), between its markers."""
    head = ("| preset | attention | logits | embeddings | recompute | windows | router | formula | "
            "reproduces |")
    rows = [TABLE_BEGIN, "", head, "|---" * 9 + "|"]
    for preset in PRESETS:
        k = expanded(preset)
        cite = preset.note
        rows.append(f"| `{preset.name}` | " + " | ".join(
            k[x] for x in ("attention", "logits", "embeddings", "recompute", "windows", "router")) +
            f" | `{k['formula']}` | {cite.replace('|', '/')} |")
    rows.append("| `custom` | written | written | written | written | counted | counted | `shape` | "
                f"{CUSTOM_NOTE} |")
    rows += ["", TABLE_END]
    return "\n".join(rows)
