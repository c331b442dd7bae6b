"""torchtitan stdout: the metrics line (`step: … tps: … tflops: … mfu: …%`) and the set-up lines.

Sources (pytorch/torchtitan@b5bcd76): torchtitan/components/metrics.py L476-541
(tps = tokens / (Δt × non-data-parallel size), tflops = flops_per_token × tps,
mfu against get_peak_flops, the console line with ANSI colours),
torchtitan/models/utils.py L412-460 (6·N_matmul + 6·L·H·(qk+v head dim)·s, "do
not account for sparsity in causal attention"), torchtitan/trainer.py L388,
L528, L621 (model size, `Peak FLOPS used for computing MFU`, the batch line, in
its three historical forms), metrics.py L97 (`CUDA capacity: NAME with …GiB
memory`).  The console line has no step time: every rate it prints is a claim.
"""

from __future__ import annotations

import re

from effspec.importers.base import LogFormat
from effspec.importers.common import literal, summarize, todo_hardware
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step

RANK = re.compile(r"^\[rank(\d+)\]:\s?")
STEP = re.compile(r"(?<![A-Za-z])step:\s*(\d+)\s")
FIELD = re.compile(r"\b(tps|tflops|mfu):\s*([0-9][0-9,]*(?:\.[0-9]+)?)(%?)(?=\s|$)")
PEAK = re.compile(r"Peak FLOPS used for computing MFU: ([0-9.]+e[+-][0-9]+)")
DEVICE = re.compile(r"\b[A-Z]+ capacity: (.+?) with [0-9.]+GiB memory")
BATCH = re.compile(r"global batch size (\d+)")
SEQ = re.compile(r"(?:sequence length|maximum context length) (\d+)")
TOKENS = re.compile(r"(\d+) tokens per train step")
MODEL = re.compile(r"Model (\S+) (\S+) size: ([0-9,]+) total parameters")
# ParallelDims.build_mesh: `Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]` (names, then sizes).
MESH = re.compile(r"Building (\d+)-D device mesh with \[([^\]]*)\], \[([0-9, ]*)\]")
MESH_DEGREES = {"dp_replicate": "dp", "dp_shard": "dp", "dp": "dp", "tp": "tp", "pp": "pp", "cp": "cp"}
PENDING = 8  # steps held back to fold in other ranks' lines of the same step (ranks print out of order)


class Importer(LogFormat):
    name = "torchtitan"
    framework = "torchtitan"
    summary = "`step: N  loss: …  tps: …  tflops: …  mfu: …%` lines (ANSI colours and [rankN]: prefixes stripped)"
    versions = "any: torchtitan counts 6·N_matmul + 12·L·H·Q·s at every version read here"
    config = "the job's TOML config (--job.config_file): parallelism degrees, activation checkpointing, seq_len, batch"

    def detect(self, lines: list[str]) -> float:
        return 1.0 if any(STEP.search(t) and "tps:" in t and "tflops:" in t for t in lines) else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """get_dense_model_nparams_and_flops: full attention, logits in, embeddings out: `palm`."""
        knobs = {"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "excluded"}
        return Convention("torchtitan", knobs, "torchtitan 6·N_matmul + 12·L·H·Q·s",
                          "pytorch/torchtitan@b5bcd76 torchtitan/models/utils.py get_dense_model_nparams_and_flops",
                          "torchtitan counts 6·N_matmul + 6·L·H·(qk+v head dim)·s per token: full attention "
                          "(\"do not account for sparsity in causal attention\"), the output projection in, "
                          "the embedding out, no recomputation")

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        seen: dict[str, tuple[str, int]] = {}
        rank_of_metrics: int | None = None
        ranks = _Ranks(run)
        for item in lines:
            n, text = item.number, item.text
            m = RANK.match(text)
            rank = int(m.group(1)) if m else None
            body = text[m.end():] if m else text
            if STEP.search(body) and "loss:" in body and "validate step" not in body:
                if rank_of_metrics is None:
                    rank_of_metrics = rank
                self._metrics(ranks, lines, n, body)
                continue
            for key, pattern in (("peak", PEAK), ("device", DEVICE), ("global_batch", BATCH), ("seq_len", SEQ),
                                 ("tokens", TOKENS), ("model", MODEL), ("mesh", MESH)):
                hit = pattern.search(body)
                if hit and key not in seen:
                    seen[key] = (hit.group(1) if key not in ("model", "mesh") else "|".join(hit.groups()), n)
        ranks.flush()
        if not run.steps:
            return []
        _finish(run, seen, rank_of_metrics, ranks)
        return [run]

    def read_config(self, run: ImportedRun, config: LogReader, text: str) -> None:
        """The TOML's [parallelism], [activation_checkpoint], [training] and [model], each value citing its line."""
        import tomllib

        try:
            toml = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            where = re.search(r"line (\d+), column (\d+)", str(exc))
            line, column = (int(where.group(1)), int(where.group(2))) if where else (1, 1)
            config.warn(line, f"config that does not parse as TOML ({str(exc).split(' (at')[0]}); not read", column=column)
            return
        _apply_config(run, toml, _toml_lines(text), config.name)

    @staticmethod
    def _metrics(ranks: _Ranks, lines: LogReader, n: int, body: str) -> None:
        if len(STEP.findall(body)) > 1 or RANK.search(body[1:]) or "[rank" in body:
            lines.warn(n, "two metrics lines interleaved on one line (several ranks printing at once); skipped", excerpt=body)
            return
        fields = {m.group(1): m.group(2).replace(",", "") for m in FIELD.finditer(body)}
        if "tps" not in fields or "tflops" not in fields or "mfu:" not in body:
            lines.warn(n, "metrics line cut short (no `tps:`, `tflops:` and `mfu:`); skipped",
                       "torchtitan ends the line with `mfu: X%` (or `mfu: N/A`)", excerpt=body)
            return
        if float(fields["tps"]) <= 0:
            lines.warn(n, "metrics line with a zero `tps:`; skipped", excerpt=body)
            return
        figures = {k: fields[k] for k in ("tps", "tflops", "mfu") if k in fields and literal(fields[k])}
        step = STEP.search(body)
        if step is not None:
            ranks.add(Step(int(step.group(1)), n, None, figures))


class _Ranks:
    """One sample per step: the first line printed for it; the same step printed again (by the other ranks, each
    printing its own line) is folded into that sample as `ranks` (how many lines), `tps_min` and `tps_max`."""

    def __init__(self, run: ImportedRun) -> None:
        self.run = run
        self.pending: dict[int, tuple[Step, list[float]]] = {}
        self.folded = 0  # lines folded into an earlier line of the same step
        self.most = 1  # the most lines printed for one step

    def add(self, step: Step) -> None:
        if step.step in self.pending:
            self.pending[step.step][1].append(float(step.figures["tps"]))
            self.folded += 1
            return
        if self.pending and step.step < max(self.pending):
            self.flush()  # a step below the ones held back and not among them: the run restarted
        self.pending[step.step] = (step, [float(step.figures["tps"])])
        while len(self.pending) > PENDING:
            self._emit(min(self.pending))

    def flush(self) -> None:
        for key in sorted(self.pending):
            self._emit(key)

    def _emit(self, key: int) -> None:
        step, tps = self.pending.pop(key)
        self.most = max(self.most, len(tps))
        figures = dict(step.figures)
        if len(tps) > 1:
            figures.update(ranks=str(len(tps)), tps_min=_g(min(tps)), tps_max=_g(max(tps)))
        self.run.steps.append(Step(step.step, step.line, None, figures, step.flags))


def _g(x: float) -> str:
    return str(int(x)) if x == int(x) else repr(x)


def _mesh(run: ImportedRun, mesh: tuple[str, int]) -> None:
    """`Building N-D device mesh with [names], [sizes]`: the device count (their product) and the degrees."""
    dims, names_text, sizes_text = mesh[0].split("|")
    names = [x.strip().strip("'\"") for x in names_text.split(",") if x.strip()]
    sizes = [x.strip() for x in sizes_text.split(",") if x.strip()]
    if (len(names) != len(sizes) or len(names) != int(dims) or not all(x.isdigit() and 0 < int(x) < 10**6 for x in sizes)
            or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,40}", x) for x in names)):  # mesh names are identifiers
        run.notes.append(f"The device-mesh line (line {mesh[1]}) does not pair identifier names with whole sizes: not read.")
        return
    degrees: dict[str, int] = {}
    product = 1
    for name, size in zip(names, sizes, strict=True):
        product *= int(size)
        key = MESH_DEGREES.get(name)
        if key is not None:
            degrees[key] = degrees.get(key, 1) * int(size)
    what = " x ".join(f"{n} {z}" for n, z in zip(names, sizes, strict=True))
    run.put("hardware", Field.number("count", str(product), "device", run.cite(mesh[1], f"device mesh {what}"),
                                     "the product of the world mesh's sizes"))
    unknown = [n for n in names if n not in MESH_DEGREES]
    if unknown:
        run.notes.append(f"Device-mesh dimensions {', '.join(unknown)[:80]} (line {mesh[1]}) are not plain degrees "
                         "(expert parallelism splits dp_shard): the parallelism block is left to the TOML (--config).")
        return
    for key in ("dp", "tp", "pp", "cp"):
        if key in degrees:
            run.put("parallelism", Field.number(key, str(degrees[key]), "", run.cite(mesh[1], f"device mesh {what}")))


def _finish(run: ImportedRun, seen: dict[str, tuple[str, int]], rank: int | None, ranks: _Ranks) -> None:
    run.step_figures = ("tps", "tflops", "mfu", "ranks", "tps_min", "tps_max")
    summary = summarize([1.0 / float(s.figures["tps"]) for s in run.steps])
    run.steps.warmup = summary.warmup
    run.notes.append("torchtitan prints no step time: its tokens/s, TFLOP/s and MFU are all claims, checked against "
                     "each other (the first implies the step time).")
    first = f"rank {rank if rank is not None else 0}'s lines" if not ranks.folded else "the first line printed for each step"
    run.notes.append(f"Rates are per device, from {first}; warm-up lines (first {summary.warmup}) are flagged in the "
                     "CSV and not used.")
    if ranks.folded:
        run.notes.append(f"Each step was printed by up to {ranks.most} ranks: one sample per step (the first line "
                         f"printed); the {ranks.folded} other line(s) are kept as evidence of spread in the CSV "
                         "columns `ranks`, `tps_min` and `tps_max`.")
    if "model" in seen:
        run.notes.append(f"Model {seen['model'][0]} (line {seen['model'][1]}): fill in its shape from the model's config.")
    for key in ("kind", "layers", "d_model", "heads", "ffn", "d_ff", "vocab"):
        run.put("model", Field.todo(key, "the log has no model shape: take it from the model's config (torchtitan flavor)"))
    if "seq_len" in seen:
        run.put("work", Field.number("seq_len", seen["seq_len"][0], "token/sequence", run.cite(seen["seq_len"][1])))
    else:
        run.put("work", Field.todo("seq_len", "training.seq_len from the TOML config"))
    if "global_batch" in seen:
        run.put("work", Field.number("global_batch", seen["global_batch"][0], "sequence", run.cite(seen["global_batch"][1])))
    elif "tokens" in seen:
        run.put("work", Field.number("valid_tokens", seen["tokens"][0], "token", run.cite(seen["tokens"][1]),
                                     "tokens per train step"))
    else:
        run.put("work", Field.todo("global_batch", "sequences per step from the TOML config"))
    device, peak = seen.get("device"), seen.get("peak")
    if "mesh" in seen:
        _mesh(run, seen["mesh"])
    todo_hardware(run, accelerator=Field.string("accelerator", device[0], run.cite(device[1])) if device else None,
                  count=run.get("hardware", "count"),
                  peak=Field.number("peak", peak[0], "FLOP/s", run.cite(peak[1]), "the peak torchtitan divided by")
                  if peak else None)
    if summary.representative is None:
        return
    rep = run.steps[summary.representative]
    why = "the kept line nearest the median rate"
    run.claims.append(Claim("throughput", f"{rep.figures['tps']} token/s/device * hardware.count", run.cite(rep.line),
                            f"tps (tokens per second per device) on {why}, times the devices"))
    run.claims.append(Claim("tflops_per_device", f"{rep.figures['tflops']} TFLOP/s", run.cite(rep.line), f"tflops on {why}"))
    if "mfu" in rep.figures:
        run.claims.append(Claim("mfu", f"{rep.figures['mfu']} %", run.cite(rep.line), f"mfu on {why}"))


def _toml_lines(text: str) -> dict[tuple[str, str], int]:
    """(table, key) -> the line of its `key = …` (top-level keys of each [table]; what the citations name)."""
    table = ""
    lines: dict[tuple[str, str], int] = {}
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        header = re.match(r"^\[([A-Za-z0-9_.-]+)\]", line)
        if header:
            table = header.group(1)
            continue
        key = re.match(r"^([A-Za-z0-9_-]+)\s*=", line)
        if key:
            lines.setdefault((table, key.group(1)), n)
    return lines


_DEGREES = (("tp", "tensor_parallel_degree"), ("pp", "pipeline_parallel_degree"), ("cp", "context_parallel_degree"),
            ("ep", "expert_parallel_degree"))
_RECOMPUTE = {"none": "none", "selective": "selective", "full": "full"}


def _apply_config(run: ImportedRun, toml: dict, lines: dict[tuple[str, str], int], name: str) -> None:
    def get(table: str, key: str) -> tuple[object, Source] | None:
        section = toml.get(table)
        if not isinstance(section, dict) or key not in section or (table, key) not in lines:
            return None
        return section[key], Source("log", f"{name}:{lines[(table, key)]}")

    def whole(value: object) -> str | None:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**9 else None

    for key, option in _DEGREES:
        got = get("parallelism", option)
        if got and whole(got[0]):
            run.put("parallelism", Field.number(key, str(got[0]), "", got[1], option))
    shard, replicate = get("parallelism", "data_parallel_shard_degree"), get("parallelism", "data_parallel_replicate_degree")
    shard_n = whole(shard[0]) if shard else None
    replicate_n = whole(replicate[0]) if replicate else "1"
    if shard and shard_n and replicate_n:
        where = shard[1]
        if replicate:  # the product of two lines
            line = lines[("parallelism", "data_parallel_replicate_degree")]
            where = Source("log", f"{shard[1].citation},{line} (data_parallel_shard_degree x data_parallel_replicate_degree)")
        run.put("parallelism", Field.number("dp", str(int(shard_n) * int(replicate_n)), "", where,
                                            "the data-parallel degree: FSDP shards x replicas"))
    elif shard:
        run.notes.append(f"data_parallel_shard_degree = {str(shard[0])[:20]} ({shard[1].citation}): torchtitan infers the "
                         "data-parallel size from the device count; `dp` is left out.")
    mode = get("activation_checkpoint", "mode")
    if mode and isinstance(mode[0], str) and mode[0] in _RECOMPUTE:
        run.put("parallelism", Field.name("recompute", _RECOMPUTE[mode[0]], mode[1], "activation_checkpoint.mode"))
    _config_work(run, get, whole)
    model, flavor = get("model", "name"), get("model", "flavor")
    if model:
        what = f"{str(model[0])[:40]}" + (f" {str(flavor[0])[:40]}" if flavor else "")
        run.notes.append(f"Model {what} ({model[1].citation}): fill in its shape from torchtitan's model registry "
                         "(torchtitan/models/<name>/__init__.py, the flavor's ModelArgs).")


def _config_work(run: ImportedRun, get, whole) -> None:
    """seq_len and the global batch from [training] where the log did not print them (the log is what ran)."""
    seq = get("training", "seq_len")
    current = run.get("work", "seq_len")
    if seq and whole(seq[0]) and (current is None or current.value is None):
        run.put("work", Field.number("seq_len", whole(seq[0]), "token/sequence", seq[1], "training.seq_len"))
    gbs = get("training", "global_batch_size")
    current = run.get("work", "global_batch")
    if gbs and whole(gbs[0]) and (current is None or current.value is None) and run.get("work", "valid_tokens") is None:
        run.put("work", Field.number("global_batch", whole(gbs[0]), "sequence", gbs[1], "training.global_batch_size"))
    precision = get("training", "mixed_precision_param")
    dtype = run.get("hardware", "dtype")
    if precision and precision[0] in ("bfloat16", "float16", "float32") and (dtype is None or dtype.value is None):
        word = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[str(precision[0])]
        run.put("hardware", Field.name("dtype", word, precision[1], "training.mixed_precision_param (FSDP's compute dtype)"))
