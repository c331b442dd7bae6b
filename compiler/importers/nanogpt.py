"""nanoGPT and nanochat stdout: per-iteration times, the printed config, the MFU.

Sources: karpathy/nanoGPT@3adf61e train.py L102 (`tokens per iteration will
be: …`), L327 (`iter {n}: loss {l:.4f}, time {ms:.2f}ms, mfu {x:.2f}%`),
configurator.py (`Overriding config with FILE:` then the file, `Overriding: k =
v`), model.py L289-303 (estimate_mfu: 6N + 12·L·H·Q·T, A100 312e12, EMA 0.9/0.1,
skips the first 5 iterations); karpathy/nanochat@92d63d4 scripts/base_train.py
L93, L411-413, L567 (`step 00004/21400 (0.02%) | … | dt: 989.44ms | tok/sec:
529,882 | mfu: 74.13 | …`; newer: `bf16_mfu:`).
"""

from __future__ import annotations

import re

from effspec.importers.base import LogFormat
from effspec.importers.common import flag_warmup, literal, seconds, summarize, timing_fields, todo_hardware
from effspec.importers.reader import LogReader
from effspec.importers.record import Claim, Convention, Field, ImportedRun, Source, Step

# Any prefix that ends in a space, `]`, `:`, `>` or `|` (a timestamp, a logger's name, `[rank0]:`, a quote's `> `);
# `mfu` is absent from nanoGPT's early lines (before estimate_mfu, 2023-01) and from forks that drop it.
PREFIX = r"^(?:.*?[\s\]:>|])?"
ITER = re.compile(PREFIX + r"iter (\d+): loss ([0-9.]+|nan|inf), time ([0-9.]+)ms(?:, mfu (-?[0-9.]+)%)?\s*$")
QUOTE = re.compile(r"^(?:>[ \t]?)+")
ITER_START = re.compile(PREFIX + r"iter \d+: loss ")
CHAT = re.compile(r"^step (\d+)/(\d+) \([0-9.]+%\) \| loss: ")
CHAT_FIELD = re.compile(r"\| (dt|tok/sec|mfu|bf16_mfu): ([0-9][0-9,.]*)(ms)?(?= \||$)")
TOKENS = re.compile(r"^tokens per iteration will be: ([0-9,]+)$")
OVERRIDE = re.compile(r"^Overriding: ([A-Za-z_]+) = (.+)$")
CONFIG_LINE = re.compile(r"^([A-Za-z_]+)\s*=\s*([0-9][0-9_]*(?:\s*\*\s*[0-9]+)?|True|False|'[^']*'|\"[^\"]*\")\s*(?:#.*)?$")
GPU = re.compile(r"^GPU: (.+) \| Peak FLOPS \(BF16\): ([0-9.]+e[+-]?[0-9]+)$")
CHAT_BATCH = re.compile(r"^Total batch size ([0-9,]+) => gradient accumulation steps: (\d+)$")
CHAT_SEQ = re.compile(r"^Tokens / micro-batch / rank: (\d+) x (\d+) = ([0-9,]+)$")
CHAT_WORLD = re.compile(r"^Tokens / micro-batch: ([0-9,]+)$")
CHAT_FLOPS = re.compile(r"^Estimated FLOPs per token: ([0-9.]+e[+-][0-9]+)$")
CHAT_DTYPE = re.compile(r"^COMPUTE_DTYPE: torch\.(bfloat16|float16|float32)\b")
JSON_INT = re.compile(r'^\s*"(sequence_len|vocab_size|n_layer|n_head|n_kv_head|n_embd)": (\d+),?$')
VOCAB = re.compile(r"^(?:defaulting to vocab_size of GPT-2 to (\d+) |found vocab_size = (\d+) )")
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# nanoGPT train.py defaults, shown beside a `TODO` when the log prints no override.
DEFAULTS = {"n_layer": "12", "n_head": "12", "n_embd": "768", "block_size": "1024"}


class Importer(LogFormat):
    name = "nanogpt"
    framework = "nanoGPT"
    summary = "`iter N: loss …, time …ms, mfu …%` lines (nanoGPT) or `step N/M (…%) | … | dt: …ms | tok/sec: …` (nanochat)"
    versions = "`nanogpt` (karpathy/nanoGPT train.py) or `nanochat`"

    def detect(self, lines: list[str]) -> float:
        hits = sum(1 for t in lines if ITER.match(t) or (CHAT.match(t) and "| dt: " in t))
        return 1.0 if hits else 0.0

    def convention(self, version: str | None, run: ImportedRun) -> Convention:
        """estimate_mfu: 6N + 12·L·H·Q·T, N with the tied token embedding (the logits) and without wpe: `palm`."""
        if version not in (None, "nanogpt", "nanochat"):
            raise ValueError(f"cannot read the nanoGPT version `{version}`")
        knobs = {"attention": "full", "logits": "included", "embeddings": "excluded", "recompute": "excluded"}
        return Convention("nanogpt", knobs, "nanoGPT/nanochat estimate_flops (6N + 12·L·H·Q·T)",
                          "karpathy/nanoGPT@3adf61e model.py estimate_mfu L289-303 and karpathy/nanochat@92d63d4 "
                          "nanochat/gpt.py estimate_flops",
                          "nanoGPT counts 6N + 12·L·H·Q·T FLOPs per token (PaLM App. B): full attention, the tied "
                          "token embedding as the logits matmul, no position embedding, no recomputation")

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:
        run = ImportedRun(self.name, self.framework, lines.name)
        seen: dict[str, tuple[str, int]] = {}
        mfu: dict[int, str] = {}
        chat = False
        for item in lines:
            n, text = item.number, item.text
            if ITER_START.match(text):
                self._iter(run, lines, n, text, mfu)
            elif CHAT.match(text):
                chat = True
                self._chat(run, lines, n, text)
            else:
                self._setup(QUOTE.sub("", text), n, seen)  # a set-up line pasted as a quote (`> `) reads the same
        if not run.steps:
            return []
        run.framework = "nanochat" if chat else "nanoGPT"
        run.step_unit = "ms"
        run.step_figures = ("mfu_percent", "tok_per_sec")
        run.step_note = ("each sample is one iteration printed every log_interval, timed on the host around "
                         "the whole iteration (forward, backward, optimizer)")
        summary = summarize(seconds(run.steps, "ms"))
        run.steps = flag_warmup(run.steps, summary)
        _fields(run, seen, chat)
        timing_fields(run, summary, "iteration lines")
        run.put("timing", Field.string("boundary", "time.time() around one iteration, after loss.item() synchronizes",
                                       Source("paper", "karpathy/nanoGPT train.py L300-327")))
        if summary.representative is not None:
            rep = run.steps[summary.representative]
            if "mfu_percent" in rep.figures:
                smoothed = "" if chat else "; nanoGPT smooths it (EMA 0.9/0.1 over the printed iterations)"
                hard = ("989e12 (H100 BF16, hard-coded in base_train.py before nanochat printed the device's peak)"
                        if chat else "312e12 (A100 BF16, hard-coded in estimate_mfu)")
                denominator = seen.get("peak", (hard, 0))[0]
                run.claims.append(Claim("mfu", f"{rep.figures['mfu_percent']} %", run.cite(rep.line),
                                        f"against {denominator}{smoothed}"))
            if "tok_per_sec" in rep.figures:
                run.claims.append(Claim("throughput", f"{rep.figures['tok_per_sec']} token/s", run.cite(rep.line), "tok/sec"))
        flops = seen.get("flops_per_token")
        if flops and literal(flops[0]):
            run.claims.append(Claim("flops_per_token", f"{literal(flops[0])} FLOP/token", run.cite(flops[1]),
                                    "nanochat's estimate_flops"))
        return [run]

    def _iter(self, run: ImportedRun, lines: LogReader, n: int, text: str, mfu: dict[int, str]) -> None:
        m = ITER.match(text)
        if not m:
            lines.warn(n, "iteration line that is not whole (`iter N: loss …, time …ms, mfu …%`); skipped", excerpt=text)
            return
        time = literal(m.group(3))
        if time is None or float(time) <= 0:
            lines.warn(n, "iteration line with no readable time; skipped", excerpt=text)
            return
        figures = {}
        if m.group(4) is not None and not m.group(4).startswith("-"):  # -100.00%: the EMA has not started (5 iterations)
            figures["mfu_percent"] = m.group(4)
        flags = ("nan",) if m.group(2) in ("nan", "inf") else ()
        run.steps.append(Step(int(m.group(1)), n, time, figures, flags))

    def _chat(self, run: ImportedRun, lines: LogReader, n: int, text: str) -> None:
        fields = {m.group(1): m.group(2).replace(",", "") for m in CHAT_FIELD.finditer(text)}
        time = literal(fields.get("dt", ""))
        if time is None or float(time) <= 0 or "tok/sec" not in fields:
            lines.warn(n, "nanochat step line that is not whole (`| dt: …ms | tok/sec: … |`); skipped", excerpt=text)
            return
        figures = {"tok_per_sec": fields["tok/sec"]}
        pct = fields.get("mfu") or fields.get("bf16_mfu")
        if pct:
            figures["mfu_percent"] = pct
        step = CHAT.match(text)
        if step is not None:
            run.steps.append(Step(int(step.group(1)), n, time, figures))

    @staticmethod
    def _setup(text: str, n: int, seen: dict[str, tuple[str, int]]) -> None:
        m = JSON_INT.match(text) or VOCAB.match(text)
        if m:
            key = {"sequence_len": "block_size"}.get(m.group(1), m.group(1)) if m.re is JSON_INT else "vocab_size"
            seen[key] = (m.group(2) if m.re is JSON_INT else (m.group(1) or m.group(2)), n)
            return
        for pattern, keys in ((TOKENS, ("tokens",)), (CHAT_BATCH, ("tokens", "grad_accum")),
                              (CHAT_SEQ, ("micro", "block_size", "rank_tokens")), (CHAT_WORLD, ("world_tokens",)),
                              (CHAT_FLOPS, ("flops_per_token",)), (CHAT_DTYPE, ("dtype",)),
                              (OVERRIDE, None), (CONFIG_LINE, None), (GPU, ("gpu", "peak"))):
            m = pattern.match(text)
            if not m:
                continue
            if keys is None:
                value = m.group(2).strip()
                if "*" in value:
                    a, b = value.split("*")
                    value = str(int(a.strip().replace("_", "")) * int(b.strip()))
                seen[m.group(1)] = (value.strip("'\""), n)
            else:
                for key, value in zip(keys, m.groups(), strict=False):
                    seen[key] = (value.replace(",", ""), n)
            return


def _fields(run: ImportedRun, seen: dict[str, tuple[str, int]], chat: bool) -> None:
    def num(key: str, name: str, block: str, unit: str = "", note: str = "") -> bool:
        got = seen.get(name)
        value = literal(got[0]) if got else None
        if got is None or value is None:
            return False
        run.put(block, Field.number(key, value, unit, run.cite(got[1]), note or name))
        return True

    source = "karpathy/nanochat nanochat/gpt.py: a decoder-only transformer" if chat else "karpathy/nanoGPT model.py: a GPT-2 decoder"
    run.put("model", Field.name("kind", "dense_transformer", Source("paper", source)))
    for key, name in (("layers", "n_layer"), ("heads", "n_head"), ("d_model", "n_embd")):
        if not num(key, name, "model"):
            default = "" if chat else f"; nanoGPT's train.py default is {DEFAULTS[name]}"
            run.put("model", Field.todo(key, f"{name}: the log prints no override{default}"))
    num("kv_heads", "n_kv_head", "model")
    ffn = ("relu", "nanochat MLP: relu^2, 4·n_embd") if chat else ("gelu", "nanoGPT model.py MLP: GELU, 4·n_embd")
    run.put("model", Field.name("ffn", ffn[0], Source("paper", ffn[1])))
    embd = seen.get("n_embd")
    if embd and literal(embd[0]):
        run.put("model", Field.number("d_ff", str(4 * int(embd[0])), "", Source("paper", ffn[1]), "4 x n_embd"))
    else:
        run.put("model", Field.todo("d_ff", "4 x n_embd in nanochat's MLP" if chat else "4 x n_embd in nanoGPT's MLP"))
    if not num("vocab", "vocab_size", "model"):
        run.put("model", Field.todo("vocab", "vocab_size: nanochat's tokenizer (65536 for its default)" if chat
                                    else "vocab_size: 50304 for GPT-2 BPE in nanoGPT unless meta.pkl sets it"))
    run.put("model", Field.name("tied_embeddings", "false" if chat else "true",
                                Source("paper", "nanochat gpt.py: wte and lm_head are separate" if chat
                                       else "nanoGPT model.py: wte.weight = lm_head.weight")))
    if not num("seq_len", "block_size", "work", "token/sequence"):
        run.put("work", Field.todo("seq_len", "sequence_len: the log prints no model config" if chat
                                   else "block_size: the log prints no override; nanoGPT's default is 1024"))
    if not num("valid_tokens", "tokens", "work", "token", "tokens per iteration, all ranks"):
        run.put("work", Field.todo("global_batch", "sequences per iteration (batch_size x gradient_accumulation_steps x ranks)"))
    dtype = seen.get("dtype")
    gpu = seen.get("gpu")
    peak = seen.get("peak")
    count = None
    rank, world = seen.get("rank_tokens"), seen.get("world_tokens")
    if rank and world and int(rank[0]) > 0 and int(world[0]) % int(rank[0]) == 0:
        count = Field.number("count", str(int(world[0]) // int(rank[0])), "device", run.cite(
            f"{rank[1]},{world[1]}", f"tokens per micro-batch {world[0]} / per rank {rank[0]}"))
    todo_hardware(
        run,
        count=count,
        accelerator=Field.string("accelerator", gpu[0], run.cite(gpu[1])) if gpu else None,
        dtype=Field.name("dtype", DTYPES[dtype[0]], run.cite(dtype[1])) if dtype and dtype[0] in DTYPES else None,
        peak=Field.number("peak", peak[0], "FLOP/s", run.cite(peak[1]), "the peak nanochat divides by") if peak else None,
        framework_peak="" if peak else ("989 TFLOP/s (H100 BF16) in nanochat versions that print no `GPU: … | Peak "
                                        "FLOPS` line" if chat else "312 TFLOP/s (A100 BF16, hard-coded)"))
