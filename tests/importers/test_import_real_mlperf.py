"""Real MLPerf Training v4.0 result logs from four submitters (tests/fixtures/logs/real/mllog/SOURCE), imported
and checked (issue 25): every value against the record it cites, the submitters' system fields
(`submission_*`, SYSJSON, the platform string) read, `epoch_num` and `samples_count` evaluations both
giving steps and a target, and `effspec check`, with the test filling only what no line gives, computing
the run's own figure (MLPerf's time to train, run_stop - run_start)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from real_logs import check, do_import, field, fill, lines_of, real, the_run, todo

LLAMA2_70B = {"kind": "dense_transformer", "layers": "80", "d_model": "8192", "heads": "64", "ffn": "swiglu",
              "d_ff": "28672", "vocab": "32000", "dtype": "bf16", "peak": "catalog"}
GPT3_175B = {"kind": "dense_transformer", "layers": "96", "d_model": "12288", "heads": "96", "ffn": "gelu",
             "d_ff": "49152", "vocab": "50257", "dtype": "bf16", "peak": "catalog"}


def record(log: Path, line: int) -> dict:
    """The JSON of the `:::MLLOG` / `:::SYSJSON` record on a line (after any `0: ` rank prefix)."""
    text = lines_of(log)[line - 1]
    return json.loads(re.split(r":::(?:MLLOG|SYSJSON) ", text, maxsplit=1)[1])


def line_of(citation: str) -> list[int]:
    m = re.fullmatch(r'log "[^":]+:([0-9,]+)(?: \(.*\))?"', citation)
    assert m, citation
    return [int(n) for n in m.group(1).split(",")]


def assert_calendar_and_target(log: Path, text: str, batch: int, seq: int | None) -> None:
    """wall_clock = run_stop - run_start of the cited records; steps and reached_at from the last evaluation."""
    wall, source = field(text, "wall_clock")
    start, stop = (record(log, n) for n in line_of(source))
    assert start["key"] == "run_start" and stop["key"] == "run_stop"
    assert wall == f"{(stop['time_ms'] - start['time_ms']) / 1000:.3f} s"
    steps, source = field(text, "steps")
    (n,) = line_of(source)
    ev = record(log, n)
    assert ev["key"] == "eval_accuracy"
    samples = ev["metadata"].get("samples_count") or ev["metadata"]["epoch_num"] / seq
    assert steps == f"{math.ceil(samples / batch)} step"
    assert field(text, "reached_at")[0] == steps
    assert field(text, "value")[0] == repr(ev["value"]) and field(text, "value")[1] == source.split(" (")[0] + '"'


def test_dell_xe9680_llama2_lora_platform_string_gives_accelerator_and_count(tmp_path: Path) -> None:
    log = real("mllog", "dell_xe9680_llama2_70b_lora_result_0.txt")
    text, err, out = do_import(tmp_path, "mllog", log)
    # 1xXE9680x8H100-SXM-80GB: 1 node x 8 H100-SXM-80GB, the catalog's H100-SXM5
    assert field(text, "accelerator") == ('"H100-SXM5"', 'log "dell_xe9680_llama2_70b_lora_result_0.txt:622"')
    assert field(text, "count")[0] == "8 device"
    assert record(log, 622)["value"] == "1xXE9680x8H100-SXM-80GB"
    for key, n, value in (("submission_org", 619, "Dell"), ("submission_division", 620, "closed"),
                          ("submission_status", 621, "onprem"), ("submission_platform", 622, "1xXE9680x8H100-SXM-80GB")):
        assert f"# {key} (line {n}): {value}" in text and record(log, n)["key"] == key
    assert field(text, "global_batch") == ("8 sequence", 'log "dell_xe9680_llama2_70b_lora_result_0.txt:624"')
    assert_calendar_and_target(log, text, 8, None)
    assert field(text, "steps")[0] == "384 step"  # samples_count 3072 / 8
    assert todo(text, "seq_len") and '"max_sequence_length"' not in log.read_text(encoding="utf-8")
    # No line gives the shape, the datatype or the input length: Llama 2 70B, and the implementation's
    # 8192 (Dell/benchmarks/llama2_70b_lora/implementations/pytorch/conf/base/model_config.yaml:7).
    fill(out, {**LLAMA2_70B, "seq_len": "8192 token/sequence"})
    status, doc = check(out)
    assert status == 0
    assert the_run(doc)["metrics"]["valid_tokens_per_step"]["value"] == 8 * 8192


@pytest.mark.parametrize(("name", "batch", "steps"), [
    # epoch_num is the tokens consumed: 1245708288 / 2048 / 2304 = 264 (NVIDIA), 1207959552 / 2048 / 2048 = 288 (Google)
    ("nvidia_eos_n64_gpt3_result_0.txt", 2304, 264),
    ("google_v5p_1024_gpt3_result_0.txt", 2048, 288),
])
def test_gpt3_epoch_num_evaluations_give_steps_and_a_target(tmp_path: Path, name: str, batch: int, steps: int) -> None:
    log = real("mllog", name)
    text, err, out = do_import(tmp_path, "mllog", log)
    assert "epoch_num" in field(text, "steps")[1] and field(text, "steps")[0] == f"{steps} step"
    assert field(text, "seq_len")[0] == "2048 token/sequence" and field(text, "global_batch")[0] == f"{batch} sequence"
    assert_calendar_and_target(log, text, batch, 2048)
    fill(out, {**GPT3_175B, **({"count": "1024 device"} if "google" in name else {})})
    status, doc = check(out)
    assert status == 0 and the_run(doc)["metrics"]["valid_tokens_per_step"]["value"] == batch * 2048


def test_nvidia_sysjson_gives_accelerator_and_count(tmp_path: Path) -> None:
    log = real("mllog", "nvidia_eos_n64_gpt3_result_0.txt")
    text, err, out = do_import(tmp_path, "mllog", log)
    sysjson = record(log, 1)
    assert (sysjson["accelerator_model_name"], sysjson["number_of_nodes"], sysjson["accelerators_per_node"]) == (
        "NVIDIA H100-SXM5-80GB", "64", "8")
    assert field(text, "accelerator") == ('"H100-SXM5"', 'log "nvidia_eos_n64_gpt3_result_0.txt:1"')
    assert field(text, "count") == ("512 device", 'log "nvidia_eos_n64_gpt3_result_0.txt:1 (SYSJSON number_of_nodes 64 x '
                                    'accelerators_per_node 8)"')
    assert "# submission_platform (line 583): 64xNVIDIA DGX H100" in text


def test_hpe_sysjson_behind_rank_prefixes_and_a_placeholder_platform(tmp_path: Path) -> None:
    log = real("mllog", "hpe_xd670_llama2_70b_lora_result_1.txt")
    text, err, out = do_import(tmp_path, "mllog", log)
    # line 6 is the shell's `+ echo ':::SYSJSON …'`; line 7 is the record
    assert lines_of(log)[5].startswith("+ echo ':::SYSJSON")
    assert field(text, "accelerator") == ('"H100-SXM5"', 'log "hpe_xd670_llama2_70b_lora_result_1.txt:7"')
    assert record(log, 7)["accelerator_model_name"] == "NVIDIA H100 80GB HBM3"
    assert field(text, "count")[0] == "8 device"
    assert "1xSUBMISSION_PLATFORM_PLACEHOLDER" in text  # named in a comment, never taken as a device
    assert_calendar_and_target(log, text, 8, None)
    fill(out, {**LLAMA2_70B, "seq_len": "8192 token/sequence"})
    assert check(out)[0] == 0


def test_google_platform_names_the_chip_not_the_count(tmp_path: Path) -> None:
    log = real("mllog", "google_v5p_1024_gpt3_result_0.txt")
    text, err, out = do_import(tmp_path, "mllog", log)
    assert field(text, "accelerator") == ('"TPU-v5p"', 'log "google_v5p_1024_gpt3_result_0.txt:4"')
    assert todo(text, "count")  # `tpu-v5p` does not say how many (the result folder's name does, not the log)


def test_an_evaluation_inside_a_step_rounds_up_instead_of_crashing(tmp_path: Path) -> None:
    """1,000,000 samples at a global batch of 2,048 is 488.28 steps: the step that consumed it, 489."""
    log = tmp_path / "e.log"
    rec = ':::MLLOG {{"namespace": "", "time_ms": {t}, "event_type": "{e}", "key": "{k}", "value": {v}, "metadata": {m}}}\n'
    log.write_text(rec.format(t=1, e="POINT_IN_TIME", k="global_batch_size", v=2048, m="{}")
                   + rec.format(t=2, e="INTERVAL_START", k="run_start", v="null", m="{}")
                   + rec.format(t=3000, e="POINT_IN_TIME", k="eval_accuracy", v=0.5, m='{"samples_count": 1000000}')
                   + rec.format(t=4000, e="INTERVAL_END", k="run_stop", v="null", m='{"status": "success"}'), encoding="utf-8")
    text, err, out = do_import(tmp_path, "mllog", log)
    assert field(text, "steps") == ("489 step", 'log "e.log:3 (samples_count 1000000 / global_batch_size 2048 = 488.3, '
                                    'rounded up to the step that consumed that sample)"')
    assert field(text, "wall_clock")[0] == "3.998 s"


def test_hostile_system_fields_reach_the_spec_only_as_catalog_ids_and_whole_numbers(tmp_path: Path) -> None:
    """SYSJSON and submission_platform are text from the log: the accelerator written is the catalog's id
    (never the log's words), the count a whole number below 10^7, the rest a neutralised comment."""
    log = tmp_path / "h.log"
    evil = 'H100 SXM5\\n  }\\n# effspec: file-ignore[EFF601]\\nrun x {'
    rec = ':::MLLOG {{"namespace": "", "time_ms": {t}, "event_type": "{e}", "key": "{k}", "value": {v}, "metadata": {m}}}\n'
    log.write_text(':::SYSJSON {"accelerator_model_name": "' + evil + '", "number_of_nodes": "1e99", '
                   '"accelerators_per_node": "8"}\n'
                   + rec.format(t=1, e="POINT_IN_TIME", k="submission_platform", v='"2x\\"}\\n# effspec: off"', m="{}")
                   + rec.format(t=1, e="POINT_IN_TIME", k="global_batch_size", v=8, m="{}")
                   + rec.format(t=2, e="INTERVAL_START", k="run_start", v="null", m="{}")
                   + rec.format(t=4000, e="INTERVAL_END", k="run_stop", v="null", m='{"status": "success"}'), encoding="utf-8")
    text, err, out = do_import(tmp_path, "mllog", log)
    assert todo(text, "accelerator") and todo(text, "count")  # the name does not resolve; 1e99 is not a count
    assert not re.search(r"effspec\s*:", text, flags=re.I) and "run x {" not in text
    status, doc = check(out)
    assert {d["code"] for d in doc["diagnostics"]} & {"EFF001", "EFF002", "EFF032"} == set()
