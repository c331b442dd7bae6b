"""Per-module test times (issue 29): each named test module run alone, one after the other.

    .venv/bin/python benchmarks/suite_times.py tests/report/test_report.py tests/report/test_report_layout.py
    .venv/bin/python benchmarks/suite_times.py --together tests/report/test_report.py tests/report/test_report_layout.py

Prints, per module, pytest's wall time and the CPU seconds (user + system) of
pytest and every process it started (the subprocesses a test runs, the
fuzzers' children): on a shared machine the CPU figure is the steadier one.
``--together`` runs the modules in one pytest session instead (the render
cache, tests/rendering.py, is shared within a session), and ``--fast`` adds
``-m "not slow"``.  Results are recorded in benchmarks/suite_times.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(paths: list[str], extra: list[str]) -> tuple[int, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra, *paths], cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, wall, cpu


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="+")
    p.add_argument("--together", action="store_true")
    p.add_argument("--fast", action="store_true")
    p.add_argument("-n", default=None, help="pytest-xdist workers (with --dist loadfile)")
    args = p.parse_args()
    extra = (["-m", "not slow"] if args.fast else []) + (["-n", args.n, "--dist", "loadfile"] if args.n else [])
    groups = [args.paths] if args.together else [[path] for path in args.paths]
    print("| module | exit | wall s | cpu s |\n|---|---|---|---|")
    for group in groups:
        status, wall, cpu = measure(group, extra)
        print(f"| {' + '.join(os.path.basename(g) for g in group)} | {status} | {wall:.1f} | {cpu:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
