"""A Hugging Face config.json to the model block (effspec.importers.hf_config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from effspec import check_text
from effspec.importers.hf_config import ConfigError, read

FIX = Path(__file__).parent / "fixtures" / "hf_config"


def block(fields) -> dict[str, tuple[str | None, str]]:
    return {f.key: (f.value, f.source.citation if f.source else "") for f in fields}


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
    model = "  ".join(f"{f.key} = {f.value}" for f in fields)
    text = f"""eff 1
run r {{
  model {{ {model} }}
  convention {{ preset = palm  attention = excluded }}
  work {{ seq_len = 4096 token/sequence  global_batch = 16 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 2 s  warmup = 0 step  boundary = "barrier" }}
}}
"""
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code < "EFF100"]
    # By hand, MACs per token (m = 2, training = 3 x forward, attention scores excluded):
    # per layer: qkv d(HQ + 2GQ) = 4096*(4096 + 2*8*128) = 25,165,824; out 4096*4096 = 16,777,216;
    # ffn 3*4096*14336 = 176,160,768; sum 218,103,808 x 32 layers = 6,979,321,856;
    # logits 4096*128256 = 525,336,576; total 7,504,658,432 MACs -> 6 x = 45,027,950,592 FLOP/token.
    assert result.evaluation.runs["r"].metrics["flops_per_token"].value == 6 * 7_504_658_432


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
    shutil.copy(Path(__file__).parent / "fixtures" / "logs" / "megatron_train.log", log)
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
    text = f"""eff 1
run r {{
  model {{ {model} }}
  convention {{ preset = palm  attention = excluded }}
  work {{ seq_len = 4096 token/sequence  global_batch = 16 sequence }}
  hardware {{ accelerator = "H800-SXM5-80GB"  count = 16 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 2 s  warmup = 0 step  boundary = "barrier" }}
}}
"""
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code < "EFF100"]
    # By hand, MACs per token (m = 2, training = 3 x forward, attention scores excluded):
    d, H = 7168, 128
    attn = d * 1536 + 1536 * H * (128 + 64) + d * 512 + d * 64 + 512 * H * (128 + 128) + H * 128 * d  # 187,105,280
    dense = 3 * d * 18432  # SwiGLU, three matmuls
    moe = (8 + 1) * 3 * d * 2048 + d * 256  # 8 routed + 1 shared expert, and the router
    logits = d * 129280
    mtp = attn + moe + 2 * d * d + logits  # one MTP block (MoE like the last layer), its 2d->d projection, the head
    macs = 61 * attn + 3 * dense + 58 * moe + logits + mtp
    assert attn == 187_105_280
    assert result.evaluation.runs["r"].metrics["flops_per_token"].value == 6 * macs


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
    text = f"""eff 1
run r {{
  model {{ {plain}  {blocks} }}
  convention {{ preset = megatron_lm }}
  work {{ seq_len = {seq_len} token/sequence  global_batch = 16 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 1 s  warmup = 0 step  boundary = "barrier" }}
}}
"""
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code < "EFF100"], result.diagnostics
    return result.evaluation.runs["r"]


def test_nemotron_h_8b_config():
    fields = read((FIX / "nemotron-h-8b.json").read_bytes(), "config.json")
    got = block(fields)
    assert got["kind"] == ("hybrid", "config.json:16")
    assert got["pattern"] == ('"M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"', "config.json:9")
    assert got["head_dim"] == ("128", "config.json:4")          # Nemotron-H writes attention_head_dim
    assert got["ffn"][0] == "relu" and got["d_ff"] == ("21504", "config.json:10")
    assert got["mamba2.state_size"] == ("128", "config.json:21") and got["mamba2.heads"] == ("128", "config.json:13")
    assert got["mamba2.groups"] == ("8", "config.json:17") and got["mamba2.head_dim"] == ("64", "config.json:11")
    # The count tests/test_layers.py derives by hand for this shape at s = 8192: 46,707,769,344 FLOP/token.
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
    assert run.metrics["flops_per_token"].value == 22_739_681_280     # tests/test_layers.py, by hand
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
