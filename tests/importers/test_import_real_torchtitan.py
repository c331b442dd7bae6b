"""`effspec import torchtitan` on real torchtitan excerpts pasted in pytorch/torchtitan pull requests (issue 25).

Fixtures: tests/fixtures/logs/real/torchtitan/, each citing its source in its header.  Per excerpt: every sample
against its line, the claims' values and line, and `effspec check` with the test filling only what no log line
gives (the model shape, the batch): torchtitan prints no step time, so its tokens/s implies it and its TFLOP/s
and MFU are checked against that.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from real_logs import has
from test_importers import LOGS, check_json, claim, fill, run_import, steps_csv, the_run

REAL = "real/torchtitan/"
METRICS = re.compile(r"step:\s*(\d+)\s.*tps: ([0-9,]+)\s+tflops: ([0-9.]+)\s+mfu: ([0-9.]+)%")


def printed(name: str) -> list[tuple[int, str, str, str, str]]:
    """(line, step, tps, tflops, mfu) of every metrics line, read here independently of the importer."""
    out = []
    for n, line in enumerate((LOGS / REAL / name).read_text(encoding="utf-8").split("\n"), 1):
        m = METRICS.search(line)
        if m:
            out.append((n, m.group(1), m.group(2).replace(",", ""), m.group(3), m.group(4)))
    return out


def imported(tmp_path: Path, name: str) -> tuple[Path, list[dict[str, str]], str]:
    status, err, out = run_import(tmp_path, "torchtitan", REAL + name)
    assert status == 0, err
    return out, steps_csv(out), out.read_text(encoding="utf-8")


def test_pr2389_eight_ranks_print_one_step_one_sample_with_its_spread(tmp_path: Path) -> None:
    out, rows, text = imported(tmp_path, "torchtitan_pr2389.log")
    lines = printed("torchtitan_pr2389.log")
    assert len(lines) == 8 and [s for _, s, *_ in lines] == ["4"] * 7 + ["5"]
    # one sample per step, the first line printed for it (lines 3 and 10); step 4's seven lines give its spread
    assert [(r["step"], r["line"], r["tps"], r["tflops"], r["mfu"], r["ranks"], r["tps_min"], r["tps_max"], r["flags"])
            for r in rows] == [("4", "3", "10050", "314.71", "13.99", "7", "10049", "10050", ""),
                               ("5", "10", "10007", "313.36", "13.93", "", "", "", "")]
    assert "restart" not in text  # the same step printed again by another rank is not a resumed run
    assert "printed by up to 7 ranks: one sample per step (the first line printed); the 6 other line(s)" in text
    # two samples: the median of 1/10050 and 1/10007 is their mean, so both are equally near it; in binary
    # floating point step 5's is the nearer: the claims are read from line 10
    for line in ('claim throughput        = 10007 token/s/device * hardware.count  from log "torchtitan_pr2389.log:10"',
                 'claim tflops_per_device = 313.36 TFLOP/s  from log "torchtitan_pr2389.log:10"',
                 'claim mfu               = 13.93 %  from log "torchtitan_pr2389.log:10"'):
        assert has(text, line), line
    # The shape of the thread's Qwen3 model, 4B-like (the run of tests/fixtures/logs/torchtitan_train.log: the same
    # 31.3 GFLOP/token); the peak 2.25 PFLOP/s is the log's own ratio 313.36 / 13.93 % (a B200).
    fill(out, {"kind": "dense_transformer", "layers": "36", "d_model": "2560",
               "heads": "32  head_dim = 128  kv_heads = 8  tied_embeddings = true", "ffn": "swiglu", "d_ff": "9728",
               "vocab": "151936", "seq_len": "4096 token/sequence", "global_batch": "16 sequence",
               "accelerator": '"B200"', "count": "8 device", "dtype": "bf16", "peak": "2250 TFLOP/s"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    # tps implies the step: 65,536 tokens / (10,007 x 8) = 0.81863 s; the TFLOP/s and MFU hold at it
    assert the_run(doc)["implied"]["step_time"]["value"] == pytest.approx(65536 / (10007 * 8))
    assert claim(doc, "tflops_per_device")["status"] == "consistent" and claim(doc, "mfu")["status"] == "consistent"


def test_pr1287_llama3_8b_reproduces_its_tflops_and_mfu(tmp_path: Path) -> None:
    out, rows, text = imported(tmp_path, "torchtitan_pr1287.log")
    assert [(int(r["line"]), r["step"], r["tps"], r["tflops"], r["mfu"]) for r in rows] == [
        (n, s, t, f, m) for n, s, t, f, m in printed("torchtitan_pr1287.log")]
    # kept (warm-up none): tps 5856, 5593, 5868, 5869, 5864, 5862; the median rate is that of 5863 tps; the nearest,
    # 5864 (step 240, line 9)
    assert has(text, 'claim tflops_per_device = 339.59 TFLOP/s  from log "torchtitan_pr1287.log:9"')
    assert has(text, 'claim mfu               = 34.34 %  from log "torchtitan_pr1287.log:9"')
    # Llama 3 8B at seq_len 8192 on H100s (the thread's run; 339.59 / 34.34 % = 989 TFLOP/s, the H100's dense BF16
    # peak); one sequence per device (the timestamps: ~1.40 s per step = 8192 / 5864).
    fill(out, {"kind": "dense_transformer", "layers": "32", "d_model": "4096", "heads": "32  kv_heads = 8",
               "ffn": "swiglu", "d_ff": "14336", "vocab": "128256", "seq_len": "8192 token/sequence",
               "global_batch": "8 sequence", "accelerator": '"H100-SXM5-80GB"', "count": "8 device", "dtype": "bf16",
               "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    # 6·N_matmul + 12·L·d·s: 6·(32·(2·4096² + 2·1024·4096 + 3·4096·14336) + 128256·4096) + 12·32·4096·8192
    # = 45,040,074,752 + 12,884,901,888 = 57,924,976,640 FLOP/token; x 5864 tps = 339.67 TFLOP/s (the log: 339.59)
    per_token = 6 * (32 * (2 * 4096**2 + 2 * 1024 * 4096 + 3 * 4096 * 14336) + 128256 * 4096) + 12 * 32 * 4096 * 8192
    c = claim(doc, "tflops_per_device")
    assert c["status"] == "consistent" and c["reconstructed"] == pytest.approx(per_token * 5864, rel=2e-3)
    assert claim(doc, "mfu")["status"] == "consistent"


def test_pr3393_debug_model_on_one_a100(tmp_path: Path) -> None:
    out, rows, text = imported(tmp_path, "torchtitan_pr3393.log")
    assert [(int(r["line"]), r["step"], r["tps"], r["tflops"], r["mfu"]) for r in rows] == [
        (n, s, t, f, m) for n, s, t, f, m in printed("torchtitan_pr3393.log")]
    assert has(text, 'claim tflops_per_device = 0.52 TFLOP/s  from log "torchtitan_pr3393.log:7"')
    # torchtitan's llama3 debugmodel (dim 256, 6 layers, 16 heads, FFN 768, vocab 2000), seq_len 2048; 0.52 / 0.17 %
    # = 306 TFLOP/s: an A100 (312).  Four sequences: the timestamps' ~1.12 s per step = 8192 / 7309.
    fill(out, {"kind": "dense_transformer", "layers": "6", "d_model": "256", "heads": "16", "ffn": "swiglu",
               "d_ff": "768", "vocab": "2000", "seq_len": "2048 token/sequence", "global_batch": "4 sequence",
               "accelerator": '"A100-SXM4-80GB"', "count": "1 device", "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    # 6·(6·(4·256² + 3·256·768) + 2000·256) + 12·6·256·2048 = 71,490,560 FLOP/token x 7309 = 0.5225 TFLOP/s
    assert claim(doc, "tflops_per_device")["reconstructed"] == pytest.approx(
        (6 * (6 * (4 * 256**2 + 3 * 256 * 768) + 2000 * 256) + 12 * 6 * 256 * 2048) * 7309, rel=1e-3)
    assert the_run(doc)["implied"]["step_time"]["value"] == pytest.approx(8192 / 7309)  # 1.1208 s


# ----------------------------------------------------------------------------
# The device-mesh line and ranks printing out of order (synthetic lines in torchtitan's format)

LINE = "[rank{r}]:[titan] 2025-02-13 11:33:{s:02d},100 - root - INFO - step: {s}  loss:  7.1  memory: 9.46GiB(64.99%)  tps: {t}  tflops: 339.16  mfu: 34.29%"


def test_device_mesh_gives_the_count_and_degrees_and_late_ranks_fold_in(tmp_path: Path) -> None:
    log = tmp_path / "mesh.log"
    log.write_text("\n".join([
        "[rank0]:[titan] 2025-02-13 11:33:12,140 - root - INFO - Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]",
        LINE.format(r=0, s=1, t=5856), LINE.format(r=1, s=1, t=5850), LINE.format(r=0, s=2, t=5860),
        LINE.format(r=1, s=2, t=5858), LINE.format(r=2, s=1, t=5801),  # rank 2's step 1 arrives after step 2
        LINE.format(r=0, s=3, t=5862)]) + "\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "torchtitan", str(log))
    assert status == 0, err
    assert [(r["step"], r["line"], r["ranks"], r["tps_min"], r["tps_max"], r["flags"]) for r in steps_csv(out)] == [
        ("1", "2", "3", "5801", "5856", ""), ("2", "4", "2", "5858", "5860", ""), ("3", "7", "", "", "", "")]
    text = out.read_text(encoding="utf-8")
    # 4 x 2 = 8 devices; dp 4, tp 2
    assert re.search(r'count +\= 8 device +from log "mesh.log:1 \(device mesh dp_shard 4 x tp 2\)"', text)
    assert re.search(r'dp += 4 +from log "mesh.log:1', text) and re.search(r'tp += 2 +from log "mesh.log:1', text)


def test_an_expert_parallel_mesh_gives_the_count_only(tmp_path: Path) -> None:
    log = tmp_path / "ep.log"
    log.write_text("[titan] Building 2-D device mesh with ['dp_shard_mod_ep', 'dp_shard_in_ep'], [2, 2]\n"
                   + LINE.format(r=0, s=1, t=5856)[len("[rank0]:"):] + "\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "torchtitan", str(log))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    assert re.search(r'count +\= 4 device +from log "ep.log:1', text) and "parallelism {" not in text
    assert "dp_shard_mod_ep, dp_shard_in_ep (line 1) are not plain degrees" in text


def test_pr1349_mesh_line_gives_eight_devices_and_dp_and_the_debug_model_holds(tmp_path: Path) -> None:
    out, rows, text = imported(tmp_path, "torchtitan_pr1349.log")
    assert [(int(r["line"]), r["step"], r["tps"], r["tflops"], r["mfu"]) for r in rows] == [
        (n, s, t, f, m) for n, s, t, f, m in printed("torchtitan_pr1349.log")]
    assert rows[0]["flags"] == "warmup"  # step 1: 1,772 tps, the compile step
    # `Building 1-D device mesh with ['dp_shard'], [8]` (line 3, pasted on one line with the GC line): 8 devices,
    # all data parallel; read, not TODO
    assert re.search(r'count += 8 device +from log "torchtitan_pr1349\.log:3 \(device mesh dp_shard 8\)"', text)
    assert re.search(r'dp += 8 +from log "torchtitan_pr1349\.log:3 \(device mesh dp_shard 8\)"', text)
    assert has(text, 'claim tflops_per_device = 12.59 TFLOP/s  from log "torchtitan_pr1349.log:6"')
    # debug_model.toml: torchtitan's llama3 debugmodel (as above), seq_len 2048, local batch 8 (the timestamps:
    # 0.094 s per step x 175,100 tps = 16.5k tokens per device = 8 x 2048): 64 sequences on the 8; an H100
    # (12.59 / 1.27 % = 991 TFLOP/s).
    fill(out, {"kind": "dense_transformer", "layers": "6", "d_model": "256", "heads": "16", "ffn": "swiglu",
               "d_ff": "768", "vocab": "2000", "seq_len": "2048 token/sequence", "global_batch": "64 sequence",
               "accelerator": '"H100-SXM5-80GB"', "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0, doc["diagnostics"]
    # 71,490,560 FLOP/token x 175,100 tps = 12.518 TFLOP/s: the log's 12.59 within its tolerance
    assert claim(doc, "tflops_per_device")["status"] == "consistent"
    assert claim(doc, "tflops_per_device")["reconstructed"] == pytest.approx(71490560 * 175100, rel=1e-3)
    assert the_run(doc)["implied"]["step_time"]["value"] == pytest.approx(64 * 2048 / (175100 * 8))


def test_a_mesh_line_whose_names_are_not_identifiers_is_not_read(tmp_path: Path) -> None:
    log = tmp_path / "m.log"
    log.write_text("[titan] Building 2-D device mesh with ['x\" }  run bad {', '# effspec: file-ignore'], [2, 2]\n"
                   + LINE.format(r=0, s=1, t=5856)[len("[rank0]:"):] + "\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "torchtitan", str(log))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    # torchtitan's mesh names are identifiers (dp_shard, tp, …): anything else is not read, and nothing of it is written
    assert "does not pair identifier names with whole sizes: not read" in text
    assert "run bad" not in text and "file-ignore" not in text and "count       = TODO" in text
