"""`effspec fmt`'s cost: every example and a large generated spec (issue 30, "one lexicon").

Times :func:`effspec.fmt.format_text` in one warm process (CPU time, the minimum over
``--repeats``) on each ``examples/*.eff`` and on a spec from ``benchmarks/gen.py``
(``--runs`` runs, with a comment on every statement so that the comment handling is
measured too), then the console script's wall time, the minimum over the repeats:
``effspec fmt --check`` over all the examples, and over the large spec.  ``--digests``
prints the SHA-256 of each output, to compare two checkouts byte for byte.

Usage, from the repository root::

    .venv/bin/python benchmarks/fmt_bench.py                  # --runs 1000 --repeats 5
    .venv/bin/python benchmarks/fmt_bench.py --digests
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from gen import run_block  # noqa: E402


def large_spec(runs: int) -> str:
    """``runs`` generated runs, each statement followed by a comment (and one own-line comment per block)."""
    import random

    rng = random.Random(0)
    body = "".join(run_block(i, rng) + "\n" for i in range(runs))
    body = re.sub(r"^(\s+(?:claim )?\w+\s*=[^\n]*)$", r"\1  # note", body, flags=re.M)
    body = re.sub(r"^( +)(\w+ \{)", r"\1# about this block\n\1\2", body, flags=re.M)
    return "eff 1\n\n" + body


def cpu_ms(text: str, repeats: int) -> float:
    from effspec.fmt import format_text

    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        format_text(text)
        best = min(best, time.process_time() - start)
    return best * 1000


def wall_s(args: list[str], repeats: int) -> float:
    exe = os.path.join(os.path.dirname(sys.executable), "effspec")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([exe, "fmt", "--check", *args], capture_output=True, check=False)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--digests", action="store_true")
    args = p.parse_args()
    from effspec.fmt import format_text

    examples = sorted(ROOT.glob("examples/*.eff"))
    big = large_spec(args.runs)
    if args.digests:
        for path in examples:
            out = format_text(path.read_text(encoding="utf-8")).text or ""
            print(hashlib.sha256(out.encode()).hexdigest()[:16], path.name)
        print(hashlib.sha256((format_text(big).text or "").encode()).hexdigest()[:16], f"generated {args.runs} runs")
        return
    print(f"load average {os.getloadavg()[0]:.1f}")
    total = 0.0
    for path in examples:
        ms = cpu_ms(path.read_text(encoding="utf-8"), args.repeats)
        total += ms
        print(f"{path.name:32s} {ms:8.1f} ms CPU")
    print(f"{'all examples':32s} {total:8.1f} ms CPU")
    lines = big.count("\n")
    print(f"{f'generated, {args.runs} runs ({lines} lines)':32s} {cpu_ms(big, max(1, args.repeats // 2)):8.1f} ms CPU")
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp, "large.eff")
        spec.write_text(big, encoding="utf-8")
        print(f"{'effspec fmt --check examples':32s} {wall_s([str(p) for p in examples], args.repeats):8.2f} s wall")
        print(f"{'effspec fmt --check large.eff':32s} {wall_s([str(spec)], max(1, args.repeats // 2)):8.2f} s wall")


if __name__ == "__main__":
    main()
