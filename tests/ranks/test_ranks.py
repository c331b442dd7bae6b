"""Per-rank timing split: loading (strict, coded errors) and the cause-family diagnosis.

Each CSV is generated here with a seeded RNG, the way a synchronous step looks:
every rank computes, then waits in the collective for the slowest one, so
comm = base transfer + (slowest compute of the step − own compute).
"""

from __future__ import annotations

import numpy as np
import pytest

import effspec
from effspec.ranks import loader, stats
from effspec.report.text import result_json

R, S, PER_NODE = 64, 60, 8  # 64 ranks on 8 nodes of 8, 60 steps
COMM_BASE, STALL = 0.05, 0.005


def write_csv(path, compute: np.ndarray, rng, comm_extra: np.ndarray | None = None) -> None:
    comm = COMM_BASE + (compute.max(axis=0) - compute)
    if comm_extra is not None:
        comm = comm + comm_extra
    stall = np.abs(rng.normal(STALL, 0.001, compute.shape))
    lines = ["rank,node,step,compute,comm,stall"]
    for r in range(compute.shape[0]):
        for s in range(compute.shape[1]):
            lines.append(f"{r},node{r // PER_NODE:02d},{s},{compute[r, s]:.6f},{comm[r, s]:.6f},{stall[r, s]:.6f}")
    path.write_text("\n".join(lines) + "\n")


# MFU = flops_per_token × valid_tokens / (step_time × count × peak)
#     = 1.3824e9 × 1e6 / (1.08 × 64 × 1e14) = 1.3824e15 / 6.912e15 = 0.20   (low)
#     = 3.456e9  × 1e6 / 6.912e15                                  = 0.50   (healthy)
LOW_FPT, HEALTHY_FPT = "1.3824e9", "3.456e9"


def spec(fpt: str = LOW_FPT, csv: str = "ranks.csv", pp: int = 4) -> str:
    return f'''eff 1
run r {{
  model {{ kind = custom  flops_per_token = {fpt} FLOP/token }}
  convention {{ preset = palm }}
  work {{ valid_tokens = 1000000 token }}
  parallelism {{ dp = {64 // pp}  tp = 1  pp = {pp}  micro_batch = 1 sequence }}
  hardware {{ accelerator = "TestGPU"  count = 64 device  dtype = bf16  peak = 100 TFLOP/s }}
  timing {{ step_time = [1.08, 1.08, 1.08, 1.08, 1.08] s  warmup = 0 step }}
  ranks {{ samples = file "{csv}" }}
}}
'''


def check(tmp_path, text: str):
    result = effspec.check_text(text, "t.eff", str(tmp_path))
    return result, result_json(result)["runs"].get("r", {})


def uniform(rng) -> np.ndarray:
    return rng.normal(1.0, 0.01, (R, S))


def test_straggler_names_rank_and_node(tmp_path):
    rng = np.random.default_rng(1)
    compute = uniform(rng)
    compute[12] *= 1.4  # rank 12 lives on node 12 // 8 = 1
    write_csv(tmp_path / "ranks.csv", compute, rng)
    result, run = check(tmp_path, spec())
    d = run["diagnosis"]
    assert (d["family"], d["ranks"], d["nodes"]) == ("straggler", [12], ["node01"])
    # Its compute is 1.4x the typical rank's: excess 0.4 (± the 1 % noise).
    straggler = d["stragglers"][0]
    assert straggler["compute_excess"] == pytest.approx(0.40, abs=0.02)
    assert straggler["pattern"] == "consistent" and straggler["resource"] == "compute"
    # The other ranks wait for it: comm = 0.05 + (1.4 − 1.0) = 0.45 s of ~1.455 s.
    assert d["others_wait_share"] == pytest.approx(0.455 / 1.46, abs=0.02)
    assert d["slowest_ranks"][0]["name"] == "12 (node01)"


def test_straggler_in_bursts(tmp_path):
    rng = np.random.default_rng(2)
    compute = uniform(rng)
    burst_steps = rng.choice(S, size=8, replace=False)
    compute[37, burst_steps] *= 2.0  # rank 37 (node04) doubles in 8 of 60 steps: mean excess 8/60 = 0.133
    write_csv(tmp_path / "ranks.csv", compute, rng)
    _, run = check(tmp_path, spec())
    d = run["diagnosis"]
    assert (d["family"], d["ranks"], d["nodes"]) == ("straggler", [37], ["node04"])
    assert d["stragglers"][0]["burst_steps"] == 8


def test_uneven_pipeline_stages_is_imbalance(tmp_path):
    rng = np.random.default_rng(3)
    stage_compute = np.array([0.70, 1.00, 0.80, 0.90])  # ranks 16k..16k+15 form stage k
    compute = np.repeat(stage_compute, R // 4)[:, None] * rng.normal(1.0, 0.01, (R, S))
    write_csv(tmp_path / "ranks.csv", compute, rng)
    _, run = check(tmp_path, spec(pp=4))
    d = run["diagnosis"]
    assert d["family"] == "imbalance"
    # Critical path: stage 1 = ranks 16..31 on node02 and node03.
    assert d["ranks"] == list(range(16, 32)) and d["nodes"] == ["node02", "node03"]
    # spread = (1.00 − 0.70) / 1.00 = 0.30 (± noise)
    assert d["compute_spread"] == pytest.approx(0.30, abs=0.03)
    # waiting for the slowest: (0.30 + 0 + 0.20 + 0.10) / 4 = 0.15 s of a ~1.055 s step
    assert d["imbalance_wait_share"] == pytest.approx(0.15 / 1.055, abs=0.02)
    assert [round(g["compute_mean"], 1) for g in d["stages"]] == [0.7, 1.0, 0.8, 0.9]


def test_uniformly_slow_devices_is_single_device(tmp_path):
    rng = np.random.default_rng(4)
    write_csv(tmp_path / "ranks.csv", uniform(rng), rng)
    _, run = check(tmp_path, spec(LOW_FPT))
    d = run["diagnosis"]
    assert d["family"] == "single_device"
    assert d["ranks"] == list(range(R)) and d["nodes"] == [f"node{k:02d}" for k in range(8)]
    assert d["mfu"] == pytest.approx(0.20)
    # compute share ≈ 1.0 / (1.0 + 0.05 + ~0.02 wait + 0.005) ≈ 0.93; 0.20 / 0.93 ≈ 0.215 < 0.5
    assert d["compute_interval_efficiency"] == pytest.approx(0.20 / d["compute_share"])
    assert d["compute_interval_efficiency"] < stats.LOW_COMPUTE_EFFICIENCY


def test_healthy_run_is_none(tmp_path):
    rng = np.random.default_rng(5)
    write_csv(tmp_path / "ranks.csv", uniform(rng), rng)
    _, run = check(tmp_path, spec(HEALTHY_FPT))
    d = run["diagnosis"]
    assert (d["family"], d["ranks"], d["nodes"]) == ("none", [], [])
    assert d["mfu"] == pytest.approx(0.50)


def test_without_mfu_uniform_timing_says_so(tmp_path):
    rng = np.random.default_rng(6)
    write_csv(tmp_path / "ranks.csv", uniform(rng), rng)
    text = 'eff 1\nrun r {\n  ranks { samples = file "ranks.csv" }\n}\n'
    _, run = check(tmp_path, text)
    d = run["diagnosis"]
    assert d["family"] == "none" and d["mfu"] is None and "no MFU" in d["note"]


def test_fast_and_slow_paths_read_the_same_values(tmp_path):
    rng = np.random.default_rng(8)
    compute = uniform(rng)
    write_csv(tmp_path / "plain.csv", compute, rng)
    quoted = tmp_path / "quoted.csv"
    # Quoting, CRLF, spaces and an exponent send the file down the csv-module path.
    lines = (tmp_path / "plain.csv").read_text().splitlines()
    lines[1] = lines[1].replace("node00", '"node00"').replace(",0,", ", 0 ,", 1)
    quoted.write_text("\r\n".join(lines) + "\r\n")
    a = loader.load_rank_table(str(tmp_path / "plain.csv"), "plain.csv", None, [])
    b = loader.load_rank_table(str(quoted), "quoted.csv", None, [])
    for name in ("rank", "step", "compute", "comm", "stall", "node"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.node_names == b.node_names
    # Exactly float(): the first row's compute cell as written.
    assert a.compute[0] == float(lines[1].split(",")[3])


def test_parse_is_exact_for_odd_cells(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("node,rank,step,compute,comm,stall\n"
                    "n0,0,0,1.5e-1,0.1234567890123456789,-0\n"
                    "n0,1,0,  2.25 ,.5,7\n")
    t = loader.load_rank_table(str(path), "r.csv", None, [])
    assert t.compute.tolist() == [0.15, 2.25]
    assert t.comm.tolist() == [float("0.1234567890123456789"), 0.5]
    assert t.stall.tolist() == [0.0, 7.0]
    assert t.node_names == ("n0",)


@pytest.mark.parametrize("row, code, words", [
    ("0,n0,0,abc,0.1,0", "EFF003", "row 3, column `compute`: `abc` is not a number"),
    ("0,n0,0,1.0,-0.2,0", "EFF011", "row 3, column `comm`: `-0.2` is not a finite time"),
    ("0.5,n0,0,1.0,0.2,0", "EFF003", "row 3, column `rank`: `0.5` is not a whole number"),
    ("0,n0,0,1.0,0.2", "EFF003", "row 3: 5 cells, the header names 6"),
    ("3,n9,0,1.0,0.2,0", "EFF003", "row 4: rank 3 is on node `n1`, but on `n9` in row 3"),
    ("1,n0,0,1.0,0.2,0", "EFF003", "rank 1 step 0 appears twice"),
    ("0,n0,0,nan,0.2,0", "EFF011", "column `compute`: `nan`"),
])
def test_bad_rows_are_coded_at_the_samples_entry(tmp_path, row, code, words):
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n1,n0,0,1.0,0.1,0\n"
                                        + row + "\n3,n1,1,1.0,0.1,0\n")
    result, _ = check(tmp_path, 'eff 1\nrun r {\n  ranks { samples = file "ranks.csv" }\n}\n')
    hits = [d for d in result.diagnostics if d.code == code and words in d.message]
    assert hits, [(d.code, d.message) for d in result.diagnostics]
    # The caret points at the `file "ranks.csv"` value on line 3, column 21.
    assert (hits[0].span.line, hits[0].span.column) == (3, 21)


def test_missing_column_names_it(tmp_path):
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm\n0,n0,0,1,0\n")
    result, run = check(tmp_path, 'eff 1\nrun r {\n  ranks { samples = file "ranks.csv" }\n}\n')
    assert any(d.code == "EFF020" and "`stall`" in d.message for d in result.diagnostics)
    assert "diagnosis" not in run


def test_empty_file_and_header_only(tmp_path):
    # Both at the `file "ranks.csv"` value: line 3, column 21.
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n")
    result, _ = check(tmp_path, 'eff 1\nrun r {\n  ranks { samples = file "ranks.csv" }\n}\n')
    assert [(d.code, d.severity, d.span.line, d.span.column, d.message) for d in result.diagnostics if d.code < "EFF100"] == [
        ("EFF003", "error", 3, 21, "`ranks.csv` has a header but no rows")]
    (tmp_path / "ranks.csv").write_text("")
    result, _ = check(tmp_path, 'eff 1\nrun r {\n  ranks { samples = file "ranks.csv" }\n}\n')
    assert [(d.code, d.severity, d.span.line, d.span.column, d.message) for d in result.diagnostics if d.code < "EFF100"] == [
        ("EFF020", "error", 3, 21, "`ranks.csv` has no columns `rank`, `node`, `step`, `compute`, `comm`, `stall`")]


def test_check_without_ranks_does_not_import_numpy():
    import subprocess
    import sys

    code = ("import sys, effspec; effspec.check_text('eff 1\\nrun r {\\n  work { seq_len = 8 token/sequence "
            " global_batch = 2 sequence }\\n}\\n'); print('effspec.ranks.diagnose' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_straggler_example_names_rank_37_on_node04_and_its_chart_rows():
    """examples/straggler_ranks.eff: rank 37 computes 12 % slower (1.450 s × 1.12 = 1.624 s)."""
    from pathlib import Path

    import effspec

    root = Path(__file__).resolve().parents[2]
    rr = effspec.load(root / "examples" / "straggler_ranks.eff").evaluation.runs["llama7b_64"]
    d = rr.diagnosis
    assert (d.family, d.ranks, d.nodes) == ("straggler", (37,), ("node04",))
    worst, median = d.evidence["worst_rank"], d.evidence["median_rank"]
    assert worst["rank"] == 37 and worst["compute"] == pytest.approx(1.624, abs=0.01)
    assert median["compute"] == pytest.approx(1.450, abs=0.01)
    # The others wait for the straggler: stall ≈ 1.624 − 1.450 + 0.004 s barrier.
    assert median["stall"] == pytest.approx(0.178, abs=0.01)
