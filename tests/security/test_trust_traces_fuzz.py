"""A bounded, seeded fuzz of `effspec traces` on hostile events (issue 26).

Mutated Kineto JSON (wrong types, missing fields, huge numbers, NaN and
Infinity, deep nesting, negative durations, broken text) goes through the
reduction (whole and chunked parsing), the cross-file checks, the CSV and the
per-rank loader that reads it back.  Every input ends in a table or a coded
error: an exception that escapes is an internal error (EFF099) and is counted
in the suite's fuzz tally.  The two parsers must agree on every input.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from pathlib import Path

from effspec.ranks.traces import combine, run

HERE = Path(__file__).resolve().parents[1]  # tests/
HTA = HERE / "fixtures" / "traces" / "hta" / "rank-0.json.gz"
CPU = HERE / "fixtures" / "traces" / "cpu" / "straggler" / "traces" / "rank-0.json.gz"
SEED = 26
INPUTS = 300


def _base(path: Path, keep: int) -> dict:
    """A real trace cut to its first ``keep`` events, plus every ProfilerStep span."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc["traceEvents"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    doc["traceEvents"] = steps + [e for e in events[:keep] if e not in steps]
    return doc


HOSTILE_VALUES = [None, True, False, 0, -1, 2**63, -(2**63) - 1, 10**30, 1e308, -1e308, 1e16, -1e16, 0.5, -0.5,
                  float("nan"), float("inf"), float("-inf"), "", "X", "nccl", "ProfilerStep#1", "ProfilerStep#-1",
                  "ProfilerStep#99999999999999999999", "gloo:all_reduce", "c10d::allreduce_", "\udcff", "\x00",
                  [], [1, 2], {}, {"correlation": 1}, {"correlation": "1"}, "\u202e" * 3]
FIELDS = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "args"]
CATS = ["kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation"]


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value] if depth % 2 else {"a": value}
    return value


def _mutate_event(rng: random.Random, event: dict) -> object:
    kind = rng.randrange(9)
    if not isinstance(event, dict):  # mutated before into something that is not an event
        return {"ph": "X", "cat": rng.choice(CATS), "value": event}
    e = dict(event)
    if kind == 0:
        e[rng.choice(FIELDS)] = rng.choice(HOSTILE_VALUES)
    elif kind == 1:
        e.pop(rng.choice(FIELDS), None)
    elif kind == 2:
        e["dur"] = -abs(float(e.get("dur", 1) if isinstance(e.get("dur"), (int, float)) else 1)) - rng.random()
    elif kind == 3:
        e["ts"] = rng.choice([1e16, -1e16, 9.999e15, 2**53 + 1, 10**20, float("nan")])
    elif kind == 4:
        e["args"] = {"correlation": rng.choice([-1, 0, 2**63, 2**64, 1.5, "7", None, [1]]), "deep": _nested(rng.randrange(1, 60))}
    elif kind == 5:
        e["cat"] = rng.choice(CATS)
        e["ph"] = rng.choice(["X", "B", "E", "i", "M", None])
    elif kind == 6:
        return rng.choice([None, 1, "event", [], [event], _nested(rng.randrange(1, 40))])
    elif kind == 7:
        e["name"] = f"ProfilerStep#{rng.choice([0, 1, 551, 552, 10**18, -3])}"
        e["cat"] = "user_annotation"
    else:
        e["dur"] = rng.choice([0, 0.0, 1e-300, 5e-324, 1e15, 9.99e15])
    return e


def _mutate_doc(rng: random.Random, base: dict) -> dict:
    doc = copy.deepcopy(base)
    events = doc["traceEvents"]
    for _ in range(rng.randrange(1, 12)):
        i = rng.randrange(len(events))
        events[i] = _mutate_event(rng, events[i])
    if rng.random() < 0.15:
        events.insert(rng.randrange(len(events)), copy.deepcopy(rng.choice(events)))  # a duplicate (step) event
    if rng.random() < 0.2:
        doc["distributedInfo"] = rng.choice([None, [], {"rank": rng.choice(HOSTILE_VALUES)},
                                             {"rank": 0, "world_size": rng.choice(HOSTILE_VALUES)},
                                             {"rank": 5, "world_size": 2}])
    if rng.random() < 0.2:
        doc["host_name"] = rng.choice(HOSTILE_VALUES)
    if rng.random() < 0.15:
        doc["baseTimeNanoseconds"] = rng.choice(HOSTILE_VALUES)
    if rng.random() < 0.05:
        doc["traceEvents"] = rng.choice([None, {}, "events", 1])
    return doc


def _text_mutation(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(5)
    at = rng.randrange(len(data))
    if kind == 0:
        return data[:at]  # truncated
    if kind == 1:
        return data[:at] + bytes([rng.randrange(256)]) + data[at:]
    if kind == 2:
        return data[:at] + rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"\xff\xfe", b"[" * 5000, b'"\\ud800"'])\
            + data[at:]
    if kind == 3:
        return data + rng.choice([b"x", b"{}", b" \n", b"]"])
    return gzip.compress(data[: max(at, 1)], mtime=0)[:-rng.randrange(1, 8)]  # a cut gzip stream


def _outcome(result) -> object:
    if isinstance(result, run.Failure):
        return ("failure", result.code)
    return ("rows", result.rank, result.node, result.rows, result.skipped)


def test_hostile_traces_end_in_a_table_or_a_coded_error(tmp_path, fuzz_tally):
    from effspec.ranks.loader import load_rank_table

    rng = random.Random(SEED)
    bases = [_base(HTA, 150), _base(CPU, 150)]
    outcomes = {"failure": 0, "rows": 0}
    disagreements = []
    for n in range(INPUTS):
        doc = _mutate_doc(rng, rng.choice(bases))
        data = json.dumps(doc, allow_nan=True, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
        if rng.random() < 0.25:
            data = _text_mutation(rng, data)
        if rng.random() < 0.3:
            data = gzip.compress(data, mtime=0)
        path = tmp_path / f"t{n}.json"
        path.write_bytes(data)
        item = run.Item(str(path), path.name)
        fuzz_tally.inputs += 1
        try:
            whole = run.reduce_one(item, run.Options())
            chunked = run.reduce_one(item, run.Options(whole_limit=1))
            if _outcome(whole) != _outcome(chunked):
                disagreements.append((n, _outcome(whole), _outcome(chunked) + (getattr(chunked, "message", ""),)))
            if not isinstance(whole, run.Failure):
                problems, missing, world = combine.check([whole], partial=True)
                csv_path = tmp_path / f"t{n}.csv"
                csv_path.write_text(combine.to_csv([whole], missing, world, problems))
                diags: list = []
                load_rank_table(str(csv_path), csv_path.name, None, diags)
                assert all(d.code != "EFF099" for d in diags), diags
            outcomes[_outcome(whole)[0]] += 1
        except BaseException:
            fuzz_tally.uncaught += 1
            raise
        path.unlink()
    assert "\n".join(str((n, w if w[0] == "failure" else w[:3], c if c[0] == "failure" else c[:3])) for n, w, c in disagreements) == ""
    # The mutations are neither all fatal nor all harmless.
    assert outcomes["failure"] > INPUTS // 10 and outcomes["rows"] > INPUTS // 10, outcomes

