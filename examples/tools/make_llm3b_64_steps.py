"""Regenerate examples/llm3b_64_steps.csv (seeded, so the file is reproducible).

A synthetic 520-step log shaped like a real one: 20 warm-up steps that settle
from 3 s, then steady steps around 1.10 s with a little jitter and five stalls
(a slow checkpoint flush, two data-loader hiccups, two NCCL timeouts retried).
Run: python examples/tools/make_llm3b_64_steps.py
"""

import os
import random

rng = random.Random(8812)
rows = []
warm = [3.02, 2.14, 1.71, 1.48, 1.36, 1.29, 1.24, 1.21, 1.19, 1.17, 1.16, 1.15, 1.14, 1.13, 1.13, 1.12, 1.12, 1.11, 1.11, 1.11]
rows += warm
steady = [round(1.100 + rng.gauss(0, 0.006), 4) for _ in range(500)]
for index, stall in ((57, 2.41), (133, 3.12), (260, 5.18), (391, 2.23), (444, 2.74)):
    steady[index] = stall
rows += steady
path = os.path.join(os.path.dirname(__file__), "..", "llm3b_64_steps.csv")
with open(path, "w") as fh:
    fh.write("step,step_seconds\n")
    for step, seconds in enumerate(rows, start=1):
        fh.write(f"{step},{seconds:.4f}\n")
