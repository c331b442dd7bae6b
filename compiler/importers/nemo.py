"""NeMo (PyTorch Lightning progress bar): `train_step_timing in s=` per step.

Source: NGC DGXC benchmarking recipe text quoted in
shared/reference/frameworks-and-logs.md section 1.2 (`Epoch 0: : 100%|…|
100/100 [07:57<00:00, reduced_train_loss=7.310, global_step=99.00,
consumed_samples=25600.0, train_step_timing in s=3.590]`); the progress bar
rewrites itself with carriage returns, which the reader splits.  The FLOP
count of NeMo's MFU recipes is nemo/utils/flops_formulas.py (full attention,
logits, no recomputation: `palm`); the progress bar itself prints no FLOPs.
"""

from __future__ import annotations

import re

from effspec.importers.base import LogFormat
from effspec.importers.common import flag_warmup, literal, seconds, summarize, timing_fields, todo_hardware, version_date
from effspec.importers.reader import LogReader
from effspec.importers.record import Convention, Field, ImportedRun, Source, Step

CAUSAL_SINCE = "2025-08-09"  # NVIDIA/NeMo 6251117f4c (PR #14424): causal attention in flops_formulas
TIMING = re.compile(r"train_step_timing in s=([0-9.]+)(?=[,\]]|$)")
STEP = re.compile(r"global_step=([0-9.]+)(?=[,\]])")
SAMPLES = re.compile(r"consumed_samples=([0-9.]+)(?=[,\]])")


class Importer(LogFormat):
    name = "nemo"
    framework = "NeMo"
    summary = "Lightning progress-bar updates with `global_step=…, consumed_samples=…, train_step_timing in s=…`"
    versions = "a date YYYY[-MM[-DD]] of the NeMo checkout (causal attention counted from 2025-08-09, PR #14424)"

    def detect(self, lines: list[str]) -> float:
        return 1.0 if any("train_step_timing in s=" in t for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """nemo/utils/flops_formulas.py: causal attention since PR #14424 (2025-08-09), full before."""
        date = CAUSAL_SINCE if version is None else version_date(version)
        if date is None:
            raise ValueError(f"cannot read the NeMo version `{version}`")
        causal = date >= CAUSAL_SINCE
        knobs = {"attention": "causal" if causal else "full", "logits": "included", "embeddings": "excluded",
                 "recompute": "excluded"}
        return Convention("nemo" if causal else "nemo_pre14424", knobs,
                          "NeMo flops_formulas " + ("2025-08-09 and later" if causal else "before 2025-08-09"),
                          "NVIDIA/NeMo nemo/utils/flops_formulas.py" + (" since 6251117f4c (PR #14424), checked at 8cfedd7"
                                                                        if causal else " before 6251117f4c (PR #14424)"),
                          "NeMo's MFU recipes count the GEMMs with " + ("causal attention (6·s/h per layer)" if causal
                                                                        else "full attention (12·s/h per layer)")
                          + ", logits in, no recomputation")

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        last_step = None
        samples: dict[int, tuple[str, int]] = {}
        for item in lines:
            text = item.text
            if "train_step_timing in s=" not in text:
                continue
            m, s = TIMING.search(text), STEP.search(text)
            if text.count("train_step_timing in s=") > 1 or not m or not s:
                lines.warn(item.number, "progress-bar update that cannot be read whole (cut short, or two on one line); "
                           "skipped", excerpt=text)
                continue
            step = int(float(s.group(1)))
            time = literal(m.group(1))
            if step == last_step or time is None or float(time) <= 0:
                continue  # the bar redraws the same step
            last_step = step
            c = SAMPLES.search(text)
            if c and literal(c.group(1)):
                samples[step] = (c.group(1), item.number)
            run.steps.append(Step(step, item.number, time, {"consumed_samples": c.group(1)} if c else {}))
        if not run.steps:
            return []
        _finish(run)
        return [run]


def _finish(run: ImportedRun) -> None:
    run.step_unit = "s"
    run.step_figures = ("consumed_samples",)
    run.step_note = "each sample is one optimizer step's train_step_timing (Lightning's timer around the training step)"
    summary = summarize(seconds(run.steps, "s"))
    run.steps = flag_warmup(run.steps, summary)
    for key in ("kind", "layers", "d_model", "heads", "ffn", "d_ff", "vocab"):
        run.put("model", Field.todo(key, "the progress bar has no model shape: take it from the NeMo recipe"))
    run.put("work", Field.todo("seq_len", "seq_length from the NeMo recipe"))
    rep = run.steps[summary.representative] if summary.representative is not None else run.steps[-1]
    consumed = rep.figures.get("consumed_samples")
    if consumed and float(consumed) > 0:
        batch = float(consumed) / (rep.step + 1)
        text = str(int(batch)) if batch == int(batch) else f"{batch:.3f}"
        run.put("work", Field.number("global_batch", text, "sequence", run.cite(
            rep.line, f"consumed_samples {consumed} / (global_step {rep.step} + 1)")))
    else:
        run.put("work", Field.todo("global_batch", "global batch size from the NeMo recipe"))
    todo_hardware(run)
    timing_fields(run, summary, "progress-bar steps")
    run.put("timing", Field.string("boundary", "Lightning train_step_timing: one training step, host timer",
                                   Source("paper", "NeMo timing callback (train_step_timing)")))
    run.notes.append("NeMo's progress bar prints no TFLOP/s or MFU: nothing to claim; effspec derives them once the "
                     "TODO lines are filled in.")
