"""Helpers the format modules share: the Megatron-style argument dump, the
warm-up and representative-sample rules, version dates, hardware fields."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from effspec.importers.record import Field, ImportedRun, Source, StepLog, number

# `_print_args` in megatron/training/arguments.py (Megatron-LM, and the
# Megatron-DeepSpeed fork, print the same layout):
#   ------------------------ arguments ------------------------
#     num_layers ...................................... 32
#   -------------------- end of arguments ---------------------
ARGS_BEGIN = re.compile(r"-{4,} arguments -{4,}$")
ARGS_END = re.compile(r"-{4,} end of arguments -{4,}$")
ARGS_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*) \.{2,} (.*)$")
INT = re.compile(r"[0-9]+")

WARMUP_FACTOR = 1.5  # the stall threshold effspec uses (EFF503): 1.5 x the median


@dataclass
class ArgDump:
    """Arguments from the dump, each with its line number."""

    values: dict[str, tuple[str, int]]

    def text(self, name: str) -> str | None:
        got = self.values.get(name)
        return got[0].strip() if got else None

    def line(self, name: str) -> int:
        return self.values[name][1]

    def int(self, name: str) -> int | None:
        text = self.text(name)
        return int(text) if text is not None and INT.fullmatch(text) else None

    def flag(self, name: str) -> bool | None:
        text = self.text(name)
        return {"True": True, "False": False}.get(text or "")


def read_arg_line(text: str, dump: ArgDump, line: int) -> bool:
    """Record one dump line; False when ``text`` is not one."""
    m = ARGS_LINE.match(text)
    if not m:
        return False
    dump.values.setdefault(m.group(1), (m.group(2)[:200], line))
    return True


@dataclass(frozen=True)
class Summary:
    warmup: int  # leading samples excluded
    representative: int | None  # index into the samples: the kept one nearest their median
    median_all: float


def summarize(values: list[float]) -> Summary:
    """The warm-up rule and the representative sample, both stated in the spec.

    Warm-up: the leading samples more than 1.5x away from the median of all
    samples (slower, or faster as after an asynchronous dispatch), at most half
    of them.  Representative: among the kept samples, the one nearest their
    median, the earliest on a tie; the framework's own figures printed on its
    line become the claims.
    """
    if not values:
        return Summary(0, None, 0.0)
    med = statistics.median(values)
    warmup = 0
    while warmup < len(values) // 2 and (values[warmup] > WARMUP_FACTOR * med or values[warmup] < med / WARMUP_FACTOR):
        warmup += 1
    kept = values[warmup:]
    kept_med = statistics.median(kept)
    best = min(range(len(kept)), key=lambda i: (abs(kept[i] - kept_med), i))
    return Summary(warmup, warmup + best, med)


def timing_fields(run: ImportedRun, summary: Summary, what: str) -> None:
    """`step_time` from the CSV and `warmup`, with the rule that chose the warm-up."""
    steps = run.steps
    first, last = steps.lines[0], steps.lines[-1]
    run.put("timing", Field(
        "step_time", f'file "{{steps_csv}}" column "step_time_{run.step_unit}" {run.step_unit}',
        run.cite(f"{first}-{last}", f"{len(steps)} {what}"), run.step_note))
    if summary.warmup:
        lines = ", ".join(str(n) for n in steps.lines[: min(summary.warmup, 5)])
        why = (f"leading samples more than {WARMUP_FACTOR:g}x away from the median of all {len(steps)} "
               f"({_num(summary.median_all)} s): line {lines}")
    else:
        why = f"no leading sample is more than {WARMUP_FACTOR:g}x away from the median of all {len(steps)}"
    run.put("timing", Field.number("warmup", str(summary.warmup), "step", Source("assumed", why),
                                   "effspec import's warm-up rule; change it if you know better"))
    run.put("timing", Field.name("statistic", "median"))


def flag_warmup(steps: StepLog, summary: Summary) -> StepLog:
    """The first ``summary.warmup`` samples read back flagged `warmup` (in the CSV)."""
    steps.warmup = summary.warmup
    return steps


def _num(x: float) -> str:
    return f"{x:.4g}"


def seconds(steps: StepLog, unit: str) -> list[float]:
    return steps.seconds(unit)


def todo_hardware(run: ImportedRun, *, accelerator: Field | None = None, count: Field | None = None,
                  dtype: Field | None = None, peak: Field | None = None, framework_peak: str = "") -> None:
    """The hardware block: what the log gave, and a `TODO` for the rest."""
    run.put("hardware", accelerator or Field.todo(
        "accelerator", "the log names no device: e.g. \"H100-SXM5-80GB\" (see `effspec explain EFF040`)"))
    run.put("hardware", count or Field.todo("count", "devices in the run: the log does not print the world size"))
    run.put("hardware", dtype or Field.todo("dtype", "the matmul datatype: the log does not say"))
    hint = f"; the framework divided by {framework_peak}" if framework_peak else ""
    run.put("hardware", peak or Field.todo(
        "peak", f"the per-device dense peak for dtype: `catalog` once accelerator is known, or a datasheet figure{hint}"))


def preset_since(name: str) -> str:
    """The boundary date of a framework's preset (``Preset.since``, effspec.front.presets): the one source of
    each version boundary the importers use."""
    from effspec.front.presets import by_name

    found = by_name(name)
    if found is None or not found.since:
        raise KeyError(f"no preset {name} with a boundary date")
    return found.since


def version_date(text: str) -> str | None:
    """`YYYY`, `YYYY-MM` or `YYYY-MM-DD` as a sortable `YYYY-MM-DD` (start of the period), else None."""
    m = re.fullmatch(r"(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", text.strip())
    if not m:
        return None
    return f"{m.group(1)}-{m.group(2) or '01'}-{m.group(3) or '01'}"


def literal(text: str) -> str | None:
    """A number literal from log text, or None."""
    try:
        return number(text)
    except ValueError:
        return None


IMPOSSIBLE_FACTOR = 100.0  # a step this many times shorter than the log's median step is not a real step


def exclude_impossible(run: ImportedRun, reader) -> int:
    """Leave out the samples no chip could produce: a step time more than 100x below the median of the
    log's steps (a timer read before the work was dispatched, a unit slip).  Each is reported as EFF805
    at its line, with its value and the median; returns how many were left out."""
    from effspec.diagnostics import Diagnostic, Span

    times = [t for t in run.steps.times if t == t]
    if len(times) < 3:
        return 0
    med = statistics.median(times)
    bad = {i for i, t in enumerate(run.steps.times) if t == t and t * IMPOSSIBLE_FACTOR < med}
    if not bad:
        return 0
    kept = StepLog()
    for i, step in enumerate(run.steps):
        if i not in bad:
            kept.append(step)
            continue
        reader.diagnostics.append(Diagnostic(
            "EFF805", "warning", Span(step.line, 1, step.line, 2),
            f"step {step.step}: {step.time} {run.step_unit} is more than {IMPOSSIBLE_FACTOR:g}x shorter than the "
            f"median of the log's {len(times)} steps ({_num(med)} {run.step_unit}); left out of the samples",
            "no chip runs a step in a hundredth of the log's own step time: the timer was read before the work "
            "finished, or the line is another rank's or run's", file=reader.name))
    run.steps = kept
    return len(bad)
