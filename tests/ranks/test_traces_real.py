"""Real public traces (tests/data/traces/real, SOURCE there) through `effspec traces` (issue 32).

Each trace's rows are checked against an independent computation written here: the trace read with every
number as its exact decimal (``Decimal``), the device events put in steps by their launches, and plain
interval unions over sorted lists.  The figures agree to 1 µs (they agree to float rounding).  Where HTA
0.5.0's definitions would give another figure, the test names the definition and the size of the effect.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest
from test_traces import read_table, run_traces

REAL = Path(__file__).resolve().parents[1] / "data" / "traces" / "real"
US = Decimal(1)


def _load(name: str) -> dict:
    return json.loads(gzip.decompress((REAL / name).read_bytes()), parse_float=Decimal)


def _union(intervals) -> list[tuple[Decimal, Decimal]]:
    out: list[list[Decimal]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(u) -> Decimal:
    return sum((b - a for a, b in u), Decimal(0))


def _clip(u, lo, hi):
    return [(max(a, lo), min(b, hi)) for a, b in u if min(b, hi) > max(a, lo)]


def _minus(u, v):
    """u − v, both unions."""
    out = []
    for a, b in u:
        cur = a
        for c, d in v:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append((cur, c))
            cur = max(cur, d)
        if cur < b:
            out.append((cur, b))
    return out


COLLECTIVE_WORDS = ("nccl", "rccl", "multimem_", "cross_device_reduce", "nvshmem")


def _device_class(e: dict, in_comms: bool = False) -> str | None:
    cat, name = e.get("cat"), e.get("name", "")
    if cat in ("gpu_memcpy", "gpu_memset"):
        return "other"
    if cat == "mtia_ccp_events":
        return "other" if name.startswith("dma_") else None if name.startswith("event_") else \
            "comm" if in_comms else "compute"
    if cat == "kernel":
        return "comm" if in_comms or any(w in name.lower() for w in COLLECTIVE_WORDS) else "compute"
    return None


def launched_in_comms(events: list) -> set:
    """The correlation ids of launches inside a `record_param_comms` span of their own thread (start <= launch
    < end), by a plain scan of every span."""
    spans = [(e["pid"], e["tid"], e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "record_param_comms"]
    return {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and "correlation" in e.get("args", {})
            and any(p == e["pid"] and t == e["tid"] and a <= e["ts"] < b for p, t, a, b in spans)}


def reference(doc: dict) -> dict[int, dict[str, Decimal]]:
    """Per step, the definitions of spec/traces.md computed from scratch (µs, exact)."""
    events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    comms = launched_in_comms(events)
    device = [(e, c) for e in events
              if (c := _device_class(e, e.get("args", {}).get("correlation", -1) in comms)) is not None]
    steps = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in events
                   if e.get("cat") in ("user_annotation", "cpu_op") and str(e.get("name")).startswith("ProfilerStep#"))
    if not steps:  # one window over every device event
        windows = {0: (min(e["ts"] for e, _ in device), max(e["ts"] + e["dur"] for e, _ in device))}
    else:
        launch = {e["args"]["correlation"]: e["ts"] for e in events
                  if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        first: dict[int, Decimal] = {}
        last: dict[int, Decimal] = {}
        for e, _ in device:
            t = launch.get(e.get("args", {}).get("correlation"))
            for lo, hi, n in steps:
                if t is not None and lo <= t < hi:
                    first[n] = min(first.get(n, e["ts"]), e["ts"])
                    last[n] = max(last.get(n, e["ts"] + e["dur"]), e["ts"] + e["dur"])
        windows, end = {}, None
        for lo, hi, n in steps:
            stop = last.get(n, hi)
            start = end if end is not None else first.get(n, lo)
            end = max(stop, end) if end is not None else stop
            windows[n] = (start, end)
    by = {k: _union((e["ts"], e["ts"] + e["dur"]) for e, c in device if c == k) for k in ("compute", "comm", "other")}
    out = {}
    for n, (lo, hi) in windows.items():
        compute, comm, other = (_clip(by[k], lo, hi) for k in ("compute", "comm", "other"))
        busy = _union(compute + comm + other)
        out[n] = {"step_time": hi - lo, "compute": _length(compute), "comm": _length(comm),
                  "comm_exposed": _length(_minus(comm, compute)),
                  "other": _length(_minus(other, _union(compute + comm))), "idle": hi - lo - _length(busy)}
    return out


def _reduce(name: str, *args: str):
    from effspec.ranks.traces.reduce import reduce_trace

    return reduce_trace(str(REAL / name), *args)


# (fixture, its device, steps, whether it is one window)
FIXTURES = [
    ("h100_bert_small.json.gz", "NVIDIA H100 80GB HBM3", [6]),
    ("mi300x_bert_small.json.gz", "AMD Instinct MI300X VF", [6]),
    ("a100_event_sync.json.gz", "NVIDIA A100-PG509-200", [100]),
    ("b200_eager.json.gz", "NVIDIA B200", [0]),
    ("mi300x_sglang_decode.json.gz", "AMD Instinct MI300X", [0]),
    ("mtia_inference_rank_0.json.gz", "ARTEMIS", [0]),
    ("mi250_minitoy_rank_0.json.gz", "AMD Radeon Graphics", [1, 2]),
    ("v100_ns_resolution_rank-0.json.gz", "Tesla V100-SXM2-32GB", [101]),
]


@pytest.mark.parametrize("name, device, steps", FIXTURES)
def test_real_traces_agree_with_an_independent_interval_union(name, device, steps):
    doc = _load(name)
    assert (doc.get("deviceProperties") or [{"name": "ARTEMIS"}])[0]["name"] == device
    summary = _reduce(name)
    assert summary.kind == "gpu" and [r.step for r in summary.rows] == steps
    expected = reference(doc)
    for r in summary.rows:
        for k, v in expected[r.step].items():
            assert abs(getattr(r, k) - float(v)) < 1.0, (name, r.step, k, getattr(r, k), v)  # 1 µs
        assert abs(r.compute + r.comm_exposed + r.other + r.idle - r.step_time) < 1e-6


def test_single_process_h100_mi300x_and_a100_traces_reduce(tmp_path):
    # None has distributedInfo.rank (the H100 and MI300X ones have no distributedInfo; the A100 one a rank
    # without a world size): each is rank 0, the first two said in an info line.
    for name in ("h100_bert_small.json.gz", "mi300x_bert_small.json.gz", "a100_event_sync.json.gz"):
        out = tmp_path / f"{name}.csv"
        status, err = run_traces(REAL / name, "-o", out)
        assert status == 0, err
        comments, rows = read_table(out)
        assert "kind=gpu" in comments[0] and {r["rank"] for r in rows} == {"0"}
        assert ("read as rank 0 of a world of 1" in err) == (not name.startswith("a100"))


def test_b200_counts_its_multimem_all_reduce_as_communication(tmp_path):
    """The B200 eager trace (rank 0 of 8, no ProfilerStep): 73 `multimem_all_reduce_kernel` launches,
    2,119.548 µs in all, and one NCCL AllGather of 21.953 µs, none overlapping: comm = 2,141.501 µs, all of it
    exposed.  HTA's compute is every kernel but `^nccl.*Kernel|.*Memcpy|^Memset|.*Sync`, so the multimem
    kernels would be HTA compute: 2,119.548 of the 2,141.501 µs of collective time (99 %) misfiled."""
    doc = _load("b200_eager.json.gz")
    multimem = [e["dur"] for e in doc["traceEvents"] if e.get("cat") == "kernel" and "multimem" in e["name"]]
    assert (len(multimem), sum(multimem)) == (73, Decimal("2119.548"))
    out = tmp_path / "b200.csv"
    status, err = run_traces(REAL / "b200_eager.json.gz", "-o", out, "--partial")
    assert status == 0, err
    (r,) = read_table(out)[1]
    assert abs(float(r["comm"]) * 1e6 - 2141.501) < 1e-3 and r["comm"] == r["comm_exposed"]


def test_an_inference_capture_without_profiler_step_is_one_window(tmp_path):
    """SGLang decode on an MI300X (TraceLens): no ProfilerStep; one window from the first kernel to the last
    end, 473,749.943 µs (the reference above checks each figure)."""
    out = tmp_path / "sglang.csv"
    status, err = run_traces(REAL / "mi300x_sglang_decode.json.gz", "-o", out)
    assert status == 0, err
    assert "read as one window (step 0) over the trace's device activity, 473,749.943 µs" in err
    assert [r["step"] for r in read_table(out)[1]] == ["0"]


def test_mtia_is_reduced_as_device_activity_where_hta_counts_its_waits_as_busy():
    """MTIA inference (HTA): `mtia_ccp_events` are the device's activity, not host ops (issue 32: read as a CPU
    trace, compute was host op time).  HTA counts every ccp event as a kernel, `event_wait` included (a stream
    waiting on another); effspec counts a wait as idle.  The size of that definition here: HTA's busy time
    exceeds effspec's by the waits that overlap nothing else."""
    doc = _load("mtia_inference_rank_0.json.gz")
    (r,) = _reduce("mtia_inference_rank_0.json.gz").rows
    ccp = [e for e in doc["traceEvents"] if e.get("cat") == "mtia_ccp_events" and e.get("ph") == "X"]
    lo, hi = min(e["ts"] for e in ccp if not e["name"].startswith("event_")), \
        max(e["ts"] + e["dur"] for e in ccp if not e["name"].startswith("event_"))
    every = _length(_clip(_union((e["ts"], e["ts"] + e["dur"]) for e in ccp), lo, hi))
    busy = r.step_time - r.idle
    extra = float(every) - busy
    assert r.compute > 0.9 * r.step_time  # 414,085 of 442,647 µs: the device computes
    assert 0 <= extra < r.idle + 1e-6  # the waits only ever fill effspec's idle
    # The size of the definition on this trace: 1,939 µs (0.44 % of the 442,647 µs window) HTA calls busy.
    assert round(extra) == 1939


def test_a_cupti_range_profiler_trace_is_refused_by_name(tmp_path):
    """HTA's cupti_profiler trace: its 77 `cuda_profiler_range` spans are all 121,431 µs long, laid end to end:
    counters, not times.  Read as kernels they would make the device 100 % busy; refused, never read as CPU."""
    doc = _load("a100_cupti_profiler.json.gz")
    assert {e["dur"] for e in doc["traceEvents"] if e.get("cat") == "cuda_profiler_range"} == {121431}
    status, err = run_traces(REAL / "a100_cupti_profiler.json.gz", "-o", tmp_path / "c.csv")
    assert status == 1
    assert "`cuda_profiler_range` (77: CUPTI range-profiler counters" in err and "refused rather than read as a CPU" in err


def test_idle_split_and_kernel_types_by_hand_on_a_small_real_trace(tmp_path):
    """a100_event_sync (HTA), relative to its first kernel, with each launch (cudaLaunchKernel /
    cudaMemcpyAsync, by correlation):  fill [0, 1) launched −35; sum reduce_kernel [49, 60) launched 37;
    compare [90, 91) launched 76; memcpy DtoH [125, 127) launched 107; spin_kernel [227, 263) launched 217.
    Window [0, 263) = 263 µs; busy 1 + 11 + 1 + 2 + 36 = 51, idle 212.  Every gap's next event was launched
    inside the gap, so host wait = launch − gap start: [1, 37) 36 + [60, 76) 16 + [91, 107) 16 + [127, 217) 90
    = 158; kernel wait 0; other (launch to start) 12 + 14 + 18 + 10 = 54.  158 + 0 + 54 = 212.
    Types: no GEMM or attention; memory 2 (the memcpy); elementwise/other 1 + 11 + 1 + 36 = 49.
    Queue length (launched, not finished) over the window: [0, 1) 1 (the fill, launched before it) + [37, 60) 23
    + [76, 91) 15 + [107, 127) 20 + [217, 263) 46 = 105 µs of one queued event: 105 / 263 = 0.399; at most 1."""
    out = tmp_path / "a.csv"
    status, err = run_traces(REAL / "a100_event_sync.json.gz", "-o", out)
    assert status == 0, err
    comments, (r,) = read_table(out)
    assert [r[k] for k in ("step_time", "idle", "idle_host_wait", "idle_kernel_wait", "idle_other")] == [
        "0.000263", "0.000212", "0.000158", "0.0", "5.4e-05"]
    assert [r[k] for k in ("gemm", "attention", "comm", "memory", "elementwise_other")] == [
        "0.0", "0.0", "0.0", "2e-06", "4.9e-05"]
    assert comments[1].endswith(" queue_mean=0.399 queue_max=1")
    top = [c for c in comments if " kernel top=" in c]
    assert top[0].startswith("# effspec-traces 2: kernel top=1 type=elementwise_other time=3.6e-05 launches=1 ranks=1 "
                             "name=at::cuda::%28anonymous%20namespace%29::spin_kernel%28long%29")
    assert len(top) == 4  # four kernel names (the memcpy is not a kernel)


def test_a_real_collective_kernel_renamed_is_still_communication_inside_record_param_comms(tmp_path):
    """The B200 eager trace (TraceLens) has one `record_param_comms` span (an `_allgather_base`, 190.881 µs on
    thread 6583/6583); the one kernel launched from inside it is the 21.953 µs NCCL AllGather (launch
    `cuLaunchKernelEx`).  Renamed to a name no family knows, it is still communication: comm stays
    2,119.548 (multimem) + 21.953 = 2,141.501 µs.  With the span renamed as well it is compute, and comm is
    the multimem kernels' 2,119.548 µs alone."""
    doc = json.loads(gzip.decompress((REAL / "b200_eager.json.gz").read_bytes()))  # doubles: to 0.25 ns here
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    assert [(e["dur"], e["pid"], e["tid"]) for e in events if e.get("name") == "record_param_comms"] == [
        (190.881, 6583, 6583)]
    inside = launched_in_comms(events)
    (gather,) = [e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in inside]
    assert gather["name"].startswith("ncclDevKernel_AllGather_RING_LL") and gather["dur"] == 21.953
    gather["name"] = "acme_gather_kernel"
    path = tmp_path / "b200.json"
    path.write_text(json.dumps(doc))
    from effspec.ranks.traces.reduce import reduce_trace

    s = reduce_trace(str(path))
    (r,) = s.rows
    assert abs(r.comm - 2141.501) < 1e-3 and r.comm == r.comm_exposed
    assert "1 kernel (21.953 µs) launched inside the profiler's `record_param_comms` spans" in " ".join(s.notes)
    for e in events:
        if e.get("name") == "record_param_comms":
            e["name"] = "aten::empty"
    path.write_text(json.dumps(doc))
    (r,) = reduce_trace(str(path)).rows
    assert abs(r.comm - 2119.548) < 1e-3


def test_the_report_shows_the_idle_split_kernel_types_and_launch_delay(tmp_path):
    """The same a100_event_sync reduction (figures by hand in the test above), checked through a spec: the
    per-rank section gives the idle split as shares of the 212 µs idle (host wait 158 = 74.5 %, kernel wait 0,
    other 54 = 25.5 %), the kernel types in seconds (memory 2 µs, elementwise/other 49 µs, the rest 0), and the
    launch delay the CSV's file line records, in the Provenance table."""
    import effspec
    from effspec.report.sections import ranks

    status, err = run_traces(REAL / "a100_event_sync.json.gz", "-o", tmp_path / "ranks.csv")
    assert status == 0, err
    file_line = next(c for c in read_table(tmp_path / "ranks.csv")[0] if " file=" in c)
    kv = dict(t.split("=", 1) for t in file_line.split(": ", 1)[1].split() if "=" in t)
    (tmp_path / "run.eff").write_text('''eff 1
run a {
  model { kind = dense_transformer  layers = 2  d_model = 256  heads = 4  ffn = gelu  d_ff = 1024  vocab = 1000 }
  convention { preset = palm  attention = excluded }
  work { seq_len = 128 token/sequence  global_batch = 1 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 1 device  dtype = bf16  peak = catalog }
  timing { step_time = 263 us  warmup = 0 step  boundary = "profiler step" }
  ranks { samples = file "ranks.csv" }
}
''')
    result = effspec.load(tmp_path / "run.eff")
    rows, tables = ranks.diagnosis(result.evaluation.runs["a"])
    by = {r.label: r for r in rows}
    # 158 / 212 = 74.53 %, 54 / 212 = 25.47 %
    assert by["idle by cause"].value == "host wait 158 µs (74.53 %), kernel wait 0 s (0 %), other 54 µs (25.47 %)"
    assert by["idle by cause"].note.startswith("of 212 µs idle, summed over ranks and steps")
    assert by["device time by kernel type"].value == (
        "GEMM 0 s, attention 0 s, communication 0 s, memory 2 µs, elementwise/other 49 µs")
    (prov,) = [t for t in tables if t.title == "Provenance"]
    assert prov.columns[5] == "launch delay p50 / p95 µs"
    assert prov.rows[0][5] == f"{kv['launch_delay_p50']} / {kv['launch_delay_p95']}"
    # by hand from the launches listed above (start − launch): 35, 12, 14, 18, 10 µs; median 14, p95 by linear
    # interpolation between the two largest (18, 35) at 0.8 of the way: 31.6
    assert kv["launch_delay_p50"] == "14.000" and kv["launch_delay_p95"] == "31.600"
