"""`effspec import nemo` on real NeMo 1 (Lightning bar) and NeMo 2 (`Training epoch …`) excerpts (issue 25).

Fixtures: tests/fixtures/logs/real/nemo/, each citing its source in its header.  Each test checks every sample
against its line, every claim's value and line, what the log states (read, not TODO), and `effspec check` with
the test filling only what no log line gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from real_logs import field, has
from test_importers import LOGS, check_json, claim, codes, fill, run_import, steps_csv, the_run, todo_lines

REAL = "real/nemo/"


def lines_of(name: str) -> list[str]:
    return (LOGS / REAL / name).read_text(encoding="utf-8").split("\n")


def nemo2_rows(name: str) -> dict[int, dict[str, str]]:
    """line -> the `key: value` fields of each NeMo 2 line, read here independently of the importer."""
    out = {}
    for n, line in enumerate(lines_of(name), 1):
        if "Training epoch" in line:
            out[n] = dict(part.split(": ", 1) for part in line.split(" | ")[1:])
    return out


def test_nemo2_aws_readme_samples_claim_and_batch(tmp_path: Path) -> None:
    name = "nemo2_aws_perf_readme.log"
    status, err, out = run_import(tmp_path, "nemo", REAL + name)
    assert status == 0, err
    rows = steps_csv(out)
    expected = nemo2_rows(name)
    assert [int(r["line"]) for r in rows] == sorted(expected) == [3, 4, 5]
    for r in rows:
        fields = expected[int(r["line"])]
        assert (r["step"], r["step_time_s"], r["tflops_per_gpu"], r["consumed_samples"], r["global_batch_size"]) == (
            fields["global_step"], fields["train_step_timing in s"], fields["TFLOPS_per_GPU"],
            fields["consumed_samples"], fields["global_batch_size"])
    text = out.read_text(encoding="utf-8")
    # median of 8.768, 8.748, 8.756 is 8.756 (iteration 76, line 5), whose TFLOPS_per_GPU is 866.9
    assert has(text, 'claim tflops_per_device = 866.9 TFLOP/s  from log "nemo2_aws_perf_readme.log:5"')
    assert has(text, 'global_batch = 128 sequence   from log "nemo2_aws_perf_readme.log:5"')  # printed, not derived
    assert has(text, 'title  = "NeMo 2 run imported from nemo2_aws_perf_readme.log"')
    assert not err.count("EFF801")
    # The README names no model; its recipe example is Llama3-70B at seq_len 8192 (section 4), which the test fills,
    # on 64 H100s in fp8.  By hand (NeMo's llama3 formula, causal): per token L·h²·(12 + 12·G/H + 18·f/h + 6·s/h
    # + 6·V/(L·h)) = 80·8192²·(12 + 1.5 + 63 + 6 + 1.1742) = 4.4922e11; x 128·8192 tokens / 8.756 s / 64 = 840.6
    # TFLOP/s, 3.1 % under the log's 866.9 (full attention would give 900.8): the README's model is not Llama3-70B
    # on 64 GPUs, and the check says the claim does not hold for the filled-in model (EFF601), as it should.
    fill(out, {"kind": "dense_transformer", "layers": "80", "d_model": "8192", "heads": "64  kv_heads = 8",
               "ffn": "swiglu", "d_ff": "28672", "vocab": "128256", "seq_len": "8192 token/sequence",
               "accelerator": '"H100-SXM5-80GB"', "count": "64 device", "dtype": "fp8", "peak": "catalog"})
    status, doc = check_json(out)
    assert "EFF601" in codes(doc)
    c = claim(doc, "tflops_per_device")
    assert c["status"] == "mismatch" and c["reconstructed"] == pytest.approx(840.57e12, rel=1e-4)


def test_nemo2_bionemo_lines_are_samples_and_the_check_reproduces_throughput(tmp_path: Path) -> None:
    name = "nemo2_bionemo_pr740.log"
    status, err, out = run_import(tmp_path, "nemo", REAL + name)
    assert status == 0, err
    rows = steps_csv(out)
    expected = nemo2_rows(name)
    assert {int(r["line"]): (r["step"], r["step_time_s"]) for r in rows} == {
        n: (f["global_step"], f["train_step_timing in s"]) for n, f in expected.items()}
    assert [r["step"] for r in rows] == ["120", "121", "122", "123", "124", "125"]
    text = out.read_text(encoding="utf-8")
    # kept: all six; median (0.03157 + 0.03163) / 2 = 0.0316; 0.03163 (step 121, line 4) and 0.03157 (step 123,
    # line 6) are equally near: the earliest, line 4
    assert has(text, 'global_batch = 1 sequence   from log "nemo2_bionemo_pr740.log:4"')
    assert "claim " not in text  # the lines print no TFLOP/s: nothing to claim
    # ESM-2 650M-like shape, filled by the test (the log has none); seq_len 1024, one H100.
    fill(out, {"kind": "dense_transformer", "layers": "33", "d_model": "1280", "heads": "20", "ffn": "gelu",
               "d_ff": "5120", "vocab": "33", "seq_len": "1024 token/sequence", "accelerator": '"H100-SXM5-80GB"',
               "count": "1 device", "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    metrics = the_run(doc)["metrics"]
    assert metrics["step_time"]["value"] == pytest.approx(0.0316)  # the median of the six
    assert metrics["valid_tokens_per_second"]["value"] == pytest.approx(1024 / 0.0316)  # 1 sequence x 1024 tokens per step


def test_nemo1_dgxc_bar_reads_the_batch_from_consumed_samples(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "nemo", REAL + "nemo1_dgxc_340b.log")
    assert status == 0, err
    assert steps_csv(out) == [{"step": "99", "line": "3", "step_time_s": "3.590", "consumed_samples": "25600.0",
                               "flags": ""}]
    text = out.read_text(encoding="utf-8")
    # 25600 / (99 + 1) = 256, both printed exactly (`99.00`, `25600.0`)
    assert has(text, 'global_batch = 256 sequence   from log "nemo1_dgxc_340b.log:3 (consumed_samples 25600.0 / (global_step 99 + 1))"')
    assert len(todo_lines(out)) == 12
    # The recipe's own figure: 4096 x 256 / 3.59 s = 292,082 tokens/s (it prints "(sequence length) * (global batch
    # size) / (training_step_timing)"); the shape and seq_len are Nemotron-4 340B's (the recipe's), filled by the test.
    fill(out, {"kind": "dense_transformer", "layers": "96", "d_model": "18432", "heads": "96  kv_heads = 8",
               "ffn": "relu", "d_ff": "73728", "vocab": "256000", "seq_len": "4096 token/sequence",
               "accelerator": '"H100-SXM5-80GB"', "count": "2048 device", "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    assert the_run(doc)["metrics"]["valid_tokens_per_second"]["value"] == pytest.approx(4096 * 256 / 3.59)


def test_a_bar_without_step_timing_is_named_not_a_silent_exit(tmp_path: Path) -> None:
    status, err, _ = run_import(tmp_path, "nemo", REAL + "nemo1_launcher_issue55.log")
    assert status == 2
    assert "progress-bar update without `train_step_timing in s=`" in err and "nemo1_launcher_issue55.log:3:1" in err


def test_a_bar_of_empty_figures_is_eff801_at_its_line(tmp_path: Path) -> None:
    status, err, _ = run_import(tmp_path, "nemo", REAL + "nemo1_empty_issue11900.log")
    assert status == 2
    assert "cannot be read whole" in err and "nemo1_empty_issue11900.log:2:1" in err


# ----------------------------------------------------------------------------
# Every number form Lightning prints (synthetic lines, built by tqdm's rule; see compiler/importers/nemo.py)

def bar(step: str, samples: str, timing: str, loss: str = "7.310") -> str:
    return (f"Epoch 0: : 100%|██████████| 2000/2000 [43:24:54<00:00, reduced_train_loss={loss}, global_step={step}, "
            f"consumed_samples={samples}, train_step_timing in s={timing}]")


def test_rounded_step_numbers_are_not_samples_and_are_reported(tmp_path: Path) -> None:
    # tqdm's format_num prints {:.3g} (with `e+0` as `e+`) when it is shorter than str(n), else str(n):
    # 1998.0 -> `2e+3` (4 chars < 6), 2010.0 -> `2010.0` ('2.01e+3' is 7), 12345.0 -> `12345.0` (7, not shorter),
    # 123456.0 -> `1.23e+5` (7 < 8).  So `2e+3` is any step from 1995 to 2004: not an exact step.
    log = tmp_path / "bar.log"
    log.write_text("\n".join([bar("2010.0", "2.57e+5", "68.70"), bar("2e+3", "2.56e+5", "68.90"),
                              bar("2e+3", "2.56e+5", "68.90"), bar("12345.0", "1580288.0", "1.900", "nan"),
                              bar("1.23e+5", "1.58e+7", "1.900"), bar("12346.0", "1580416.0", "nan")]) + "\n",
                   encoding="utf-8")
    status, err, out = run_import(tmp_path, "nemo", str(log))
    assert status == 0, err
    rows = steps_csv(out)
    assert [(r["step"], r["line"], r["step_time_s"], r["flags"]) for r in rows] == [
        ("2010", "1", "68.70", "warmup"), ("12345", "4", "1.900", "nan")]  # 68.70 > 1.5 x the median 35.3
    # lines 2 and 3 (2e+3) and 5 (1.23e+5): one EFF801 each; line 6: a nan timing, EFF801
    for n in (2, 3, 5):
        assert f"bar.log:{n}:1" in err
    assert err.count("printed rounded") == 3 and "no readable train_step_timing (`nan`)" in err
    text = out.read_text(encoding="utf-8")
    assert "3 update(s) printed their global_step rounded" in text
    # 1580288 / (12345 + 1) = 128 exactly; 2.57e+5 (rounded) is never divided
    assert re.search(r'global_batch = 128 sequence +from log "bar.log:4 \(consumed_samples 1580288.0 / \(global_step 12345 \+ 1\)\)"', text)


def test_nemo2_lines_after_any_prefix_and_a_world_size(tmp_path: Path) -> None:
    body = ("Training epoch 0, iteration {i}/99 | lr: 1.469e-05 | global_batch_size: 128 | global_step: {i} | "
            "reduced_train_loss: 6.265 | train_step_timing in s: 12.22 | tokens_per_sec_per_gpu: 1.073e+04 | "
            "consumed_samples: {c}")
    log = tmp_path / "n2.log"
    log.write_text("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
                   + "[2025-11-20T14:55:23+08:00] retraining/0 " + body.format(i=97, c=12544) + "\n"
                   + " 0: " + body.format(i=98, c=12672) + "\n"
                   + "> " + body.format(i=99, c=12800) + "\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "nemo", str(log))
    assert status == 0, err
    assert [(r["step"], r["line"]) for r in steps_csv(out)] == [("97", "2"), ("98", "3"), ("99", "4")]
    text = out.read_text(encoding="utf-8")
    assert re.search(r'count +\= 8 device +from log "n2.log:1"', text)
    assert has(text, 'claim throughput = 1.073e+04 token/s/device * hardware.count  from log "n2.log:2"')


# ----------------------------------------------------------------------------
# NeMo 1's Hydra config dump (`************** Experiment configuration ***********` then the YAML, indented 4 by
# NeMo's log formatter): searobbersduck/AIGC_Note@cca8f3be Nemo-RLHF-23.08.03.md L681-960 (see the file's header).

DUMP = "nemo1_rlhf_config_dump.log"


def dump_line(key_line: str) -> int:
    """The 1-based line of the dump that is exactly ``key_line``, found here independently of the importer."""
    (n,) = [n for n, t in enumerate(lines_of(DUMP), 1) if t == key_line]
    return n


def test_config_dump_alone_is_no_run(tmp_path: Path) -> None:
    # The excerpt's job never reached a training step (its servers were unreachable): no sample, exit 2.
    status, err, out = run_import(tmp_path, "nemo", REAL + DUMP)
    assert status == 2 and "no NeMo training line found" in err and not out.exists()


def test_config_dump_gives_shape_layout_precision_seq_len_and_batch_each_at_its_line(tmp_path: Path) -> None:
    # The real dump, then one bar update the test writes (synthetic: the excerpt has none) so that there is a run.
    log = tmp_path / "dump.log"
    bar = ("Epoch 0: :   1%|          | 3/5010 [00:30<13:55:12, reduced_train_loss=2.310, global_step=2.000, "
           "consumed_samples=192.0, train_step_timing in s=9.870]")
    log.write_text((LOGS / REAL / DUMP).read_text(encoding="utf-8") + bar + "\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "nemo", str(log))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    vocab_line = next(n for n, t in enumerate(lines_of(DUMP), 1) if "Padded vocab_size: 256000" in t)
    world_line = next(n for n, t in enumerate(lines_of(DUMP), 1) if t.startswith("Initializing distributed:"))
    expected = {  # key -> (value, the dump's line that states it)
        "layers": ("24", dump_line("      num_layers: 24")),
        "d_model": ("2048", dump_line("      hidden_size: 2048")),
        "heads": ("16", dump_line("      num_attention_heads: 16")),
        "d_ff": ("5440", dump_line("      ffn_hidden_size: 5440")),
        "ffn": ("swiglu", dump_line("      activation: fast-swiglu")),
        "vocab": ("256000", vocab_line),
        "tied_embeddings": ("false", dump_line("      share_embeddings_and_output_weights: false")),
        "seq_len": ("4096 token/sequence", dump_line("      encoder_seq_length: 4096")),
        "global_batch": ("64 sequence", dump_line("      global_batch_size: 64")),
        "tp": ("1", dump_line("      tensor_model_parallel_size: 1")),
        "pp": ("1", dump_line("      pipeline_model_parallel_size: 1")),
        "micro_batch": ("1 sequence", dump_line("      micro_batch_size: 1")),
        "recompute": ("none", dump_line("      activations_checkpoint_granularity: null")),
        "dtype": ("bf16", dump_line("      precision: bf16")),
        "count": ("1 device", world_line),  # Lightning's world size wins over trainer.devices x num_nodes (1 x 1)
    }
    for key, (value, line) in expected.items():
        assert field(text, key) == (value, f'log "dump.log:{line}"'), key
    assert field(text, "kind")[0] == "dense_transformer"
    assert not re.search(r"^\s+kv_heads\b", text, re.M)  # num_query_groups: null (as many as heads): not a number
    # The date of the dump's first line (2023-10-26) is before PR #14424: NeMo's full-attention count.
    assert field(text, "preset") == ("nemo_pre14424", 'log "dump.log:3"')
    # The nested YAML is read by its path: `model.rlhf.ppo.epochs: 1` or `model.data.seq_length` do not reach
    # the model block, and only accelerator and peak are left to fill in.
    assert todo_lines(out) == [n for n, t in enumerate(text.split("\n"), 1) if " = TODO" in t] and \
        {t.split("=")[0].strip() for t in text.split("\n") if " = TODO" in t} == {"accelerator", "peak"}
    fill(out, {"accelerator": '"A100-SXM4-80GB"', "peak": "catalog"})
    status, doc = check_json(out)
    assert status in (0, 1) and not [c for c in codes(doc) if c < "EFF100"]
    metrics = the_run(doc)["metrics"]
    # The spec's tokens per step are the dump's: 64 sequences x 4096 tokens = 262,144.
    assert metrics["valid_tokens_per_step"]["value"] == 64 * 4096
    # FLOPs per token by hand under nemo_pre14424 (full attention, logits in, embedding lookup out):
    # N = 24·(4·2048² + 3·2048·5440) + 256000·2048 = 1,729,101,824; 6N + 12·L·d·s = 10,374,610,944 +
    # 12·24·2048·4096 (2,415,919,104) = 12,790,530,048.
    n_params = 24 * (4 * 2048**2 + 3 * 2048 * 5440) + 256000 * 2048
    assert n_params == 1_729_101_824
    assert metrics["flops_per_token"]["value"] == 6 * n_params + 12 * 24 * 2048 * 4096 == 12_790_530_048


def test_a_config_dump_without_a_model_leaves_the_shape_todo(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text("[NeMo I 2023-10-26 13:26:58 megatron_gpt_pretraining:37]\n    trainer:\n      devices: 8\n"
                   "      num_nodes: 2\n      precision: bf16-mixed\n"
                   "Epoch 0: :   1%|          | 3/10 [00:30<13:55:12, global_step=2.000, consumed_samples=192.0, "
                   "train_step_timing in s=9.870]\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "nemo", str(log))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    assert field(text, "count") == ("16 device", 'log "t.log:3,4 (trainer.devices 8 x trainer.num_nodes 2)"')
    assert field(text, "dtype") == ("bf16", 'log "t.log:5"')
    assert has(text, "layers = TODO  # the log has no model shape")


def test_a_hostile_config_dump_reaches_the_spec_only_as_checked_values(tmp_path: Path) -> None:
    # Values that are no number, no known name, an interpolation or a spec fragment: TODO (or absent), never text
    # in the spec; keys deeper than the YAML the reader follows end the dump there.
    log = tmp_path / "h.log"
    log.write_text("[NeMo I 2023-10-26 13:26:58 megatron_gpt_pretraining:37]\n    model:\n"
                   "      num_layers: 1e400\n      hidden_size: ${model.x}\n      num_attention_heads: 16 } run evil {\n"
                   "      activation: '} run evil { title = \"x\"'\n      encoder_seq_length: -4096\n"
                   "      global_batch_size: 0\n    trainer:\n      precision: \"# effspec: file-ignore[EFF201]\"\n"
                   "Epoch 0: :   1%|          | 3/10 [00:30<13:55:12, global_step=2.000, consumed_samples=192.0, "
                   "train_step_timing in s=9.870]\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "nemo", str(log))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    assert "evil" not in text and "effspec:" not in text.replace("effspec import", "")
    for key in ("layers", "d_model", "heads", "ffn", "seq_len", "dtype"):
        assert re.search(rf"(?:^\s+|\{{ ){key}\s+= TODO\b", text, re.M), key
    # global_batch_size 0 is not a batch: the bar's consumed_samples 192 / (global_step 2 + 1) = 64 is used instead
    assert field(text, "global_batch") == ("64 sequence", 'log "h.log:11 (consumed_samples 192.0 / (global_step 2 + 1))"')  # the bar, line 11
