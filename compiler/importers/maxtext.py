"""MaxText: the `completed step: …` console line, or its metrics JSONL, and the config lines.

Sources (AI-Hypercomputer/maxtext@e591f30): src/maxtext/common/metric_logger.py
L160-230 (`completed step: {step}, seconds: {:.3f}, TFLOP/s/device: {:.3f},
Tokens/s/device: {:.3f}, total_weights: …, loss: …`; the JSONL keys
`perf/step_time_seconds`, `perf/per_device_tflops_per_sec`,
`perf/per_device_tokens_per_sec`), src/maxtext/utils/maxtext_utils.py L1149+
(calculate_tflops_training_per_device: causal attention since PR #1988,
2025-07), docs/guides/monitoring_and_debugging/understand_logs_and_metrics.md
(`Config param NAME: VALUE`, `Num_devices: N, shape (…)`, `Per train step:` /
` Total TFLOPs: …`, and the step-1 artefact of 2,400 TFLOP/s/device).
"""

from __future__ import annotations

import ast
import json
import re
import statistics

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
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step, StepLog

STEP = re.compile(r"completed step: (\d+), seconds: ([0-9.]+)(?:, |$)")
FIELD = re.compile(r"(TFLOP/s/device|TFLOP/s|Tokens/s/device): ([0-9.]+)(?=,|$)")
CONFIG = re.compile(r"^Config param ([A-Za-z_0-9]+): (.*)$")
DEVICES = re.compile(r"^Num_devices: (\d+), shape ")
DEVICE_KIND = re.compile(r"^TFRT (TPU .+)$")
TOTAL = re.compile(r"^\s*Total TFLOPs: ([0-9.]+)$")
# The one boundary, PR #1988 (causal_attention_flops = noncausal / 2), is the `maxtext` preset's `since`
# (2adc3bab1, 2025-07-22; effspec.front.presets): a checkout dated before it counts full attention.
CAUSAL_SINCE = preset_since("maxtext")
# The benchmark runner's dict of the overrides it passes (benchmarks/maxtext_xpk_runner.py, `print(f"Unified tuning
# params for model are: {unified_tuning_params}")`, and the Pathways one before it): a Python dict literal.
TUNING = re.compile(r"(?:Unified tuning params for model are|Pathways tuning params for model: \S+ are): (\{.*\})\s*$")
MAX_TUNING_CHARS = 20_000  # a longer dict is not read (literal_eval's cost and nesting stay bounded)
# remat_policy `full` recomputes every layer's forward (MaxText's FLOP count leaves recomputation out either way).
REMAT = {"full": "full"}
# The 2023 line (`completed step: N, seconds: …, TFLOP/s: …, loss: …`, no `/device`): its TFLOP/s was
# 6 x parameters x tokens (rwitten in AI-Hypercomputer/maxtext#8, 2023-04-22, on MaxText/train.py L79-83).
LINE_2023 = "maxtext_2023"
OLD_LABEL = re.compile(r"completed step: \d+, seconds: [0-9.]+, TFLOP/s: ")
SHAPE = (("layers", ("num_decoder_layers", "base_num_decoder_layers")), ("d_model", ("emb_dim", "base_emb_dim")),
         ("heads", ("num_query_heads", "base_num_query_heads")), ("kv_heads", ("num_kv_heads", "base_num_kv_heads")),
         ("head_dim", ("head_dim",)), ("d_ff", ("mlp_dim", "base_mlp_dim")), ("vocab", ("vocab_size",)))
DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}
# JAX's device_kind names a v5p "TPU v5" (and a v5e "TPU v5 lite", a v6e "TPU v6 lite"): the catalog's names.
JAX_KINDS = {"TPU v5": "TPU v5p"}


class Importer(LogFormat):
    name = "maxtext"
    framework = "MaxText"
    summary = "`completed step: N, seconds: …, TFLOP/s/device: …, Tokens/s/device: …` lines or the metrics JSONL, and `Config param` lines"
    versions = (f"a date YYYY[-MM[-DD]] of the MaxText checkout (causal attention counted from {CAUSAL_SINCE}, PR #1988), or "
                "`maxtext_2023` (6 x parameters x tokens, the formula behind the 2023 `TFLOP/s:` line)")

    def detect(self, lines: list[str]) -> float:
        if any(STEP.search(t) for t in lines):
            return 1.0
        return 1.0 if any(t.startswith("{") and '"perf/step_time_seconds"' in t for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """calculate_tflops_training_per_device: causal since PR #1988 (CAUSAL_SINCE, the preset's `since`), full
        before; 6·N·tokens in 2023."""
        if version == LINE_2023:
            return Convention(LINE_2023, {"attention": "excluded", "logits": "included", "embeddings": "included",
                                          "recompute": "excluded"},
                              "MaxText 2023 (`TFLOP/s:` line)",
                              "AI-Hypercomputer/maxtext MaxText/train.py L79-83 of 2023 (model flops = 6 x parameters x "
                              "tokens, per AI-Hypercomputer/maxtext#8), before calculate_tflops_training_per_device",
                              "MaxText's 2023 TFLOP/s counted 6 x every parameter x tokens: no attention term, the "
                              "embedding and the unembedding counted as matmuls, no recomputation")
        date = CAUSAL_SINCE if version is None else version_date(version)
        if date is None:
            raise ValueError(f"cannot read the MaxText version `{version}`")
        causal = date >= CAUSAL_SINCE
        knobs = {"attention": "causal" if causal else "full", "logits": "included", "embeddings": "excluded",
                 "recompute": "excluded"}
        return Convention("maxtext" if causal else "maxtext_pre1988", knobs,
                          f"MaxText {CAUSAL_SINCE} and later" if causal else f"MaxText before {CAUSAL_SINCE}",
                          "AI-Hypercomputer/maxtext src/maxtext/utils/maxtext_utils.py calculate_tflops_training_per_device"
                          + (f" after PR #1988 ({CAUSAL_SINCE}), checked at e591f30" if causal else " before PR #1988"),
                          "MaxText sums the matmuls x 3: " + ("causal attention (half the s^2 matrix)" if causal else
                                                             "full attention") + ", unembedding in, embedding lookup out, "
                          "no recomputation")

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        seen: dict[str, tuple[str, int]] = {}
        for item in lines:
            n, text = item.number, item.text
            if "completed step:" in text:
                self._console(run, lines, n, text)
                if run.version is None and OLD_LABEL.search(text):
                    run.version = (LINE_2023, run.cite(n))  # evidence: the 2023 label, `TFLOP/s:` without `/device`
            elif text.startswith("{") and "perf/step_time_seconds" in text:
                self._jsonl(run, lines, n, text, seen)
            elif "tuning params for model" in text:
                _tuning(lines, n, text, seen)
            else:
                for key, pattern in (("config", CONFIG), ("devices", DEVICES), ("device", DEVICE_KIND), ("total", TOTAL)):
                    m = pattern.match(text)
                    if m:
                        name = m.group(1) if key == "config" else key
                        seen.setdefault(name, (m.group(2) if key == "config" else m.group(1), n))
        if not run.steps:
            return []
        _drop_impossible(run, lines)
        if not run.steps:
            return []
        _finish(run, seen)
        return [run]

    @staticmethod
    def _console(run: ImportedRun, lines: LogReader, n: int, text: str) -> None:
        if text.count("completed step:") > 1:
            lines.warn(n, "two step lines interleaved on one line; skipped", excerpt=text)
            return
        m = STEP.search(text)
        if not m or "loss:" not in text:
            lines.warn(n, "step line cut short (MaxText ends it with `loss: …`); skipped", excerpt=text)
            return
        figures = {("tflops" if k.startswith("TFLOP") else "tokens"): v for k, v in FIELD.findall(text)}
        time = literal(m.group(2))
        if time is None or float(time) <= 0:
            lines.warn(n, "step line with no readable `seconds:`; skipped", excerpt=text)
            return
        run.steps.append(Step(int(m.group(1)), n, time, {k: v for k, v in figures.items() if literal(v)}))

    @staticmethod
    def _jsonl(run: ImportedRun, lines: LogReader, n: int, text: str, seen: dict[str, tuple[str, int]]) -> None:
        try:
            record = json.loads(text)
            step = int(record["step"])
            time = repr(float(record["perf/step_time_seconds"]))
        except (ValueError, KeyError, TypeError):
            lines.warn(n, "metrics record that is not whole JSON with `step` and `perf/step_time_seconds`; skipped",
                       excerpt=text)
            return
        figures = {}
        for key, name in (("perf/per_device_tflops_per_sec", "tflops"), ("perf/per_device_tokens_per_sec", "tokens")):
            value = record.get(key)
            if isinstance(value, (int, float)) and value == value and value not in (float("inf"),):
                figures[name] = repr(float(value))
        if literal(time) is None or float(time) <= 0:
            lines.warn(n, "metrics record with a step time that is not a positive number; skipped", excerpt=text)
            return
        flops = record.get("perf/per_device_tflops")  # one step's model TFLOP on one device: the console's `Total TFLOPs`
        if isinstance(flops, (int, float)) and not isinstance(flops, bool) and 0 < flops < float("inf"):
            seen.setdefault("perf/per_device_tflops", (repr(float(flops)), n))
        run.steps.append(Step(step, n, literal(time), {k: v for k, v in figures.items() if literal(v)}))


def _tuning(lines: LogReader, n: int, text: str, seen: dict[str, tuple[str, int]]) -> None:
    """The benchmark runner's tuning-parameter dict: each key is a config value at this line, as a `Config param`
    line would give it (the first one given wins).  A dict that is not a plain literal is EFF801 at its line."""
    m = TUNING.search(text)
    params: object = None
    if m and len(m.group(1)) <= MAX_TUNING_CHARS:
        try:
            params = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            params = None
    if not isinstance(params, dict):
        lines.warn(n, "tuning-parameter dict that is not a whole Python dict literal; skipped", excerpt=text)
        return
    for key, value in params.items():
        if isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]{0,80}", key) and \
                isinstance(value, (int, float, str)) and not isinstance(value, bool):
            seen.setdefault(key, (str(value)[:200], n))


def _config(seen: dict[str, tuple[str, int]], *names: str) -> tuple[str, int] | None:
    return next((seen[n] for n in names if n in seen), None)


IMPOSSIBLE = 100  # a step this many times shorter than the log's median step is no chip's work


def _drop_impossible(run: ImportedRun, lines: LogReader) -> None:
    """Steps 100x shorter than the median of the log's own steps (an asynchronous dispatch timed, not the step):
    not samples, each EFF801 at its line (naming its time and printed TFLOP/s), and counted in the run's notes."""
    times = [t for t in run.steps.times if t == t]
    if len(times) < 3:
        return
    med = statistics.median(times)
    if not any(t < med / IMPOSSIBLE for t in times):
        return
    kept = StepLog()
    dropped = 0
    for step in run.steps:
        t = float(step.time) if step.time is not None else med
        if t < med / IMPOSSIBLE:
            dropped += 1
            tflops = step.figures.get("tflops")
            lines.warn(step.line, f"step {step.step} took {step.time} s, {med / t:.0f}x shorter than the log's median "
                       f"step ({med:.4g} s)" + (f", printing {tflops} TFLOP/s/device" if tflops else "")
                       + ": no chip does that work so fast (the timer saw an asynchronous dispatch); not a sample",
                       "the step's true time is in the next step's; a profile (xplane) shows it")
            continue
        kept.append(step)
    run.steps = kept
    run.notes.append(f"{dropped} step(s) over {IMPOSSIBLE}x shorter than the median step are not samples (EFF801 at "
                     "each line).")


def _finish(run: ImportedRun, seen: dict[str, tuple[str, int]]) -> None:
    run.step_unit = "s"
    run.step_figures = ("tflops", "tokens")
    run.step_note = "each sample is one training step, timed on the host (time.time()) by MaxText"
    summary = summarize(seconds(run.steps, "s"))
    run.steps = flag_warmup(run.steps, summary)
    _model(run, seen)
    seq = _config(seen, "max_target_length")
    seq_value = literal(seq[0]) if seq else None
    if seq and seq_value:
        run.put("work", Field.number("seq_len", seq_value, "token/sequence", run.cite(seq[1]), "max_target_length"))
    else:
        run.put("work", Field.todo("seq_len", "max_target_length: not in the log"))
    per, devices = _config(seen, "per_device_batch_size"), seen.get("devices")
    if per and devices and literal(per[0]):
        batch = float(per[0]) * int(devices[0])
        text = str(int(batch)) if batch == int(batch) else repr(batch)
        run.put("work", Field.number("global_batch", text, "sequence", run.cite(f"{per[1]},{devices[1]}"),
                                     f"per_device_batch_size {per[0]} x Num_devices {devices[0]}"))
    elif per:
        run.put("work", Field.todo("global_batch", f"per_device_batch_size {per[0][:20]} (line {per[1]}) x the devices: "
                                                   "the log does not print Num_devices"))
    else:
        run.put("work", Field.todo("global_batch", "per_device_batch_size x devices: not both in the log"))
    remat = _config(seen, "remat_policy")
    policy = remat[0].strip("'\"") if remat else ""
    if remat and policy in REMAT:
        run.put("parallelism", Field.name("recompute", REMAT[policy], run.cite(remat[1]), f"remat_policy {policy}"))
    elif remat:
        run.notes.append(f"remat_policy {policy} (line {remat[1]}) saves some activations and recomputes the rest: set "
                         "`recompute` if the hardware FLOPs matter (MaxText's TFLOP/s leaves recomputation out).")
    dtype = _config(seen, "dtype")
    device = seen.get("device")
    todo_hardware(
        run,
        accelerator=_accelerator(run, device),
        count=Field.number("count", devices[0], "device", run.cite(devices[1]), "Num_devices") if devices else None,
        dtype=Field.name("dtype", DTYPES[dtype[0]], run.cite(dtype[1])) if dtype and dtype[0] in DTYPES else None)
    timing_fields(run, summary, "step lines")
    run.put("timing", Field.string("boundary", "time.time() between consecutive train steps on the host",
                                   Source("paper", "MaxText docs/reference/performance_metrics.md")))
    if summary.warmup:
        run.notes.append(f"Warm-up: the first {summary.warmup} step(s) are left out; MaxText's step 1 can print a "
                         "TFLOP/s/device above any peak (asynchronous dispatch), which is why.")
    _claims(run, summary, seen)


def _accelerator(run: ImportedRun, device: tuple[str, int] | None) -> Field | None:
    if device is None:
        return None
    kind = device[0].strip()
    if kind in JAX_KINDS:
        return Field.string("accelerator", JAX_KINDS[kind], run.cite(device[1]),
                            f"JAX's device_kind `{kind}` is a {JAX_KINDS[kind]} (a v5e is `TPU v5 lite`)")
    return Field.string("accelerator", kind, run.cite(device[1]), "as the log names it (JAX's device_kind)")


def _model(run: ImportedRun, seen: dict[str, tuple[str, int]]) -> None:
    experts = _config(seen, "num_experts")
    moe = experts is not None and (literal(experts[0]) or "1") not in ("1", "0")
    if experts:
        run.put("model", Field.name("kind", "moe_transformer" if moe else "dense_transformer", run.cite(experts[1]),
                                    f"num_experts {experts[0][:20]}"))
    else:
        run.put("model", Field.todo("kind", "dense_transformer or moe_transformer: the log has no num_experts"))
    for key, names in SHAPE:
        name = next((n for n in names if n in seen), names[-1])
        got = seen.get(name)
        value = literal(got[0]) if got else None
        if got is not None and value is not None and "." not in value:
            run.put("model", Field.number(key, value, "", run.cite(got[1]), name))
        elif key not in ("kv_heads", "head_dim"):
            run.put("model", Field.todo(key, f"{names[-1]}: not in the log's Config param lines"))
    act = _config(seen, "mlp_activations")
    if act:
        gated = "silu" in act[0] and "linear" in act[0]
        run.put("model", Field.name("ffn", "swiglu" if gated else "gelu", run.cite(act[1]), "mlp_activations"))
    else:
        run.put("model", Field.todo("ffn", "mlp_activations: not in the log"))
    expert_count = literal(experts[0]) if experts else None
    if moe and experts and expert_count:
        run.put("model", Field.number("experts", expert_count, "", run.cite(experts[1]), "num_experts"))
        for key, name in (("top_k", "num_experts_per_tok"), ("d_ff_expert", "base_moe_mlp_dim")):
            got = _config(seen, name)
            got_value = literal(got[0]) if got else None
            if got and got_value:
                run.put("model", Field.number(key, got_value, "", run.cite(got[1]), name))
            else:
                run.put("model", Field.todo(key, f"{name}: not in the log"))
        _moe_extras(run, seen)
    _attention(run, seen)


MLA = (("q_lora_rank", "q_lora_rank"), ("kv_lora_rank", "kv_lora_rank"), ("qk_nope_head_dim", "qk_nope_head_dim"),
       ("qk_rope_head_dim", "qk_rope_head_dim"), ("v_head_dim", "v_head_dim"))


def _moe_extras(run: ImportedRun, seen: dict[str, tuple[str, int]]) -> None:
    """shared_experts, and moe_layers = the decoder layers after first_num_dense_layers (DeepSeek's layout)."""
    shared = _config(seen, "shared_experts")
    shared_n = literal(shared[0]) if shared else None
    if shared and shared_n and "." not in shared_n:
        run.put("model", Field.number("shared_experts", shared_n, "", run.cite(shared[1]), "shared_experts"))
    dense = _config(seen, "first_num_dense_layers")
    layers = _config(seen, "num_decoder_layers", "base_num_decoder_layers")
    dense_n, layers_n = (literal(dense[0]) if dense else None), (literal(layers[0]) if layers else None)
    if dense and layers and dense_n and layers_n and "." not in dense_n + layers_n and 0 < int(dense_n) < int(layers_n):
        run.put("model", Field.number("moe_layers", str(int(layers_n) - int(dense_n)), "", run.cite(
            f"{layers[1]},{dense[1]}", "base_num_decoder_layers - first_num_dense_layers"), "the layers after the dense ones"))


def _attention(run: ImportedRun, seen: dict[str, tuple[str, int]]) -> None:
    """MLA's ranks and head sizes when `attention_type: mla`; a note when the log does not say which attention."""
    kind = _config(seen, "attention_type")
    if kind is None:
        run.notes.append("The log has no `Config param attention_type` line: plain multi-head attention is counted; "
                         "for MLA (DeepSeek) add q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
                         "v_head_dim to the model block.")
        return
    if kind[0].strip().strip("'\"") != "mla":
        return
    # MLA has its own head sizes: base_num_kv_heads and head_dim do not apply (the language refuses them).
    run.blocks["model"] = [f for f in run.blocks.get("model", []) if f.key not in ("kv_heads", "head_dim")]
    for key, name in MLA:
        got = _config(seen, name)
        value = literal(got[0]) if got else None
        if got and value is not None and "." not in value:
            run.put("model", Field.number(key, value, "", run.cite(got[1]), name))
        elif key != "q_lora_rank":
            run.put("model", Field.todo(key, f"{name}: attention_type is mla (line {kind[1]}), but {name} is not in the log"))


def _claims(run: ImportedRun, summary, seen: dict[str, tuple[str, int]]) -> None:
    if summary.representative is None:
        return
    rep = run.steps[summary.representative]
    why = "the kept step nearest the median step time"
    if "tflops" in rep.figures:
        run.claims.append(Claim("tflops_per_device", f"{rep.figures['tflops']} TFLOP/s", run.cite(rep.line),
                                f"TFLOP/s/device on {why}"))
    if "tokens" in rep.figures:
        run.claims.append(Claim("throughput", f"{rep.figures['tokens']} token/s/device * hardware.count", run.cite(rep.line),
                                f"Tokens/s/device on {why}, times the devices"))
    for key, said in (("total", "Per train step: Total TFLOPs (per device)"),
                      ("perf/per_device_tflops", "the record's perf/per_device_tflops (one step, one device)")):
        total = seen.get(key)
        if total and literal(total[0]):
            run.claims.append(Claim("model_flops_per_step", f"{literal(total[0])} TFLOP/device * hardware.count",
                                    run.cite(total[1]), f"{said}, times the devices"))
            break
