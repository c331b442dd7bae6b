"""effspec benchmark harness: start-up, per-file, corpus, report and growth figures.

Run from the repository root with the project's venv::

    .venv/bin/python benchmarks/run.py            # full run (about 2 minutes on 2 cores)
    .venv/bin/python benchmarks/run.py --quick    # fewer repetitions

It prints a markdown table and writes it between the markers
``<!-- bench:start -->`` and ``<!-- bench:end -->`` in ``benchmarks/README.md``
(``--no-write`` leaves the file alone).

Every figure is a whole process or a loop inside one fresh process, started
from here, so that each has its own peak memory (``ru_maxrss`` of that
process, or for a process pool the sampled sum over the process tree).  The
targets are ratios to floors measured in the same run, interleaved with the
figure they bound, because absolute times vary between machines and with load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# Each `effspec check` here measures a check, not a result-cache look-up (edges_bench.result_cache
# measures the cache, with it turned back on).
os.environ.setdefault("EFFSPEC_NO_CACHE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
README = os.path.join(HERE, "README.md")
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
sys.path.insert(0, HERE)

from gen import generate_spec, write_corpus  # noqa: E402

PYTHON = sys.executable
EFFSPEC = os.path.join(os.path.dirname(PYTHON), "effspec")
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="0")


# ---------------------------------------------------------------- measuring


def _tree_rss_kb(pid: int) -> int:
    """Summed resident memory of ``pid`` and its descendants (Linux /proc), in KiB."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{p}/task/{p}/children") as fh:
                stack += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str], *, sample_tree: bool = False, cwd: str = ROOT) -> dict:
    """Run ``cmd`` once: wall seconds, its own peak RSS (MiB), stdout, exit status.

    With ``sample_tree`` the summed RSS of the process and its children is
    sampled every 20 ms as well (a process pool's workers are grandchildren,
    which ``ru_maxrss`` of the direct child does not include).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=ENV)
    peak_tree = 0
    stop = threading.Event()

    def sampler() -> None:
        nonlocal peak_tree
        while not stop.wait(0.02):
            peak_tree = max(peak_tree, _tree_rss_kb(proc.pid))

    thread = threading.Thread(target=sampler, daemon=True) if sample_tree else None
    if thread:
        thread.start()
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if thread:
        stop.set()
        thread.join()
    # CPU of the process and of the children it waited for (pool workers).
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "cpu": cpu, "rss_mb": max(usage.ru_maxrss, peak_tree) / 1024, "out": out.decode(),
            "rc": proc.returncode}


def repeat(cmds: dict[str, list[str]], times: int, **kw) -> dict[str, dict]:
    """Run several commands ``times`` times each, interleaved (so load drifts hit
    them alike); per command the median wall time and the largest peak RSS."""
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    rss: dict[str, float] = {k: 0.0 for k in cmds}
    rcs: dict[str, int] = {}
    for _ in range(times):
        for name, cmd in cmds.items():
            m = measure(cmd, **kw)
            walls[name].append(m["wall"])
            cpus[name].append(m["cpu"])
            rss[name] = max(rss[name], m["rss_mb"])
            rcs[name] = m["rc"]
    return {k: {"median": statistics.median(v), "min": min(v), "runs": v, "cpu": statistics.median(cpus[k]),
                "rss_mb": rss[k], "rc": rcs[k]}
            for k, v in walls.items()}


def child(mode: str, *args: str) -> list[str]:
    return [PYTHON, os.path.abspath(__file__), "--child", mode, *args]


# ------------------------------------------------------- in-process children


def _child_warm(folder: str) -> None:
    """Per-file cost in one process: every spec of ``folder`` through ``effspec.load``."""
    import effspec

    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".eff"))
    effspec.load(paths[0])  # imports, parser tables, unit table: paid once per process
    times, cpus = [], []
    for path in paths:
        t, c = time.perf_counter(), time.process_time()
        effspec.load(path)
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    print(json.dumps({"files": len(paths), "median_ms": statistics.median(times) * 1e3,
                      "mean_ms": statistics.fmean(times) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3,
                      "total_s": sum(times)}))


def _child_growth(runs: str, repeats: str) -> None:
    """Per-run cost of one spec of ``runs`` runs, warm, best of ``repeats``."""
    import effspec

    effspec.check_text(generate_spec(4, seed=99))  # warm-up
    text = generate_spec(int(runs), seed=7)
    best = best_cpu = float("inf")
    errors = 0
    for _ in range(int(repeats)):
        t, c = time.perf_counter(), time.process_time()
        result = effspec.check_text(text, "growth.eff")
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
        errors = sum(d.severity == "error" for d in result.diagnostics)
    n = int(runs)
    print(json.dumps({"runs": n, "total_s": best, "per_run_ms": best / n * 1e3, "per_run_cpu_ms": best_cpu / n * 1e3,
                      "errors": errors}))


def _child_weasyprint(html_path: str, pdf_path: str) -> None:
    """WeasyPrint alone on the report's HTML: import, layout, PDF bytes.

    The fetcher is the report's own (the HTML names bundled fonts by an
    ``effspec-asset:`` URL); it only reads package files.
    """
    with open(html_path, encoding="utf-8") as fh:
        html = fh.read()
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    from weasyprint import HTML
    from weasyprint.text.fonts import FontConfiguration

    from effspec.report.pdf import url_fetcher

    pdf = HTML(string=html, base_url=None, url_fetcher=url_fetcher()).write_pdf(font_config=FontConfiguration())
    with open(pdf_path, "wb") as fh:
        fh.write(pdf)


def _child_print_html(spec: str, html_path: str) -> None:
    """The exact HTML the PDF renderer hands to WeasyPrint (print CSS included)."""
    import effspec
    from effspec.report.html import render_html
    from effspec.report.pdf import print_css
    from effspec.report.sections import build

    html = render_html(build(effspec.load(spec), charts=True), print_css("a4"))
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(html)


CHILDREN = {"warm": _child_warm, "growth": _child_growth, "weasyprint": _child_weasyprint,
            "print_html": _child_print_html}


# ------------------------------------------------------------------- figures


def largest_example() -> str:
    specs = [os.path.join(ROOT, "examples", f) for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".eff")]
    return max(specs, key=os.path.getsize)


FIGURES = ("cold", "warm", "many", "report", "growth")


def fig_cold(ctx: dict) -> None:
    """Cold check of one typical spec beside the python + pint import floor."""
    cold = repeat({"check": [EFFSPEC, "check", ctx["spec4"]], "floor": [PYTHON, "-c", "import pint"],
                   "python": [PYTHON, "-c", "pass"]}, ctx["reps"])
    c, f = cold["check"], cold["floor"]
    ratio, cpu_ratio = c["median"] / f["median"], c["cpu"] / f["cpu"]
    ctx["rows"].append(["cold `effspec check` of a 4-run spec, whole process (CPU)",
                        f"{c['median'] * 1e3:.0f} ms ({c['cpu'] * 1e3:.0f} ms)", f"{c['rss_mb']:.0f} MiB",
                        f"≤ 1.3 × floor → **{ratio:.2f} ×** (CPU {cpu_ratio:.2f} ×)", _ok(ratio <= 1.3)])
    ctx["rows"].append(["floor: `python -c \"import pint\"`, same venv (CPU)",
                        f"{f['median'] * 1e3:.0f} ms ({f['cpu'] * 1e3:.0f} ms)", f"{f['rss_mb']:.0f} MiB", "—", ""])
    p = cold["python"]
    ctx["rows"].append(["bare `python -c pass` (CPU)", f"{p['median'] * 1e3:.0f} ms ({p['cpu'] * 1e3:.0f} ms)",
                        f"{p['rss_mb']:.0f} MiB", "—", ""])


def fig_warm(ctx: dict) -> None:
    """Warm per-file cost over 1,000 generated 4-run specs in one process."""
    m = measure(child("warm", ctx["corpus"]))
    warm = json.loads(m["out"])
    ctx["rows"].append([f"warm per-file cost in one process, {warm['files']:,} 4-run specs: median (CPU)",
                        f"{warm['median_ms']:.2f} ms ({warm['cpu_ms']:.2f} ms)", f"{m['rss_mb']:.0f} MiB",
                        "< 3 ms", _ok(warm["median_ms"] < 3)])
    ctx["warm"] = warm


def fig_many(ctx: dict) -> None:
    """`effspec check` over 1,000 files as one command (process pool)."""
    walls, cpus, peak, rc = [], [], 0.0, 0
    for _ in range(1 if ctx["quick"] else 3):
        m = measure([EFFSPEC, "check", ctx["corpus"]], sample_tree=True)
        walls.append(m["wall"])
        cpus.append(m["cpu"])
        peak, rc = max(peak, m["rss_mb"]), m["rc"]
    many = statistics.median(walls)
    ctx["rows"].append([f"`effspec check DIR` of 1,000 4-run specs, one command, {os.cpu_count()} cores (CPU, all processes)",
                        f"{many:.2f} s ({statistics.median(cpus):.2f} s)", f"{peak:.0f} MiB (tree)",
                        "< 10 s on 2 cores", _ok(many < 10 and rc in (0, 1))])


def fig_report(ctx: dict) -> None:
    """Reports of the largest example: HTML beyond the check, PDF beside WeasyPrint alone."""
    work, reps = ctx["work"], ctx["reps"]
    big = largest_example()
    name = os.path.relpath(big, ROOT)
    html_out, pdf_out = os.path.join(work, "r.html"), os.path.join(work, "r.pdf")
    print_html, wp_pdf = os.path.join(work, "print.html"), os.path.join(work, "wp.pdf")
    rep = repeat({"check": [EFFSPEC, "check", big], "html": [EFFSPEC, "report", big, "-o", html_out]}, reps)
    beyond = rep["html"]["median"] - rep["check"]["median"]
    ctx["rows"].append([f"HTML report of `{name}`, whole process", f"{rep['html']['median'] * 1e3:.0f} ms",
                        f"{rep['html']['rss_mb']:.0f} MiB",
                        f"< 0.5 s beyond the check ({rep['check']['median'] * 1e3:.0f} ms) → **+{beyond * 1e3:.0f} ms**",
                        _ok(beyond < 0.5 and rep["html"]["rc"] in (0, 1))])
    if measure(child("print_html", big, print_html))["rc"] != 0 or not os.path.exists(print_html):
        ctx["notes"].append("PDF: the report's print HTML could not be built, so no PDF figure was taken.")
        return
    pdf = repeat({"pdf": [EFFSPEC, "report", big, "-o", pdf_out],
                  "wp": child("weasyprint", print_html, wp_pdf)}, max(3, reps // 2))
    pratio = pdf["pdf"]["median"] / pdf["wp"]["median"]
    ctx["rows"].append([f"PDF report of `{name}`, whole process", f"{pdf['pdf']['median'] * 1e3:.0f} ms",
                        f"{pdf['pdf']['rss_mb']:.0f} MiB", f"≤ 1.5 × WeasyPrint alone → **{pratio:.2f} ×**",
                        _ok(pratio <= 1.5 and pdf["pdf"]["rc"] in (0, 1))])
    ctx["rows"].append(["floor: WeasyPrint alone on the same HTML (import, layout, PDF), whole process",
                        f"{pdf['wp']['median'] * 1e3:.0f} ms", f"{pdf['wp']['rss_mb']:.0f} MiB", "—", ""])


def fig_growth(ctx: dict) -> None:
    """Per-run cost of one spec at 100, 400 and 1,600 runs (warm, one process each)."""
    per_run = {}
    for n in (100, 400, 1600):
        m = measure(child("growth", str(n), "2" if ctx["quick"] else "3"))
        g = json.loads(m["out"])
        per_run[n] = g["per_run_cpu_ms"]
        ctx["rows"].append([f"growth: one spec of {n:,} runs, warm: total, per run (CPU per run)",
                            f"{g['total_s'] * 1e3:.0f} ms, {g['per_run_ms']:.2f} ms ({g['per_run_cpu_ms']:.2f} ms)",
                            f"{m['rss_mb']:.0f} MiB", "per-run cost flat", ""])
    growth = per_run[1600] / per_run[100]
    ctx["rows"][-1][3] = f"linear: CPU per run at 1,600 ≤ 1.5 × at 100 → **{growth:.2f} ×**"
    ctx["rows"][-1][4] = _ok(growth <= 1.5)


def run_all(quick: bool, only: tuple[str, ...] = FIGURES) -> tuple[list[list[str]], list[str]]:
    """Measure the figures in ``only``; return table rows and notes."""
    work = tempfile.mkdtemp(prefix="effspec-bench-")
    ctx: dict = {"quick": quick, "reps": 3 if quick else 9, "rows": [], "notes": [], "work": work}
    try:
        ctx["spec4"] = os.path.join(work, "typical.eff")
        with open(ctx["spec4"], "w", encoding="utf-8") as fh:
            fh.write(generate_spec(4, seed=0))
        ctx["corpus"] = os.path.join(work, "corpus")
        if "warm" in only or "many" in only:
            write_corpus(ctx["corpus"], 1000, runs=4)
        # Warm the on-disk caches (unit table, lark tables) as a user's second run finds them.
        measure([EFFSPEC, "check", ctx["spec4"]])
        for name in FIGURES:
            if name in only:
                globals()["fig_" + name](ctx)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ctx["rows"], ctx["notes"]


def _ok(flag: bool) -> str:
    return "met" if flag else "**not met**"


def table(rows: list[list[str]], notes: list[str], quick: bool) -> str:
    import effspec

    cpu = platform.processor() or platform.machine()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    command = "python benchmarks/run.py --quick" if quick else "python benchmarks/run.py"
    head = [f"Measured {time.strftime('%Y-%m-%d %H:%M')} with `{command}`: "
            f"effspec {effspec.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores ({cpu}), "
            f"load average {load:.1f} at the end. Times are medians of interleaved runs; memory is peak RSS.",
            "",
            "| figure | time | peak memory | target → measured | status |",
            "|---|---|---|---|---|"]
    body = ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(head + body + ([""] + [f"- {n}" for n in notes] if notes else [])) + "\n"


def write_readme(block: str) -> None:
    section = f"{START}\n{block}{END}"
    if os.path.exists(README):
        with open(README, encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = "# effspec benchmarks\n"
    if START in text and END in text:
        text = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## Latest results\n\n" + section + "\n"
    with open(README, "w", encoding="utf-8") as fh:
        fh.write(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="effspec benchmarks")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--only", default=",".join(FIGURES), help="comma-separated figures: " + ", ".join(FIGURES))
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        CHILDREN[args.child[0]](*args.child[1:])
        return 0
    only = tuple(x.strip() for x in args.only.split(",") if x.strip())
    unknown = set(only) - set(FIGURES)
    if unknown:
        p.error("unknown figure(s): " + ", ".join(sorted(unknown)))
    rows, notes = run_all(args.quick, only)
    block = table(rows, notes, args.quick)
    print(block)
    if not args.no_write:
        write_readme(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
