"""CPU time to reduce one trace file, in a warm process: the best of N runs (the least disturbed by other
jobs on a shared machine), on the msgspec path and on the chunked parser.

    .venv/bin/python benchmarks/traces_file_bench.py [FILE ...] [--runs 15]

Default files: the two real NCCL traces of tests/fixtures/traces/hta (integer epoch µs, the traces benchmark's
corpus) and tests/data/traces/real/v100_ns_resolution_rank-0.json.gz (epoch µs with nanoseconds: read exactly).
To compare with another checkout, run the same command with PYTHONPATH pointing at a folder holding its
`compiler` package as `effspec` (a symlink): `PYTHONPATH=/tmp/before python benchmarks/traces_file_bench.py`.

``--loop``: the collector's event loop alone (reduce.py's ``_Collector``), over events decoded once beforehand:
msgspec's objects (``add_structs``, batch by batch) and the general parser's dicts (``add_dicts``); the parse,
which dominates a file's time and its noise, is left out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "tests/fixtures/traces/hta/rank-0.json.gz", ROOT / "tests/fixtures/traces/hta/rank-1.json.gz",
           ROOT / "tests/data/traces/real/v100_ns_resolution_rank-0.json.gz"]


def best(fn, runs: int) -> float:
    out = []
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return min(out)


def main() -> None:
    from effspec.ranks.traces.reduce import reduce_trace

    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="*", type=Path, default=DEFAULT)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--loop", action="store_true", help="time the collector's event loop alone")
    a = p.parse_args()
    if a.loop:
        loop_only(a.files, a.runs)
        return
    for f in a.files:
        for label, kw in (("msgspec", {}), ("chunked", {"whole_limit": 1})):
            reduce_trace(str(f), **kw)  # warm: imports, decoders, name caches
            ms = best(lambda f=f, kw=kw: reduce_trace(str(f), **kw), a.runs) * 1e3
            print(f"| {f.name} | {label} | {ms:.2f} ms |", flush=True)


def loop_only(files: list[Path], runs: int) -> None:
    import gc

    from effspec.ranks.traces.parse import read_trace
    from effspec.ranks.traces.reduce import _Collector

    gc.disable()  # as reduce_trace runs it
    for f in files:
        _, batches, _ = read_trace(str(f))
        structs = list(batches)  # msgspec's objects, one list a batch
        _, events, _ = read_trace(str(f), whole_limit=1)
        dicts = list(events)

        def by_structs(structs: list = structs) -> None:
            c = _Collector()
            for b in structs:
                c.add_structs(b)

        def by_dicts(dicts: list = dicts) -> None:
            _Collector().add_dicts(dicts)

        for label, fn in (("structs", by_structs), ("dicts", by_dicts)):
            fn()
            ms = best(fn, runs) * 1e3
            print(f"| {f.name} | loop, {label} ({len(dicts):,} events) | {ms:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
