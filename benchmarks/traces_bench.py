"""`effspec traces` at scale: 1,024 rank traces, 1..N workers, against HTA's loader.

The corpus is the two real NCCL traces of tests/fixtures/traces/hta replicated
to 1,024 ranks (rank i is a copy of rank i % 2 with distributedInfo.rank = i
and world_size = 1024), gzipped as Kineto writes them: 1.72 MB of JSON,
~120 kB on disk each.  Each figure runs as a fresh process; throughput is
bytes per CPU second (user + system of the process and its workers), i.e.
MB/s per core; peak memory is the largest worker's ru_maxrss.

HTA (`pip install HolisticTraceAnalysis`, not an effspec dependency) loads
the same files with `TraceAnalysis(trace_dir=...)` on a subset (it needs
~0.2 CPU seconds a file here); the ratio is per CPU second, in the same run.

It needs a venv with the scale extra and HTA (HTA is not in `.[test]`):

    python3 -m venv /tmp/scalevenv
    /tmp/scalevenv/bin/pip install -e '.[scale]' HolisticTraceAnalysis==0.5.0
    /tmp/scalevenv/bin/python benchmarks/traces_bench.py [--ranks 1024] [--hta-ranks 64]

Without HTA the HTA row is left out; without dask, the Dask row.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTA = ROOT / "tests" / "fixtures" / "traces" / "hta"
PY = sys.executable
EFFSPEC = str(Path(PY).with_name("effspec"))


def make_corpus(folder: Path, ranks: int) -> tuple[int, int]:
    """Write ``ranks`` traces; return (bytes on disk, bytes of JSON)."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(gzip.decompress((HTA / f"rank-{r}.json.gz").read_bytes())) for r in (0, 1)]
    disk = raw = 0
    for i in range(ranks):
        path = folder / f"rank-{i:05d}.json.gz"
        doc = docs[i % 2]
        doc["distributedInfo"] = dict(doc["distributedInfo"], rank=i, world_size=ranks)
        data = json.dumps(doc).encode()
        if not path.exists():
            path.write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
        disk += path.stat().st_size
        raw += len(data)
    return disk, raw


def measure(cmd: list[str], env: dict | None = None) -> dict:
    """Wall and CPU seconds (the process and all its children) and the largest child's peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "maxrss_mib": after.ru_maxrss / 1024, "stderr": proc.stderr}


WORKER_RSS = """
import resource, sys, runpy
sys.argv = ["effspec"] + sys.argv[1:]
from effspec.cli import main
status = main(sys.argv[1:])
self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write(f"\\nRSS self={self_rss} children={kids_rss}\\n")
sys.exit(status)
"""


def effspec_run(folder: Path, out: Path, executor: str, jobs: int, extra: list[str] | None = None) -> dict:
    cmd = [PY, "-c", WORKER_RSS, "traces", str(folder), "-o", str(out), "--executor", executor, "-j", str(jobs),
           *(extra or [])]
    m = measure(cmd)
    line = [ln for ln in m["stderr"].splitlines() if ln.startswith("RSS ")][-1]
    parts = dict(p.split("=") for p in line.split()[1:])
    m["parent_mib"] = int(parts["self"]) / 1024
    m["worker_mib"] = int(parts["children"]) / 1024 if executor == "processes" else m["parent_mib"]
    return m


HTA_LOAD = """
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1])
"""


def hta_available() -> bool:
    return subprocess.run([PY, "-c", "import hta.trace_analysis"], capture_output=True).returncode == 0


def row(name: str, files: int, disk: int, raw: int, m: dict, workers: int) -> str:
    per_core = raw / m["cpu"] / 1e6
    return (f"| {name} | {files:,} | {workers} | {m['wall']:.1f} s | {m['cpu']:.1f} s | {raw / m['wall'] / 1e6:,.0f} MB/s "
            f"| {per_core:,.1f} MB/s ({disk / m['cpu'] / 1e6:,.1f}) | {m.get('worker_mib', m['maxrss_mib']):,.0f} MiB |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--hta-ranks", type=int, default=32)
    p.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "effspec-traces-bench"))
    args = p.parse_args(argv)
    cache = Path(args.cache)
    cores = os.cpu_count() or 1
    corpus = cache / f"corpus-{args.ranks}"
    disk, raw = make_corpus(corpus, args.ranks)
    small = cache / f"corpus-{args.hta_ranks}"
    sdisk, sraw = make_corpus(small, args.hta_ranks)
    lines = ["| run | files | workers | wall | CPU | JSON MB/s (wall) | JSON MB/s per core (gz) | peak RSS per worker |",
             "|---|---|---|---|---|---|---|---|"]
    out = cache / "out.csv"
    reference = None
    for executor, jobs in [("serial", 1), ("processes", 1), *[("processes", j) for j in range(2, cores + 1)],
                           ("dask", cores)]:
        if executor == "dask":
            try:
                import distributed  # noqa: F401
            except ImportError:
                continue
        m = effspec_run(corpus, out, executor, jobs)
        data = out.read_bytes()
        reference = reference or data
        assert data == reference, f"{executor} -j {jobs} wrote different bytes"
        lines.append(row(f"effspec traces, {executor}", args.ranks, disk, raw, m, jobs))
        print(lines[-1], flush=True)
    m = effspec_run(small, out, "processes", 1)
    lines.append(row("effspec traces, processes (HTA's subset)", args.hta_ranks, sdisk, sraw, m, 1))
    print(lines[-1], flush=True)
    m_chunked = effspec_run(small, out, "processes", 1, ["--stream-above", "1"])
    lines.append(row("effspec traces, chunked parser (subset)", args.hta_ranks, sdisk, sraw, m_chunked, 1))
    print(lines[-1], flush=True)
    if hta_available():
        h = measure([PY, "-c", HTA_LOAD, str(small)])
        lines.append(row("HTA 0.5.0 `TraceAnalysis(trace_dir)`", args.hta_ranks, sdisk, sraw, h, min(cores, args.hta_ranks)))
        lines.append("")
        lines.append(f"HTA / effspec CPU per file, same {args.hta_ranks} files: "
                     f"{h['cpu'] / m['cpu']:.1f}x (effspec's load rate per core is {h['cpu'] / m['cpu']:.1f}x HTA's).")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
