"""Megatron-LM stdout: the argument dump, the iteration lines, timers, straggler lines.

Sources (NVIDIA/Megatron-LM@d98e8a6): `_print_args` in
megatron/training/arguments.py (the dump), `training_log` in
megatron/training/training.py L3567-3653 (the iteration line), core/timers.py
L338-376 (`times across ranks (ms):`), core/README_STRAGGLER.md (`MnRtt/Rnk`).
"""

from __future__ import annotations

import re

from effspec.front.presets import by_name as _by_name
from effspec.importers.base import LogFormat
from effspec.importers.common import (
    ARGS_BEGIN,
    ARGS_END,
    ArgDump,
    Summary,
    exclude_impossible,
    flag_warmup,
    literal,
    read_arg_line,
    seconds,
    summarize,
    timing_fields,
    todo_hardware,
    version_date,
)
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, RankRow, Source, Step

ITERATION = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
PADDED_VOCAB = re.compile(r"> padded vocab \(size: (\d+)\) with (\d+) dummy tokens \(new size: (\d+)\)")
TIMES_ALL = re.compile(r"times across ranks \(ms\):\s*$")
TIMER_NAME = re.compile(r"^  ([A-Za-z][A-Za-z0-9_-]*):\s*$")
RANK_TIME = re.compile(r"^\s+rank\s+(\d+): ([0-9.]+)\s*$")
STRAGGLER = re.compile(r"MnRtt/Rnk: ([0-9.]+)ms/(\d+) \| MxRtt/Rnk: ([0-9.]+)ms/(\d+) \|.*"
                       r"MnEtpt/Rnk: ([0-9.]+)TF/(\d+) \| MxEtpt/Rnk: ([0-9.]+)TF/(\d+)")
BOTTOM = re.compile(r"\^\^\^\^ Bottom (\d+) Ranks with lowest\s+Etpt\(TF\): (.*)$")
NUMBER_PAIR = re.compile(r"([0-9][0-9.]*)(?:/[0-9][0-9.]*)?")
COMM_TIMER = re.compile(r"(-recv|-send|grads-sync|all-gather|all-reduce)")
FIGURES = ("tflops_per_gpu", "tokens_per_gpu", "global_batch", "consumed_samples")

# `initialize_megatron` / `validate_args` print, before the dump: `using world size: 64, data-parallel-size: 1,
# tensor-model-parallel size: 4, pipeline-model-parallel size: 16` (2021) or `using world size: 16,
# data-parallel size: 4, context-parallel size: 1, … tensor-model-parallel size: 4, … pipeline-model-parallel
# size: 1` (2023 on), then `using torch.bfloat16 for parameters ...`.
WORLD = re.compile(r"using world size: (\d+)(.*)$")
WORLD_PART = re.compile(r"([a-z-]+?)[- ]size: (\d+)")
TORCH_DTYPE = re.compile(r"using torch\.(float16|bfloat16|float32) for parameters")
WORLD_KEYS = {"data-parallel": "dp", "tensor-model-parallel": "tp", "pipeline-model-parallel": "pp",
              "context-parallel": "cp", "expert-model-parallel": "ep"}
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def read_world_line(state, n: int, text: str) -> bool:
    """`using world size: 16, data-parallel size: 4, …` into ``state.world`` ({"world"/"dp"/"tp"/…: (value,
    line)}), or `using torch.bfloat16 for parameters` into ``state.dtype``; whether line ``n`` was one
    (Megatron-LM and Megatron-DeepSpeed print both the same way)."""
    m = WORLD.search(text)
    if m:
        state.world = {"world": (m.group(1), n)}
        for name, value in WORLD_PART.findall(m.group(2)):
            if name in WORLD_KEYS:
                state.world[WORLD_KEYS[name]] = (value, n)
        return True
    m = TORCH_DTYPE.search(text)
    if m:
        state.dtype = (DTYPES[m.group(1)], n)
        return True
    return False

def _preset(name: str):
    found = _by_name(name)
    assert found is not None, name
    return found


# The boundaries are data on the presets (effspec.front.presets: `since`, `since_commit`).
NEW_FORMULA = _preset("megatron_lm").since  # 2025-03-06, commit 8873b55d6a: causal attention
FORMULA_2024 = _preset("megatron_lm_2024").since  # 2024-03-25, commit e116d81ed7: GQA, SwiGLU and MoE terms
FORMULA_2023 = _preset("megatron_lm_2023").since  # 2023-11-26, commit 2748e7c7d4: the first TFLOP/s/GPU


class Importer(LogFormat):
    name = "megatron"
    framework = "Megatron-LM"
    summary = ("`iteration N/ M | … elapsed time per iteration (ms): … | throughput per GPU (TFLOP/s/GPU): … |` lines, "
               "the argument dump, `times across ranks (ms):` timers and straggler-detector lines")
    versions = "a date YYYY[-MM[-DD]] of the Megatron-LM checkout, or `megatron_lm` / `megatron_lm_2024` / `megatron_lm_2023`"

    def detect(self, lines: list[str]) -> float:
        if any(ITERATION.search(t) and "elapsed time per iteration (ms):" in t for t in lines):
            # the 2021 Megatron-DeepSpeed fork prints the same line; its DeepSpeed start-up lines make it that format
            return 0.9 if any("DeepSpeed is enabled" in t or "DeepSpeed info: version=" in t for t in lines) else 1.0
        return 0.4 if any(ARGS_BEGIN.search(t) for t in lines) and not any("DeepSpeed" in t for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """Megatron-LM's `num_floating_point_operations`, at the given version."""
        named = {None: NEW_FORMULA, "megatron_lm": NEW_FORMULA, "megatron_lm_2024": FORMULA_2024,
                 "megatron_lm_2023": FORMULA_2023}
        date = named[version] if version in named else version_date(version or "")
        if date is None:
            raise ValueError(f"cannot read the Megatron-LM version `{version}`")
        knobs = {"attention": "causal", "logits": "included", "embeddings": "excluded", "recompute": "excluded"}
        if date < FORMULA_2024:
            knobs["attention"] = "full"
            return Convention(
                "megatron_lm_2023", knobs, "Megatron-LM 2023-11-26 to 2024-03-24",
                "Megatron-LM megatron/training.py num_floating_point_operations, commit 2748e7c7d4 (2023-11-26) "
                "up to e116d81ed7 (2024-03-25)",
                "Megatron-LM's TFLOP/s/GPU before 2024-03-25: 60·B·s·L·h²·(1 + G/5H + s/5h + V/10Lh), the full s^2 "
                "attention matrix and the FFN taken as 4h GELU, logits included, no recomputation")
        if date < NEW_FORMULA:
            knobs["attention"] = "full"
            return Convention(
                "megatron_lm_2024", knobs, "Megatron-LM 2024-03-25 to 2025-03-05",
                "Megatron-LM megatron/training/training.py num_floating_point_operations, commit e116d81ed7 "
                "(2024-03-25) up to 8873b55d6a (2025-03-06)",
                "Megatron-LM's TFLOP/s/GPU from 2024-03-25 to 2025-03-05: 3 x 2 x the GEMMs (GQA, SwiGLU, MoE) with "
                "the full s^2 attention matrix, logits included, no recomputation")
        return Convention(
            "megatron_lm", knobs, "Megatron-LM 2025-03-06 and later",
            "Megatron-LM megatron/training/training.py num_floating_point_operations, commit 8873b55d6a "
            "(2025-03-06) and later, checked at d98e8a6",
            "Megatron-LM's TFLOP/s/GPU since 2025-03-06: 3 x 2 x the GEMMs, causal attention "
            "(half of the s^2 matrix), logits included, embeddings and recomputation not counted")

    def version_evidence(self, run: ImportedRun) -> tuple[str, Source, str] | None:
        """`checkpoint_activations` in the dump: a Megatron-LM from before `recompute_granularity` replaced it
        (2022), older than every TFLOP/s/GPU formula; its first form (`megatron_lm_2023`) is the one written."""
        rec = run.get("parallelism", "recompute")
        if rec is not None and rec.comment.startswith("checkpoint_activations") and rec.source is not None:
            return (FORMULA_2023, rec.source, "the dump names `checkpoint_activations`, which Megatron-LM replaced by "
                    "`recompute_granularity` in 2022: a checkout older than every TFLOP/s/GPU formula, read as the "
                    "first (`megatron_lm_2023`)")
        return None

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        state = _State(ImportedRun(self.name, self.framework, lines.name), lines)
        for item in lines:
            state.feed(item.number, item.text)
        return state.finish()


class _State:
    """The reader's state machine over one log."""

    def __init__(self, run: ImportedRun, reader: LogReader):
        self.run, self.reader = run, reader
        run.step_unit = "ms"
        self.args = ArgDump({})
        self.dumps = 0
        self.in_args = False
        self.vocab: tuple[str, int] | None = None
        self.timer: str | None = None  # inside `times across ranks (ms):`
        self.rank_times: dict[tuple[int, str], float] = {}
        self.timer_lines: list[int] = []
        self.straggler: list[str] = []
        self.world: dict[str, tuple[str, int]] = {}  # `using world size:` line: world, dp, tp, … with the line
        self.dtype: tuple[str, int] | None = None  # `using torch.bfloat16 for parameters`
        self.duplicates: list[int] = []  # lines that repeat the step before (another rank's copy)

    def feed(self, n: int, text: str) -> None:
        if self.in_args:
            if ARGS_END.search(text):
                self.in_args = False
                return
            if read_arg_line(text, self.args, n):
                return
            self.in_args = False  # a dump with no closing line: this line is read as any other
        if "using " in text and self._world(n, text):
            return
        if ARGS_BEGIN.search(text):
            self.dumps += 1
            self.in_args = True
            if self.dumps > 1:
                self.args = ArgDump({})  # a restart prints the dump again: the later one rules
            return
        if (self.timer is not None or "across ranks" in text) and self._timer_line(n, text):
            return
        if "iteration" in text:
            m = ITERATION.search(text)
            if m:
                self._iteration(n, text, m)
                return
        if "padded vocab" in text:
            m = PADDED_VOCAB.search(text)
            if m:
                self.vocab = (m.group(3), n)
        elif "Etpt" in text:
            self._straggler(n, text)

    def _world(self, n: int, text: str) -> bool:
        return read_world_line(self, n, text)

    def _timer_line(self, n: int, text: str) -> bool:
        if TIMES_ALL.search(text):
            self.timer = ""
            self.timer_lines.append(n)
            return True
        m = TIMER_NAME.match(text)
        if m:
            self.timer = m.group(1)
            return True
        m = RANK_TIME.match(text)
        if m and self.timer:
            self.rank_times[(int(m.group(1)), self.timer)] = float(m.group(2)) / 1000.0
            return True
        self._flush_timers()
        return False

    def _flush_timers(self) -> None:
        """One interval's per-rank timers -> ranks rows for the last iteration."""
        self.timer = None
        if not self.rank_times or not self.run.steps:
            self.rank_times = {}
            return
        last = self.run.steps[-1]
        step_s = last.seconds(self.run.step_unit) or 0.0
        ranks = sorted({r for r, _ in self.rank_times})
        names = {t for _, t in self.rank_times}
        if {"forward-compute", "backward-compute"} <= names:
            for r in ranks:
                compute = self.rank_times.get((r, "forward-compute"), 0.0) + self.rank_times.get((r, "backward-compute"), 0.0)
                comm = sum(v for (rr, t), v in self.rank_times.items() if rr == r and COMM_TIMER.search(t))
                self.run.ranks.append(RankRow(r, "unknown", last.step, compute, comm, max(0.0, step_s - compute - comm)))
        self.rank_times = {}

    def _iteration(self, n: int, text: str, first: re.Match) -> None:
        if self.timer is not None:
            self._flush_timers()
        # A whole line says `iteration` 4 times (`iteration N/`, `per iteration`, `skipped/nan iterations`).
        if text.count("iteration") > 4 and ITERATION.search(text, first.end()):
            self.reader.warn(n, "two iteration lines interleaved on one line (several ranks printing at once); skipped",
                             "the samples keep the other lines", excerpt=text)
            return
        if not text.endswith("|") or "number of nan iterations:" not in text:
            self.reader.warn(n, "iteration line cut short (the log was truncated while it was written); skipped",
                             "Megatron-LM ends each iteration line with `number of nan iterations: N |`", excerpt=text)
            return
        it = int(first.group(1))
        fields = line_fields(text)
        elapsed = _first(fields.get("elapsed time per iteration (ms)"))
        if elapsed is None or float(elapsed) <= 0:
            self.reader.warn(n, "iteration line without a readable `elapsed time per iteration (ms)`; skipped", excerpt=text)
            return
        flags = []  # a restart (the iteration number going back) is flagged by StepLog.append
        for key, flag in (("number of skipped iterations", "skipped"), ("number of nan iterations", "nan")):
            if (fields.get(key) or "0").strip() not in ("0", ""):
                flags.append(flag)
        figures = {k: v for k, v in (
            ("tflops_per_gpu", _first(fields.get("throughput per GPU (TFLOP/s/GPU)"))),
            ("tokens_per_gpu", _first(fields.get("tokens per GPU (tokens/s/GPU)"))),
            ("global_batch", literal((fields.get("global batch size") or "").strip())),
            ("consumed_samples", literal((fields.get("consumed samples") or "").strip()))) if v is not None}
        if self.run.steps and self._same_as_last(it, elapsed, figures):
            self.duplicates.append(n)  # the same iteration printed again (another rank): one sample
            return
        self.run.steps.append(Step(it, n, elapsed, figures, tuple(flags)))

    def _same_as_last(self, it: int, elapsed: str, figures: dict[str, str]) -> bool:
        last = self.run.steps[-1]
        return last.step == it and last.time == elapsed and last.figures == figures

    def _straggler(self, n: int, text: str) -> None:
        m = STRAGGLER.search(text)
        if m:
            self.straggler = [f"straggler detector, line {n}: round-trip time {m.group(1)} ms (rank {m.group(2)}) to "
                              f"{m.group(3)} ms (rank {m.group(4)}); throughput {m.group(5)} TF (rank {m.group(6)}) to "
                              f"{m.group(7)} TF (rank {m.group(8)})"]
            return
        m = BOTTOM.search(text)
        if m and self.straggler:
            self.straggler.append(f"  line {n}: bottom {m.group(1)} ranks by throughput (TF/rank): {m.group(2)[:200]}")

    def finish(self) -> list[ImportedRun]:
        self._flush_timers()
        run = self.run
        if not run.steps:
            return []
        run.step_unit = "ms"
        run.step_figures = FIGURES
        interval = self.args.text("log_interval")
        exclude_impossible(run, self.reader)
        run.step_note = (f"each sample is the mean iteration time over a log interval (log_interval {interval}), "
                         f"measured after a barrier" if interval else
                         "each sample is the mean iteration time over one log interval, measured after a barrier")
        summary = summarize(seconds(run.steps, "ms"))
        run.steps = flag_warmup(run.steps, summary)
        model_from_args(run, self.args, self.vocab)
        _work_and_parallelism(run, self.args, summary)
        world_and_dtype(run, self.world, self.dtype)
        hardware_from_args(run, self.args, self.world, self.dtype)
        timing_fields(run, summary, "iteration lines")
        run.put("timing", Field.string("boundary", "Megatron-LM timers('interval-time').elapsed(barrier=True) / iterations "
                                       "in the interval", Source("paper", "Megatron-LM megatron/training/training.py "
                                                                          "training_log")))
        _claims(run, summary)
        _notes(run, self)
        return [run]


def line_fields(text: str) -> dict[str, str]:
    """`key: value` pairs of an iteration line, split at ` | `."""
    out = {}
    for part in text.split("|"):
        key, sep, value = part.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _first(value: str | None) -> str | None:
    """The number of a field; of a Primus-style pair `13372.8/13364.7`, the first."""
    if value is None:
        return None
    m = NUMBER_PAIR.fullmatch(value.strip())
    return literal(m.group(1)) if m else None


def arg_field(run: ImportedRun, args: ArgDump, block: str, key: str, name: str, unit: str = "", comment: str = "") -> None:
    value = args.int(name)
    if value is not None:
        run.put(block, Field.number(key, str(value), unit, run.cite(args.line(name)), comment or name))


def model_from_args(run: ImportedRun, args: ArgDump, vocab: tuple[str, int] | None) -> None:
    if not args.values:
        for key in ("kind", "layers", "d_model", "heads", "ffn", "d_ff", "vocab"):
            run.put("model", Field.todo(key, "the log has no argument dump (Megatron-LM prints it at start-up)"))
        return
    experts = args.int("num_experts")
    kind = "moe_transformer" if experts else "dense_transformer"
    if "num_experts" in args.values:
        run.put("model", Field.name("kind", kind, run.cite(args.line("num_experts")), f"num_experts {args.text('num_experts')}"))
    else:
        run.put("model", Field.name("kind", kind, Source("assumed", "the argument dump has no num_experts: a dense model")))
    arg_field(run, args, "model", "layers", "num_layers")
    arg_field(run, args, "model", "d_model", "hidden_size")
    arg_field(run, args, "model", "heads", "num_attention_heads")
    if args.flag("group_query_attention"):
        arg_field(run, args, "model", "kv_heads", "num_query_groups")
    kv, hidden, heads = args.int("kv_channels"), args.int("hidden_size"), args.int("num_attention_heads")
    if kv and hidden and heads and kv * heads != hidden:
        arg_field(run, args, "model", "head_dim", "kv_channels")
    _ffn(run, args)
    arg_field(run, args, "model", "d_ff", "ffn_hidden_size")
    if experts:
        run.put("model", Field.number("experts", str(experts), "", run.cite(args.line("num_experts")), "num_experts"))
        arg_field(run, args, "model", "top_k", "moe_router_topk")
        arg_field(run, args, "model", "d_ff_expert", "moe_ffn_hidden_size")
        _moe_layout(run, args)
    if args.flag("multi_latent_attention"):
        _mla(run, args)
    if (args.int("mtp_num_layers") or 0) > 0:
        arg_field(run, args, "model", "mtp_depth", "mtp_num_layers")
    if vocab:
        run.put("model", Field.number("vocab", vocab[0], "", run.cite(vocab[1]), "padded vocabulary"))
    elif args.int("padded_vocab_size"):
        arg_field(run, args, "model", "vocab", "padded_vocab_size")
    else:
        run.put("model", Field.todo("vocab", "no `> padded vocab` line and no padded_vocab_size in the dump"))
    if "untie_embeddings_and_output_weights" in args.values:
        tied = not args.flag("untie_embeddings_and_output_weights")
        run.put("model", Field.name("tied_embeddings", "true" if tied else "false",
                                    run.cite(args.line("untie_embeddings_and_output_weights")), "untie_embeddings_and_output_weights"))
    for required in ("layers", "d_model", "heads", "d_ff"):
        if run.get("model", required) is None:
            run.put("model", Field.todo(required, "not in the argument dump"))


def _ffn(run: ImportedRun, args: ArgDump) -> None:
    if "swiglu" in args.values:
        run.put("model", Field.name("ffn", "swiglu" if args.flag("swiglu") else "gelu", run.cite(args.line("swiglu")),
                                    f"swiglu {args.text('swiglu')}"))
    elif "checkpoint_activations" in args.values:  # a dump from before --swiglu existed: GELU was the only FFN
        run.put("model", Field.name("ffn", "gelu", run.cite(args.line("checkpoint_activations"), "a dump with "
                                    "checkpoint_activations and no swiglu: Megatron-LM before --swiglu, GELU only")))
    else:
        run.put("model", Field.todo("ffn", "the dump has no `swiglu`"))


def _moe_layout(run: ImportedRun, args: ArgDump) -> None:
    """Shared experts (moe_shared_expert_intermediate_size in units of moe_ffn_hidden_size) and the MoE layers
    (moe_layer_freq: 1, or DeepSeek's `([0]*K+[1]*M)` pattern); anything else is left as the default, said in a note."""
    shared, expert = args.int("moe_shared_expert_intermediate_size"), args.int("moe_ffn_hidden_size")
    if shared and expert and shared % expert == 0:
        run.put("model", Field.number("shared_experts", str(shared // expert), "", run.cite(
            f"{args.line('moe_shared_expert_intermediate_size')},{args.line('moe_ffn_hidden_size')}",
            "moe_shared_expert_intermediate_size / moe_ffn_hidden_size")))
    freq = (args.text("moe_layer_freq") or "1").replace(" ", "")
    pattern = re.fullmatch(r"\(?\[0\]\*(\d+)\+\[1\]\*(\d+)\)?", freq)
    if pattern:
        run.put("model", Field.number("moe_layers", pattern.group(2), "", run.cite(args.line("moe_layer_freq")),
                                      f"moe_layer_freq: {pattern.group(1)} dense layers, then MoE"))
    elif freq != "1":
        run.notes.append(f"moe_layer_freq {freq[:40]} (line {args.line('moe_layer_freq')}): every layer is counted as MoE; "
                         "write `moe_layers` if fewer are.")


MLA_ARGS = (("q_lora_rank", "q_lora_rank"), ("kv_lora_rank", "kv_lora_rank"), ("qk_nope_head_dim", "qk_head_dim"),
            ("qk_rope_head_dim", "qk_pos_emb_head_dim"), ("v_head_dim", "v_head_dim"))


def _mla(run: ImportedRun, args: ArgDump) -> None:
    """--multi-latent-attention: its ranks and head sizes; GQA's kv_heads and head_dim do not apply."""
    run.blocks["model"] = [f for f in run.blocks.get("model", []) if f.key not in ("kv_heads", "head_dim")]
    for key, name in MLA_ARGS:
        if key == "q_lora_rank" and args.text(name) == "None":  # queries projected directly
            run.put("model", Field.number(key, "0", "", run.cite(args.line(name)), f"{name} None"))
        elif args.int(name) is not None:
            arg_field(run, args, "model", key, name)
        else:
            run.put("model", Field.todo(key, f"{name}: multi_latent_attention is on, but the dump has no {name}"))


def _work_and_parallelism(run: ImportedRun, args: ArgDump, summary: Summary) -> None:
    arg_field(run, args, "work", "seq_len", "seq_length", "token/sequence")
    rep = run.steps[summary.representative] if summary.representative is not None else None
    if rep and "global_batch" in rep.figures:
        batches = {s.figures.get("global_batch") for s in run.steps} - {None}
        note = "global batch size" + ("" if len(batches) == 1 else f" of this line; the lines show {len(batches)} sizes")
        run.put("work", Field.number("global_batch", rep.figures["global_batch"], "sequence", run.cite(rep.line), note))
    elif args.int("global_batch_size"):
        arg_field(run, args, "work", "global_batch", "global_batch_size", "sequence")
    else:
        run.put("work", Field.todo("global_batch", "sequences per iteration: not in the log"))
    if run.get("work", "seq_len") is None:
        run.put("work", Field.todo("seq_len", "tokens per sequence: no seq_length in the log"))
    for key, name in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
                      ("cp", "context_parallel_size"), ("ep", "expert_model_parallel_size"), ("dp", "data_parallel_size")):
        arg_field(run, args, "parallelism", key, name)
    arg_field(run, args, "parallelism", "micro_batch", "micro_batch_size", "sequence")
    gran = args.text("recompute_granularity") if "recompute_granularity" in args.values else None
    if gran in ("full", "selective"):
        method = args.text("recompute_method")
        why = f"recompute_granularity {gran}" + (f", recompute_method {method} (recompute_num_layers "
                                                  f"{args.text('recompute_num_layers')})" if gran == "full" and method
                                                  not in (None, "None") else "")
        run.put("parallelism", Field.name("recompute", gran, run.cite(args.line("recompute_granularity")), why))
        if gran == "full" and method == "block":
            run.notes.append(f"recompute_method block (line {args.line('recompute_method')}): only "
                             f"{args.text('recompute_num_layers')} layer(s) per pipeline stage are recomputed; "
                             "`recompute = full` counts every layer.")
    elif args.flag("checkpoint_activations") is not None:  # the name before recompute_granularity (Megatron-LM to 2022)
        on = bool(args.flag("checkpoint_activations"))
        run.put("parallelism", Field.name("recompute", "full" if on else "none", run.cite(args.line("checkpoint_activations")),
                                          f"checkpoint_activations {args.text('checkpoint_activations')}"))
    elif gran is not None:
        run.put("parallelism", Field.name("recompute", "none", run.cite(args.line("recompute_granularity")),
                                          f"recompute_granularity {gran}"))


def world_and_dtype(run: ImportedRun, world: dict[str, tuple[str, int]], dtype: tuple[str, int] | None) -> None:
    """The parallel sizes of the `using world size:` line, where the dump did not give them."""
    for key in ("tp", "pp", "cp", "ep", "dp"):
        if key in world and run.get("parallelism", key) is None:
            value, line = world[key]
            run.put("parallelism", Field.number(key, value, "", run.cite(line), "using world size: line"))


def hardware_from_args(run: ImportedRun, args: ArgDump, world: dict[str, tuple[str, int]] | None = None,
                       torch_dtype: tuple[str, int] | None = None) -> None:
    count = None
    if args.int("world_size"):
        count = Field.number("count", str(args.int("world_size")), "device", run.cite(args.line("world_size")), "world_size")
    elif world and "world" in world:
        count = Field.number("count", world["world"][0], "device", run.cite(world["world"][1]), "using world size")
    dtype = None
    fp8 = args.text("fp8")
    for name, value in (("fp8", "fp8"), ("bf16", "bf16"), ("fp16", "fp16")):
        on = (fp8 not in (None, "None", "False")) if name == "fp8" else args.flag(name)
        if on:
            dtype = Field.name("dtype", value, run.cite(args.line(name)), f"{name} {args.text(name)}")
            break
    if dtype is None and torch_dtype is not None:
        dtype = Field.name("dtype", torch_dtype[0], run.cite(torch_dtype[1]), "using torch.… for parameters")
    if dtype is None and args.flag("bf16") is False and args.flag("fp16") is False:
        dtype = Field.name("dtype", "fp32", run.cite(args.line("bf16")), "neither bf16 nor fp16")
    todo_hardware(run, count=count, dtype=dtype)


def _claims(run: ImportedRun, summary: Summary) -> None:
    if summary.representative is None:
        return
    rep = run.steps[summary.representative]
    why = "the kept sample nearest the median step time"
    if "tflops_per_gpu" in rep.figures:
        run.claims.append(Claim("tflops_per_device", f"{rep.figures['tflops_per_gpu']} TFLOP/s", run.cite(rep.line),
                                f"throughput per GPU (TFLOP/s/GPU) on {why}"))
    if "tokens_per_gpu" in rep.figures:
        run.claims.append(Claim("throughput", f"{rep.figures['tokens_per_gpu']} token/s/device * hardware.count",
                                run.cite(rep.line), f"tokens per GPU (tokens/s/GPU) on {why}, times the devices"))


def _notes(run: ImportedRun, state: _State) -> None:
    if state.duplicates:
        shown = ", ".join(str(n) for n in state.duplicates[:5]) + (", …" if len(state.duplicates) > 5 else "")
        run.notes.append(f"{len(state.duplicates)} iteration line(s) repeat the one before them (other ranks printing "
                         f"the same step: line {shown}): one sample each.")
    if state.dumps > 1:
        run.notes.append(f"The log holds {state.dumps} argument dumps (restarts); the values are the last dump's.")
    if state.timer_lines and not run.ranks:
        run.notes.append("The per-rank timers lack forward-compute/backward-compute (--timing-log-level 2): no ranks table.")
    if run.ranks:
        run.ranks_source = run.cite(f"{state.timer_lines[0]}-{state.timer_lines[-1]}", "times across ranks (ms)")
        run.put("ranks", Field("samples", 'file "{ranks_csv}"', run.ranks_source,
                               "compute = forward+backward-compute, comm = *-send/-recv, grads-sync, all-gather, "
                               "all-reduce; stall = the iteration time left; node unknown (the log does not say)"))
    run.notes += state.straggler
