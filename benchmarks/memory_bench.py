"""Benchmark: peak memory of `effspec check` on large CSVs within the limits (issue 19).

Two inputs that the limits admit (256 MiB, 5,000,000 rows) but that used to
take 2-4 GB:

* a step-time CSV (`timing.step_time = file … column …`) of ``--steps-mb`` MB
  with one emoji in a comment column: one non-ASCII character made the whole
  decoded text four bytes per character, held twice (str and StringIO);
* a per-rank CSV of ``--ranks-mb`` MB with every cell quoted, which takes the
  loader's slow path (the csv module): the decoded body, a StringIO copy and
  two Python lists of cell offsets.

Each file is generated once into a temp folder (kept between runs by its
name), then checked by a fresh `effspec check` process; the figure is that
process's peak RSS (its own VmHWM: see ``peak``) and its wall time.

    .venv/bin/python benchmarks/memory_bench.py [--steps-mb 245] [--ranks-mb 135] [--only steps,ranks]

The same generators, at a few MB, are used by tests/security/test_bounded_cost.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

# Each `effspec check` here measures a check, not a result-cache look-up (edges_bench.result_cache
# measures the cache, with it turned back on).
os.environ.setdefault("EFFSPEC_NO_CACHE", "1")

EFFSPEC = os.path.join(sysconfig.get_path("scripts"), "effspec")
STEP_ROW = 58  # bytes per generated step-time row, about
RANK_ROW = 55  # bytes per generated quoted rank row, about


def write_steps_csv(path: str, size: int, emoji: bool = True) -> int:
    """A step-time CSV of about ``size`` bytes: step, step_seconds, note; one emoji in the last row's note.

    Returns the number of data rows.  Written in blocks, so generating 245 MB takes little memory.
    """
    rows = max(1, size // STEP_ROW)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("step,step_seconds,note\n")
        block = []
        for i in range(rows):
            seconds = 1.0 + (i * 7919 % 1000) / 100_000  # 1.00000 .. 1.00999, deterministic
            note = "ok \U0001F600" if emoji and i == rows - 1 else "optimizer step end; barrier ok; no stall"
            block.append(f"{i},{seconds:.6f},{note}\n")
            if len(block) == 65_536:
                fh.write("".join(block))
                block.clear()
        fh.write("".join(block))
    return rows


def write_quoted_ranks_csv(path: str, size: int, ranks: int = 1024) -> int:
    """A per-rank CSV of about ``size`` bytes, every cell quoted (the loader's slow path), a full rank × step grid.

    Returns the number of data rows.
    """
    steps = max(1, size // (RANK_ROW * ranks))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write('"rank","node","step","compute","comm","stall"\n')
        for s in range(steps):
            fh.write("".join(f'"{r}","node{r // 8}","{s}","{1.0 + (r * 31 + s) % 97 / 10_000:.6f}","0.050000","0.005000"\n'
                             for r in range(ranks)))
    return steps * ranks


STEPS_SPEC = """eff 1
run big {
  hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog }
  work { seq_len = 4096 token/sequence  global_batch = 64 sequence }
  timing { step_time = file "steps.csv" column "step_seconds"  warmup = 0 step  boundary = "optimizer step" }
}
"""

RANKS_SPEC = """eff 1
run big {
  hardware { accelerator = "H100-SXM5-80GB"  count = 1024 device  dtype = bf16  peak = catalog }
  work { seq_len = 4096 token/sequence  global_batch = 1024 sequence }
  timing { step_time = 1.0 s  warmup = 0 step  boundary = "optimizer step" }
  ranks { samples = file "ranks.csv" }
}
"""


def prepare(folder: str, kind: str, megabytes: float) -> str:
    """The spec of ``kind`` (steps or ranks) with its CSV of ``megabytes`` MB in ``folder``; returns the spec's path."""
    os.makedirs(folder, exist_ok=True)
    spec = os.path.join(folder, f"{kind}.eff")
    csv_path = os.path.join(folder, f"{kind}.csv")
    if not os.path.exists(csv_path):
        writer = write_steps_csv if kind == "steps" else write_quoted_ranks_csv
        writer(csv_path + ".tmp", int(megabytes * 1e6))
        os.replace(csv_path + ".tmp", csv_path)
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(STEPS_SPEC if kind == "steps" else RANKS_SPEC)
    return spec


# A child's ru_maxrss on Linux keeps the high-water mark of the memory it was
# started from (exec keeps the maximum, and a vforked child's is its parent's):
# from a test session that has grown to 380 MB, every child "peaked" at 380 MB.
# The child's own VmHWM (/proc/self/status, per address space, reset by exec)
# is its peak alone; this wrapper runs a Python script and writes that figure
# to a file at exit.
_HWM = """import atexit, os, runpy, sys
out = os.environ.pop("EFFSPEC_BENCH_HWM")
def _write():
    with open("/proc/self/status") as fh:
        kb = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(out, "w") as fh:
        fh.write(kb)
atexit.register(_write)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _is_python_script(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def peak(cmd: list[str], timeout: float | None = None) -> tuple[float, float, float, int, bytes]:
    """(peak RSS in MB, wall seconds, CPU seconds, exit status, output) of one child process.

    The peak is the child's own VmHWM where Linux has it and the command is a
    Python script (see _HWM), else ``ru_maxrss`` from ``os.wait4`` on that
    child alone.  A child still running after ``timeout`` seconds is killed
    (exit status -9).
    """
    env, hwm_file = None, None
    if os.path.exists("/proc/self/status") and _is_python_script(cmd[0]):
        fd, hwm_file = tempfile.mkstemp(prefix="effspec-hwm-")
        os.close(fd)
        env = dict(os.environ, EFFSPEC_BENCH_HWM=hwm_file)
        cmd = [sys.executable, "-c", _HWM, *cmd]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    timer = threading.Timer(timeout, proc.kill) if timeout else None
    if timer is not None:
        timer.start()
    try:
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        if timer is not None:
            timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss_kb = usage.ru_maxrss
    if hwm_file is not None:
        try:
            with open(hwm_file) as fh:
                rss_kb = int(fh.read() or rss_kb)
        except (OSError, ValueError):
            pass
        finally:
            os.unlink(hwm_file)
    return rss_kb / 1024, time.perf_counter() - t, usage.ru_utime + usage.ru_stime, proc.returncode, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps-mb", type=float, default=245)
    ap.add_argument("--ranks-mb", type=float, default=135)
    ap.add_argument("--only", default="steps,ranks")
    args = ap.parse_args(argv)
    for kind in args.only.split(","):
        mb = args.steps_mb if kind == "steps" else args.ranks_mb
        spec = prepare(os.path.join(tempfile.gettempdir(), f"effspec_memory_{kind}_{mb:g}mb"), kind, mb)
        size = os.path.getsize(spec[:-4] + ".csv") / 1e6
        rss, wall, cpu, status, out = peak([EFFSPEC, "check", spec])
        summary = out.decode("utf-8", "replace").strip().splitlines()[-1:]
        print(f"{kind:5}  csv {size:7.1f} MB  peak RSS {rss:7.0f} MB  wall {wall:6.1f} s  CPU {cpu:6.1f} s  exit {status}  {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
