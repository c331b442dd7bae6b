"""NeMo: the PyTorch Lightning progress bar (NeMo 1) and NeMo 2's `Training epoch …` lines.

Sources: the NGC DGXC benchmarking recipe text quoted in
shared/reference/frameworks-and-logs.md section 1.2 (`Epoch 0: : 100%|…|
100/100 [07:57<00:00, reduced_train_loss=7.310, global_step=99.00,
consumed_samples=25600.0, train_step_timing in s=3.590]`); the progress bar
rewrites itself with carriage returns, which the reader splits.  Lightning
prints each bar figure with `Tqdm.format_num` (lightning/pytorch/callbacks/
progress/tqdm_progress.py): tqdm's `{:.3g}` when that is shorter than `str(n)`,
padded to 5 characters, so `99.00`, `5.000` and `6023.0` are exact, while
`2e+3`, `1.63e+6` and `1.23e+5` are rounded to 3 significant digits (a step
printed `2e+3` is any of 1995..2004).  NeMo 2 (nemo/lightning/pytorch/
callbacks/progress_printer.py) prints `Training epoch 0, iteration 120/149 |
lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 |
reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | TFLOPS_per_GPU:
865.7`: integers whole, floats with `{:.4g}`.  The FLOP count of NeMo's MFU
recipes and of TFLOPS_per_GPU (the FLOPsMeasurementCallback) is
nemo/utils/flops_formulas.py.
"""

from __future__ import annotations

import itertools
import re

from effspec.importers.base import LogFormat
from effspec.importers.common import (
    flag_warmup,
    literal,
    preset_since,
    seconds,
    summarize,
    timing_fields,
    todo_hardware,
    version_date,
)
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step

# NVIDIA/NeMo 6251117f4c (PR #14424, 2025-08-09): causal attention in flops_formulas; the `nemo` preset's `since`
# (effspec.front.presets) is the one source of the date.
CAUSAL_SINCE = preset_since("nemo")
# A figure as Lightning or NeMo 2 prints it: plain, exponent form (rounded), or nan/inf.
NUM = r"(-?[0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?|nan|inf|-inf)"
BAR_TIMING = re.compile(r"train_step_timing in s=" + NUM + r"(?=[,\]]|$)")
BAR_STEP = re.compile(r"global_step=" + NUM + r"(?=[,\]]|$)")
BAR_SAMPLES = re.compile(r"consumed_samples=" + NUM + r"(?=[,\]]|$)")
BAR_LOSS = re.compile(r"reduced_train_loss=" + NUM + r"(?=[,\]]|$)")
# NeMo 2, after any prefix ending in a space, `]`, `:`, `>` or `|` (srun's `0: `, a timestamp, a quote's `> `).
NEMO2 = re.compile(r"^(?:.*?[\s\]:>|])?Training epoch (\d+), iteration (\d+)/(\d+) \|(.*)$")
NEMO2_FIELD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_ ]*?): " + NUM + r"\s*$")
MEMBERS = re.compile(r"Initializing distributed: GLOBAL_RANK: \d+, MEMBER: \d+/(\d+)\b")
# NeMo 1's Hydra config, as its training scripts log it (`logging.info(f'\n{OmegaConf.to_yaml(cfg)}')` after
# `************** Experiment configuration ***********`): a `[NeMo I … script:LINE]` line with nothing after it,
# then the YAML, each line indented 4 spaces by NeMo's log formatter (`    trainer:`, `      devices: 1`).
DUMP_HEAD = re.compile(r"^\[NeMo I [^\]]{0,200}\]\s*$")
DUMP_KEY = re.compile(r"^    ((?:  ){0,12})([A-Za-z_][A-Za-z0-9_]{0,80}):(?: (.*))?$")
DUMP_ITEM = re.compile(r"^    (?:  ){0,12}- ")
MAX_DUMP_LINES = 20_000  # a config is a few hundred lines; past this the dump is taken to have ended
PADDED_VOCAB = re.compile(r"Padded vocab_size: (\d+), original vocab_size: \d+")
# model.activation as NeMo 1 names it -> the language's ffn
# (the language's ffn forms: gelu, relu, swiglu, geglu; reglu and squared-relu have none, so are a TODO)
ACTIVATIONS = {"swiglu": "swiglu", "fast-swiglu": "swiglu", "gelu": "gelu", "fast-gelu": "gelu", "geglu": "geglu",
               "fast-geglu": "geglu", "relu": "relu"}
PRECISIONS = {"bf16": "bf16", "bf16-mixed": "bf16", "16": "fp16", "16-mixed": "fp16", "32": "fp32", "32-true": "fp32"}
RECOMPUTE = {"null": "none", "full": "full", "selective": "selective"}
FIGURES = ("consumed_samples", "global_batch_size", "tflops_per_gpu", "tokens_per_sec_per_gpu")


def rounded(text: str) -> bool:
    """A figure Lightning or NeMo 2 printed in exponent form: rounded (3 or 4 significant digits), not exact."""
    return "e" in text and text not in ("inf", "-inf")


def whole(text: str) -> int | None:
    """The exact whole number a figure prints, or None (rounded, fractional, nan)."""
    if rounded(text) or not re.fullmatch(r"[0-9]+(?:\.0*)?", text):
        return None
    return int(text.split(".")[0])


class Importer(LogFormat):
    name = "nemo"
    framework = "NeMo"
    summary = ("Lightning progress-bar updates with `global_step=…, consumed_samples=…, train_step_timing in s=…` "
               "(NeMo 1) or `Training epoch E, iteration I/N | … | train_step_timing in s: …` lines (NeMo 2)")
    versions = "a date YYYY[-MM[-DD]] of the NeMo checkout (causal attention counted from 2025-08-09, PR #14424)"

    def detect(self, lines: list[str]) -> float:
        return 1.0 if any("train_step_timing in s=" in t or NEMO2.match(t) for t in lines) else 0.0

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
        state = _State()
        for item in lines:
            text = item.text
            if state.dump is not None and _dump_line(state, item.number, text):
                continue
            if DUMP_HEAD.match(text):
                state.dump, state.path = (item.number, 0), []
                continue
            m = NEMO2.match(text)
            if m:
                state.nemo2 = True
                self._nemo2(run, lines, item.number, m, state)
            elif "train_step_timing in s=" in text:
                self._bar(run, lines, item.number, text, state)
            elif "global_step=" in text and "consumed_samples=" in text:
                state.untimed += 1
                if state.untimed == 1:
                    lines.warn(item.number, "progress-bar update without `train_step_timing in s=` (NeMo's "
                               "exp_manager.log_step_timing is off): no step time to read; skipped", excerpt=text)
            else:
                members = MEMBERS.search(text)
                if members and state.world is None:
                    state.world = (members.group(1), item.number)
                vocab = PADDED_VOCAB.search(text)
                if vocab and state.vocab is None:
                    state.vocab = (vocab.group(1), item.number)
        if not run.steps:
            return []
        _finish(run, state)
        return [run]

    @staticmethod
    def _bar(run: ImportedRun, lines: LogReader, n: int, text: str, state: _State) -> None:
        m, s = BAR_TIMING.search(text), BAR_STEP.search(text)
        if text.count("train_step_timing in s=") > 1 or not m or not s:
            lines.warn(n, "progress-bar update that cannot be read whole (cut short, an empty figure, or two on one "
                       "line); skipped", excerpt=text)
            return
        step_text, time = s.group(1), m.group(1)
        step = whole(step_text)
        if step is None:
            if (n, step_text) != state.last_rounded:  # the bar redraws the same update: one report per line and value
                state.last_rounded = (n, step_text)
                state.rounded += 1
                lines.warn(n, f"progress-bar update whose global_step is printed rounded (`{step_text}`, Lightning's "
                           "3 significant digits): its step number is not exact; skipped",
                           "Lightning prints a bar figure in exponent form when that is shorter; the exact steps "
                           "are in NeMo's TensorBoard or W&B logs", excerpt=text)
            return
        if step == state.last_step:
            return  # the bar redraws the same step
        state.last_step = step
        loss = BAR_LOSS.search(text)
        flags = ("nan",) if loss and loss.group(1) in ("nan", "inf", "-inf") else ()
        if literal(time) is None or float(time) <= 0:
            lines.warn(n, f"progress-bar update with no readable train_step_timing (`{time}`); skipped", excerpt=text)
            return
        figures = {}
        c = BAR_SAMPLES.search(text)
        if c and literal(c.group(1)):
            figures["consumed_samples"] = c.group(1)
        run.steps.append(Step(step, n, literal(time), figures, flags))

    @staticmethod
    def _nemo2(run: ImportedRun, lines: LogReader, n: int, m: re.Match[str], state: _State) -> None:
        fields: dict[str, str] = {}
        for part in m.group(4).split(" | "):
            f = NEMO2_FIELD.match(part)
            if f:
                fields[f.group(1).strip()] = f.group(2)
        time = fields.get("train_step_timing in s")
        if time is None:
            state.untimed += 1
            if state.untimed == 1:
                lines.warn(n, "NeMo 2 training line without `train_step_timing in s:` (the timing callback is off, "
                           "or the line is cut short); skipped", excerpt=m.group(0))
            return
        step_text = fields.get("global_step", m.group(2))
        step = whole(step_text)
        if step is None:
            state.rounded += 1
            lines.warn(n, f"training line whose global_step is printed rounded (`{step_text}`): its step number is "
                       "not exact; skipped", excerpt=m.group(0))
            return
        if literal(time) is None or float(time) <= 0:
            lines.warn(n, f"training line with no readable train_step_timing (`{time}`); skipped", excerpt=m.group(0))
            return
        loss = fields.get("reduced_train_loss")
        flags = ("nan",) if loss in ("nan", "inf", "-inf") else ()
        figures = {}
        for key, name in (("consumed_samples", "consumed_samples"), ("global_batch_size", "global_batch_size"),
                          ("TFLOPS_per_GPU", "tflops_per_gpu"), ("tokens_per_sec_per_gpu", "tokens_per_sec_per_gpu")):
            value = fields.get(key)
            if value is not None and literal(value):
                figures[name] = value
        run.steps.append(Step(step, n, literal(time), figures, flags))


class _State:
    def __init__(self) -> None:
        self.last_step: int | None = None
        self.last_rounded: tuple[int, str] | None = None
        self.rounded = 0  # updates skipped for a rounded step number
        self.untimed = 0  # NeMo 2 lines without a timing
        self.nemo2 = False
        self.world: tuple[str, int] | None = None
        self.vocab: tuple[str, int] | None = None  # `Padded vocab_size: N`
        self.dump: tuple[int, int] | None = None  # (the dump's head line, lines read) while in a config dump
        self.path: list[str] = []  # the YAML keys above the current line
        self.config: dict[str, tuple[str, int]] = {}  # `model.num_layers` -> (value as printed, line); first dump wins
        self.dumps = 0


def _dump_line(state: _State, n: int, text: str) -> bool:
    """One line of NeMo 1's config dump, kept as `a.b.c` -> (value, line); False (the dump has ended) on the
    first line that is not one (the line is then read as any other)."""
    assert state.dump is not None
    head, read = state.dump
    key = DUMP_KEY.match(text)
    if read >= MAX_DUMP_LINES or not (key or DUMP_ITEM.match(text)):
        state.dump = None
        if read:
            state.dumps += 1
        return False
    state.dump = (head, read + 1)
    if key:
        depth = len(key.group(1)) // 2
        state.path = state.path[:depth] + [key.group(2)]
        value = (key.group(3) or "").strip()
        if value and state.dumps == 0:  # a scalar; the first dump (a restart prints it again) is the run's
            state.config.setdefault(".".join(state.path), (value[:200], n))
    return True

def _finish(run: ImportedRun, state: _State) -> None:
    run.step_unit = "s"
    run.step_figures = FIGURES
    run.step_note = ("each sample is one optimizer step's train_step_timing (NeMo's timing callback around the "
                     "training step, host clock)" + ("" if state.nemo2 else "; the bar prints it to 3 significant digits"))
    if state.nemo2:
        run.framework = "NeMo 2"
    summary = summarize(seconds(run.steps, "s"))
    run.steps = flag_warmup(run.steps, summary)
    cfg = state.config
    _model(run, state)
    seq = _int(cfg, "model.encoder_seq_length") or _int(cfg, "model.seq_length")
    if seq:
        run.put("work", Field.number("seq_len", seq[0], "token/sequence", run.cite(seq[1]),
                                     "model.encoder_seq_length (the config dump)"))
    else:
        run.put("work", Field.todo("seq_len", "seq_length from the NeMo recipe: the log does not print it"))
    rep = run.steps[summary.representative] if summary.representative is not None else run.steps[-1]
    gbs = _int(cfg, "model.global_batch_size")
    if gbs:
        run.put("work", Field.number("global_batch", gbs[0], "sequence", run.cite(gbs[1]),
                                     "model.global_batch_size (the config dump)"))
    else:
        _batch(run, rep)
    _layout(run, cfg)
    count = None
    devices, nodes = _int(cfg, "trainer.devices"), _int(cfg, "trainer.num_nodes")
    if state.world:
        count = Field.number("count", state.world[0], "device", run.cite(state.world[1]),
                             "Lightning's `Initializing distributed … MEMBER: r/N`: the world size")
    elif devices and nodes:
        count = Field.number("count", str(int(devices[0]) * int(nodes[0])), "device",
                             run.cite(f"{devices[1]},{nodes[1]}", f"trainer.devices {devices[0]} x trainer.num_nodes "
                                                                  f"{nodes[0]}"))
    todo_hardware(run, count=count, dtype=_dtype(run, cfg))
    timing_fields(run, summary, "training lines" if state.nemo2 else "progress-bar steps")
    run.put("timing", Field.string("boundary", "NeMo train_step_timing: one training step, host timer",
                                   Source("paper", "NeMo timing callback (train_step_timing)")))
    if state.rounded:
        run.notes.append(f"{state.rounded} update(s) printed their global_step rounded (exponent form) and are not "
                         "samples (EFF801 at each line).")
    if state.untimed:
        run.notes.append(f"{state.untimed} training line(s) or bar update(s) had no train_step_timing and are not samples.")
    why = "the kept step nearest the median step time"
    if "tflops_per_gpu" in rep.figures:
        run.claims.append(Claim("tflops_per_device", f"{rep.figures['tflops_per_gpu']} TFLOP/s", run.cite(rep.line),
                                f"TFLOPS_per_GPU (4 significant digits) on {why}"))
    if "tokens_per_sec_per_gpu" in rep.figures:
        run.claims.append(Claim("throughput", f"{rep.figures['tokens_per_sec_per_gpu']} token/s/device * hardware.count",
                                run.cite(rep.line), f"tokens_per_sec_per_gpu on {why}, times the devices"))
    if not run.claims:
        run.notes.append("The log prints no TFLOP/s or MFU: nothing to claim; effspec derives them once the TODO "
                         "lines are filled in.")


def _batch(run: ImportedRun, rep: Step) -> None:
    """global_batch: NeMo 2 prints it; from a bar, consumed_samples / (global_step + 1) where both are exact."""
    gbs = rep.figures.get("global_batch_size")
    if gbs and whole(gbs):
        run.put("work", Field.number("global_batch", str(whole(gbs)), "sequence", run.cite(rep.line), "global_batch_size"))
        return
    for step in itertools.chain([rep], run.steps):  # streamed: a long log is not held in memory
        consumed = whole(step.figures.get("consumed_samples", ""))
        if consumed and consumed % (step.step + 1) == 0:
            run.put("work", Field.number("global_batch", str(consumed // (step.step + 1)), "sequence", run.cite(
                step.line, f"consumed_samples {step.figures['consumed_samples']} / (global_step {step.step} + 1)")))
            return
    printed = rep.figures.get("consumed_samples", "")
    why = f" (consumed_samples is printed rounded: `{printed}`)" if rounded(printed) else ""
    run.put("work", Field.todo("global_batch", f"global batch size from the NeMo recipe{why}"))


def _int(cfg: dict[str, tuple[str, int]], key: str) -> tuple[str, int] | None:
    """A config value that is a whole number (not `null`, not an interpolation like `${…}`), with its line."""
    got = cfg.get(key)
    return got if got and re.fullmatch(r"[1-9][0-9]{0,12}", got[0]) else None


def _word(cfg: dict[str, tuple[str, int]], key: str) -> tuple[str, int] | None:
    got = cfg.get(key)
    return (got[0].strip("'\""), got[1]) if got else None


def _model(run: ImportedRun, state: _State) -> None:
    """The model block from the config dump's `model.*` keys (and `Padded vocab_size`); TODO for each it lacks."""
    cfg = state.config
    todo = "the log has no model shape: take it from the NeMo recipe (or --model-config)"
    if not any(k.startswith("model.") for k in cfg):
        for key in ("kind", "layers", "d_model", "heads", "ffn", "d_ff", "vocab"):
            run.put("model", Field.todo(key, todo))
        return
    experts = _int(cfg, "model.num_moe_experts")
    if experts and int(experts[0]) > 1:
        run.put("model", Field.name("kind", "moe_transformer", run.cite(experts[1]), "model.num_moe_experts"))
        run.put("model", Field.number("experts", experts[0], "", run.cite(experts[1]), "model.num_moe_experts"))
        topk = _int(cfg, "model.moe_router_topk")
        run.put("model", Field.number("top_k", topk[0], "", run.cite(topk[1]), "model.moe_router_topk") if topk
                else Field.todo("top_k", "model.moe_router_topk: not in the config dump"))
    else:
        layers = cfg.get("model.num_layers")
        run.put("model", Field.name("kind", "dense_transformer", run.cite(layers[1]) if layers else None,
                                    "the config dump's model has no num_moe_experts above 1"))
    for key, name in (("layers", "model.num_layers"), ("d_model", "model.hidden_size"),
                      ("heads", "model.num_attention_heads"), ("kv_heads", "model.num_query_groups"),
                      ("head_dim", "model.kv_channels"), ("d_ff", "model.ffn_hidden_size")):
        got = _int(cfg, name)
        if got:
            run.put("model", Field.number(key, got[0], "", run.cite(got[1]), name))
        elif key not in ("kv_heads", "head_dim"):  # null: as many KV heads as heads, d_model / heads per head
            run.put("model", Field.todo(key, f"{name}: not a number in the config dump"))
    act = _word(cfg, "model.activation")
    if act and act[0] in ACTIVATIONS:
        run.put("model", Field.name("ffn", ACTIVATIONS[act[0]], run.cite(act[1]), f"model.activation {act[0]}"))
    else:
        run.put("model", Field.todo("ffn", "model.activation: not in the config dump"))
    if state.vocab:
        run.put("model", Field.number("vocab", state.vocab[0], "", run.cite(state.vocab[1]), "Padded vocab_size"))
    else:
        run.put("model", Field.todo("vocab", "the padded vocabulary: the log does not print it"))
    tied = _word(cfg, "model.share_embeddings_and_output_weights")
    if tied and tied[0].lower() in ("true", "false"):
        run.put("model", Field.name("tied_embeddings", tied[0].lower(), run.cite(tied[1]),
                                    "model.share_embeddings_and_output_weights"))


def _layout(run: ImportedRun, cfg: dict[str, tuple[str, int]]) -> None:
    """tp, pp, cp, micro_batch and recompute from the config dump, where it gives them."""
    for key, name in (("tp", "model.tensor_model_parallel_size"), ("pp", "model.pipeline_model_parallel_size"),
                      ("cp", "model.context_parallel_size")):
        got = _int(cfg, name)
        if got:
            run.put("parallelism", Field.number(key, got[0], "", run.cite(got[1]), name))
    mbs = _int(cfg, "model.micro_batch_size")
    if mbs:
        run.put("parallelism", Field.number("micro_batch", mbs[0], "sequence", run.cite(mbs[1]), "model.micro_batch_size"))
    for name in ("model.activations_checkpoint_granularity", "model.recompute_granularity"):
        got = _word(cfg, name)
        if got and got[0] in RECOMPUTE:
            run.put("parallelism", Field.name("recompute", RECOMPUTE[got[0]], run.cite(got[1]), f"{name} {got[0]}"))
            break


def _dtype(run: ImportedRun, cfg: dict[str, tuple[str, int]]) -> Field | None:
    """The matmul datatype: fp8 when model.fp8 is true, else trainer.precision."""
    fp8 = _word(cfg, "model.fp8")
    if fp8 and fp8[0].lower() == "true":
        return Field.name("dtype", "fp8", run.cite(fp8[1]), "model.fp8 true")
    precision = _word(cfg, "trainer.precision")
    if precision and precision[0] in PRECISIONS:
        return Field.name("dtype", PRECISIONS[precision[0]], run.cite(precision[1]), f"trainer.precision {precision[0]}")
    return None
