"""`effspec traces`: Kineto traces to the per-rank table (spec/traces.md).

1. GPU: the two real NCCL rank traces of HTA agree with HTA 0.5.0's temporal
   breakdown and comm/compute overlap (tests/fixtures/traces/hta/README.md),
   and with an independent plain-Python interval computation on every step.
2. CPU (gloo): the five generated scenarios (tests/fixtures/traces/cpu, made by
   make_cpu_traces.py with real torch.distributed runs) are diagnosed with the
   injected family and rank, and their step times agree with the wall-clock
   timers recorded inside the training loop.
3. The table, its provenance, the loader, the report; executors (Dask
   byte-identical to serial); bad input.

No torch, HTA or GPU is needed: the tests read only committed fixtures.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import cli as run_effspec

from effspec.cli import main

HERE = Path(__file__).resolve().parents[1]  # tests/
HTA = HERE / "fixtures" / "traces" / "hta"
CPU = HERE / "fixtures" / "traces" / "cpu"
SCENARIOS = ("uniform", "straggler", "imbalance", "comm_heavy", "sleeper")

# HTA 0.5.0's figures for ProfilerStep#551 (tests/fixtures/traces/hta/README.md), µs.
HTA_FIGURES = {
    0: {"idle": 321378, "compute": 106252, "non_compute": 172428, "kernel_time": 600058, "overlap_pctg": 11.81},
    1: {"idle": 328671, "compute": 135548, "non_compute": 136455, "kernel_time": 600674, "overlap_pctg": 20.05},
}


def run_traces(*args: str) -> tuple[int, str]:
    """The CLI in-process; its exit status and stderr."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["traces", *map(str, args)])
    return status, err.getvalue()


def read_table(path: Path) -> tuple[list[str], list[dict]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    return comments, list(csv.DictReader(body))


def row(rows: list[dict], rank: int, step: int) -> dict:
    (found,) = [r for r in rows if int(r["rank"]) == rank and int(r["step"]) == step]
    return {k: (v if k == "node" else float(v)) for k, v in found.items()}


@pytest.fixture(scope="module")
def hta_table(tmp_path_factory) -> tuple[list[str], list[dict]]:
    out = tmp_path_factory.mktemp("hta") / "ranks.csv"
    status, err = run_traces(HTA, "-o", out, "--partial", "-j", "1")
    assert status == 0, err
    return read_table(out)


# ---------------------------------------------------------------------------- 1. GPU against HTA


def test_the_fixtures_are_the_shared_hta_sampled_traces():
    """tests/fixtures/traces/hta holds shared/data/traces/hta-sampled's files, byte for byte
    (shared/ sits beside the repository on a developer's machine and in CI)."""
    shared = HERE.parent.parent / "shared" / "data" / "traces" / "hta-sampled"
    if not shared.is_dir():
        pytest.skip(f"no shared/ beside the repository ({shared})")
    for name in ("rank-0.json.gz", "rank-1.json.gz", "LICENSE"):
        assert (HTA / name).read_bytes() == (shared / name).read_bytes(), name
    readme = (shared / "README.md").read_text(encoding="utf-8")
    for rank, hta in HTA_FIGURES.items():
        assert f"| {rank} | {hta['idle']} | {hta['compute']} | {hta['non_compute']} | {hta['kernel_time']} |" in readme
        assert f"rank {rank}: {hta['overlap_pctg']}" in readme


@pytest.mark.parametrize("rank", [0, 1])
def test_step_551_agrees_with_hta_within_one_percent_of_the_window(hta_table, rank):
    _, rows = hta_table
    r = row(rows, rank, 551)
    hta = HTA_FIGURES[rank]
    window = hta["kernel_time"]
    ours = {"idle": r["idle"] * 1e6, "compute": r["compute"] * 1e6,
            "non_compute": (r["comm_exposed"] + r["other"]) * 1e6, "kernel_time": r["step_time"] * 1e6}
    for key, value in ours.items():
        assert abs(value - hta[key]) <= 0.01 * window, (key, value, hta[key])
    # And in fact to the microsecond: the first step's window is HTA's window.
    assert ours == pytest.approx({k: float(hta[k]) for k in ours}, abs=1e-6)


def test_exposed_communication_maps_to_htas_overlap(hta_table):
    """HTA's comp_comm_overlap_pctg = |comm ∩ compute| / |comm|; effspec's
    comm_exposed = |comm| − |comm ∩ compute|, so overlap = 1 − comm_exposed / comm."""
    _, rows = hta_table
    for rank, hta in HTA_FIGURES.items():
        r = row(rows, rank, 551)
        assert round(100 * (1 - r["comm_exposed"] / r["comm"]), 2) == hta["overlap_pctg"]
    # Rank 0 by hand: comm 195,327 µs of NCCL kernels, 23,068 µs of them under compute kernels.
    r0 = row(rows, 0, 551)
    assert (r0["comm"], r0["comm_exposed"], r0["other"]) == (0.195327, 0.172259, 0.000169)
    assert 195327 - 172259 == 23068 and round(23068 / 195327 * 100, 2) == 11.81
    # HTA's non-compute is exposed communication plus memcpy/memset not under any kernel.
    assert HTA_FIGURES[0]["non_compute"] == 172259 + 169


def _union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _clip(union, lo, hi):
    return sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in union)


def _reference(path: Path) -> dict[int, dict[str, float]]:
    """spec/traces.md's GPU definitions, written the slow, obvious way."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in events
                   if e.get("name", "").startswith("ProfilerStep#"))
    launch = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kinds = {"compute": [], "comm": [], "other": []}
    last = {}
    first = {}
    for e in device:
        iv = (e["ts"], e["ts"] + e["dur"])
        kind = "other" if e["cat"] != "kernel" else "comm" if e["name"].lower().startswith("nccl") else "compute"
        kinds[kind].append(iv)
        t = launch.get(e["args"].get("correlation"))
        for lo, hi, n in steps:
            if t is not None and lo <= t < hi:
                last[n] = max(last.get(n, iv[1]), iv[1])
                first[n] = min(first.get(n, iv[0]), iv[0])
    comp, comm, other = (_union(kinds[k]) for k in ("compute", "comm", "other"))
    everything = _union(kinds["compute"] + kinds["comm"] + kinds["other"])
    kernels = _union(kinds["compute"] + kinds["comm"])
    comm_and_comp = [(max(a[0], b[0]), min(a[1], b[1])) for a in comm for b in comp if min(a[1], b[1]) > max(a[0], b[0])]
    out = {}
    start = first[steps[0][2]]
    for _, _, n in steps:
        lo, hi = start, max(last[n], start)
        c, m = _clip(comp, lo, hi), _clip(comm, lo, hi)
        out[n] = {"step_time": hi - lo, "compute": c, "comm": m, "comm_exposed": m - _clip(comm_and_comp, lo, hi),
                  "other": _clip(everything, lo, hi) - _clip(kernels, lo, hi), "idle": hi - lo - _clip(everything, lo, hi)}
        start = hi
    return out


@pytest.mark.parametrize("rank", [0, 1])
def test_every_step_matches_an_independent_interval_computation(hta_table, rank):
    _, rows = hta_table
    reference = _reference(HTA / f"rank-{rank}.json.gz")
    assert sorted(reference) == [551, 552]
    for step, figures in reference.items():
        r = row(rows, rank, step)
        for key, value in figures.items():
            assert r[key] * 1e6 == pytest.approx(value, abs=1e-6), (step, key)
    # Step 552's window starts where step 551's ends: the gap before its first kernel is its idle time.
    assert row(rows, 0, 552)["step_time"] == 0.622789


def test_the_columns_partition_each_step(hta_table):
    for r in hta_table[1]:
        parts = float(r["compute"]) + float(r["comm_exposed"]) + float(r["other"]) + float(r["idle"])
        assert parts == pytest.approx(float(r["step_time"]), abs=1e-12)
        assert float(r["stall"]) == pytest.approx(float(r["idle"]) + float(r["other"]), abs=1e-12)


# ---------------------------------------------------------------------------- the table and its provenance


def _launch_delays(path: Path) -> str:
    """Launch delay (issue 32), computed here: each device event's start minus its launch's (same correlation),
    the median and the 95th percentile interpolated between the two nearest ranks (numpy's default), in µs."""
    import statistics

    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    launch = {e["args"]["correlation"]: e["ts"] for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    delays = sorted(e["ts"] - launch[e["args"]["correlation"]] for e in events
                    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("args", {}).get("correlation") in launch)
    q = statistics.quantiles(delays, n=100, method="inclusive")
    return f"launch_delay_p50={statistics.median(delays):.3f} launch_delay_p95={q[94]:.3f}"  # µs, to the ns


def test_csv_starts_with_the_provenance_of_every_file(hta_table):
    import re

    comments, rows = hta_table
    sha = [hashlib.sha256((HTA / f"rank-{r}.json.gz").read_bytes()).hexdigest() for r in (0, 1)]
    # The queue length ends each file's line (its figures are checked by hand in test_traces_hta.py and
    # test_traces_real.py); the rest of the lines exactly.
    queue = re.compile(r" queue_mean=\d+\.\d{3} queue_max=\d+\Z")
    assert all(queue.search(c) for c in comments[1:3])
    comments = [queue.sub("", c) for c in comments]
    assert comments == [
        "# effspec-traces 2: method=spec/traces.md files=2 ranks=2 world_size=128 steps=551..552 kind=gpu "
        "bytes=244046 partial=yes missing=2..127",
        f"# effspec-traces 2: file={HTA}/rank-0.json.gz bytes=124247 sha256={sha[0]} rank=0 node=unknown "
        f"node_from=none kind=gpu steps=2 events=4855 {_launch_delays(HTA / 'rank-0.json.gz')}",
        f"# effspec-traces 2: file={HTA}/rank-1.json.gz bytes=119799 sha256={sha[1]} rank=1 node=unknown "
        f"node_from=none kind=gpu steps=2 events=4720 {_launch_delays(HTA / 'rank-1.json.gz')}",
    ] + [c for c in comments if c.startswith("# effspec-traces 2: kernel top=")]
    # Then the ten kernels with the most device time over both ranks (issue 32; tests/ranks/test_traces_hta.py).
    assert len(comments) == 13 and " type=communication " in comments[3] and "ranks=2 name=ncclKernel_SendRecv" in comments[3]
    # The first ten columns as before; the idle split and the kernel types after them (issue 32).
    assert list(rows[0])[:10] == ["rank", "node", "step", "step_time", "compute", "comm", "comm_exposed", "idle", "other",
                                  "stall"]
    assert list(rows[0])[10:] == ["idle_host_wait", "idle_kernel_wait", "idle_other", "gemm", "attention", "memory",
                                  "elementwise_other"]
    assert [(r["rank"], r["step"]) for r in rows] == [("0", "551"), ("0", "552"), ("1", "551"), ("1", "552")]


def test_the_loader_keeps_the_provenance_and_reads_the_new_columns(tmp_path):
    from effspec.ranks.loader import load_rank_table

    out = tmp_path / "ranks.csv"
    assert run_traces(HTA, "-o", out, "--partial", "-j", "1")[0] == 0
    diags = []
    table = load_rank_table(str(out), "ranks.csv", None, diags)
    assert diags == []
    assert table.provenance[0].startswith("effspec-traces 2: method=spec/traces.md files=2")
    # 3 lines of provenance, then the 10 top kernels (issue 32): the first row is line 15.
    assert len(table.provenance) == 13 and table.first_row == 15
    assert table.comm_exposed.tolist() == [0.172259, 0.164724, 0.134336, 0.169187]
    assert table.idle.tolist()[0] == 0.321378 and table.step_time.tolist()[0] == 0.600058


def test_the_loader_counts_comment_lines_in_row_numbers(tmp_path):
    from effspec.ranks.loader import load_rank_table

    path = tmp_path / "r.csv"
    path.write_text("# one\n# two\nrank,node,step,compute,comm,stall\n0,a,1,1.0,0.1,0.0\n0,a,2,x,0.1,0.0\n")
    diags = []
    assert load_rank_table(str(path), "r.csv", None, diags) is None
    assert [(d.code, d.message) for d in diags] == [
        ("EFF003", "`r.csv` row 5, column `compute`: `x` is not a number")]


def test_old_six_column_files_still_load(tmp_path):
    from effspec.ranks.loader import load_rank_table

    path = tmp_path / "r.csv"
    path.write_text("rank,node,step,compute,comm,stall\n0,a,1,1.0,0.1,0.0\n1,a,1,1.0,0.1,0.0\n")
    table = load_rank_table(str(path), "r.csv", None, [])
    assert table.provenance == () and table.comm_exposed is None and table.first_row == 2


@pytest.mark.parametrize("cells, code, message", [
    ("0.5,0.3,0.0,0.0,0.2", "EFF011", "`r.csv` row 2, column `idle`: `-0.1` is not a finite time ≥ 0 s"),
    ("0.5,0.3,0.4,0.0,0.2", "EFF003", "`r.csv` row 2: `comm_exposed` (0.4 s) exceeds `comm` (0.3 s)"),
])
def test_optional_columns_are_checked(tmp_path, cells, code, message):
    from effspec.ranks.loader import load_rank_table

    path = tmp_path / "r.csv"
    step_time, comm, exposed, idle, other = cells.split(",")
    if code == "EFF011":
        idle = "-0.1"
    path.write_text("rank,node,step,step_time,compute,comm,comm_exposed,idle,other,stall\n"
                    f"0,a,1,{step_time},0.1,{comm},{exposed},{idle},{other},0.0\n")
    diags = []
    assert load_rank_table(str(path), "r.csv", None, diags) is None
    assert [(d.code, d.message) for d in diags] == [(code, message)]


def _spec(folder: Path, csv_name: str = "ranks.csv") -> Path:
    spec = folder / "run.eff"
    spec.write_text("eff 1\n\nrun traced {\n"
                    '  hardware { accelerator = "H100-SXM5-80GB"  count = 4 device  dtype = bf16  peak = catalog }\n'
                    f'  ranks {{ samples = file "{csv_name}" }}\n}}\n', encoding="utf-8")
    return spec


def test_the_report_shows_the_provenance(tmp_path):
    out = tmp_path / "ranks.csv"
    assert run_traces(HTA, "-o", out, "--partial", "-j", "1")[0] == 0
    spec = _spec(tmp_path)
    html = tmp_path / "r.html"
    assert main(["report", str(spec), "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    sha = hashlib.sha256((HTA / "rank-1.json.gz").read_bytes()).hexdigest()
    assert "<caption>Provenance</caption>" in text
    assert (f"<tr><td>{HTA}/rank-1.json.gz</td><td>124,247</td>".replace("124,247", "119,799")) in text
    assert f"<td>{sha}</td><td>1</td><td>unknown</td>" in text
    assert "effspec-traces 2: method=spec/traces.md files=2 ranks=2 world_size=128" in text


# ---------------------------------------------------------------------------- 2. CPU scenarios


def _timers(scenario: str) -> dict:
    return json.loads((CPU / scenario / "timers.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cpu_tables(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cpu")
    out = {}
    for scenario in SCENARIOS:
        out[scenario] = folder / f"{scenario}.csv"
        status, err = run_traces(CPU / scenario / "traces", "-o", out[scenario], "-j", "1")
        assert status == 0, err
    return out


def _diagnosis(path: Path):
    from effspec.ranks.diagnose import diagnose
    from effspec.ranks.loader import load_rank_table

    diags = []
    table = load_rank_table(str(path), path.name, None, diags)
    assert diags == []
    return diagnose(table)


@pytest.mark.parametrize("scenario, family, ranks", [
    ("uniform", "none", ()),
    ("straggler", "straggler", (2,)),
    ("imbalance", "imbalance", (3,)),
    ("comm_heavy", "none", ()),
    ("sleeper", "straggler", (1,)),
])
def test_each_scenario_is_diagnosed_with_the_injected_family_and_rank(cpu_tables, scenario, family, ranks):
    meta = _timers(scenario)
    assert meta["scenario"] == scenario and meta["ranks"] == 4
    d = _diagnosis(cpu_tables[scenario])
    assert (d.family, d.ranks) == (family, ranks), d.reason
    if scenario == "straggler":
        (s,) = d.evidence["stragglers"]
        assert (s["rank"], s["resource"], s["pattern"]) == (2, "compute", "consistent")
    if scenario == "sleeper":
        # The sleep is a gap on the main thread: idle time, so a stall, not slow compute.
        (s,) = d.evidence["stragglers"]
        assert (s["rank"], s["resource"]) == (1, "stall")
        assert s["stall_excess"] > 0.10 and abs(s["compute_excess"]) < 0.10
    if scenario == "comm_heavy":
        # No family is communication: the diagnosis is none, and says communication is what is left.
        assert "and communication takes 9" in d.reason and "uniform communication is none of the three" in d.reason
        # The compute share is the loop's own: its timed compute over its timed steps (within 2 points).
        timed = [t for ts in meta["timers"].values() for t in ts]
        share = sum(t["compute"] for t in timed) / sum(t["step_time"] for t in timed)
        assert share < 0.6 and abs(d.evidence["compute_share"] - share) < 0.02, (d.evidence["compute_share"], share)
    if scenario == "uniform":
        assert d.evidence["compute_spread"] < 0.10


def test_a_spec_citing_the_csv_gets_the_diagnosis(cpu_tables, tmp_path):
    shutil.copy(cpu_tables["straggler"], tmp_path / "ranks.csv")
    spec = _spec(tmp_path)
    out = run_effspec("check", str(spec), "--format", "json")
    assert out.returncode == 0, out.stderr
    diagnosis = json.loads(out.stdout)[0]["runs"]["traced"]["diagnosis"]
    assert (diagnosis["family"], diagnosis["ranks"], diagnosis["comm_column"]) == ("straggler", [2], "comm_exposed")
    assert diagnosis["provenance"][0].startswith("effspec-traces 2: method=spec/traces.md files=4 ranks=4 world_size=4")


# The ProfilerStep#N span runs from inside one prof.step() to inside the next;
# the loop's timer from just after that call returns to just before the next
# is made.  So the span holds the timed body: it is never shorter, and longer
# by the cost of prof.step() (0.06-0.11 ms in these runs, once 4.1 ms when the
# 2-core machine was busy).  Inside the body, the ops do not cover the Python
# between them: per step, a trace's compute and comm are at most the timed
# sections, and short of them by the interpreter's own time (under 3 ms).
PROFILER_STEP_MAX_S = 5e-3
PYTHON_BETWEEN_OPS_S = 3e-3


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_per_rank_figures_agree_with_the_wall_clock_timers(cpu_tables, scenario):
    meta = _timers(scenario)
    _, rows = read_table(cpu_tables[scenario])
    assert len(rows) == 4 * len(meta["recorded_steps"])
    for rank in range(4):
        mine = [r for r in rows if r["rank"] == str(rank)]
        timers = {t["step"]: t for t in meta["timers"][str(rank)]}
        assert sorted(int(r["step"]) for r in mine) == sorted(timers) == meta["recorded_steps"]
        n = len(mine)
        sums = {k: 0.0 for k in ("step", "compute", "comm", "idle")}
        for r in mine:
            t = timers[int(r["step"])]
            assert 0 < float(r["step_time"]) - t["step_time"] <= PROFILER_STEP_MAX_S, (r, t)
            assert float(r["compute"]) <= t["compute"], (r, t)
            parts = float(r["compute"]) + float(r["comm_exposed"]) + float(r["idle"])
            assert parts == pytest.approx(float(r["step_time"]), abs=1e-9)
            # A sleep is a gap with no event: all of it is idle time.
            assert float(r["idle"]) >= t["sleep"]
            sums["step"] += float(r["step_time"]) - t["step_time"]
            sums["compute"] += t["compute"] - float(r["compute"])
            sums["comm"] += abs(t["comm"] - float(r["comm"]))
            sums["idle"] += float(r["idle"]) - t["sleep"]
        # On average over the steps: the step time within 0.5 %, the rest within the Python between ops.
        mean_timer_step = sum(t["step_time"] for t in timers.values()) / n
        assert sums["step"] / n <= 0.005 * mean_timer_step, (rank, sums)
        timed = {"compute": sum(t["compute"] for t in timers.values()) / n, "comm": sum(t["comm"] for t in timers.values()) / n}
        for key in ("compute", "comm"):
            # (plus 1 % of the section: the 96 MiB all-reduce of comm_heavy spends 3.4 ms of its 390 outside the events)
            assert 0 <= sums[key] / n <= PYTHON_BETWEEN_OPS_S + 0.01 * timed[key], (rank, key, sums[key] / n)
        # The timer's step is sleep + compute + comm (its sections tile the body), the trace's
        # compute + comm_exposed + idle: so idle − sleep is what the trace's three figures miss.
        missed = sum((float(r["step_time"]) - timers[int(r["step"])]["step_time"])
                     + (timers[int(r["step"])]["compute"] - float(r["compute"]))
                     + (timers[int(r["step"])]["comm"] - float(r["comm_exposed"])) for r in mine)
        assert sums["idle"] == pytest.approx(missed, abs=1e-4 * n), (rank, sums["idle"], missed)
    if meta["scenario"] == "sleeper":  # the injected sleep itself, as recorded by the loop
        sleeps = [t["sleep"] for t in meta["timers"][str(meta["sleeper_rank"])]]
        assert min(sleeps) >= meta["sleep_s"]


# ---------------------------------------------------------------------------- executors


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_parallel_executors_write_the_serial_bytes(tmp_path, executor):
    if executor == "dask":
        pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'effspec[scale]')")
    serial, parallel = tmp_path / "serial.csv", tmp_path / "parallel.csv"
    folder = CPU / "straggler" / "traces"
    assert run_traces(folder, "-o", serial, "--executor", "serial")[0] == 0
    status, err = run_traces(folder, "-o", parallel, "--executor", executor, "-j", "2")
    assert status == 0, err
    assert f"4 traces ({executor}), 32 rows" in err
    assert parallel.read_bytes() == serial.read_bytes()
    # A bad set fails the same way on every executor, and writes nothing.
    status, err = run_traces(folder, HTA, "--partial", "-o", tmp_path / "none.csv", "--executor", executor, "-j", "2")
    assert status == 1 and "rank 0 is claimed by two traces" in err and not (tmp_path / "none.csv").exists()


def test_chunked_parsing_gives_the_same_bytes(tmp_path):
    whole, chunked = tmp_path / "whole.csv", tmp_path / "chunked.csv"
    assert run_traces(HTA, "--partial", "-o", whole, "-j", "1")[0] == 0
    assert run_traces(HTA, "--partial", "-o", chunked, "-j", "1", "--stream-above", "4096")[0] == 0
    assert chunked.read_bytes() == whole.read_bytes()


def test_the_cli_stays_light_until_traces_are_reduced():
    code = ("import sys\nfrom effspec.cli import parser\nparser()\n"
            "print(sorted(m for m in ('numpy', 'orjson', 'msgspec', 'distributed', 'dask', 'effspec.ranks.traces.reduce') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- 6. bad input


def _write_trace(path: Path, events: list, rank: int = 0, world: int = 1, host: str | None = "h0", base_ns: int | None = None,
                 gz: bool = False) -> Path:
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world}}
    if host is not None:
        doc["host_name"] = host
    if base_ns is not None:
        doc["baseTimeNanoseconds"] = base_ns
    doc["traceEvents"] = events
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def _cpu_events(steps: int = 3, start: float = 1000.0, compute: float = 60.0, gap: float = 40.0) -> list:
    """A hand-made gloo trace: per 100 µs step, a 60 µs op then a 30 µs gloo all-reduce on another thread."""
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "thread 2 (pt_gloo_runloop)"}}]
    for k in range(steps):
        t = start + k * (compute + gap)
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t, "dur": compute + gap},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 0.25, "dur": compute - 0.25},
            {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1, "ts": t + compute, "dur": 5.5},
            {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": t + compute + 2.0, "dur": 30.0},
        ]
    return events


def test_a_hand_made_gloo_trace_reduces_to_hand_derived_figures(tmp_path):
    trace = _write_trace(tmp_path / "t.json", _cpu_events(steps=2))
    status, err = run_traces(trace, "-o", tmp_path / "r.csv")
    assert status == 0, err
    _, rows = read_table(tmp_path / "r.csv")
    # Per step of 100 µs: compute 59.75 (the op, 0.25 µs after the span starts);
    # comm = c10d op [60, 65.5) ∪ gloo [62, 92) = 32 µs, all of it exposed;
    # idle = 100 − 59.75 − 32 = 8.25 µs (0.25 before the op, 8 after the all-reduce).
    assert [(r["step"], r["step_time"], r["compute"], r["comm"], r["comm_exposed"], r["idle"], r["other"], r["stall"])
            for r in rows] == [("0", "0.0001", "5.975e-05", "3.2e-05", "3.2e-05", "8.25e-06", "0.0", "8.25e-06"),
                               ("1", "0.0001", "5.975e-05", "3.2e-05", "3.2e-05", "8.25e-06", "0.0", "8.25e-06")]
    assert rows[0]["node"] == "h0"


def test_sub_microsecond_timestamps_are_kept(tmp_path):
    # Kineto writes nanoseconds as three decimals of a microsecond timestamp near 5e12.
    events = _cpu_events(steps=1, start=5238770792427.771, compute=0.5, gap=0.25)
    status, err = run_traces(_write_trace(tmp_path / "t.json", events), "-o", tmp_path / "r.csv")
    assert status == 0, err
    (r,) = read_table(tmp_path / "r.csv")[1]
    assert (r["step_time"], r["compute"]) == ("7.5e-07", "2.5e-07")  # 0.75 µs and 0.25 µs, not 1 and 0


def _expect_error(tmp_path, args, code: str, text: str) -> str:
    out = tmp_path / "out.csv"
    out.write_text("previous output\n")
    status, err = run_traces(*args, "-o", out, "-j", "1")
    assert status == 1, err
    assert f"error[{code}]: {text}" in err, err
    assert out.read_text() == "previous output\n"  # nothing lost: the old output stays
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".effspec-")]
    return err


def test_truncated_gzip(tmp_path):
    data = (HTA / "rank-0.json.gz").read_bytes()
    cut = tmp_path / "rank-0.json.gz"
    cut.write_bytes(data[:60000])
    err = _expect_error(tmp_path, [cut], "EFF003", "truncated gzip: the compressed data ends after 60,000 bytes")
    assert f"--> {cut}\n" in err


def test_invalid_json_names_the_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [\n  {"ph": "X"},\n  {"ph": "X",, "ts": 1}\n]}\n')
    err = _expect_error(tmp_path, [bad], "EFF003", "invalid JSON")
    assert f"--> {bad}:3:14" in err
    # The chunked reader finds the same place.
    err = _expect_error(tmp_path, [bad, "--stream-above", "8"], "EFF003", "invalid JSON")
    assert f"--> {bad}:3:14" in err


def test_no_profiler_step(tmp_path):
    events = [e for e in _cpu_events() if not e["name"].startswith("ProfilerStep")]
    _expect_error(tmp_path, [_write_trace(tmp_path / "t.json", events)], "EFF003",
                  "no `ProfilerStep#N` span: the trace has no steps to split")


def test_a_trace_without_distributed_info_is_rank_0_of_a_world_of_1(tmp_path):
    """A single-process profile (no `distributedInfo`, issue 32) reduces as rank 0 of 1, said in an info line;
    its rows are the rows of the same trace with `distributedInfo: {rank: 0, world_size: 1}`."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _cpu_events()}))
    status, err = run_traces(path, "-o", tmp_path / "r.csv")
    assert status == 0, err
    assert "info[EFF003]" in err and "read as rank 0 of a world of 1" in err
    _, rows = read_table(tmp_path / "r.csv")
    assert {r["rank"] for r in rows} == {"0"} and len(rows) == 3
    explicit = _write_trace(tmp_path / "e.json", _cpu_events(), rank=0, world=1, host=None)
    assert run_traces(explicit, "-o", tmp_path / "e.csv")[0] == 0
    assert read_table(tmp_path / "e.csv")[1] == rows


@pytest.mark.parametrize("info", [{"world_size": 4}, {"pg_count": 1}, [0]])
def test_a_distributed_info_without_a_rank(tmp_path, info):
    # A world size without a rank (or a member that is not an object) says the trace is distributed but not
    # which rank: refused, as guessing would mislabel a rank.  Neither rank nor world size: a single process.
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"distributedInfo": info, "traceEvents": _cpu_events()}))
    if isinstance(info, dict) and "world_size" not in info:
        assert run_traces(path, "-o", tmp_path / "r.csv")[0] == 0  # no rank, no world: a single process
    else:
        _expect_error(tmp_path, [path], "EFF003", "no `distributedInfo.rank`")


def test_two_files_claiming_one_rank(tmp_path):
    a = _write_trace(tmp_path / "a.json", _cpu_events(), rank=0, world=2)
    b = _write_trace(tmp_path / "b.json", _cpu_events(), rank=0, world=2)
    c = _write_trace(tmp_path / "c.json", _cpu_events(), rank=1, world=2)
    _expect_error(tmp_path, [a, b, c], "EFF003", f"rank 0 is claimed by two traces: `{a}` and `{b}`")


def test_ranks_missing_from_the_world(tmp_path):
    err = _expect_error(tmp_path, [HTA], "EFF003", "126 of ranks 0..127 have no trace: 2..127")
    assert "--partial" in err


def test_every_bad_file_is_reported_in_one_run(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    missing = tmp_path / "nope.json"
    err = _expect_error(tmp_path, [bad, missing, HTA / "rank-0.json.gz", "--partial"], "EFF020", "no such file or folder")
    assert "error[EFF003]: not a Kineto trace" in err and "2 errors" in err


def test_clock_skew_is_reported_and_the_table_is_aligned_on_step_boundaries(tmp_path):
    plain, skewed = tmp_path / "plain", tmp_path / "skewed"
    plain.mkdir()
    skewed.mkdir()
    for rank in range(4):
        host = f"host{rank // 2}"
        _write_trace(plain / f"r{rank}.json", _cpu_events(), rank=rank, world=4, host=host, base_ns=10**18)
        # host1's clock runs 30 s ahead.
        _write_trace(skewed / f"r{rank}.json", _cpu_events(), rank=rank, world=4, host=host,
                     base_ns=10**18 + (30 * 10**9 if rank >= 2 else 0))
    assert run_traces(plain, "-o", tmp_path / "plain.csv")[0] == 0
    status, err = run_traces(skewed, "-o", tmp_path / "skewed.csv")
    assert status == 0, err
    assert ("warning[EFF011]: clock skew: the step boundaries of 2 nodes sit -15.000 s (node `host0`) from the other "
            "nodes', more than half a step (0.000 s): their clocks disagree") in err
    assert "aligned on step boundaries" in err
    plain_comments, plain_rows = read_table(tmp_path / "plain.csv")
    skew_comments, skew_rows = read_table(tmp_path / "skewed.csv")
    assert skew_rows == plain_rows
    assert skew_comments[-1].startswith("# effspec-traces 2: skew the step boundaries of 2 nodes sit")
    assert skew_comments[-1].endswith("; aligned=step-boundaries")


def test_a_trace_over_the_size_limit_is_refused(tmp_path):
    _expect_error(tmp_path, [HTA / "rank-0.json.gz", "--partial", "--max-trace-bytes", "1000000"], "EFF030",
                  "decompresses to more than 1,000,000 bytes")


def test_a_large_trace_is_streamed_in_bounded_memory(tmp_path):
    """A generated 50 MB trace, parsed in chunks (the limit lowered from 256 MiB
    to 1 MiB, standing in for a 2 GB trace): the peak is the per-event arrays
    and the sweep's temporaries (about 175 bytes an event: 0.40 of this JSON's
    size), never the parsed document (Python dicts of these events take about
    three times the JSON); the figures are exact."""
    import tracemalloc

    from effspec.ranks.traces.reduce import reduce_trace

    path = tmp_path / "big.json"
    steps = 2
    ops_per_step = 60_000  # 1 µs ops back to back: 120,000 events, ~40 MB of indented JSON
    with path.open("w") as fh:
        fh.write('{"distributedInfo": {"rank": 0, "world_size": 1}, "host_name": "big",\n "traceEvents": [\n')
        for k in range(steps):
            t0 = 1000.0 + k * 100_000.0
            fh.write(json.dumps({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
                                 "ts": t0, "dur": 100_000.0}) + ",\n")
            for i in range(ops_per_step):
                fh.write(json.dumps({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                                     "ts": t0 + i, "dur": 1.0, "args": {"External id": i, "Sequence number": i,
                                                                        "Fwd thread id": 0, "Record function id": 0,
                                                                        "Ev Idx": i, "padding": "x" * 180}},
                                    indent=1) + ",\n")
        fh.write('{"ph": "i", "name": "end", "ts": 0}\n]}\n')
    size = path.stat().st_size
    assert size > 40e6
    tracemalloc.start()
    summary = reduce_trace(str(path), "big.json", whole_limit=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert summary.parser == "chunked" and summary.events == steps * (ops_per_step + 1) + 1
    assert peak < 0.6 * size, (peak, size)
    # 60,000 µs of ops in each 100,000 µs step, the rest idle.
    assert [(r.step, r.step_time, r.compute, r.idle) for r in summary.rows] == [
        (0, 100_000.0, 60_000.0, 40_000.0), (1, 100_000.0, 60_000.0, 40_000.0)]


def test_host_names_are_encoded_for_the_csv(tmp_path):
    trace = _write_trace(tmp_path / "t.json", _cpu_events(), host="evil,host\n\u202e")
    assert run_traces(trace, "-o", tmp_path / "r.csv")[0] == 0
    (r, *_) = read_table(tmp_path / "r.csv")[1]
    assert r["node"] == "evil%2Chost%0A%E2%80%AE"


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "rank-0.json"
    os.mkfifo(fifo)
    _expect_error(tmp_path, [fifo], "EFF020", "is not a regular file")


def test_bad_arguments_are_a_tool_error(tmp_path, capsys):
    assert main(["traces", str(tmp_path / "x.json"), "-o", str(tmp_path / "o.csv"), "-j", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


# ---------------------------------------------------------------------------- progress and Dask schedulers


def test_progress_is_shown_only_on_a_terminal():
    import io

    from effspec.ranks.traces.run import Progress

    quiet = io.StringIO()  # not a terminal: nothing
    p = Progress(2, 2_000_000, stream=quiet)
    p.update(1_000_000)
    p.update(1_000_000)
    p.close()
    assert quiet.getvalue() == ""
    shown = Progress(2, 2_000_000, stream=io.StringIO(), enabled=True)
    assert shown.line(0.5) == "traces 0/2 files  0.0 MB  0.0 MB/s  ETA 0:00:00 "
    shown.files, shown.bytes = 1, 1_000_000
    assert shown.line(0.5) == "traces 1/2 files  1.0 MB  2.0 MB/s  ETA 0:00:00 "
    shown.bytes = 10_000
    assert shown.line(1.0).endswith("0.0 MB/s  ETA 0:03:19 ")  # 1,990,000 bytes left at 10 kB/s


def test_progress_reaches_a_real_terminal(tmp_path):
    import pty

    main_fd, child_fd = pty.openpty()
    out = tmp_path / "r.csv"
    proc = subprocess.run([sys.executable, "-m", "effspec", "traces", str(HTA), "--partial", "-o", str(out), "-j", "1"],
                          stdout=subprocess.PIPE, stderr=child_fd, timeout=120)
    os.close(child_fd)
    seen = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(main_fd)
    assert proc.returncode == 0
    assert b"\rtraces 2/2 files  0.2 MB  " in seen and b" MB/s  ETA 0:00:00" in seen


def test_dask_attaches_to_a_running_scheduler(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'effspec[scale]')")
    from distributed import LocalCluster

    folder = CPU / "imbalance" / "traces"
    serial = tmp_path / "serial.csv"
    assert run_traces(folder, "-o", serial, "--executor", "serial")[0] == 0
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        by_flag, by_file, by_env = tmp_path / "flag.csv", tmp_path / "file.csv", tmp_path / "env.csv"
        status, err = run_traces(folder, "-o", by_flag, "--scheduler", cluster.scheduler_address)
        assert status == 0 and "(dask)" in err, err
        scheduler_file = tmp_path / "scheduler.json"
        scheduler_file.write_text(json.dumps({"address": cluster.scheduler_address}))
        assert run_traces(folder, "-o", by_file, "--scheduler-file", scheduler_file)[0] == 0
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        status, err = run_traces(folder, "-o", by_env, "--executor", "dask")
        assert status == 0 and "(dask)" in err, err
    assert by_flag.read_bytes() == by_file.read_bytes() == by_env.read_bytes() == serial.read_bytes()


# ---------------------------------------------------------------------------- hostile files and names


def _folder_with(tmp_path: Path, name: str = "traces") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    _write_trace(folder / "rank-0.json", _cpu_events(), rank=0, world=2)
    return folder


def test_a_symlink_in_a_folder_is_not_followed_outside(tmp_path):
    folder = _folder_with(tmp_path)
    outside = _write_trace(tmp_path / "elsewhere.json", _cpu_events(), rank=1, world=2)
    os.symlink(outside, folder / "rank-1.json")
    err = _expect_error(tmp_path, [folder], "EFF020",
                        f"is a symlink to {outside}, outside its folder {folder.resolve()}; not read")
    assert f"--> {folder}/rank-1.json\n" in err
    # Named on the command line, the same file is read: the user chose it.
    status, err = run_traces(folder / "rank-0.json", outside, "-o", tmp_path / "named.csv")
    assert status == 0, err


def test_a_symlink_that_stays_inside_the_folder_is_read(tmp_path):
    folder = _folder_with(tmp_path)
    (folder / "real").mkdir()
    _write_trace(folder / "real" / "r1.json", _cpu_events(), rank=1, world=2)
    os.symlink("real/r1.json", folder / "rank-1.json")
    status, err = run_traces(folder, "-o", tmp_path / "r.csv")
    assert status == 0, err
    assert [r["rank"] for r in read_table(tmp_path / "r.csv")[1]] == ["0", "0", "0", "1", "1", "1"]


def test_a_hard_link_in_a_folder_needs_allow_hardlinks(tmp_path):
    folder = _folder_with(tmp_path)
    other = _write_trace(tmp_path / "other.json", _cpu_events(), rank=1, world=2)
    os.link(other, folder / "rank-1.json")
    _expect_error(tmp_path, [folder], "EFF020", "is a hard link (one file with 2 names")
    status, err = run_traces(folder, "-o", tmp_path / "r.csv", "--allow-hardlinks")
    assert status == 0, err


def test_a_pseudo_filesystem_file_is_not_read(tmp_path):
    _expect_error(tmp_path, ["/proc/self/status"], "EFF020", "lies in a system pseudo-filesystem; not read")


def test_an_undecodable_file_name_is_shown_escaped_and_recorded_as_its_bytes(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    raw = os.fsencode(str(folder)) + b"/rank-\xff\x1b[2J.json"
    with open(raw, "wb") as fh:
        fh.write(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": _cpu_events()}).encode())
    out = tmp_path / "r.csv"
    status, err = run_traces(folder, "-o", out)
    assert status == 0, err
    comments, _ = read_table(out)
    assert comments[1].startswith(f"# effspec-traces 2: file={folder}/rank-%FF%1B%5B2J.json bytes=")
    # In a diagnostic, the name is escaped: no byte of it reaches the terminal raw.
    with open(raw, "wb") as fh:
        fh.write(b"{")
    status, err = run_traces(folder, "-o", out)
    assert status == 1 and "\x1b" not in err
    assert f"--> {folder}/rank-\\udcff\\x1b[2J.json" in err


@pytest.mark.parametrize("content, message, place", [
    (b'{"traceEvents": [\n{"ph": "X", "name": "caf\xe9"}]}', "invalid JSON: not UTF-8 (invalid continuation byte)", ":2:25"),
    (b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "invalid JSON: nested too deeply", ""),
    (b'{"traceEvents": [{"ts": NaN}]}', "invalid JSON: `NaN` is not JSON", ""),
    (b'\xef\xbb\xbf\x00\x00', "invalid JSON", ""),
])
@pytest.mark.parametrize("chunked", [False, True])
def test_bad_bytes_and_deep_nesting_are_coded_errors(tmp_path, content, message, place, chunked):
    """The whole-file and the chunked parser say the same; where the bytes are not UTF-8, both say where."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    args = [bad, "--stream-above", "16"] if chunked else [bad]
    err = _expect_error(tmp_path, args, "EFF003", message)
    if place:  # line 2, column 25: after the 24 characters `{"ph": "X", "name": "caf`
        assert f"--> {bad}{place}\n" in err


def test_a_gzip_bomb_is_stopped_early(tmp_path, monkeypatch):
    from effspec.ranks.traces import parse

    monkeypatch.setattr(parse, "BOMB_FLOOR", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    # 8 MiB of blanks inside the events list compress about 1000:1.
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (8 << 20) + b"]}", mtime=0))
    err = _expect_error(tmp_path, [bomb], "EFF030", "a gzip bomb:")
    assert "more than 200:1; a profiler trace compresses about 14:1" in err


def test_one_giant_event_is_refused_in_chunked_reading(tmp_path, monkeypatch):
    from effspec.ranks.traces import parse

    monkeypatch.setattr(parse, "MAX_EVENT_CHARS", 1 << 16)
    big = tmp_path / "big.json"
    big.write_text('{"traceEvents": [{"name": "' + "x" * (2 << 20) + '"}]}')  # past one 1 MiB chunk
    _expect_error(tmp_path, [big, "--stream-above", "1024"], "EFF030", "one trace event is larger than 65,536 characters")


@pytest.mark.parametrize("info, message", [
    ({"rank": 0, "world_size": 10**30}, "`distributedInfo.world_size` is huge: not a world size"),
    ({"rank": 5, "world_size": 4}, "`distributedInfo.rank` 5 is outside its world of 4 ranks"),
    ({"rank": -1, "world_size": 4}, "no `distributedInfo.rank`"),
    ({"rank": "0", "world_size": 4}, "no `distributedInfo.rank`"),
])
def test_hostile_distributed_info(tmp_path, info, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"distributedInfo": info, "traceEvents": _cpu_events()}))
    _expect_error(tmp_path, [path], "EFF003", message)


def test_hostile_event_fields_are_skipped_and_counted(tmp_path):
    events = _cpu_events(steps=2)
    events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::huge", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1e300},
        {"ph": "X", "cat": "cpu_op", "name": "aten::neg", "pid": 1, "tid": 1, "ts": 1000.0, "dur": -5.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::odd", "pid": [1], "tid": {"a": 1}, "ts": 1001.0, "dur": 2.0},
        {"ph": "X", "cat": "cpu_op", "name": ["aten::list"], "pid": 1, "tid": 1, "ts": 1001.0, "dur": 2.0},
        "not an event", 17, None,
    ]
    path = _write_trace(tmp_path / "t.json", events, base_ns=10**400)
    status, err = run_traces(path, "-o", tmp_path / "r.csv")
    assert status == 0, err
    comments, rows = read_table(tmp_path / "r.csv")
    # 9 events of the hand-made trace and 7 more; the huge, negative and unnamed ops are
    # skipped (3); the odd thread is a thread of its own, not the main one.
    assert comments[1].endswith("events=16 skipped=3")
    assert [r["compute"] for r in rows] == ["5.975e-05", "5.975e-05"]  # as in the hand-made trace above


# ---------------------------------------------------------------------------- the README's workflow


def test_the_readme_workflow_runs_as_written(tmp_path):
    """README "From profiler traces to the per-rank diagnosis": its commands and
    its spec, run as written (from the repository root, the spec beside the CSV)."""
    readme = (HERE.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From profiler traces to the per-rank diagnosis", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("\n", 1)[1].rsplit("```", 1)[0] for b in section.split("```")[1::2]]
    sh = [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("effspec ")]
    spec = next(b for b in blocks if b.lstrip().startswith("eff 1"))
    assert sh == ["effspec traces tests/fixtures/traces/cpu/straggler/traces -o ranks.csv",
                  "effspec check run.eff --format json", "effspec report run.eff -o run.html"]
    effspec = [sys.executable, "-m", "effspec"]
    traces = sh[0].split()[1:]
    traces[traces.index("ranks.csv")] = str(tmp_path / "ranks.csv")
    done = subprocess.run([*effspec, *traces, "-j", "1"], cwd=HERE.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (tmp_path / "run.eff").write_text(textwrap.dedent(spec), encoding="utf-8")
    done = subprocess.run([*effspec, *sh[1].split()[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    diagnosis = json.loads(done.stdout)[0]["runs"]["traced"]["diagnosis"]
    assert (diagnosis["family"], diagnosis["ranks"]) == ("straggler", [2])
    done = subprocess.run([*effspec, *sh[2].split()[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert "<caption>Provenance</caption>" in html and "tests/fixtures/traces/cpu/straggler/traces/rank-2.json.gz" in html


def test_a_2_gib_trace_of_garbage_fails_at_its_first_bad_byte(tmp_path):
    """A 2 GiB file (sparse: no disk used) whose events are NUL bytes: the
    chunked reader stops at the first one, with its place, without reading
    the 2 GiB or holding more than the first 256 MiB (the whole-parse limit)."""
    big = tmp_path / "rank-0.json"
    head = b'{"distributedInfo": {"rank": 0, "world_size": 1},\n "traceEvents": [\n  '
    with big.open("wb") as fh:
        fh.write(head)
        fh.truncate(2 << 30)
    assert big.stat().st_size == 2 << 30
    err = _expect_error(tmp_path, [big], "EFF003", "invalid JSON: Expecting value")
    assert f"--> {big}:3:3\n" in err  # line 3, after its two blanks


def test_without_the_scale_extra_a_process_pool_is_used_and_dask_is_asked_for(tmp_path, monkeypatch, capsys):
    from effspec.ranks.traces import run

    monkeypatch.setattr(run, "dask_available", lambda: False)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    status, err = run_traces(CPU / "uniform" / "traces", "-o", tmp_path / "r.csv", "-j", "2")
    assert status == 0 and "4 traces (processes), 32 rows" in err, err
    assert main(["traces", str(CPU / "uniform" / "traces"), "-o", str(tmp_path / "d.csv"),
                 "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "--executor dask needs dask.distributed: pip install 'effspec[scale]'" in capsys.readouterr().err
    assert not (tmp_path / "d.csv").exists()


def test_a_hand_made_gpu_trace_reduces_to_hand_derived_figures(tmp_path):
    """Two steps, at a real Kineto magnitude (µs since boot, with a half µs).

    Launches (cuda_runtime, by correlation): 1, 2, 3 in step 1 = [0, 100); 4, 5 in step 2 = [100, 200).
    Device: 1 gemm [50, 80); 2 ncclAllReduce [70, 120); 3 memcpy [125, 130); 4 gemm [140, 150);
    5 ncclKernel_AllGather [145, 170).

    Step 1's window: its first device event's start to its last one's end, [50, 130) = 80 µs:
    compute [50, 80) = 30; comm [70, 120) = 50, exposed [80, 120) = 40; other: memcpy under no
    kernel [125, 130) = 5; idle [120, 125) = 5.  30 + 40 + 5 + 5 = 80.
    Step 2's window: from step 1's end to its last device end, [130, 170) = 40 µs: compute
    [140, 150) = 10; comm [145, 170) = 25, exposed [150, 170) = 20; other 0; idle [130, 140) = 10.
    """
    t0 = 5238770792427.5
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": t0, "dur": 100.0},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": t0 + 100, "dur": 100.0},
    ]
    launches = {1: 10, 2: 20, 3: 30, 4: 110, 5: 120}
    events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + t, "dur": 2.0,
                "args": {"correlation": c}} for c, t in launches.items()]
    device = [(1, "kernel", "ampere_sgemm_128x64_tn", 50, 80), (2, "kernel", "ncclDevKernel_AllReduce_Sum_f32", 70, 120),
              (3, "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 125, 130), (4, "kernel", "void gemm<float>", 140, 150),
              (5, "kernel", "ncclKernel_AllGather_RING_LL", 145, 170)]
    events += [{"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": t0 + a, "dur": float(b - a),
                "args": {"correlation": c}} for c, cat, name, a, b in device]
    out = tmp_path / "r.csv"
    status, err = run_traces(_write_trace(tmp_path / "gpu.json", events, host="gpu-host-1"), "-o", out)
    assert status == 0, err
    comments, rows = read_table(out)
    assert "kind=gpu" in comments[0]
    assert [tuple(r.values())[:10] for r in rows] == [
        ("0", "gpu-host-1", "1", "8e-05", "3e-05", "5e-05", "4e-05", "5e-06", "5e-06", "1e-05"),
        ("0", "gpu-host-1", "2", "4e-05", "1e-05", "2.5e-05", "2e-05", "1e-05", "0.0", "1e-05"),
    ]


def test_the_msgspec_fast_path_writes_the_general_parsers_bytes(tmp_path, monkeypatch):
    pytest.importorskip("msgspec", reason="msgspec is not installed (pip install 'effspec[scale]')")
    from effspec.ranks.traces import parse
    from effspec.ranks.traces.reduce import reduce_trace

    assert reduce_trace(str(HTA / "rank-0.json.gz")).parser == "msgspec"
    hostile = _write_trace(tmp_path / "h.json", _cpu_events(steps=2) + [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 1.0, "args": ["not", "an", "object"]}])
    assert reduce_trace(str(hostile)).parser == "chunked"  # the schema does not fit: the general parser
    runs = {"gpu": [HTA, "--partial"], "cpu": [CPU / "sleeper" / "traces"]}
    for kind, args in runs.items():
        assert run_traces(*args, "-j", "1", "-o", tmp_path / f"fast-{kind}.csv")[0] == 0
    monkeypatch.setattr(parse, "_DECODERS", [None])  # as without msgspec
    assert reduce_trace(str(HTA / "rank-0.json.gz")).parser == "chunked"
    for kind, args in runs.items():
        assert run_traces(*args, "-j", "1", "-o", tmp_path / f"general-{kind}.csv")[0] == 0
        assert (tmp_path / f"fast-{kind}.csv").read_bytes() == (tmp_path / f"general-{kind}.csv").read_bytes()


def test_the_output_is_never_one_of_the_traces(tmp_path, capsys):
    folder = _folder_with(tmp_path)
    trace = folder / "rank-0.json"
    before = trace.read_bytes()
    os.link(trace, tmp_path / "alias.csv")
    for out in (trace, tmp_path / "alias.csv"):
        assert main(["traces", str(folder), "-o", str(out), "--partial"]) == 2
        assert f"is the trace {trace}; not overwritten with the table" in capsys.readouterr().err
    assert trace.read_bytes() == before


# Real kernel (or op) names of every family of spec/traces.md's collective table, as a trace or the source that
# launches them spells them; spec/traces.md cites each.  TL = AMD-AGI/TraceLens @171dd74721ca1ec45709e5805b68ae1f65e27811,
# HTA = facebookresearch/HolisticTraceAnalysis @f4d0062c382f42bd8a74838bcdad1916c7d5d2da, NVSHMEM = NVIDIA/nvshmem
# @fa00d066d9ba82d3cd9036a93f922207bd5d3220 (src/include/internal/non_abi/nvshmemi_h_to_d_coll_defs.cuh; the quiet one
# src/host/stream/comm/quiet_on_stream.cu), PT = pytorch/pytorch @fd6c4b6ac13170d48671ab24c918282404a19f7a
# (torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu).
REAL_COLLECTIVE_NAMES = [
    # TL tests/traces/mi300/resnet_act_checkpoint.json.gz (RCCL) and tests/traces/b200/eager_trace.json.gz (NCCL)
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "NCCL / RCCL"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL / RCCL"),
    # HTA tests/data/trace_filter/sampled_rank-0.json.gz (= tests/fixtures/traces/hta/rank-0.json.gz)
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "NCCL / RCCL"),
    # NVSHMEM: on-stream collectives, as Kineto demangles a template kernel, and the quiet entry point
    ("void rdxn_on_stream_kernel<float, (rdxn_ops)0>(int, float*, float const*, unsigned long, int)", "NVSHMEM"),
    ("void barrier_on_stream_kernel_threadgroup<(threadgroup_t)2>(int, int)", "NVSHMEM"),
    ("void alltoall_on_stream_kernel<float>(int, float*, float const*, unsigned long, int)", "NVSHMEM"),
    ("nvshmemi_proxy_quiet_entrypoint()", "NVSHMEM"),
    # TL b200 eager_trace.json.gz: 73 launches; PT: the one-shot reduce beside it
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
     "unsigned int**, unsigned long, unsigned long)", "symmetric memory, multimem"),
    ("void (anonymous namespace)::multimem_one_shot_reduce_kernel<float, 16>", "symmetric memory, multimem"),
    # PT: the kernels of one_shot_all_reduce / two_shot_all_reduce_ (in the same anonymous namespace)
    ("void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>", "symmetric memory, one/two-shot"),
    ("void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<float, 16, 4>", "symmetric memory, one/two-shot"),
    # vllm-project/vllm csrc/custom_all_reduce.cuh @c9eabec7d862b69d943f516580c883c20bea5a0e; SGLang's
    # `cross_device_reduce_2stage<bf16, 4>` (SemiAnalysisAI/InferenceX issue 1005, from a trace)
    ("void vllm::cross_device_reduce_1stage<__half, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal volatile*, "
     "__half*, int, int)", "vLLM / SGLang custom all-reduce"),
    ("cross_device_reduce_2stage<bf16, 4>", "vLLM / SGLang custom all-reduce"),
    # intel/torch-xpu-ops issue 5384: an XCCL all-reduce on a Data Center GPU Max 1550, `cat: kernel`
    ("oneccl_reduce_base<float, 2, 16, 1, 1, 2>", "oneCCL"),
    # chenzomi12/mstt (Ascend msprof-analyze) @587b34763a2e1f53482164f27d936aa6e0d6ab13:
    # profiler/msprof_analyze/cluster_analyse/README.md and test/st/advisor/test_advisor_cmd_single_ascend_pt_compare.py
    ("hcom_allReduce__606_0_1", "HCCL"),
    ("hcom_allGather__511_2_1", "HCCL"),
    # tests/fixtures/traces/cpu (real torch gloo runs, make_cpu_traces.py); HTA tests/data/mtia_trace_single_rank
    ("gloo:all_reduce", "Gloo"),
    ("gloo:barrier", "Gloo"),
]


@pytest.mark.parametrize("name, family", REAL_COLLECTIVE_NAMES)
def test_every_collective_family_is_communication_on_real_names(name, family):
    import re

    from effspec.ranks.traces.reduce import COLLECTIVE_FAMILIES, COMM, kernel_class

    assert kernel_class(name) == COMM
    pattern = dict(COLLECTIVE_FAMILIES)[family]
    assert re.search(pattern, name, re.IGNORECASE), (name, family)


def test_every_family_has_a_real_name():
    from effspec.ranks.traces.reduce import COLLECTIVE_FAMILIES

    assert {f for f, _ in COLLECTIVE_FAMILIES} == {f for _, f in REAL_COLLECTIVE_NAMES}


# Near misses, one or more per family: each shares the family's letters but is not its pattern.
@pytest.mark.parametrize("name", [
    "ampere_sgemm_128x64_tn", "void at::native::reduce_kernel<512, 1>", "flash_fwd_kernel", "Memcpy DtoH",
    "void gemm<float>",
    "void ncl_softmax_kernel<float>",  # NCCL / RCCL: `ncl`, not `nccl`
    "void nvshm_pack_kernel<float>", "copy_on_stream_kernel", "void xrdxn_on_stream_kernel<float>",  # NVSHMEM
    "multimemory_copy_kernel",  # multimem: no `_` after it
    "void two_shot_gemm_kernel<float>",  # one/two-shot: not an all-reduce
    "void cross_entropy_reduce_kernel<float>",  # custom all-reduce
    "accl_like_name", "someccl_kernel",  # oneCCL: `ccl_` after a letter, not `oneccl_`
    "phcom_pack_kernel", "hcomb_kernel",  # HCCL: `hcom_` after a letter; `hcom` without `_`
    "bigloop_kernel",  # Gloo: `gloo` after a letter
])
def test_near_misses_are_compute(name):
    from effspec.ranks.traces.reduce import COMPUTE, kernel_class

    assert kernel_class(name) == COMPUTE


def test_a_multimem_all_reduce_is_counted_as_communication(tmp_path):
    """One step [0, 100) with a gemm [10, 40) and a multimem all-reduce [30, 80) (issue 32: 73 such
    launches on a B200 were compute).  Window [10, 80) = 70 µs: compute [10, 40) = 30; comm [30, 80) = 50,
    exposed [40, 80) = 40; other 0; idle 0.  30 + 40 = 70."""
    t0 = 1000.0
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": t0, "dur": 100.0}]
    events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + t,
                "dur": 1.0, "args": {"correlation": c}} for c, t in {1: 2, 2: 4}.items()]
    events += [{"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t0 + a, "dur": float(b - a),
                "args": {"correlation": c}} for c, name, a, b in [(1, "sm90_xmma_gemm_bf16", 10, 40),
                                                                   (2, "multimem_all_reduce_kernel", 30, 80)]]
    out = tmp_path / "r.csv"
    status, err = run_traces(_write_trace(tmp_path / "b200.json", events, host="b"), "-o", out)
    assert status == 0, err
    # In seconds; stall = idle + other = 0.
    assert [tuple(r.values())[:10] for r in read_table(out)[1]] == [
        ("0", "b", "1", "7e-05", "3e-05", "5e-05", "4e-05", "0.0", "0.0", "0.0")]


def _record_comms_events(t0: float = 1000.0) -> list:
    """Relative to t0: step [0, 500) and record_param_comms spans on thread (1, 1): A [100, 150), and B [300, 400)
    holding C [310, 320) (nested: the search must not stop at C).  Launches (thread, time, correlation) and what
    they launch (name, [start, end)):
      1: (1, 1) at 110, in A             -> `mystery_allreduce` [200, 230)   communication (the span)
      2: (1, 1) at 120, in A             -> a memcpy [230, 240)              memory: only kernels become comm
      3: (1, 1) at 160, after A          -> `mystery_allreduce` [240, 260)   compute (its name alone)
      4: (1, 2) at 130, in A's time but another thread -> `vectorized_add` [262, 270)  compute
      5: (1, 1) at 150, A's end (spans are [start, end)) -> `vectorized_add` [270, 280) compute
      6: (1, 1) at 350, in B after C's end -> `mystery_allreduce` [400, 410)  communication (the span)"""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": t0, "dur": 500.0}]
    ev += [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": t0 + a,
            "dur": float(b - a), "args": {"Collective name": "allreduce"}} for a, b in ((100, 150), (300, 400), (310, 320))]
    launches = [(1, 1, 110, "kernel", "mystery_allreduce", 200, 230), (2, 1, 120, "gpu_memcpy", "Memcpy DtoD", 230, 240),
                (3, 1, 160, "kernel", "mystery_allreduce", 240, 260), (4, 2, 130, "kernel", "vectorized_add", 262, 270),
                (5, 1, 150, "kernel", "vectorized_add", 270, 280), (6, 1, 350, "kernel", "mystery_allreduce", 400, 410)]
    for corr, tid, at, cat, name, a, b in launches:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": t0 + at,
                   "dur": 1.0, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": t0 + a, "dur": float(b - a),
                   "args": {"correlation": corr}})
    return ev


@pytest.mark.parametrize("parser", ["msgspec", "chunked"])
def test_kernels_launched_inside_record_param_comms_are_communication(tmp_path, parser):
    """_record_comms_events: window [200, 410) = 210 µs (first device event to last).  comm = launches 1 and 6:
    [200, 230) + [400, 410) = 40, all exposed; compute = 3, 4, 5: 20 + 8 + 10 = 38; other = the memcpy 10;
    idle = 210 − 40 − 38 − 10 = 122 (gaps [260, 262) and [280, 400)).  `mystery_allreduce` is in no family:
    by name alone comm would be 0 and compute 78."""
    from effspec.ranks.traces.reduce import reduce_trace

    path = _write_trace(tmp_path / "r.json", _record_comms_events())
    s = reduce_trace(str(path), whole_limit=1 if parser == "chunked" else 1 << 30)
    assert s.parser == parser
    (r,) = s.rows
    assert (r.step_time, r.comm, r.comm_exposed, r.compute, r.other, r.idle) == (210, 40, 40, 38, 10, 122)
    assert r.memory == 10 and r.elementwise_other == 38  # types: comm is communication, the memcpy memory
    assert "2 kernels (40.000 µs) launched inside the profiler's `record_param_comms` spans are communication" in \
        " ".join(s.notes)
    # The same trace with the spans renamed: every kernel by its name, none a collective.
    renamed = [dict(e, name="aten::add") if e["name"] == "record_param_comms" else e for e in _record_comms_events()]
    (r,) = reduce_trace(str(_write_trace(tmp_path / "n.json", renamed))).rows
    assert (r.comm, r.compute) == (0, 78)
