"""Regenerate examples/straggler_ranks.csv and examples/straggler_steps.csv (seeded).

A synthetic per-rank timing split shaped like a real one: 64 ranks on 8 nodes
(8 GPUs each), 60 steps after warm-up.  Rank 37 on node04 runs its kernels 12 %
slower than its peers (a GPU outside its thermal band), so at every step the
other 63 ranks finish computing early and wait for it in the gradient
all-reduce; that wait shows up as their `stall`.  Step time is the slowest
rank's total, as a barrier at the step boundary would measure it.
Run: python examples/tools/make_straggler_ranks.py
"""

import os
import random

rng = random.Random(2026)
HERE = os.path.join(os.path.dirname(__file__), "..")
RANKS, PER_NODE, STEPS, SLOW_RANK, SLOWDOWN = 64, 8, 60, 37, 1.12
rows, step_times = [], []
for step in range(1, STEPS + 1):
    compute = {r: 1.450 * (SLOWDOWN if r == SLOW_RANK else 1.0) * (1 + rng.gauss(0, 0.004)) for r in range(RANKS)}
    comm = {r: 0.300 * (1 + rng.gauss(0, 0.01)) for r in range(RANKS)}
    slowest = max(compute[r] + comm[r] for r in range(RANKS))
    for r in range(RANKS):
        stall = slowest - compute[r] - comm[r] + 0.004  # waiting for the slowest rank, plus the barrier
        rows.append((r, f"node{r // PER_NODE:02d}", step, compute[r], comm[r], stall))
    step_times.append(slowest + 0.004)
with open(os.path.join(HERE, "straggler_ranks.csv"), "w") as fh:
    fh.write("rank,node,step,compute,comm,stall\n")
    for r, node, step, c, m, s in rows:
        fh.write(f"{r},{node},{step},{c:.4f},{m:.4f},{s:.4f}\n")
with open(os.path.join(HERE, "straggler_steps.csv"), "w") as fh:
    fh.write("step,step_seconds\n")
    for step, seconds in enumerate(step_times, start=1):
        fh.write(f"{step},{seconds:.4f}\n")
