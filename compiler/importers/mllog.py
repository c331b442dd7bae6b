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

from effspec.importers.base import LogFormat
from effspec.importers.common import literal, todo_hardware
from effspec.importers.reader import LogReader
from effspec.importers.record import Convention, Field, ImportedRun

PREFIX = ":::MLLOG "
WANTED = {"run_start", "run_stop", "global_batch_size", "max_sequence_length", "eval_accuracy", "tracked_stats",
          "submission_benchmark", "submission_platform"}


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
        for item in lines:
            at = item.text.find(PREFIX)
            if at < 0:
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
        _fill(run, events)
        return [run]


def _number(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return literal(repr(value) if isinstance(value, float) else str(value))


def _fill(run: ImportedRun, events: dict[str, list[tuple[dict, int]]]) -> None:
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
    gbs_value = _number(gbs[0].get("value")) if gbs else None
    if gbs and gbs_value:
        run.put("work", Field.number("global_batch", gbs_value, "sequence", run.cite(gbs[1])))
    platform = first.get("submission_platform")
    if platform:
        run.notes.append(f"submission_platform (line {platform[1]}): {str(platform[0].get('value'))[:80]}")
    todo_hardware(run)
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
    if samples and accuracy:
        steps = float(samples) / float(batch)
        steps_text = str(int(steps)) if steps == int(steps) else f"{steps:.3f}"
        run.put("calendar", Field.number("steps", steps_text, "step", run.cite(line, f"samples_count {samples} / "
                                         f"global_batch_size {batch}")))
        if status == "success":
            run.put("target", Field.string("metric", "eval_accuracy", run.cite(line)))
            run.put("target", Field.number("value", accuracy, "", run.cite(line), "the last evaluation of a successful run"))
            run.put("target", Field.number("reached_at", steps_text, "step", run.cite(line, f"samples_count {samples} / "
                                                                                       f"global_batch_size {batch}")))
        else:
            run.notes.append(f"run_stop status is {str(status)[:20]!r}, not success: no target is written.")
