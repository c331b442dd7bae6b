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
  tests/test_units_cache.py) against one;
* the result cache: `effspec check` of a folder of 1,000 generated 4-run
  specs, whole process, warm (every file a hit) against cold (an empty cache:
  every file checked and its entry written), and against `--no-cache`.

    .venv/bin/python benchmarks/edges_bench.py

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


def main() -> int:
    clean, typos = recovery()
    print(f"recovery, 400 runs: clean {clean * 1000:.0f} ms, 20 typos {typos * 1000:.0f} ms: {typos / clean:.2f}x (target <= 2x)")
    t800, t3200 = text_output(800), text_output(3200)
    print(f"text output per run: 800 runs {t800 * 1e6:.0f} us, 3,200 runs {t3200 * 1e6:.0f} us: {t3200 / t800:.2f}x (flat = linear)")
    big_wall, big_rss, small_wall, small_rss = oversize()
    print(f"8,000-run file rejected: {big_wall * 1000:.0f} ms, {big_rss:.0f} MiB; a 4-run check {small_wall * 1000:.0f} ms, "
          f"{small_rss:.0f} MiB: {big_wall / small_wall:.2f}x")
    alt, one = alternating()
    print(f"unit table, two installs alternating: {alt * 1000:.2f} ms a check; one install {one * 1000:.2f} ms: {alt / one:.2f}x")
    cold, warm, uncached = result_cache()
    print(f"result cache, 1,000 files: cold {cold:.2f} s, warm {warm:.2f} s: {cold / warm:.1f}x (target >= 10x); "
          f"--no-cache {uncached:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
