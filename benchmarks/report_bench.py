"""Benchmark: the per-run cost of an HTML report (issue 19: 400 runs took 196 s, 0.5 s a run).

Specs of 50 and 200 runs from ``benchmarks/gen.py`` (each run: 12 inline step
times with 2 warm-up steps, claims; a breakdown on every fourth run; a
strong-scaling block per four runs) are rendered by fresh `effspec report`
processes.  The per-run figure is the marginal cost, (200-run − 50-run) / 150,
so start-up and imports cancel out; CPU seconds (user + system, from
``os.wait4``) vary less with a shared machine's load than wall time does.

    .venv/bin/python benchmarks/report_bench.py [--runs 50,200] [--repeat 3] [--samples 12] [--format html]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gen import generate_spec  # noqa: E402
from memory_bench import EFFSPEC, peak  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="50,200")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", default="html")
    ap.add_argument("--samples", type=int, default=12, help="step times per run (2 are warm-up)")
    args = ap.parse_args(argv)
    sizes = [int(n) for n in args.runs.split(",")]
    work = tempfile.mkdtemp(prefix="effspec-report-bench-")
    cpu, wall = {}, {}
    for n in sizes:
        spec = os.path.join(work, f"runs{n}.eff")
        with open(spec, "w", encoding="utf-8") as fh:
            fh.write(generate_spec(n, seed=0, samples=args.samples))
        out = os.path.join(work, f"runs{n}.{args.format}")
        best_cpu = best_wall = float("inf")
        rss = 0.0
        for _ in range(args.repeat):
            rss_mb, w, c, status, text = peak([EFFSPEC, "report", spec, "-o", out, "--timeout", "0"])
            assert status in (0, 1), text.decode("utf-8", "replace")[-2000:]
            best_cpu, best_wall, rss = min(best_cpu, c), min(best_wall, w), max(rss, rss_mb)
        cpu[n], wall[n] = best_cpu, best_wall
        with open(out, "rb") as fh:
            data = fh.read()
        print(f"{n:5} runs  CPU {best_cpu:7.2f} s  wall {best_wall:7.2f} s  peak RSS {rss:5.0f} MB  "
              f"{len(data) / 1e6:6.2f} MB  {data.count(b'<svg')} charts")
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        print(f"per run (marginal, {a} -> {b}): CPU {(cpu[b] - cpu[a]) / (b - a) * 1e3:.0f} ms, "
              f"wall {(wall[b] - wall[a]) / (b - a) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
