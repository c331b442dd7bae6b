"""A Hugging Face config.json to the model block (effspec.importers.hf_config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from effspec import check_text
from effspec.importers.hf_config import ConfigError, read

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hf_config"


def block(fields) -> dict[str, tuple[str | None, str]]:
    return {f.key: (f.value, f.source.citation if f.source else "") for f in fields}


def model_text(fields) -> str:
    """The read fields as the body of a `model` block, `key = value` each, in order."""
    return "  ".join(f"{f.key} = {f.value}" for f in fields)


def spec(model: str, convention: str = "preset = palm  attention = excluded", seq_len: int = 4096,
         accelerator: str = "H100-SXM5-80GB", count: int = 8, step_time: str = "2 s") -> str:
    """One run `r` with the model block's body ``model``: the spec every FLOP/token test below compiles."""
    return f"""eff 1
run r {{
  model {{ {model} }}
  convention {{ {convention} }}
  work {{ seq_len = {seq_len} token/sequence  global_batch = 16 sequence }}
  hardware {{ accelerator = "{accelerator}"  count = {count} device  dtype = bf16  peak = catalog }}
  timing {{ step_time = {step_time}  warmup = 0 step  boundary = "barrier" }}
}}
"""


def run_of(text: str):
    """The run `r` of a spec that compiles with no front-end finding."""
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code < "EFF100"], result.diagnostics
    return result.evaluation.runs["r"]


def test_llama_3_1_8b_keys_and_lines():
    got = block(read((FIX / "llama-3.1-8b.json").read_bytes(), "config.json"))
    assert got["layers"] == ("32", "config.json:17")
    assert got["d_model"] == ("4096", "config.json:10")
    assert got["heads"] == ("32", "config.json:16")
    assert got["kv_heads"] == ("8", "config.json:18")
    assert got["ffn"] == ("swiglu", "config.json:9")
    assert got["d_ff"] == ("14336", "config.json:12")
    assert got["vocab"] == ("128256", "config.json:24")
    assert got["tied_embeddings"] == ("false", "config.json:22")
    assert got["kind"] == ("dense_transformer", "config.json:15")


def test_llama_3_1_8b_flops_per_token():
    fields = read((FIX / "llama-3.1-8b.json").read_bytes(), "config.json")
    run = run_of(spec(model_text(fields)))
    # By hand, MACs per token (m = 2, training = 3 x forward, attention scores excluded):
    # per layer: qkv d(HQ + 2GQ) = 4096*(4096 + 2*8*128) = 25,165,824; out 4096*4096 = 16,777,216;
    # ffn 3*4096*14336 = 176,160,768; sum 218,103,808 x 32 layers = 6,979,321,856;
    # logits 4096*128256 = 525,336,576; total 7,504,658,432 MACs -> 6 x = 45,027,950,592 FLOP/token.
    assert run.metrics["flops_per_token"].value == 6 * 7_504_658_432


def test_unknown_model_type_names_keys():
    with pytest.raises(ConfigError) as exc:
        read(b'{\n "model_type": "bert",\n "hidden_size": 768\n}', "config.json")
    assert exc.value.code == "EFF810" and exc.value.line == 2
    assert "hidden_size, model_type" in str(exc.value)


def test_hostile_config():
    with pytest.raises(ConfigError, match="nested deeper"):
        read(b"[" * 100 + b"]" * 100, "c.json")
    with pytest.raises(ConfigError, match="not JSON"):
        read(b'{"model_type": "llama", "hidden_size": NaN}', "c.json")
    big = b'{"model_type": "llama", "num_hidden_layers": 1e300}'
    with pytest.raises(ConfigError, match="whole number"):
        read(big, "c.json")
    with pytest.raises(ConfigError, match="over"):
        read(b" " * (300 * 1024), "c.json")
    with pytest.raises(ConfigError) as exc:
        read(b'{"model_type": "# effspec: file-ignore[EFF201]\\n"}', "c.json")
    assert "\n" not in str(exc.value)


def test_import_with_model_config(tmp_path, capsys):
    """`effspec import megatron LOG --model-config config.json` writes the config's model block, each key cited."""
    import shutil

    from effspec.cli import main

    log = tmp_path / "train.log"
    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "megatron_train.log", log)
    cfg = tmp_path / "config.json"
    shutil.copy(FIX / "llama-3.1-8b.json", cfg)
    out = tmp_path / "run.eff"
    assert main(["import", "megatron", str(log), "--model-config", str(cfg), "-o", str(out)]) == 0
    text = out.read_text()
    import re

    assert re.search(r'^ +d_ff += 14336 +from log "config\.json:12"$', text, re.M)
    assert re.search(r'^ +vocab += 128256 +from log "config\.json:24"$', text, re.M)
    bad = tmp_path / "bad.json"
    bad.write_text('{"model_type": "bert"}')
    assert main(["import", "megatron", str(log), "--model-config", str(bad), "-o", str(tmp_path / "b.eff")]) == 2
    assert "EFF810" in capsys.readouterr().err and not (tmp_path / "b.eff").exists()


def test_eff810_page_examples():
    """EFF810's page: its Example config is refused with EFF810, its Use instead config is read."""
    import re

    from effspec.rules.pages import page

    bad, good = re.findall(r"```text\n(.*?)```", page("EFF810"), flags=re.S)
    with pytest.raises(ConfigError) as exc:
        read(bad.encode(), "config.json")
    assert exc.value.code == "EFF810"
    assert block(read(good.encode(), "config.json"))["d_ff"][0] == "14336"


def test_deepseek_v3_mla_moe_mtp():
    got = block(read((FIX / "deepseek-v3.json").read_bytes(), "config.json"))
    assert got["kind"] == ("moe_transformer", "config.json:10")
    assert got["experts"] == ("256", "config.json:13")
    assert got["shared_experts"] == ("1", "config.json:14")
    assert got["moe_layers"] == ("58", "config.json:5")  # 61 - first_k_dense_replace 3
    assert got["q_lora_rank"] == ("1536", "config.json:20")
    assert got["kv_lora_rank"] == ("512", "config.json:9")
    assert got["mtp_depth"] == ("1", "config.json:19")
    assert "kv_heads" not in got  # MLA: num_key_value_heads is not the shape
    model = "  ".join(f"{k} = {v}" for k, (v, _) in got.items())
    run = run_of(spec(model, accelerator="H800-SXM5-80GB", count=16))
    # By hand, MACs per token (m = 2, training = 3 x forward, attention scores excluded):
    d, H = 7168, 128
    attn = d * 1536 + 1536 * H * (128 + 64) + d * 512 + d * 64 + 512 * H * (128 + 128) + H * 128 * d  # 187,105,280
    dense = 3 * d * 18432  # SwiGLU, three matmuls
    moe = (8 + 1) * 3 * d * 2048 + d * 256  # 8 routed + 1 shared expert, and the router
    logits = d * 129280
    mtp = attn + moe + 2 * d * d + logits  # one MTP block (MoE like the last layer), its 2d->d projection, the head
    macs = 61 * attn + 3 * dense + 58 * moe + logits + mtp
    assert attn == 187_105_280
    assert run.metrics["flops_per_token"].value == 6 * macs


def test_standalone_hf_config(tmp_path):
    """`effspec import hf-config config.json -o model.eff`: a spec with the config's model block, which compiles."""
    import re

    from effspec.cli import main

    out = tmp_path / "model.eff"
    assert main(["import", "hf-config", str(FIX / "deepseek-v3.json"), "-o", str(out)]) == 0
    text = out.read_text()
    assert re.search(r'^ +kv_lora_rank += 512 +from log "deepseek-v3\.json:9"$', text, re.M)
    assert re.search(r'^ +moe_layers += 58 +from log "deepseek-v3\.json:5"', text, re.M)
    assert not [d for d in check_text(text).diagnostics if d.code < "EFF100" and d.code != "EFF040"]


def test_mistral_nemo_keys_lines_and_flops_per_token():
    """A real Mistral config (SOURCE.md): heads x head_dim (4096) differs from hidden_size (5120), so head_dim must
    be read, not derived."""
    fields = read((FIX / "mistral-nemo-base-2407.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["layers"] == ("40", "config.json:17") and got["d_model"] == ("5120", "config.json:11")
    assert got["heads"] == ("32", "config.json:16") and got["kv_heads"] == ("8", "config.json:18")
    assert got["head_dim"] == ("128", "config.json:9") and got["d_ff"] == ("14336", "config.json:13")
    assert got["ffn"] == ("swiglu", "config.json:10") and got["vocab"] == ("131072", "config.json:26")
    assert got["tied_embeddings"] == ("false", "config.json:22") and got["kind"] == ("dense_transformer", "config.json:15")
    run = run_of(spec(model_text(fields)))
    # By hand, MACs per token: per layer q 5120*4096 + k, v 2*5120*(8*128) = 31,457,280; out 4096*5120 =
    # 20,971,520; ffn 3*5120*14336 = 220,200,960; sum 272,629,760 x 40 = 10,905,190,400; logits 5120*131072 =
    # 671,088,640; total 11,576,279,040 MACs -> 6 x = 69,457,674,240 FLOP/token.
    per_layer = 5120 * 4096 + 2 * 5120 * 8 * 128 + 4096 * 5120 + 3 * 5120 * 14336
    assert per_layer == 272_629_760
    assert run.metrics["flops_per_token"].value == 6 * (40 * per_layer + 5120 * 131072) \
        == 69_457_674_240


# ---------------------------------------------------------------------------- hybrid stacks (issue 28)


def _hybrid_run(fields, seq_len: int = 4096) -> object:
    """The fields as a `model` block (keys `mamba2.x` inside their block), under Megatron-LM's counting."""
    plain = "  ".join(f"{f.key} = {f.value}" for f in fields if "." not in f.key)
    inner: dict[str, list[str]] = {}
    for f in fields:
        if "." in f.key:
            sub, key = f.key.split(".", 1)
            inner.setdefault(sub, []).append(f"{key} = {f.value}")
    blocks = "  ".join(f"{sub} {{ {'  '.join(keys)} }}" for sub, keys in inner.items())
    return run_of(spec(f"{plain}  {blocks}", "preset = megatron_lm", seq_len, step_time="1 s"))


def test_nemotron_h_8b_config():
    fields = read((FIX / "nemotron-h-8b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("hybrid", "config.json:16")
    assert got["pattern"] == ('"M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"', "config.json:9")
    assert got["head_dim"] == ("128", "config.json:4")          # Nemotron-H writes attention_head_dim
    assert got["ffn"][0] == "relu" and got["d_ff"] == ("21504", "config.json:10")
    assert got["mamba2.state_size"] == ("128", "config.json:21") and got["mamba2.heads"] == ("128", "config.json:13")
    assert got["mamba2.groups"] == ("8", "config.json:17") and got["mamba2.head_dim"] == ("64", "config.json:11")
    # The count tests/engine/test_layers.py derives by hand for this shape at s = 8192: 46,707,769,344 FLOP/token.
    assert _hybrid_run(fields, 8192).metrics["flops_per_token"].value == 46_707_769_344


def test_qwen3_next_config():
    fields = read((FIX / "qwen3-next-80b-a3b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["full_attention_interval"] == ("4", "config.json:4") and got["attention_gate"][0] == "true"
    assert got["gated_deltanet.key_heads"] == ("16", "config.json:11")
    assert got["gated_deltanet.value_heads"] == ("32", "config.json:12")
    assert got["shared_experts"] == ("1", "config.json:24") and got["d_ff_expert"] == ("512", "config.json:17")
    assert "moe_layers" not in got                                # mlp_only_layers [] and decoder_sparse_step 1
    run = _hybrid_run(fields)
    assert run.metrics["flops_per_token"].value == 22_739_681_280     # tests/engine/test_layers.py, by hand
    assert run.params_from_shape == 79_674_081_280


def test_mamba2_config_in_mamba_ssm_form():
    fields = read((FIX / "mamba2-2.7b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["layers"] == ("64", "config.json:4") and got["vocab"][0] == "50288"   # 50277 padded to 16
    assert got["pattern"][0] == '"' + "M" * 64 + '"' and got["tied_embeddings"][0] == "true"
    assert got["mamba2.state_size"][0] == "128" and got["mamba2.expand"][0] == "2"
    comments = {f.key: f.comment for f in fields}
    assert comments["mamba2.state_size"] == "mamba_ssm Mamba2's default d_state"
    assert _hybrid_run(fields).metrics["flops_per_token"].value == 17_083_023_360


def test_hybrid_configs_that_cannot_be_used_are_eff810():
    import json

    cfg = json.loads((FIX / "nemotron-h-8b.json").read_text())
    bad = {**cfg, "hybrid_override_pattern": cfg["hybrid_override_pattern"][:-1] + "X"}
    with pytest.raises(ConfigError, match="not 52 layer letters") as exc:
        read(json.dumps(bad, indent=2).encode(), "config.json")
    assert exc.value.code == "EFF810"
    short = {**cfg, "hybrid_override_pattern": "M-"}
    with pytest.raises(ConfigError, match="not 52 layer letters"):
        read(json.dumps(short).encode(), "config.json")
    q = json.loads((FIX / "qwen3-next-80b-a3b.json").read_text())
    with pytest.raises(ConfigError, match="layer_types"):
        read(json.dumps({**q, "layer_types": ["linear_attention", "sliding_attention"]}).encode(), "config.json")


def test_standalone_hybrid_config_compiles(tmp_path):
    from effspec.cli import main

    out = tmp_path / "model.eff"
    assert main(["import", "hf-config", str(FIX / "nemotron-h-8b.json"), "-o", str(out)]) == 0
    text = out.read_text()
    assert "    mamba2 {\n      state_size  = 128" in text
    assert not [d for d in check_text(text).diagnostics if d.code < "EFF100" and d.code != "EFF040"]


def test_gemma_2_9b_keys_lines_windows_and_flops_per_token():
    """A real Gemma 2 config (SOURCE.md): GeGLU, head_dim 256 on a 3584 width, every other layer windowed."""
    fields = read((FIX / "gemma-2-9b-it.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["layers"] == ("42", "config.json:22") and got["d_model"] == ("3584", "config.json:16")
    assert got["heads"] == ("16", "config.json:21") and got["kv_heads"] == ("8", "config.json:23")
    assert got["head_dim"] == ("256", "config.json:13") and got["d_ff"] == ("14336", "config.json:18")
    assert got["ffn"] == ("geglu", "config.json:15") and got["vocab"] == ("256000", "config.json:33")
    # Gemma 2 alternates local and global layers: 42 / 2 = 21 windowed, 4096 tokens (`sliding_window`, line 28)
    assert got["sliding_window"] == ("4096 token", "config.json:28") and got["sliding_layers"][0] == "21"
    run = run_of(spec(model_text(fields)))
    # By hand, MACs per token: per layer q 3584*(16*256) = 14,680,064, k and v 2*3584*(8*256) = 14,680,064,
    # out 4096*3584 = 14,680,064, GeGLU 3*3584*14336 = 154,140,672; sum 198,180,864 x 42 = 8,323,596,288;
    # logits 3584*256000 = 917,504,000; total 9,241,100,288 MACs -> 6 x = 55,446,601,728 FLOP/token.
    per_layer = 3584 * 16 * 256 + 2 * 3584 * 8 * 256 + 16 * 256 * 3584 + 3 * 3584 * 14336
    assert per_layer == 198_180_864
    assert run.metrics["flops_per_token"].value == 6 * (42 * per_layer + 3584 * 256000) \
        == 55_446_601_728


def test_mixtral_8x7b_keys_lines_and_flops_per_token():
    """A real Mixtral config (SOURCE.md): 8 experts, top-2, each expert intermediate_size wide."""
    fields = read((FIX / "mixtral-8x7b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("moe_transformer", "config.json:11")
    assert got["experts"] == ("8", "config.json:16") and got["top_k"] == ("2", "config.json:13")
    assert got["layers"] == ("32", "config.json:14") and got["d_model"] == ("4096", "config.json:7")
    assert got["heads"] == ("32", "config.json:12") and got["kv_heads"] == ("8", "config.json:15")
    assert got["d_ff"] == ("14336", "config.json:9") and got["vocab"] == ("32000", "config.json:26")
    assert got["ffn"] == ("swiglu", "config.json:6") and got["tied_embeddings"] == ("false", "config.json:22")
    run = run_of(spec(model_text(fields)))
    # By hand, MACs per token: per layer q and out 2*4096*4096 = 33,554,432, k and v 2*4096*(8*128) = 8,388,608,
    # the router 4096*8 = 32,768, two routed SwiGLU experts 2*3*4096*14336 = 352,321,536; sum 394,297,344 x 32 =
    # 12,617,515,008; logits 4096*32000 = 131,072,000; total 12,748,587,008 MACs -> 6 x = 76,491,522,048.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128 + 4096 * 8 + 2 * 3 * 4096 * 14336
    assert per_layer == 394_297_344
    assert run.metrics["flops_per_token"].value == 6 * (32 * per_layer + 4096 * 32000) \
        == 76_491_522_048


# ---------------------------------------------------------------------------- more families (issue 25)


def _palm_flops(fields, attention: str = "excluded", seq_len: int = 4096) -> float:
    """FLOP/token of the fields as a `model` block, under PaLM's counting (m = 2, training = 3 x forward)."""
    return run_of(spec(model_text(fields), f"preset = palm  attention = {attention}", seq_len)).metrics["flops_per_token"].value


def test_qwen2_7b_keys_lines_and_flops_per_token():
    """A real Qwen2 config (SOURCE.md): `sliding_window` 131072 is written but `use_sliding_window` is false, so
    no layer is windowed; q/k/v biases are not counted (effspec counts matmuls only)."""
    fields = read((FIX / "qwen2-7b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("dense_transformer", "config.json:12")
    assert got["layers"] == ("28", "config.json:14") and got["d_model"] == ("3584", "config.json:7")
    assert got["heads"] == ("28", "config.json:13") and got["kv_heads"] == ("4", "config.json:15")
    assert got["ffn"] == ("swiglu", "config.json:6") and got["d_ff"] == ("18944", "config.json:9")
    assert got["vocab"] == ("152064", "config.json:24") and got["tied_embeddings"] == ("false", "config.json:19")
    assert "sliding_window" not in got and "head_dim" not in got      # Q = 3584 / 28 = 128
    # By hand, MACs per token: per layer q and out 2*3584*3584 = 25,690,112, k and v 2*3584*(4*128) = 3,670,016,
    # SwiGLU 3*3584*18944 = 203,685,888; sum 233,046,016 x 28 = 6,525,288,448; logits 3584*152064 = 544,997,376;
    # total 7,070,285,824 MACs -> 6 x = 42,421,714,944 FLOP/token.
    per_layer = 2 * 3584 * 3584 + 2 * 3584 * 4 * 128 + 3 * 3584 * 18944
    assert per_layer == 233_046_016
    assert _palm_flops(fields) == 6 * (28 * per_layer + 3584 * 152064) == 42_421_714_944


def test_qwen3_8b_keys_lines_and_flops_per_token():
    """A real Qwen3 dense config (SOURCE.md): 32 heads of 128 on a 4096 width, `layer_types` all full attention,
    `sliding_window` null. QK-norm is elementwise and not counted."""
    fields = read((FIX / "qwen3-8b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("dense_transformer", "config.json:55")
    assert got["layers"] == ("36", "config.json:57") and got["d_model"] == ("4096", "config.json:12")
    assert got["heads"] == ("32", "config.json:56") and got["kv_heads"] == ("8", "config.json:58")
    assert got["head_dim"] == ("128", "config.json:10") and got["d_ff"] == ("12288", "config.json:14")
    assert got["ffn"] == ("swiglu", "config.json:11") and got["vocab"] == ("151936", "config.json:67")
    assert got["tied_embeddings"] == ("false", "config.json:63") and "sliding_window" not in got
    # By hand, MACs per token: per layer q and out 2*4096*(32*128) = 33,554,432, k and v 2*4096*(8*128) = 8,388,608,
    # SwiGLU 3*4096*12288 = 150,994,944; sum 192,937,984 x 36 = 6,945,767,424; logits 4096*151936 = 622,329,856;
    # total 7,568,097,280 MACs -> 6 x = 45,408,583,680 FLOP/token.
    per_layer = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 3 * 4096 * 12288
    assert per_layer == 192_937_984
    assert _palm_flops(fields) == 6 * (36 * per_layer + 4096 * 151936) == 45_408_583_680


def test_gpt_oss_20b_keys_lines_windows_and_flops_per_token():
    """A real GPT-OSS config (SOURCE.md): 32 experts, top-4, each `intermediate_size` wide (a gated, clamped
    SwiGLU: three matmuls), `layer_types` alternating a 128-token window and full attention. Attention sinks are
    one learned logit per head (no matmul) and the q/k/v/o and expert biases are not counted."""
    fields = read((FIX / "gpt-oss-20b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("moe_transformer", "config.json:42")
    assert got["experts"] == ("32", "config.json:47") and got["top_k"] == ("4", "config.json:44")
    assert got["layers"] == ("24", "config.json:45") and got["d_model"] == ("2880", "config.json:11")
    assert got["heads"] == ("64", "config.json:43") and got["kv_heads"] == ("8", "config.json:46")
    assert got["head_dim"] == ("64", "config.json:9") and got["d_ff"] == ("2880", "config.json:14")
    assert got["ffn"] == ("swiglu", "config.json:10") and got["vocab"] == ("201088", "config.json:66")
    assert got["sliding_window"] == ("128 token", "config.json:61")
    assert got["sliding_layers"] == ("12", "config.json:15")          # 12 of the 24 layer_types are sliding
    # By hand, MACs per token: per layer q and out 2*2880*(64*64) = 23,592,960, k and v 2*2880*(8*64) = 2,949,120,
    # the router 2880*32 = 92,160, four SwiGLU experts 4*3*2880*2880 = 99,532,800; sum 126,167,040 x 24 =
    # 3,028,008,960; logits 2880*201088 = 579,133,440; total 3,607,142,400 MACs -> 6 x = 21,642,854,400.
    per_layer = 2 * 2880 * 64 * 64 + 2 * 2880 * 8 * 64 + 2880 * 32 + 4 * 3 * 2880 * 2880
    assert per_layer == 126_167_040
    dense = 24 * per_layer + 2880 * 201088
    assert _palm_flops(fields) == 6 * dense == 21_642_854_400
    # Causal attention at s = 4096: scores and weighted sum 2*kappa*H*Q MACs per layer; a full layer sees
    # kappa = s/2 = 2048 keys, a windowed one w*(1 - w/(2s)) = 128*(1 - 128/8192) = 126.
    full, windowed = 2 * 2048 * 64 * 64, 2 * 126 * 64 * 64      # 16,777,216 and 1,032,192
    assert _palm_flops(fields, "causal") == 6 * (dense + 12 * full + 12 * windowed) == 22_925_131_776


def test_gemma_3_27b_keys_lines_windows_and_flops_per_token():
    """Gemma 3 27B's text config (SOURCE.md): it writes neither `layer_types` nor `sliding_window_pattern`, so
    Gemma3TextConfig's default pattern 6 applies: layers 5, 11, ..., 59 global (62 // 6 = 10), 52 windowed.
    (Before this fixture the reader windowed all 62 layers.)"""
    import json

    fields = read((FIX / "gemma-3-27b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("dense_transformer", "config.json:14")
    assert got["layers"] == ("62", "config.json:16") and got["d_model"] == ("5376", "config.json:10")
    assert got["heads"] == ("32", "config.json:15") and got["kv_heads"] == ("16", "config.json:17")
    assert got["head_dim"] == ("128", "config.json:7") and got["d_ff"] == ("21504", "config.json:12")
    assert got["ffn"] == ("geglu", "config.json:9") and got["vocab"] == ("262208", "config.json:27")
    assert got["sliding_window"] == ("1024 token", "config.json:23")
    assert got["sliding_layers"] == ("52", "config.json:14")
    # An explicit pattern is read as written: 62 - 62 // 2 = 31 windowed layers.
    cfg = json.loads((FIX / "gemma-3-27b.json").read_text())
    assert block(read(json.dumps({**cfg, "sliding_window_pattern": 2}).encode(), "c.json"))["sliding_layers"][0] == "31"
    # By hand, MACs per token: per layer q 5376*(32*128) = 22,020,096, k and v 2*5376*(16*128) = 22,020,096, out
    # 4096*5376 = 22,020,096, GeGLU 3*5376*21504 = 346,816,512; sum 412,876,800 x 62 = 25,598,361,600; logits
    # 5376*262208 = 1,409,630,208; total 27,007,991,808 MACs -> 6 x = 162,047,950,848 FLOP/token.
    per_layer = 2 * 5376 * 32 * 128 + 2 * 5376 * 16 * 128 + 3 * 5376 * 21504
    assert per_layer == 412_876_800
    dense = 62 * per_layer + 5376 * 262208
    assert _palm_flops(fields) == 6 * dense == 162_047_950_848
    # Causal attention at s = 4096: 2*kappa*H*Q MACs per layer, kappa = s/2 = 2048 in the 10 global layers and
    # w*(1 - w/(2s)) = 1024*(1 - 1024/8192) = 896 in the 52 windowed ones.
    full, windowed = 2 * 2048 * 32 * 128, 2 * 896 * 32 * 128       # 16,777,216 and 7,340,032
    assert _palm_flops(fields, "causal") == 6 * (dense + 10 * full + 52 * windowed)


def test_qwen3_30b_a3b_keys_lines_and_flops_per_token():
    """Qwen3-30B-A3B-Base's config (SOURCE.md): 128 experts of 768, top-8, no shared expert, 32 heads of 128 on a
    2048 width (so head_dim must be read: 2048 / 32 would be 64). `mlp_only_layers` [] and `decoder_sparse_step` 1:
    every layer is MoE."""
    import json

    fields = read((FIX / "qwen3-30b-a3b-base.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("moe_transformer", "config.json:16")
    assert got["layers"] == ("48", "config.json:22") and got["d_model"] == ("2048", "config.json:10")
    assert got["heads"] == ("32", "config.json:19") and got["kv_heads"] == ("4", "config.json:23")
    assert got["head_dim"] == ("128", "config.json:8") and got["ffn"] == ("swiglu", "config.json:9")
    assert got["experts"] == ("128", "config.json:20") and got["top_k"] == ("8", "config.json:21")
    assert got["d_ff_expert"] == ("768", "config.json:17") and got["vocab"] == ("151936", "config.json:35")
    assert "moe_layers" not in got and "shared_experts" not in got
    # By hand, MACs per token: per layer q and out 2*2048*(32*128) = 16,777,216, k and v 2*2048*(4*128) =
    # 2,097,152, the router 2048*128 = 262,144, eight SwiGLU experts 8*3*2048*768 = 37,748,736; sum 56,885,248
    # x 48 = 2,730,491,904; logits 2048*151936 = 311,164,928; total 3,041,656,832 MACs -> 6 x = 18,249,940,992.
    per_layer = 2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 2048 * 128 + 8 * 3 * 2048 * 768
    assert per_layer == 56_885_248
    assert _palm_flops(fields) == 6 * (48 * per_layer + 2048 * 151936) == 18_249_940_992
    # Dense layers, as transformers builds them: layer i is MoE when i is not in mlp_only_layers and
    # (i + 1) % decoder_sparse_step == 0. Two listed layers leave 46; a step of 2 leaves 24.
    cfg = json.loads((FIX / "qwen3-30b-a3b-base.json").read_text())

    def moe_layers(**extra) -> str:
        return block(read(json.dumps({**cfg, **extra}, indent=4).encode(), "c.json"))["moe_layers"][0]

    assert moe_layers(mlp_only_layers=[0, 47]) == "46" and moe_layers(decoder_sparse_step=2) == "24"
    # 46 MoE layers and 2 dense SwiGLU layers of intermediate_size 6144 (3*2048*6144 = 37,748,736, no router).
    two_dense = read(json.dumps({**cfg, "mlp_only_layers": [0, 47]}, indent=4).encode(), "c.json")
    assert _palm_flops(two_dense) == 6 * (46 * per_layer + 2 * (per_layer - 2048 * 128 - 8 * 3 * 2048 * 768
                                                                 + 3 * 2048 * 6144) + 2048 * 151936)
    bad = json.dumps({**cfg, "mlp_only_layers": "all"}, indent=4)
    with pytest.raises(ConfigError, match="mlp_only_layers") as exc:
        read(bad.encode(), "c.json")
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if '"mlp_only_layers"' in text)
    assert exc.value.code == "EFF810" and exc.value.line == line == 17      # the list of architectures takes 3 lines


def test_deepseek_v2_lite_mla_shared_experts_first_dense_and_flops_per_token():
    """DeepSeek-V2-Lite's config (SOURCE.md): MLA with no query compression (`q_lora_rank` null), 64 routed experts
    of 1408, top-6, 2 shared experts, the first layer dense (`first_k_dense_replace` 1)."""
    fields = read((FIX / "deepseek-v2-lite.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("moe_transformer", "config.json:20")
    assert got["layers"] == ("27", "config.json:29") and got["d_model"] == ("2048", "config.json:15")
    assert got["heads"] == ("16", "config.json:27") and got["d_ff"] == ("10944", "config.json:17")
    assert got["experts"] == ("64", "config.json:24") and got["top_k"] == ("6", "config.json:28")
    assert got["d_ff_expert"] == ("1408", "config.json:21") and got["shared_experts"] == ("2", "config.json:25")
    assert got["moe_layers"] == ("26", "config.json:13")            # 27 - first_k_dense_replace 1
    assert got["kv_lora_rank"] == ("512", "config.json:18") and got["v_head_dim"] == ("128", "config.json:56")
    assert got["qk_nope_head_dim"] == ("128", "config.json:33") and got["qk_rope_head_dim"] == ("64", "config.json:34")
    assert "q_lora_rank" not in got and "kv_heads" not in got and got["vocab"] == ("102400", "config.json:57")
    # By hand, MACs per token: attention q 2048*16*(128+64) = 6,291,456, kv down 2048*(512+64) = 1,179,648, kv up
    # 512*16*(128+128) = 2,097,152, out 16*128*2048 = 4,194,304: 13,762,560 per layer x 27 = 371,589,120. Layer 0's
    # SwiGLU 3*2048*10944 = 67,239,936. Each of 26 MoE layers: (6 routed + 2 shared)*3*2048*1408 = 69,206,016 and the
    # router 2048*64 = 131,072: 69,337,088 x 26 = 1,802,764,288. Logits 2048*102400 = 209,715,200. Total
    # 2,451,308,544 MACs -> 6 x = 14,707,851,264 FLOP/token.
    attn = 2048 * 16 * 192 + 2048 * 576 + 512 * 16 * 256 + 16 * 128 * 2048
    moe = 8 * 3 * 2048 * 1408 + 2048 * 64
    assert attn == 13_762_560 and moe == 69_337_088
    macs = 27 * attn + 3 * 2048 * 10944 + 26 * moe + 2048 * 102400
    assert _palm_flops(fields) == 6 * macs == 14_707_851_264


def test_olmo3_7b_keys_lines_windows_and_flops_per_token():
    """An OLMo 3 7B config (SOURCE.md): no `layer_types`, so Olmo3Config's default cycle applies, three 4096-token
    sliding-window layers then one full (layer i full when i % 4 == 3): 32 // 4 = 8 full, 24 windowed. QK-norm and
    the post-norms are elementwise and not counted."""
    fields = read((FIX / "olmo3-7b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("dense_transformer", "config.json:3")
    assert got["layers"] == ("32", "config.json:5") and got["d_model"] == ("4096", "config.json:4")
    assert got["heads"] == ("32", "config.json:6") and got["kv_heads"] == ("32", "config.json:7")
    assert got["ffn"] == ("swiglu", "config.json:17") and got["d_ff"] == ("11008", "config.json:8")
    assert got["vocab"] == ("100278", "config.json:9") and got["tied_embeddings"] == ("false", "config.json:15")
    assert got["sliding_window"] == ("4096 token", "config.json:12") and got["sliding_layers"] == ("24", "config.json:3")
    # By hand, MACs per token: per layer q, k, v and out 4*4096*4096 = 67,108,864, SwiGLU 3*4096*11008 =
    # 135,266,304; sum 202,375,168 x 32 = 6,476,005,376; logits 4096*100278 = 410,738,688; total 6,886,744,064
    # MACs -> 6 x = 41,320,464,384 FLOP/token.
    per_layer = 4 * 4096 * 4096 + 3 * 4096 * 11008
    assert per_layer == 202_375_168
    dense = 32 * per_layer + 4096 * 100278
    assert _palm_flops(fields) == 6 * dense == 41_320_464_384
    # Causal attention at s = 8192 (the window now cuts): 2*kappa*H*Q MACs per layer, kappa = s/2 = 4096 in the 8
    # full layers and w*(1 - w/(2s)) = 4096*(1 - 4096/16384) = 3072 in the 24 windowed ones.
    full, windowed = 2 * 4096 * 32 * 128, 2 * 3072 * 32 * 128       # 33,554,432 and 25,165,824
    assert _palm_flops(fields, "causal", seq_len=8192) == 6 * (dense + 8 * full + 24 * windowed)


def test_gemma_3_multimodal_config_is_read_from_text_config():
    """The Hub's Gemma 3 configs (4B and up) nest the text model under `text_config`, `model_type` "gemma3" outside:
    the same fields come back, each cited at its nested line (the 27B fixture's keys, indented one level)."""
    import json

    inner = json.loads((FIX / "gemma-3-27b.json").read_text())
    inner.pop("model_type")
    text = json.dumps({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                       "text_config": inner, "vision_config": {"hidden_size": 1152}}, indent=2)
    lines = {k: n for n, t in enumerate(text.splitlines(), 1) for k in inner if t.startswith(f'    "{k}":')}
    got = block(read(text.encode(), "config.json"))
    flat = block(read((FIX / "gemma-3-27b.json").read_bytes(), "config.json"))
    assert {k: v for k, (v, _) in got.items()} == {k: v for k, (v, _) in flat.items()}
    assert got["d_ff"] == ("21504", f"config.json:{lines['intermediate_size']}")
    assert got["sliding_window"] == ("1024 token", f"config.json:{lines['sliding_window']}")
    assert got["kind"][1] == "config.json:5"                     # the outer model_type


@pytest.mark.parametrize("fixture", ["nemotron-h-8b.json", "qwen3-next-80b-a3b.json", "mamba2-2.7b.json"])
def test_hybrid_config_values_of_any_type_are_eff810_or_compile(fixture):
    """Every key of the hybrid fixtures replaced by a hostile value: the reader refuses (ConfigError) or
    writes a model block that compiles; it never raises anything else (a list where a string was, say)."""
    import json

    from effspec.importers.record import ImportedRun
    from effspec.importers.writer import eff_text

    cfg = json.loads((FIX / fixture).read_text())
    hostile = [None, "x", "M*\"}", [1], [["moe"]], {"a": 1}, -1, 0, 1.5, 1e12, True]
    for key in list(cfg) + ["layer_types", "layers_block_type"]:
        for value in hostile:
            data = json.dumps({**cfg, key: value}).encode()
            try:
                fields = read(data, "config.json")
            except ConfigError:
                continue
            run = ImportedRun("hf-config", "Hugging Face config", "config.json", run_id="model")
            run.blocks["model"] = list(fields)
            text = eff_text([run], {}, "effspec import hf-config")
            codes = [d.code for d in check_text(text).diagnostics if d.code < "EFF100" and d.code != "EFF040"]
            assert codes == [], (key, value, codes)   # what the reader passes on compiles
