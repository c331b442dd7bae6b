"""Megatron-DeepSpeed (BLOOM, early GPT-NeoX) stdout: `elapsed time per iteration (s)` and `TFLOPs:`.

Sources: bigscience-workshop/bigscience train/tr11-176B-ml/README.md (the
verbatim line, and "Since we use activation check-pointing … it's the hardware
TFLOPs that we calculate - using the `4*2` co-efficient"); the formula is
Narayanan et al. 2021 eq. 3, 24·f·B·s·L·h²·(1 + s/6h + V/16Lh) with f = 4 under
checkpointing (3 otherwise): with f = 4 that is effspec's `megatron` preset,
which counts the recomputation (EFF102 says so: these are HFU-style TFLOPs).
The argument dump has Megatron-LM's layout.
"""

from __future__ import annotations

import re

from effspec.importers.base import LogFormat
from effspec.importers.common import (
    ARGS_BEGIN,
    ARGS_END,
    ArgDump,
    flag_warmup,
    literal,
    read_arg_line,
    seconds,
    summarize,
    timing_fields,
    todo_hardware,
    version_date,
)
from effspec.importers.megatron import PADDED_VOCAB, arg_field, hardware_from_args, line_fields, model_from_args
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step

PREFIX = re.compile(r"^\[default\d+\]:\s?")
ITERATION = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
PR_371 = "2024-08-19"  # microsoft/Megatron-DeepSpeed b7b2d5ef: the throughput_calculator for GQA


class Importer(LogFormat):
    name = "megatron_deepspeed"
    framework = "Megatron-DeepSpeed"
    summary = "`iteration N/ M | … elapsed time per iteration (s): … | samples per second: … | TFLOPs: …` lines and the argument dump"
    versions = ("a date YYYY[-MM[-DD]] of the Megatron-DeepSpeed checkout (its throughput_calculator changed on "
                "2024-08-19, PR #371; BLOOM's bigscience fork is older)")

    def detect(self, lines: list[str]) -> float:
        return 1.0 if any("elapsed time per iteration (s):" in t and ITERATION.search(t) for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """Eq. 3 with f = 4 when activation checkpointing ran, f = 3 without (`megatron_deepspeed_pre371`: BLOOM's
        fork and Megatron-DeepSpeed before PR #371); the 2024 throughput_calculator from 2024-08-19 when a version
        says so.  Unlike the other formats, no version means the older formula: this line is BLOOM's."""
        date = None if version is None else version_date(version)
        if version is not None and date is None:
            raise ValueError(f"cannot read the Megatron-DeepSpeed version `{version}`")
        knobs = {"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "executed"}
        if date is not None and date >= PR_371:
            return Convention("megatron_deepspeed", knobs, "Megatron-DeepSpeed 2024-08-19 and later",
                              "microsoft/Megatron-DeepSpeed megatron/utils.py throughput_calculator since b7b2d5ef (PR #371)",
                              "Megatron-DeepSpeed's TFLOPs since 2024-08-19: 2 x (3 forward MACs + the recomputed forward "
                              "when checkpointing ran), K/V counted for grouped-query attention; hardware FLOPs")
        return Convention("megatron_deepspeed_pre371", knobs, "Megatron-DeepSpeed eq. 3 (BLOOM's fork, before 2024-08-19)",
                          "bigscience-workshop/Megatron-DeepSpeed TFLOPs (Narayanan et al. 2021 eq. 3, as "
                          "tr11-176B-ml/README.md states); microsoft/Megatron-DeepSpeed throughput_calculator before b7b2d5ef",
                          "Megatron-DeepSpeed's TFLOPs: eq. 3 with f = 4 when activation checkpointing ran (the recomputed "
                          "forward is counted: hardware FLOPs), f = 3 without")

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        args, in_args, vocab = ArgDump({}), False, None
        for item in lines:
            n, text = item.number, PREFIX.sub("", item.text)
            if in_args:
                in_args = not ARGS_END.search(text) and read_arg_line(text, args, n)
                continue
            if ARGS_BEGIN.search(text):
                in_args = True
                continue
            m = PADDED_VOCAB.search(text)
            if m:
                vocab = (m.group(3), n)
            elif ITERATION.search(text):
                self._iteration(run, lines, n, text)
        if not run.steps:
            return []
        _finish(run, args, vocab)
        return [run]

    @staticmethod
    def _iteration(run: ImportedRun, lines: LogReader, n: int, text: str) -> None:
        if len(ITERATION.findall(text)) > 1:
            lines.warn(n, "two iteration lines interleaved on one line; skipped", excerpt=text)
            return
        fields = line_fields(text)
        elapsed = literal(fields.get("elapsed time per iteration (s)", ""))
        if "number of nan iterations" not in fields or elapsed is None or float(elapsed) <= 0:
            lines.warn(n, "iteration line cut short (no `elapsed time per iteration (s)` or `number of nan iterations`); "
                       "skipped", excerpt=text)
            return
        figures = {k: v for k, v in (("tflops", literal(fields.get("TFLOPs", ""))),
                                     ("samples_per_second", literal(fields.get("samples per second", ""))),
                                     ("global_batch", literal(fields.get("global batch size", "")))) if v}
        flags = tuple(f for key, f in (("number of skipped iterations", "skipped"), ("number of nan iterations", "nan"))
                      if fields.get(key, "0").strip() not in ("0", ""))
        step = ITERATION.search(text)
        if step is not None:
            run.steps.append(Step(int(step.group(1)), n, elapsed, figures, flags))


def _finish(run: ImportedRun, args: ArgDump, vocab) -> None:
    run.step_unit = "s"
    run.step_figures = ("tflops", "samples_per_second", "global_batch")
    run.step_note = "each sample is the mean iteration time over one log interval"
    summary = summarize(seconds(run.steps, "s"))
    run.steps = flag_warmup(run.steps, summary)
    model_from_args(run, args, vocab)
    ffn = run.get("model", "ffn")
    if ffn is not None and ffn.value is None:
        glu = args.text("glu_activation")
        if glu is not None:
            run.put("model", Field.name("ffn", glu if glu in ("swiglu", "geglu") else "gelu", run.cite(args.line("glu_activation")),
                                        f"glu_activation {glu}"))
    arg_field(run, args, "work", "seq_len", "seq_length", "token/sequence")
    rep = run.steps[summary.representative] if summary.representative is not None else None
    if rep and "global_batch" in rep.figures:
        run.put("work", Field.number("global_batch", rep.figures["global_batch"], "sequence", run.cite(rep.line)))
    for key, name in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"), ("dp", "data_parallel_size")):
        arg_field(run, args, "parallelism", key, name)
    if "checkpoint_activations" in args.values:
        on = bool(args.flag("checkpoint_activations"))
        run.put("parallelism", Field.name("recompute", "full" if on else "none", run.cite(args.line("checkpoint_activations")),
                                          f"checkpoint_activations {args.text('checkpoint_activations')}"))
    else:
        run.notes.append("The log has no checkpoint_activations: its TFLOPs are read with f = 3 (no recomputation counted).")
    if args.values:
        hardware_from_args(run, args)
    else:
        todo_hardware(run)
    timing_fields(run, summary, "iteration lines")
    run.put("timing", Field.string("boundary", "Megatron-DeepSpeed interval timer / iterations in the interval",
                                   Source("paper", "bigscience-workshop/Megatron-DeepSpeed megatron/training.py")))
    if rep is None:
        return
    why = "the kept sample nearest the median step time"
    if "tflops" in rep.figures:
        run.claims.append(Claim("tflops_per_device", f"{rep.figures['tflops']} TFLOP/s", run.cite(rep.line),
                                f"TFLOPs on {why} (hardware FLOPs under checkpointing)"))
    seq = run.get("work", "seq_len")
    if "samples_per_second" in rep.figures and seq is not None and seq.value:
        run.claims.append(Claim("throughput", f"{rep.figures['samples_per_second']} sequence/s * {seq.value}",
                                run.cite(rep.line), f"samples per second on {why}, times seq_length"))
