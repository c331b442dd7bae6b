"""MLPerf Training logs: `:::MLLOG {json}` lines.

Source (mlcommons/logging@7bbf792): mlperf_logging/mllog/test_mllog.py L60-125
(the line: `:::MLLOG ` + JSON with namespace, time_ms, event_type, key, value,
metadata), mllog/constants.py (run_start, run_stop, global_batch_size,
max_sequence_length, eval_accuracy, samples_count, status, tracked_stats,
submission_benchmark, submission_platform).  An MLPerf log states time to
train, not FLOPs: the spec gets a calendar (run_start to run_stop), a target
(the last eval_accuracy of a successful run) and no convention of its own.
"""

from __future__ import annotations

import json
import math
import re

from effspec.importers.base import LogFormat
from effspec.importers.common import literal, todo_hardware
from effspec.importers.reader import LogReader
from effspec.importers.record import Convention, Field, ImportedRun

PREFIX = ":::MLLOG "
SYSJSON = ":::SYSJSON "  # NVIDIA-derived submissions echo the system description (systems/<name>.json) into the log
WANTED = {"run_start", "run_stop", "global_batch_size", "max_sequence_length", "eval_accuracy", "tracked_stats",
          "submission_benchmark", "submission_platform", "submission_org", "submission_division", "submission_status"}
# `submission_platform` as submitters write it: `1xXE9680x8H100-SXM-80GB` (Dell: nodes x system x
# accelerators-per-node accelerator), `64xNVIDIA DGX H100` (NVIDIA: nodes x system), `tpu-v5p` (Google).
PLATFORM = re.compile(r"(\d+)x(.+)")
PER_NODE = re.compile(r"(.*?)x(\d+)(.+)")


class Importer(LogFormat):
    name = "mllog"
    framework = "MLPerf Training"
    summary = "`:::MLLOG {…}` lines: run_start/run_stop, global_batch_size, max_sequence_length, eval_accuracy, tracked_stats"
    versions = "not used: an MLPerf log has no FLOP convention"

    def detect(self, lines: list[str]) -> float:
        return 1.0 if any(PREFIX in t for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention | None:
        """None: MLPerf reports time to train, not model FLOPs; the spec declares no convention (EFF101 says so)."""
        return None

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        events: dict[str, list[tuple[dict, int]]] = {}
        system: tuple[dict, int] | None = None
        for item in lines:
            at = item.text.find(PREFIX)
            if at < 0:
                sys_at = item.text.find(SYSJSON)
                if sys_at >= 0 and system is None and not item.text.lstrip().startswith("+"):  # `+ echo …`: the shell's trace
                    system = _sysjson(item.text[sys_at + len(SYSJSON):], item.number, lines)
                continue
            body = item.text[at + len(PREFIX):]
            try:
                event = json.loads(body)
                key = event["key"]
                if not isinstance(event, dict) or not isinstance(key, str):
                    raise TypeError
            except RecursionError:
                lines.warn(item.number, "`:::MLLOG` record nested too deeply to read; skipped", excerpt=item.text)
                continue
            except (ValueError, KeyError, TypeError):
                why = "two records on one line" if PREFIX in body else "not whole JSON (cut short?)"
                lines.warn(item.number, f"`:::MLLOG` record that cannot be read: {why}; skipped", excerpt=item.text)
                continue
            if key in WANTED:
                events.setdefault(key, []).append((event, item.number))
        if not events.get("run_start") and not events.get("eval_accuracy"):
            return []
        _fill(run, events, system)
        return [run]


def _sysjson(body: str, line: int, lines: LogReader) -> tuple[dict, int] | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        lines.warn(line, "`:::SYSJSON` record that is not whole JSON; skipped", excerpt=body)
        return None
    return (value, line) if isinstance(value, dict) else None


def _number(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return literal(repr(value) if isinstance(value, float) else str(value))


def _fill(run: ImportedRun, events: dict[str, list[tuple[dict, int]]], system: tuple[dict, int] | None = None) -> None:
    first = {k: v[0] for k, v in events.items()}
    bench = first.get("submission_benchmark")
    run.notes.append("MLPerf reports time to train, not FLOPs: there is no convention to import (EFF101 will say so), "
                     "and no step times, so the calendar holds the run's wall clock.")
    what = f" ({str(bench[0].get('value'))[:60]})" if bench else ""
    for key in ("kind", "layers", "d_model", "heads", "ffn", "d_ff", "vocab"):
        run.put("model", Field.todo(key, f"the benchmark's reference model{what}: the log does not print its shape"))
    seq, gbs = first.get("max_sequence_length"), first.get("global_batch_size")
    seq_value = _number(seq[0].get("value")) if seq else None
    if seq and seq_value:
        run.put("work", Field.number("seq_len", seq_value, "token/sequence", run.cite(seq[1])))
    else:
        run.put("work", Field.todo("seq_len", "tokens per sequence: the log has no max_sequence_length (see the "
                                   "benchmark's implementation config)"))
    gbs_value = _number(gbs[0].get("value")) if gbs else None
    if gbs and gbs_value:
        run.put("work", Field.number("global_batch", gbs_value, "sequence", run.cite(gbs[1])))
    for key in ("submission_org", "submission_division", "submission_status", "submission_platform"):
        if key in first:
            run.notes.append(f"{key} (line {first[key][1]}): {str(first[key][0].get('value'))[:80]}")
    _hardware(run, first.get("submission_platform"), system)
    _calendar_and_target(run, events, gbs)
    stats = events.get("tracked_stats")
    if stats:
        event, line = stats[-1]
        value = event.get("value", {}).get("throughput") if isinstance(event.get("value"), dict) else None
        if _number(value):
            run.notes.append(f"tracked_stats throughput {_number(value)} (line {line}); MLPerf does not state its unit: "
                             f"to check it, add `claim throughput = {_number(value)} token/s  from log \"{run.log}:{line}\"` "
                             "if your benchmark counts tokens.")


def _calendar_and_target(run: ImportedRun, events: dict[str, list[tuple[dict, int]]], gbs) -> None:
    start, stop = events.get("run_start"), events.get("run_stop")
    if start and stop:
        t0, t1 = start[0][0].get("time_ms"), stop[-1][0].get("time_ms")
        if isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and t1 > t0:
            seconds = f"{(t1 - t0) / 1000:.3f}"
            run.put("calendar", Field.number("wall_clock", seconds, "s", run.cite(f"{start[0][1]},{stop[-1][1]}",
                                             "run_stop time_ms - run_start time_ms"), "MLPerf time to train"))
    evals = events.get("eval_accuracy", [])
    status = (stop[-1][0].get("metadata") or {}).get("status") if stop else None
    batch = _number(gbs[0].get("value")) if gbs else None
    if not evals or not batch:
        return
    event, line = evals[-1]
    samples = _number((event.get("metadata") or {}).get("samples_count"))
    accuracy = _number(event.get("value"))
    metadata = event.get("metadata") or {}
    how = f"samples_count {samples} / global_batch_size {batch}"
    if not samples and _number(metadata.get("epoch_num")):
        # GPT-3's reference logs `epoch_num`, the tokens consumed (evaluations every 24,576 sequences of 2,048
        # tokens): samples = epoch_num / max_sequence_length.
        seq = first_value(events, "max_sequence_length")
        tokens = _number(metadata.get("epoch_num"))
        if seq and tokens and float(seq) > 0:
            samples = f"{float(tokens) / float(seq):.6g}"
            how = f"epoch_num {tokens} tokens / max_sequence_length {seq} / global_batch_size {batch}"
        else:
            run.notes.append(f"eval_accuracy (line {line}) carries epoch_num, the tokens consumed, but the log has no "
                             "max_sequence_length to turn it into steps: no steps and no target are written.")
            return
    if samples and accuracy:
        exact = float(samples) / float(batch)
        steps_text = str(math.ceil(exact - 1e-9))
        if exact != int(exact):  # an evaluation inside a step: the step that consumed that sample
            how += f" = {exact:.4g}, rounded up to the step that consumed that sample"
        run.put("calendar", Field.number("steps", steps_text, "step", run.cite(line, how)))
        if status == "success":
            run.put("target", Field.string("metric", "eval_accuracy", run.cite(line)))
            run.put("target", Field.number("value", accuracy, "", run.cite(line), "the last evaluation of a successful run"))
            run.put("target", Field.number("reached_at", steps_text, "step", run.cite(line, how)))
        else:
            run.notes.append(f"run_stop status is {str(status)[:20]!r}, not success: no target is written.")
    elif not samples:
        run.notes.append(f"the last eval_accuracy (line {line}) carries neither samples_count nor epoch_num: "
                         "no steps and no target are written.")


def first_value(events: dict[str, list[tuple[dict, int]]], key: str) -> str | None:
    got = events.get(key)
    return _number(got[0][0].get("value")) if got else None


def _hardware(run: ImportedRun, platform: tuple[dict, int] | None, system: tuple[dict, int] | None) -> None:
    """The accelerator and the count from SYSJSON (accelerator_model_name, number_of_nodes,
    accelerators_per_node) or, failing that, from the submission_platform string."""
    from effspec.engine.catalog import canonical_accelerator

    acc = count = None
    if system is not None:
        sysd, line = system
        name = sysd.get("accelerator_model_name")
        if isinstance(name, str) and canonical_accelerator(name):
            acc = Field.string("accelerator", canonical_accelerator(name) or "", run.cite(line),
                               f"SYSJSON accelerator_model_name {name[:60]}")
        nodes, per = _whole(sysd.get("number_of_nodes")), _whole(sysd.get("accelerators_per_node"))
        if nodes and per:
            count = Field.number("count", str(nodes * per), "device", run.cite(
                line, f"SYSJSON number_of_nodes {nodes} x accelerators_per_node {per}"))
    if platform is not None and (acc is None or count is None):
        text, line = str(platform[0].get("value"))[:120], platform[1]
        m = PLATFORM.fullmatch(text.strip())
        if m:
            nodes, rest = int(m.group(1)), m.group(2)
            per_node = PER_NODE.fullmatch(rest)
            name = per_node.group(3) if per_node and canonical_accelerator(per_node.group(3)) else rest
            if acc is None and canonical_accelerator(name):
                acc = Field.string("accelerator", canonical_accelerator(name) or "", run.cite(line),
                                   f"submission_platform {text}")
            if count is None and per_node and name == per_node.group(3):
                per = int(per_node.group(2))
                count = Field.number("count", str(nodes * per), "device", run.cite(
                    line, f"submission_platform {nodes} node(s) x {per} {name}"))
            elif count is None:
                count = Field.todo("count", f"devices: submission_platform (line {line}) says {nodes} node(s) of "
                                   f"{rest[:40]}, not how many accelerators each has")
        elif acc is None and canonical_accelerator(text):
            acc = Field.string("accelerator", canonical_accelerator(text) or "", run.cite(line), f"submission_platform {text}")
    todo_hardware(run, accelerator=acc, count=count)


def _whole(value) -> int | None:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() and 0 < int(text) < 10**7 else None
