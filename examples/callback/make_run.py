"""A training callback's end-of-run hook: the run as effspec IR JSON (spec/ir-json.md), then `effspec check run.eff.json`."""
import json
import pathlib

step_times = [0.912, 0.874, 0.871, 0.869, 0.873, 0.870, 0.872, 0.868, 0.871, 0.875, 0.869, 0.870]  # s, as the callback timed them
line = 0  # each statement gets a line of its own: a finding is then shown on the member it is about


def at():
    global line
    line += 1
    return {"line": line, "column": 1, "end_line": line, "end_column": 2}


def entry(key, kind, value, text, unit="", provenance="declared", citation=None):  # value in the key's unit; text says the same
    return {"key": key, "kind": kind, "value": value, "unit": unit, "text": text,
            "provenance": {"kind": provenance, "citation": citation}, "span": at(), "value_span": at()}


def block(name, *entries):
    return {"name": name, "entries": list(entries), "span": at()}


def claim(name, value, unit, written=None):  # a figure the trainer logged; `name` is canonical, `written` an alias
    number = {"node": "number", "value": value, "unit": unit, "text": f"{value}", "span": at()}
    return {"name": name, "written": written or name, "expr": number, "text": f"{value} {unit}", "point": None,
            "provenance": {"kind": "log", "citation": "the trainer's log line"}, "span": at(), "name_span": at(), "value_span": at()}


run = {"id": "callback_run", "title": "1.3B decoder, 8 x H100, written by a training callback", "source": "make_run.py",
       "span": at(), "name_span": at(), "blocks": [
           block("model", entry("kind", "enum", "dense_transformer", "dense_transformer"), entry("layers", "integer", 24, "24"),
                 entry("d_model", "integer", 2048, "2048"), entry("heads", "integer", 16, "16"),
                 entry("ffn", "enum", "swiglu", "swiglu"), entry("d_ff", "integer", 5632, "5632"),
                 entry("vocab", "integer", 32000, "32000")),
           block("convention", entry("preset", "enum", "palm", "palm")),
           block("work", entry("seq_len", "quantity", 2048.0, "2048 token/sequence", "token/sequence"),
                 entry("global_batch", "quantity", 64.0, "64 sequence", "sequence")),
           block("hardware", entry("accelerator", "string", "H100-SXM5-80GB", '"H100-SXM5-80GB"'),
                 entry("count", "quantity", 8.0, "8 device", "device"), entry("dtype", "enum", "bf16", "bf16"),
                 entry("peak", "peak", "catalog", "catalog", "FLOP/s")),
           block("timing", entry("step_time", "samples", {"samples": step_times, "origin": "inline", "file": None, "column": None},
                                 json.dumps(step_times) + " s", "s", "measured", "the callback's step timer"),
                 entry("warmup", "quantity", 1.0, "1 step", "step"),
                 entry("boundary", "string", "optimizer step end, after synchronize", '"optimizer step end, after synchronize"'))],
       "claims": [claim("mfu", 17.1, "%"), claim("valid_tokens_per_second", 150500, "token/s", "throughput")]}
doc = {"$schema": "../../spec/eff-ir.schema.json", "file": "make_run.py", "version": 1, "runs": [run], "scalings": []}
pathlib.Path(__file__).with_name("run.eff.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
