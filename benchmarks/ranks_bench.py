"""Benchmark: per-rank load + diagnosis on 16,384 ranks × 100 steps (1.6 M rows).

The CSV (~70 MB) is generated once into a temp dir (cached between runs by
its path), then loading and diagnosis are timed separately, best of N.

    .venv/bin/python benchmarks/ranks_bench.py [--repeat 3] [--ranks 16384] [--steps 100]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from effspec.ranks import loader
from effspec.ranks.diagnose import diagnose


def generate(path: str, n_ranks: int, n_steps: int, per_node: int = 8) -> None:
    """A synchronous run with one straggler (rank 12): comm = base + wait for the slowest."""
    rng = np.random.default_rng(20261129)
    compute = rng.normal(1.0, 0.01, (n_ranks, n_steps))
    compute[12] *= 1.3
    comm = 0.05 + (compute.max(axis=0) - compute)
    stall = np.abs(rng.normal(0.005, 0.001, (n_ranks, n_steps)))
    rank = np.repeat(np.arange(n_ranks), n_steps)
    step = np.tile(np.arange(n_steps), n_ranks)
    # Columns formatted with numpy's vectorized string ops, then joined once.
    cols = [rank.astype(str), np.char.add("node", (rank // per_node).astype(str)), step.astype(str)]
    cols += [np.char.mod("%.6f", a.ravel()) for a in (compute, comm, stall)]
    body = cols[0]
    for c in cols[1:]:
        body = np.char.add(np.char.add(body, ","), c)
    with open(path, "w") as fh:
        fh.write("rank,node,step,compute,comm,stall\n")
        fh.write("\n".join(body.tolist()))
        fh.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    path = os.path.join(tempfile.gettempdir(), f"effspec_ranks_{args.ranks}x{args.steps}.csv")
    if not os.path.exists(path):
        t = time.perf_counter()
        generate(path + ".tmp", args.ranks, args.steps)
        os.replace(path + ".tmp", path)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    rows = args.ranks * args.steps
    load_times, diag_times, cpu_times = [], [], []
    for _ in range(args.repeat):
        diags: list = []
        c0 = time.process_time()
        t0 = time.perf_counter()
        table = loader.load_rank_table(path, os.path.basename(path), None, diags)
        t1 = time.perf_counter()
        assert table is not None and not diags, diags
        d = diagnose(table, mfu=0.45)
        t2 = time.perf_counter()
        cpu_times.append(time.process_time() - c0)
        load_times.append(t1 - t0)
        diag_times.append(t2 - t1)
    assert (d.family, d.ranks) == ("straggler", (12,)), (d.family, d.ranks)
    print(f"rows {rows:,}  file {os.path.getsize(path) / 1e6:.0f} MB")
    print(f"load      best {min(load_times):.2f} s  (runs: {', '.join(f'{x:.2f}' for x in load_times)})")
    print(f"diagnose  best {min(diag_times):.2f} s  (runs: {', '.join(f'{x:.2f}' for x in diag_times)})")
    # CPU time is shown too: on a shared 2-core machine the wall clock includes waiting for a core.
    print(f"cpu       best {min(cpu_times):.2f} s (load + diagnose, this process)")
    best = min(a + b for a, b in zip(load_times, diag_times, strict=False))
    print(f"total     best {best:.2f} s  -> {d.family} {list(d.ranks)} {list(d.nodes)}")


if __name__ == "__main__":
    main()
