"""Benchmark: the peak memory of reducing one trace, as a multiple of its JSON (issue 26).

A trace of ``{}`` events (the issue's case: 90 MB peaked at 2.4 GB, about 27x,
before it was rejected), traces of the smallest events the reduction keeps
(host ops, kernels: the compact arrays and the interval sweep are the peak),
and the real HTA trace (tests/fixtures/traces/hta/rank-0.json.gz) repeated,
each reduced in a fresh process, whole (msgspec, in batches) and chunked
(``--stream-above 1``).  The figure is the child's own peak (VmHWM, see
tests/peak.py) less its resident size after the imports, over the JSON's size.

    .venv/bin/python benchmarks/traces_memory_bench.py [--mb 90] [--only empty,ops,kernels,hta]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import os, sys, time
sys.path.insert(0, {tests!r})
from peak import PEAK_KB
from effspec.ranks.traces.parse import TraceError
from effspec.ranks.traces.reduce import reduce_trace
import numpy, msgspec  # noqa: F401 - imported before the baseline, as a worker has them
def rss():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))
base = rss()
start = time.perf_counter()
try:
    s = reduce_trace(sys.argv[1], whole_limit=int(sys.argv[2]))
    outcome = f"{{s.parser}}, {{s.events:,}} events"
except TraceError as exc:
    outcome = f"{{exc.code}}: {{exc.message[:40]}}"
print((eval(PEAK_KB) - base) * 1024, time.perf_counter() - start, outcome, sep="\\t")
"""

STEP = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":1000000}'
SHAPES = {
    "empty": ("{}", "`{}` events (no step: rejected once read)"),
    "ops": ('{"ph":"X","cat":"cpu_op","name":"","ts":0,"dur":0}', "smallest host op"),
    "kernels": ('{"ph":"X","cat":"kernel","ts":1,"dur":1}', "smallest kernel"),
}


def generate(folder: Path, shape: str, mb: float) -> Path:
    path = folder / f"{shape}-{mb:g}MB.json"
    if path.exists():
        return path
    target = int(mb * 1e6)
    head = '{"distributedInfo":{"rank":0,"world_size":1},"traceEvents":['
    with path.open("w") as fh:
        if shape == "hta":
            doc = json.loads(gzip.decompress((ROOT / "tests/fixtures/traces/hta/rank-0.json.gz").read_bytes()))
            steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
            rest = json.dumps([e for e in doc["traceEvents"] if e not in steps])[1:-1]
            fh.write(head + json.dumps(steps)[1:-1])
            for _ in range(max(1, target // len(rest))):  # the other events again (steps once): a longer trace of their mix
                fh.write("," + rest)
        else:
            event = SHAPES[shape][0]
            fh.write(head + ("" if shape == "empty" else STEP + ","))
            fh.write(",".join([event] * (target // (len(event) + 1))))
        fh.write("]}")
    return path


def measure(path: Path, whole_limit: int) -> tuple[float, float, str]:
    code = CHILD.format(tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code, str(path), str(whole_limit)], capture_output=True, text=True,
                         check=True, timeout=3600)
    peak, seconds, outcome = out.stdout.strip().split("\t")
    return float(peak), float(seconds), outcome


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=90.0, help="JSON size of each generated trace (MB)")
    ap.add_argument("--only", default="empty,ops,kernels,hta")
    args = ap.parse_args()
    folder = Path(tempfile.gettempdir()) / "effspec-traces-memory"
    folder.mkdir(exist_ok=True)
    print("| trace | JSON | parser | peak over the imports | x the JSON | time | outcome |")
    print("|---|---|---|---|---|---|---|")
    for shape in args.only.split(","):
        path = generate(folder, shape, args.mb)
        size = os.path.getsize(path)
        for label, limit in (("whole (msgspec batches)", 256 << 20), ("chunked", 1)):
            peak, seconds, outcome = measure(path, limit)
            name = SHAPES[shape][1] if shape in SHAPES else "HTA rank 0, repeated"
            print(f"| {name} | {size / 1e6:.1f} MB | {label} | {peak / 2**20:.0f} MiB | {peak / size:.2f} | "
                  f"{seconds:.1f} s | {outcome} |", flush=True)
    print(f"\nmeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
