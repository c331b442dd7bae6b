"""`effspec traces` on traces as people capture them (issue 32): the rank from the file name, every missing
piece named at once, no `ProfilerStep` (one window, or `--window LABEL`), every device the profiler records.

Hand-made traces; the derivations are in the comments.  The real public traces are tests/ranks/test_traces_real.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_traces import _cpu_events, _expect_error, read_table, run_traces


def _doc(path: Path, events: list, info: object = None) -> Path:
    doc: dict = {"schemaVersion": 1, "traceEvents": events}
    if info is not None:
        doc["distributedInfo"] = info
    path.write_text(json.dumps(doc))
    return path


# ---------------------------------------------------------------------------- the rank from the file name


@pytest.mark.parametrize("name, rank", [("rank-3.json", 3), ("rank3_trace.json", 3), ("job_rank_12.pt.trace.json", 12),
                                        ("profile_trace_RANK_0.json", 0), ("rank-0.Apr_03_18_51_38.1102.pt.trace.json", 0)])
def test_rank_from_name_reads_the_rank_when_the_field_is_absent(tmp_path, name, rank):
    trace = _doc(tmp_path / name, _cpu_events(), {"backend": "nccl"})
    out = tmp_path / "r.csv"
    status, err = run_traces(trace, "-o", out, "--rank-from", "name", "--partial")
    assert status == 0, err
    assert f"rank {rank} read from the file name" in err
    assert {r["rank"] for r in read_table(out)[1]} == {str(rank)}


def test_without_rank_from_name_a_file_name_is_never_read(tmp_path):
    # No distributedInfo at all: a single process, rank 0, whatever the name says.
    trace = _doc(tmp_path / "rank-5.json", _cpu_events())
    out = tmp_path / "r.csv"
    assert run_traces(trace, "-o", out)[0] == 0
    assert {r["rank"] for r in read_table(out)[1]} == {"0"}
    # A world size without a rank is refused, and the help names --rank-from name.
    trace = _doc(tmp_path / "rank-5.json", _cpu_events(), {"world_size": 8})
    err = _expect_error(tmp_path, [trace], "EFF003", "no `distributedInfo.rank`")
    assert "--rank-from name" in err


@pytest.mark.parametrize("name, why", [("trace.json", "its file name holds no rank"),
                                       ("frank3.json", "its file name holds no rank"),
                                       ("rank-1_rank-2.json", "its file name holds 2 ranks (1, 2)")])
def test_a_name_without_one_rank_is_refused(tmp_path, name, why):
    trace = _doc(tmp_path / name, _cpu_events(), {"world_size": 4})
    _expect_error(tmp_path, [trace, "--rank-from", "name"], "EFF003", f"no `distributedInfo.rank`: the trace does "
                  f"not say which rank wrote it, and {why}")


def test_a_name_that_contradicts_the_field_is_refused(tmp_path):
    trace = _doc(tmp_path / "rank-2.json", _cpu_events(), {"rank": 1, "world_size": 4})
    _expect_error(tmp_path, [trace, "--rank-from", "name", "--partial"], "EFF003",
                  "the file name says rank 2, `distributedInfo.rank` says 1")


def test_a_refusal_names_every_missing_piece(tmp_path):
    # No rank (a world of 4 without one) and no steps (no ProfilerStep, no device activity): one error, both pieces.
    events = [e for e in _cpu_events() if not e["name"].startswith("ProfilerStep")]
    trace = _doc(tmp_path / "t.json", events, {"world_size": 4})
    err = _expect_error(tmp_path, [trace], "EFF003", "no `distributedInfo.rank`: the trace does not say which rank "
                        "wrote it; and no `ProfilerStep#N` span: the trace has no steps to split, and no device "
                        "activity to read as one window")
    assert "--rank-from name" in err and "prof.step()" in err


# ---------------------------------------------------------------------------- no ProfilerStep: one window, or --window


def _device(events: list, cat: str = "kernel") -> list:
    """Complete device events (name, start, end) in µs from 1000, with correlations 1, 2, …"""
    return [{"ph": "X", "cat": cat if not name.startswith("Memcpy") else "gpu_memcpy", "name": name, "pid": 0, "tid": 7,
             "ts": 1000.0 + a, "dur": float(b - a), "args": {"correlation": k}} for k, (name, a, b) in enumerate(events, 1)]


ONE_WINDOW = [("ampere_sgemm_128x64_tn", 50, 80), ("ncclDevKernel_AllReduce_Sum_f32", 70, 120),
              ("Memcpy DtoH (Device -> Pinned)", 125, 130), ("void gemm<float>", 140, 150)]


def test_a_gpu_trace_without_profiler_step_is_one_window(tmp_path):
    """No step spans, no launches (an inference capture): one window [50, 150) over the device events = 100 µs.
    compute [50, 80) ∪ [140, 150) = 40; comm [70, 120) = 50, exposed [80, 120) = 40; other: the memcpy under
    no kernel [125, 130) = 5; idle [120, 125) ∪ [130, 140) = 15.  40 + 40 + 5 + 15 = 100."""
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", _device(ONE_WINDOW)), "-o", out)
    assert status == 0, err
    assert "info[EFF003]: no `ProfilerStep#N` span: read as one window (step 0) over the trace's device activity, " \
           "100.000 µs from its first device event to its last (4 events)" in err
    assert [tuple(r.values())[2:10] for r in read_table(out)[1]] == [
        ("0", "0.0001", "4e-05", "5e-05", "4e-05", "1.5e-05", "5e-06", "2e-05")]


def _labelled(label_of: dict[int, str]) -> list:
    """The hand-made GPU trace of test_traces.py (two ProfilerSteps), its step spans renamed."""
    events = [{"ph": "X", "cat": "user_annotation", "name": label_of[k], "pid": 1, "tid": 1, "ts": 900.0 + 100 * k,
               "dur": 100.0} for k in (1, 2)]
    launches = {1: 10, 2: 20, 3: 30, 4: 110, 5: 120}
    events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000.0 + t,
                "dur": 2.0, "args": {"correlation": c}} for c, t in launches.items()]
    return events + _device(ONE_WINDOW[:3] + [("void gemm<float>", 140, 150), ("ncclKernel_AllGather_RING_LL", 145, 170)])


# Its rows (test_traces.py's derivation): step 1 [50, 130), step 2 [130, 170).
TWO_STEPS = [("8e-05", "3e-05", "5e-05", "4e-05", "5e-06", "5e-06", "1e-05"),
             ("4e-05", "1e-05", "2.5e-05", "2e-05", "1e-05", "0.0", "1e-05")]


@pytest.mark.parametrize("labels, args, steps", [
    ({1: "ProfilerStep#1", 2: "ProfilerStep#2"}, [], ("1", "2")),
    ({1: "train_step", 2: "train_step"}, ["--window", "train_step"], ("0", "1")),  # numbered in time order
    ({1: "iter#7", 2: "iter#8"}, ["--window", "iter"], ("7", "8")),  # LABEL#N keeps its N
])
def test_window_cuts_steps_on_a_record_function_label(tmp_path, labels, args, steps):
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", _labelled(labels)), "-o", out, *args)
    assert status == 0, err
    rows = read_table(out)[1]
    assert [r["step"] for r in rows] == list(steps)
    assert [tuple(r.values())[3:10] for r in rows] == TWO_STEPS


def test_window_ignores_profiler_steps_and_a_missing_label_is_refused(tmp_path):
    # --window train_step on a trace whose spans are ProfilerStep#N: the label is not there; nothing is guessed.
    trace = _doc(tmp_path / "t.json", _labelled({1: "ProfilerStep#1", 2: "ProfilerStep#2"}))
    _expect_error(tmp_path, [trace, "--window", "train_step"], "EFF003",
                  "no `record_function` span named `train_step` (--window): the trace has no steps to split")


def test_window_on_a_cpu_trace(tmp_path):
    # The gloo trace of test_traces.py with its spans named `step`: the same figures (59.75 µs compute a step).
    events = [dict(e, name="step") if e["name"].startswith("ProfilerStep") else e for e in _cpu_events(steps=2)]
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", events), "-o", out, "--window", "step")
    assert status == 0, err
    assert [(r["step"], r["compute"], r["comm_exposed"], r["idle"]) for r in read_table(out)[1]] == [
        ("0", "5.975e-05", "3.2e-05", "8.25e-06"), ("1", "5.975e-05", "3.2e-05", "8.25e-06")]


# ---------------------------------------------------------------------------- every device the profiler records


def test_mtia_device_events_are_device_activity(tmp_path):
    """MTIA's `mtia_ccp_events`, one window (no steps): pe_exe [0, 10) and [40, 50) run on the device (compute);
    dma_request [5, 20) is a transfer (other where nothing runs: [10, 20) = 10); event_wait [20, 40) is a stream
    waiting (not activity: idle).  Window [0, 50): compute 20, other 10, idle 20 (20 + 10 + 20 = 50)."""
    events = [{"ph": "X", "cat": "mtia_ccp_events", "name": n, "pid": 17, "tid": 3910, "ts": 701805074372.5 + a,
               "dur": float(b - a), "args": {"stream": 112}}
              for n, a, b in [("pe_exe", 0, 10), ("dma_request", 5, 20), ("event_wait", 20, 40), ("pe_exe", 40, 50)]]
    events.append({"ph": "X", "cat": "mtia_runtime", "name": "recordEvent", "pid": 865, "tid": 1837,
                   "ts": 701805074300.0, "dur": 6.44, "args": {"correlation": 21600000}})
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "mtia.json", events), "-o", out)
    assert status == 0, err
    comments, rows = read_table(out)
    assert "kind=gpu" in comments[0]
    assert [tuple(r.values())[3:10] for r in rows] == [("5e-05", "2e-05", "0.0", "0.0", "2e-05", "1e-05", "3e-05")]


@pytest.mark.parametrize("kernel, memcpy, launch", [
    ("Kernel", "Memcpy", "Runtime"),  # older Kineto's names (HTA's trace_file_list/inference_rank_1.json.gz)
    ("kernel", "gpu_memcpy", "xpu_runtime"),  # an XPU trace: its own launch category
])
def test_other_device_categories_are_read_as_kernels(tmp_path, kernel, memcpy, launch):
    events = [dict(e, cat=memcpy if e["cat"] == "gpu_memcpy" else kernel) if e["cat"] in ("kernel", "gpu_memcpy")
              else dict(e, cat=launch) if e["cat"] == "cuda_runtime" else e
              for e in _labelled({1: "ProfilerStep#1", 2: "ProfilerStep#2"})]
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", events), "-o", out)
    assert status == 0, err
    assert [tuple(r.values())[3:10] for r in read_table(out)[1]] == TWO_STEPS  # the same rows as with CUDA's names


def test_device_events_effspec_does_not_read_are_refused_not_read_as_cpu(tmp_path):
    # A CPU-looking trace (steps, ops) whose device work is in a category effspec does not know: refused.
    events = _cpu_events() + [{"ph": "X", "cat": "gpu_future_activity", "name": "k", "pid": 0, "tid": 7,
                               "ts": 1000.0 + k, "dur": 1.0} for k in range(3)]
    _expect_error(tmp_path, [_doc(tmp_path / "t.json", events)], "EFF003", "its device events are of kinds effspec "
                  "does not read (`gpu_future_activity` (3)): refused rather than read as a CPU trace")
    # Beside device events it reads, they are left out and named.
    events = _device(ONE_WINDOW) + events[-3:]
    status, err = run_traces(_doc(tmp_path / "g.json", events), "-o", tmp_path / "g.csv")
    assert status == 0, err
    assert "info[EFF003]: device events of kinds effspec does not read are not counted: `gpu_future_activity` (3)" in err


def test_sync_and_device_annotations_are_not_activity(tmp_path):
    # cuda_sync (a stream waiting) and gpu_user_annotation (a label drawn on the device row) are not busy time:
    # the one-window figures of ONE_WINDOW are unchanged, and nothing is said about them.
    extra = [{"ph": "X", "cat": c, "name": "x", "pid": 0, "tid": 7, "ts": 1000.0 + 80, "dur": 45.0}
             for c in ("cuda_sync", "gpu_user_annotation")]
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", _device(ONE_WINDOW) + extra), "-o", out)
    assert status == 0, err
    assert "not counted" not in err
    assert [tuple(r.values())[3:10] for r in read_table(out)[1]] == [
        ("0.0001", "4e-05", "5e-05", "4e-05", "1.5e-05", "5e-06", "2e-05")]


# ---------------------------------------------------------------------------- timestamps parsed exactly


EPOCH_TRACE = """{"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1712195495562448.125, "dur": 1.000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1712195495562448.250, "dur": 0.500},
 {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1712195495562448.625, "dur": 0.250},
 {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1712195495562449, "dur": 0.0625}
]}"""


@pytest.mark.parametrize("chunked", [False, True])
def test_epoch_microsecond_timestamps_are_parsed_exactly(tmp_path, chunked):
    """Epoch µs near 1.7e15 (HTA's ns_resolution_trace writes `1712195495562448.673`): a double there is 0.25 µs
    apart, so `.125` and `.625` would round to a neighbour.  Exactly: the step [.125, 1.125) = 1 µs; ops
    [.25, .75) ∪ [.625, .875) ∪ [1.0, 1.0625) = 0.625 + 0.0625 = 0.6875 µs; idle 1 − 0.6875 = 0.3125 µs."""
    trace = tmp_path / "t.json"
    trace.write_text(EPOCH_TRACE)
    out = tmp_path / "r.csv"
    status, err = run_traces(trace, "-o", out, *(["--stream-above", "8"] if chunked else []))
    assert status == 0, err
    (r,) = read_table(out)[1]
    assert (r["step_time"], r["compute"], r["idle"]) == ("1e-06", "6.875e-07", "3.125e-07")
    # Read as doubles the same text gives other figures: this test tells the two apart.
    doubles = json.loads(EPOCH_TRACE)["traceEvents"]
    lo, hi = doubles[0]["ts"], doubles[0]["ts"] + doubles[0]["dur"]
    assert (lo - 1712195495562448, hi - lo) != (0.125, 1.0)


# ---------------------------------------------------------------------------- idle split and kernel types


def test_idle_splits_into_host_wait_kernel_wait_and_other(tmp_path):
    """One window (no steps), three kernels on one device, each launched (cuda_runtime, by correlation):
    gemm [0, 10) launched at −5; flash attention [20, 30) launched at 5, while the gemm ran: queued, so the gap
    [10, 20) is kernel wait (it waited on something else: another stream, an event); an elementwise kernel
    [40, 50) launched at 35: of the gap [30, 40), [30, 35) is host wait (nothing launched yet) and [35, 40)
    other (launch latency).  Window [0, 50): idle 20 = 5 + 10 + 5.  Types: gemm 10, attention 10,
    elementwise/other 10, memory 0."""
    kernels = [("ampere_sgemm_128x64_tn", 0, 10), ("flash_fwd_kernel", 20, 30),
               ("void at::native::vectorized_elementwise_kernel<4>", 40, 50)]
    events = _device(kernels) + [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000.0 + t,
         "dur": 1.0, "args": {"correlation": c}} for c, t in ((1, -5), (2, 5), (3, 35))]
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", events), "-o", out)
    assert status == 0, err
    comments, rows = read_table(out)
    (r,) = rows
    assert (r["step_time"], r["idle"]) == ("5e-05", "2e-05")
    assert (r["idle_host_wait"], r["idle_kernel_wait"], r["idle_other"]) == ("5e-06", "1e-05", "5e-06")
    assert (r["gemm"], r["attention"], r["memory"], r["elementwise_other"], r["comm"]) == (
        "1e-05", "1e-05", "0.0", "1e-05", "0.0")
    # Launch delay (launch call → start): 5, 15, 5 µs; median 5; p95 by linear interpolation 5 + 0.9 × 10 = 14.
    # Queue length (launched, not finished) over the window [0, 50): the gemm [−5, 10) → [0, 10) 10 µs, the
    # attention [5, 30) 25, the elementwise [35, 50) 15: 50 µs / 50 = 1.000 on average; 2 during [5, 10).
    assert comments[1].endswith(" launch_delay_p50=5.000 launch_delay_p95=14.000 queue_mean=1.000 queue_max=2")
    # The top kernels, one line each, by time then name (all 10 µs here: by name).
    kernels_lines = [c for c in comments if " kernel top=" in c]
    assert [c.split(" name=")[1] for c in kernels_lines] == [
        "ampere_sgemm_128x64_tn", "flash_fwd_kernel", "void%20at::native::vectorized_elementwise_kernel%3C4%3E"]
    assert kernels_lines[0].startswith("# effspec-traces 2: kernel top=1 type=gemm time=1e-05 launches=1 ranks=1 ")


@pytest.mark.parametrize("name, kind", [
    # Names from the real traces of tests/data/traces/real (H100, MI300X, B200, V100, SGLang on MI300X):
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1", "gemm"),
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB0", "gemm"),
    ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm"),
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN", "gemm"),
    ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "gemm"),
    ("volta_sgemm_32x128_nn", "gemm"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128>>", "attention"),
    ("attn_fwd", "attention"),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16>", "attention"),
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
     "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>", "elementwise_other"),  # `Convert` is not a convolution
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", "elementwise_other"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>", "elementwise_other"),
])
def test_kernel_types_of_real_kernel_names(name, kind):
    from effspec.ranks.traces.reduce import TYPES, kernel_type

    assert TYPES[kernel_type(name)] == kind


# ---------------------------------------------------------------------------- effspec traces --diff


CPU = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "cpu"


def _diff(*args) -> tuple[int, str, str]:
    import contextlib
    import io

    from effspec.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["traces", "--diff", *map(str, args)])
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("scenario, cause", [
    # The injected change of each held CPU scenario (tests/fixtures/traces/cpu/*/timers.json: straggler_rank 2
    # computes 2x; sleeper_rank 1 sleeps 60 ms a step; imbalance: rank r computes 1 + 0.5 r, rank 3 most;
    # comm_heavy: every rank's all-reduce grows) against the uniform run.
    ("straggler", "rank 2's compute +"),
    ("sleeper", "rank 1's idle +"),
    ("imbalance", "rank 3's compute +"),
    ("comm_heavy", "exposed communication on every rank, +"),
])
def test_diff_names_the_injected_change(scenario, cause):
    timers = json.loads((CPU / scenario / "timers.json").read_text())
    status, out, err = _diff(CPU / "uniform" / "traces", CPU / scenario / "traces")
    assert status == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("  the change: ")]
    assert line.startswith("  the change: " + cause), out
    if scenario == "sleeper":  # the sleep it names is the injected one: 60 ms, to 10 %
        ms = float(line.split("idle +")[1].split(" ms")[0])
        assert abs(ms - 1e3 * timers["sleep_s"]) < 0.1 * 1e3 * timers["sleep_s"]
    if scenario in ("straggler", "sleeper", "imbalance"):  # the others wait for it
        assert "the other ranks' exposed communication +" in line


def test_diff_reads_tables_as_it_reads_traces_and_bounds_the_change(tmp_path):
    for name in ("uniform", "straggler"):
        assert run_traces(CPU / name / "traces", "-o", tmp_path / f"{name}.csv")[0] == 0
    status, from_tables, err = _diff(tmp_path / "uniform.csv", tmp_path / "straggler.csv")
    assert status == 0, err
    status, from_traces, _ = _diff(CPU / "uniform" / "traces", CPU / "straggler" / "traces")
    assert from_tables.splitlines()[2:] == from_traces.splitlines()[2:]  # the same figures (names aside)
    # The step-time change's 95 % bootstrap interval holds the observed median change and excludes 0.
    step = [ln for ln in from_tables.splitlines() if ln.startswith("  step time, median")][0]
    change = float(step.split(": +")[1].split(" ms")[0])
    lo, hi = (float(x) for x in step.split("interval ")[1].split(" ms")[0].split(" .. "))
    assert 0 < lo <= change <= hi and step.endswith("(excludes 0)")
    # -o writes the comparison instead of printing it.
    assert _diff(tmp_path / "uniform.csv", tmp_path / "straggler.csv", "-o", tmp_path / "d.txt")[0] == 0
    assert (tmp_path / "d.txt").read_text() == from_tables


def test_diff_refuses_bad_input_with_a_code(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("rank,node,step,compute,comm,stall\n0,a,1,x,0.1,0.0\n")
    good = tmp_path / "good.csv"
    assert run_traces(CPU / "uniform" / "traces", "-o", good)[0] == 0
    status, out, err = _diff(good, bad)
    assert status == 1 and out == "" and "error[EFF003]" in err
    assert _diff(good)[0] == 2  # one run: a tool error


def test_hostile_kernel_names_stay_one_cell_of_one_comment_line(tmp_path):
    # A formula, a comma, a newline, a lone surrogate (JSON's "\ud800"), 10 KB: the name is percent-encoded
    # (no comma, no line break), cut to 160 characters first, and the line still starts with `#`.
    names = ['=HYPERLINK("http://x"),1\n# effspec-traces 2: file=evil', "k\ud800", "g" * 10000]
    kernels = [(n, 10 * k, 10 * k + 5) for k, n in enumerate(names)]
    out = tmp_path / "r.csv"
    status, err = run_traces(_doc(tmp_path / "t.json", _device(kernels)), "-o", out)
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if " kernel top=" in ln]
    assert len(lines) == 3 and all(ln.startswith("# effspec-traces 2: kernel top=") and "," not in ln for ln in lines)
    assert any("name=%3DHYPERLINK%28%22http://x%22%29%2C1%0A%23%20effspec-traces" in ln for ln in lines)
    assert any(ln.endswith("name=k%ED%A0%80") for ln in lines)
    assert any(ln.endswith("g" * 160 + " cut=yes") for ln in lines)
    assert sum(" file=" in ln for ln in text.splitlines()) == 1  # the injected `file=` made no provenance line


def test_collective_extends_the_collective_table_by_name(tmp_path):
    """A collective library the table does not know (`acme_allreduce_kernel`): compute by default, communication
    with --collective.  One window [0, 100): gemm [0, 40), the collective [30, 100).
    Default: compute = [0, 100) = 100 µs, comm 0.  With --collective acme_ALLREDUCE (any case): compute 40,
    comm 70, exposed comm [40, 100) = 60."""
    events = [("ampere_sgemm_128x64_tn", 0, 40), ("acme_allreduce_kernel<bf16>", 30, 100)]
    trace = _doc(tmp_path / "t.json", _device(events))
    plain, with_flag = tmp_path / "plain.csv", tmp_path / "flag.csv"
    status, err = run_traces(trace, "-o", plain)
    assert status == 0, err
    assert [tuple(r.values())[4:7] for r in read_table(plain)[1]] == [("0.0001", "0.0", "0.0")]
    status, err = run_traces(trace, "-o", with_flag, "--collective", "acme_ALLREDUCE")
    assert status == 0, err
    assert [tuple(r.values())[4:7] for r in read_table(with_flag)[1]] == [("4e-05", "7e-05", "6e-05")]
    assert "kernels whose name contains `acme_allreduce` are communication (--collective)" in err
    # the table is per run: without the flag again, the name is compute again (no state left behind)
    status, err = run_traces(trace, "-o", plain)
    assert [tuple(r.values())[4:7] for r in read_table(plain)[1]] == [("0.0001", "0.0", "0.0")]


def test_collective_needs_a_name(tmp_path):
    trace = _doc(tmp_path / "t.json", _device(ONE_WINDOW))
    status, err = run_traces(trace, "-o", tmp_path / "r.csv", "--collective", " ")
    assert status == 2 and "--collective needs a kernel name" in err
