"""Benchmark: the edges of issue 17, each a ratio measured in one run.

* syntax-error recovery: a 400-run generated spec with 20 typos against the
  same spec clean (parse only, one warm process; the typos are
  `step_time step_time` on evenly spaced lines, as in
  tests/regressions/test_recovery_is_linear.py);
* the text output at 800 and 3,200 runs: formatting a result with one finding
  per run, per run (quadratic before: the source was split once per finding);
* rejecting an oversize file: `effspec check` of an 8,000-run file, whole
  process, against `effspec check` of a 4-run spec;
* alternating installs: two unit-table cache entries served alternately
  (two pint installs simulated by two table keys, as in
  tests/front/test_units_cache.py) against one;
* the per-rank loader with and without the fast path: `load_rank_table` of
  ranks_bench.py's 1.6 M-row CSV (16,384 ranks x 100 steps, 72 MB) through
  pyarrow and with EFFSPEC_NO_FAST_CSV=1, each in fresh processes, interleaved,
  3 each; the two tables must hash the same.  polars' `read_csv` of the same
  bytes is shown for scale when polars is installed.
* the result cache: `effspec check` of a folder of 1,000 generated 4-run
  specs, whole process, warm (every file a hit) against cold (an empty cache:
  every file checked and its entry written), and against `--no-cache`.

    .venv/bin/python benchmarks/edges_bench.py          # all rows
    .venv/bin/python benchmarks/edges_bench.py ranks    # only the named rows (recovery text oversize alternating ranks cache)

CPU seconds (process_time) for in-process figures, best of 3; wall and peak
RSS for whole processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

# Each `effspec check` here measures a check, not a result-cache look-up (edges_bench.result_cache
# measures the cache, with it turned back on).
os.environ.setdefault("EFFSPEC_NO_CACHE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gen import generate_spec  # noqa: E402


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def typo_spec(runs: int, typos: int) -> str:
    lines = generate_spec(runs=runs).split("\n")
    timing = [i for i, line in enumerate(lines) if "step_time" in line]
    for k in range(typos):
        i = timing[k * (len(timing) // typos)]
        lines[i] = lines[i].replace("step_time", "step_time step_time", 1)
    return "\n".join(lines)


def recovery() -> tuple[float, float]:
    from effspec.front import syntax

    syntax.parser()
    clean, broken = generate_spec(runs=400), typo_spec(400, 20)
    return best(lambda: syntax.parse(clean)), best(lambda: syntax.parse(broken))


def text_output(runs: int) -> float:
    import effspec
    from effspec.report.text import text

    spec = generate_spec(runs=runs).replace("claim mfu", "claim mfu_wrong", runs)  # one EFF002 per run
    result = effspec.check_text(spec, "g.eff")
    assert len(result.diagnostics) >= min(runs, 200)
    return best(lambda: text(result)) / runs


def whole(cmd: list[str]) -> tuple[float, float]:
    from memory_bench import peak

    rss, wall, _cpu, _status, _out = peak(cmd)
    return wall, rss


def oversize() -> tuple[float, float, float, float]:
    effspec = os.path.join(os.path.dirname(sys.executable), "effspec")
    with tempfile.TemporaryDirectory() as tmp:
        big, small = os.path.join(tmp, "big.eff"), os.path.join(tmp, "small.eff")
        with open(big, "w") as fh:
            fh.write("eff 1\n" + "".join(f"run r{i} {{ timing {{ step_time = 1 s }} }}\n" for i in range(8000)))
        with open(small, "w") as fh:
            fh.write(generate_spec(runs=4))
        big_wall, big_rss = min((whole([effspec, "check", big]) for _ in range(3)), key=lambda x: x[0])
        small_wall, small_rss = min((whole([effspec, "check", small]) for _ in range(3)), key=lambda x: x[0])
    return big_wall, big_rss, small_wall, small_rss


def alternating() -> tuple[float, float]:
    code = r"""
import os, sys, time
from effspec.front import units
key_a = units.table_key()
key_b = dict(key_a, pint=["/other/venv/site-packages/pint", ["0.24"], []])
def serve(keys):
    t = time.process_time()
    for key in keys:
        units.table_key = lambda key=key: key
        units.unit_table.cache_clear()
        units.unit_table()
    return time.process_time() - t
serve([key_a, key_b])  # both entries written once
print(serve([key_a, key_b] * 10) / 20, serve([key_a] * 20) / 20)
"""
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env=dict(os.environ, XDG_CACHE_HOME=cache)).stdout.split()
    return float(out[0]), float(out[1])


# One load in a fresh process: wall and CPU seconds of the load alone, the
# process's peak RSS (VmHWM) and its RSS before the load, and a hash of the table.
_LOAD = r"""
import hashlib, os, sys, time
def status(key):
    with open("/proc/self/status") as fh:
        return int(next(line.split()[1] for line in fh if line.startswith(key))) / 1024
path, how = sys.argv[1], sys.argv[2]
import numpy as np
if how == "polars":
    import polars as pl
    before = status("VmRSS:")
    t, c = time.perf_counter(), time.process_time()
    with open(path, "rb") as fh:
        frame = pl.read_csv(fh.read(), schema_overrides={"node": pl.String}, quote_char=None)
    digest = str(frame.height)
else:
    from effspec.ranks import fast_csv, loader
    assert fast_csv.available() == (how == "fast"), "pyarrow is not installed" if how == "fast" else how
    if how == "fast":
        fast_csv._pyarrow()  # the import is start-up, not loading
    before = status("VmRSS:")
    t, c = time.perf_counter(), time.process_time()
    table = loader.load_rank_table(path, "ranks.csv", None, [])
    h = hashlib.sha256(repr(table.node_names).encode())
    for name in ("rank", "node", "step", "compute", "comm", "stall"):
        h.update(getattr(table, name).tobytes())
    digest = h.hexdigest()
print(time.perf_counter() - t, time.process_time() - c, before, status("VmHWM:"), digest)
"""


def rank_loader(repeat: int = 3) -> dict[str, tuple[float, float, float, float]]:
    """(best wall, best CPU, least peak RSS, RSS before loading) per path, in MiB and seconds."""
    from ranks_bench import generate

    path = os.path.join(tempfile.gettempdir(), "effspec_ranks_16384x100.csv")  # ranks_bench.py's file
    if not os.path.exists(path):
        generate(path + ".tmp", 16384, 100)
        os.replace(path + ".tmp", path)
    hows = ["fast", "numpy"]
    try:
        import polars  # noqa: F401
        hows.append("polars")
    except ImportError:
        pass
    runs: dict[str, list[list[float]]] = {how: [] for how in hows}
    digests = set()
    for _ in range(repeat):
        for how in hows:
            env = dict(os.environ, EFFSPEC_NO_FAST_CSV="1" if how == "numpy" else "0")
            out = subprocess.run([sys.executable, "-c", _LOAD, path, how], capture_output=True, text=True, env=env,
                                 check=True).stdout.split()
            runs[how].append([float(x) for x in out[:4]])
            if how != "polars":
                digests.add(out[4])
    assert len(digests) == 1, "the fast path and the numpy loader read different tables"
    return {how: (min(r[0] for r in rs), min(r[1] for r in rs), min(r[3] for r in rs), min(r[2] for r in rs))
            for how, rs in runs.items()}


def result_cache(files: int = 1000) -> tuple[float, float, float]:
    """Wall seconds of `effspec check FOLDER`: cold (empty cache), warm (best of 3), and --no-cache."""
    effspec = os.path.join(os.path.dirname(sys.executable), "effspec")
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "corpus")
        os.makedirs(os.path.join(folder, ".git"))
        for i in range(files):
            with open(os.path.join(folder, f"s{i:04d}.eff"), "w") as fh:
                fh.write(generate_spec(runs=4, seed=i))
        env = {k: v for k, v in os.environ.items() if k not in ("EFFSPEC_NO_CACHE", "EFFSPEC_CACHE_DIR")}
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "xdg")

        def wall(*extra: str) -> float:
            t = time.perf_counter()
            subprocess.run([effspec, "check", folder, "--quiet", *extra], env=env, stdout=subprocess.DEVNULL, check=False)
            return time.perf_counter() - t

        wall("--no-cache")  # fills the parser and unit caches, so that neither side pays for them
        cold = wall()
        warm = min(wall() for _ in range(3))
        uncached = wall("--no-cache")
    return cold, warm, uncached


def main(only: list[str]) -> int:
    if not only or "recovery" in only:
        clean, typos = recovery()
        print(f"recovery, 400 runs: clean {clean * 1000:.0f} ms, 20 typos {typos * 1000:.0f} ms: {typos / clean:.2f}x (target <= 2x)")
    if not only or "text" in only:
        t800, t3200 = text_output(800), text_output(3200)
        print(f"text output per run: 800 runs {t800 * 1e6:.0f} us, 3,200 runs {t3200 * 1e6:.0f} us: {t3200 / t800:.2f}x (flat = linear)")
    if not only or "oversize" in only:
        big_wall, big_rss, small_wall, small_rss = oversize()
        print(f"8,000-run file rejected: {big_wall * 1000:.0f} ms, {big_rss:.0f} MiB; a 4-run check {small_wall * 1000:.0f} ms, "
              f"{small_rss:.0f} MiB: {big_wall / small_wall:.2f}x")
    if not only or "alternating" in only:
        alt, one = alternating()
        print(f"unit table, two installs alternating: {alt * 1000:.2f} ms a check; one install {one * 1000:.2f} ms: {alt / one:.2f}x")
    if not only or "ranks" in only:
        r = rank_loader()
        for how, (wall, cpu, hwm, before) in r.items():
            print(f"per-rank loader, 1.6 M rows, {how}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {hwm:.0f} MiB "
                  f"({hwm - before:.0f} MiB over the {before:.0f} MiB before loading)")
        (fw, fc, fh, fb), (nw, nc, nh, nb) = r["fast"], r["numpy"]
        print(f"per-rank loader, fast against numpy: wall {fw / nw:.2f}x, CPU {fc / nc:.2f}x, peak RSS {fh / nh:.2f}x "
              f"(over the start {(fh - fb) / (nh - nb):.2f}x)")
    if not only or "cache" in only:
        cold, warm, uncached = result_cache()
        print(f"result cache, 1,000 files: cold {cold:.2f} s, warm {warm:.2f} s: {cold / warm:.1f}x (target >= 10x); "
              f"--no-cache {uncached:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
