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
    exclude_impossible,
    flag_warmup,
    literal,
    preset_since,
    read_arg_line,
    seconds,
    summarize,
    timing_fields,
    todo_hardware,
    version_date,
)
from effspec.importers.megatron import (
    PADDED_VOCAB,
    arg_field,
    hardware_from_args,
    line_fields,
    model_from_args,
    read_world_line,
    world_and_dtype,
)
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step

PREFIX = re.compile(r"^\[default\d+\]:\s?")
ITERATION = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
# microsoft/Megatron-DeepSpeed b7b2d5ef (PR #371, 2024-08-19): the throughput_calculator for GQA; the date is the
# `megatron_deepspeed` preset's `since` (effspec.front.presets), its one source.
PR_371 = preset_since("megatron_deepspeed")


class Importer(LogFormat):
    name = "megatron_deepspeed"
    framework = "Megatron-DeepSpeed"
    summary = "`iteration N/ M | … elapsed time per iteration (s): … | samples per second: … | TFLOPs: …` lines and the argument dump"
    versions = ("a date YYYY[-MM[-DD]] of the Megatron-DeepSpeed checkout (its throughput_calculator changed on "
                "2024-08-19, PR #371; BLOOM's bigscience fork is older)")

    def detect(self, lines: list[str]) -> float:
        if any("elapsed time per iteration (s):" in t and ITERATION.search(t) for t in lines):
            return 1.0
        # The 2021 fork prints Megatron-LM's (ms) line; DeepSpeed's start-up lines tell it apart.
        deepspeed = any("DeepSpeed is enabled" in t or "DeepSpeed info: version=" in t for t in lines)
        return 1.0 if deepspeed and any("elapsed time per iteration (ms):" in t and ITERATION.search(t) for t in lines) else 0.0

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
        state = _Lines()
        for item in lines:
            n, text = item.number, PREFIX.sub("", item.text)
            if in_args:
                if ARGS_END.search(text):
                    in_args = False
                    continue
                if read_arg_line(text, args, n):
                    continue
                in_args = False  # a dump with no closing line: this line is read as any other
            if ARGS_BEGIN.search(text):
                in_args = True
                continue
            if "using " in text and state.world_line(n, text):
                continue
            m = PADDED_VOCAB.search(text)
            if m:
                vocab = (m.group(3), n)
            elif ITERATION.search(text):
                self._iteration(run, lines, n, text, state)
        if not run.steps:
            return []
        exclude_impossible(run, lines)
        _finish(run, args, vocab, state)
        return [run]

    @staticmethod
    def _iteration(run: ImportedRun, lines: LogReader, n: int, text: str, state: _Lines) -> None:
        if len(ITERATION.findall(text)) > 1:
            lines.warn(n, "two iteration lines interleaved on one line; skipped", excerpt=text)
            return
        fields = line_fields(text)
        unit = "s" if "elapsed time per iteration (s)" in fields else "ms" if "elapsed time per iteration (ms)" in fields else None
        elapsed = literal(fields.get(f"elapsed time per iteration ({unit})", "")) if unit else None
        if "number of nan iterations" not in fields or elapsed is None or float(elapsed) <= 0:
            lines.warn(n, "iteration line cut short (no `elapsed time per iteration (s)` or `number of nan iterations`); "
                       "skipped", excerpt=text)
            return
        if state.unit is None:
            state.unit = unit
        elif unit != state.unit:
            lines.warn(n, f"iteration line timed in ({unit}) in a log whose first line is timed in ({state.unit}); skipped",
                       excerpt=text)
            return
        figures = {k: v for k, v in (("tflops", literal(fields.get("TFLOPs", ""))),
                                     ("samples_per_second", literal(fields.get("samples per second", ""))),
                                     ("global_batch", literal(fields.get("global batch size", ""))),
                                     ("consumed_samples", literal(fields.get("consumed samples", ""))),
                                     ("consumed_tokens", literal(fields.get("consumed tokens", "")))) if v}
        flags = tuple(f for key, f in (("number of skipped iterations", "skipped"), ("number of nan iterations", "nan"))
                      if fields.get(key, "0").strip() not in ("0", ""))
        step = ITERATION.search(text)
        if step is None:
            return
        it = int(step.group(1))
        if run.steps:
            last = run.steps[-1]
            if last.step == it and last.time == elapsed and last.figures == figures:
                state.duplicates.append(n)  # the same iteration printed by another rank: one sample
                return
        run.steps.append(Step(it, n, elapsed, figures, flags))


class _Lines:
    """What the log says outside the argument dump and the iteration lines."""

    def __init__(self) -> None:
        self.unit: str | None = None
        self.world: dict[str, tuple[str, int]] = {}
        self.dtype: tuple[str, int] | None = None
        self.duplicates: list[int] = []

    def world_line(self, n: int, text: str) -> bool:
        return read_world_line(self, n, text)


def _finish(run: ImportedRun, args: ArgDump, vocab, state: _Lines) -> None:
    run.step_unit = state.unit or "s"
    run.step_figures = ("tflops", "samples_per_second", "global_batch", "consumed_samples", "consumed_tokens")
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
    if run.get("work", "seq_len") is None and rep is not None:
        _seq_from_tokens(run, rep)
    if rep and "global_batch" in rep.figures:
        run.put("work", Field.number("global_batch", rep.figures["global_batch"], "sequence", run.cite(rep.line)))
    for key, name in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"), ("dp", "data_parallel_size")):
        arg_field(run, args, "parallelism", key, name)
    world_and_dtype(run, state.world, state.dtype)
    gran = args.text("recompute_granularity")
    if gran in ("full", "selective"):  # microsoft/Megatron-DeepSpeed after the rename (f = 4 for both since PR #243)
        run.put("parallelism", Field.name("recompute", gran, run.cite(args.line("recompute_granularity")),
                                          f"recompute_granularity {gran}"))
    elif "checkpoint_activations" in args.values:
        on = bool(args.flag("checkpoint_activations"))
        run.put("parallelism", Field.name("recompute", "full" if on else "none", run.cite(args.line("checkpoint_activations")),
                                          f"checkpoint_activations {args.text('checkpoint_activations')}"))
    else:
        # the TFLOPs count the recomputed forward when checkpointing ran (f = 4): the check needs to know
        run.put("parallelism", Field.todo("recompute", "`full` if the run used --checkpoint-activations (BLOOM did: its "
                                          "TFLOPs then count the recomputed forward, f = 4), `none` if not; the log "
                                          "has no argument dump to say"))
    if args.values or state.world or state.dtype:
        hardware_from_args(run, args, state.world, state.dtype)
    else:
        todo_hardware(run)
    if state.duplicates:
        shown = ", ".join(str(n) for n in state.duplicates[:5]) + (", …" if len(state.duplicates) > 5 else "")
        run.notes.append(f"{len(state.duplicates)} iteration line(s) repeat the one before them (other ranks printing "
                         f"the same step: line {shown}): one sample each.")
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


def _seq_from_tokens(run: ImportedRun, rep: Step) -> None:
    """BLOOM's line prints consumed tokens and consumed samples: tokens per sequence is their quotient, when whole."""
    tokens, samples = rep.figures.get("consumed_tokens"), rep.figures.get("consumed_samples")
    if not tokens or not samples or int(float(samples)) <= 0:
        run.put("work", Field.todo("seq_len", "tokens per sequence: no seq_length in the log"))
        return
    seq, rest = divmod(int(float(tokens)), int(float(samples)))
    if rest:
        run.put("work", Field.todo("seq_len", f"consumed tokens / consumed samples on line {rep.line} is not whole "
                                   f"({tokens} / {samples}): a curriculum or packed run; write the sequence length"))
        return
    run.put("work", Field.number("seq_len", str(seq), "token/sequence", run.cite(
        rep.line, f"consumed tokens {tokens} / consumed samples {samples}"), "derived: the line prints no seq_length"))
