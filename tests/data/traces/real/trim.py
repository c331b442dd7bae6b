"""Trim a public Kineto trace to a small fixture, keeping every number's text as written.

    python tests/data/traces/real/trim.py SOURCE.json.gz OUT.json.gz [--drop CAT,CAT] [--steps N] [--complete]

- ``--drop``: leave out the events of these categories (``python_function``: Python stack frames, most of a
  trace's bytes, which no figure reads; ``cpu_op`` where the figures are device-only).
- ``--steps N``: keep the first N ``ProfilerStep#`` spans' time (events starting before the Nth span ends).
- ``--complete``: keep only complete events (``ph`` ``X``) and metadata (``M``); drop flow arrows.
- Of each event's ``args``, only the ids the reduction or a reader of the trace follows are kept
  (``correlation``, ``External id``, ``stream``, ``device``); shapes, stacks and call sites are dropped.

Every kept value is written with its text unchanged (numbers are parsed as Decimal and written back as
their digits), so a timestamp's nanoseconds survive the trim.  Gzip with mtime 0: the output is the same
bytes for the same input.  SOURCE (beside this script) says which file each fixture came from and how.
"""

from __future__ import annotations

import argparse
import gzip
import json
from decimal import Decimal

ARGS = ("correlation", "External id", "stream", "device")


def dump(value, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            out.append(("," if i else "") + json.dumps(k) + ":")
            dump(v, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            dump(v, out)
        out.append("]")
    elif isinstance(value, Decimal):
        out.append(str(value))
    else:
        out.append(json.dumps(value))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--drop", default="")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--complete", action="store_true")
    a = p.parse_args()
    with open(a.source, "rb") as fh:
        raw = fh.read()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    drop = set(filter(None, a.drop.split(",")))
    events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("cat") not in drop
              and (not a.complete or e.get("ph") in ("X", "M"))]
    if a.steps is not None:
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                       if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")
        end = spans[a.steps - 1][1]
        events = [e for e in events if "ts" not in e or e["ts"] < end]
    for e in events:
        if isinstance(e.get("args"), dict) and e.get("ph") != "M":
            e["args"] = {k: v for k, v in e["args"].items() if k in ARGS}
    doc["traceEvents"] = events
    out: list[str] = []
    dump(doc, out)
    with open(a.out, "wb") as fh:
        fh.write(gzip.compress("".join(out).encode(), 9, mtime=0))


if __name__ == "__main__":
    main()
