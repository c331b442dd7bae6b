"""Per-file check cost when every run's claim disagrees, against agreeing claims (issue 29).

    .venv/bin/python benchmarks/gap_bench.py               # 100 specs each, best of 3 (CPU)
    .venv/bin/python benchmarks/gap_bench.py --profile     # + a cProfile summary of the mismatching corpus
    .venv/bin/python benchmarks/gap_bench.py --digests OUT.json   # output digests (text, json, sarif)

Each figure is the CPU time (``time.process_time``, which load on a shared machine
moves less than wall time) of checking 100 generated 4-run specs (benchmarks/gen.py,
``--mismatch``: every run's MFU claim disagrees) in one warm process, divided by 100:
the minimum over the repeats. Targets: 15 ms per mismatching file, 3 ms per clean file.

``--digests`` writes the sha256 of each file's text, JSON and SARIF output, for the
examples and both generated corpora (compare two commits' digests to see that a
change leaves the output byte for byte; tests/engine/test_gap_speed.py compares the
numbers-only search's with the full evaluation's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from gen import generate_spec  # noqa: E402


def corpus(mismatch: bool, files: int = 100) -> list[tuple[str, str]]:
    return [(f"spec_{i:05d}{'_m' if mismatch else ''}.eff", generate_spec(4, seed=i, mismatch=mismatch))
            for i in range(files)]


def outputs(text: str, name: str, folder: str | None = None) -> dict[str, str]:
    """The file's check output in each format, as `effspec check --format F` writes it for one file."""
    import effspec
    from effspec.report.sarif import sarif_log
    from effspec.report.text import result_json
    from effspec.report.text import text as text_output

    result = effspec.check_text(text, name, folder)
    return {"text": text_output(result),
            "json": json.dumps([result_json(result)], indent=2, allow_nan=False),
            "sarif": json.dumps(sarif_log([result]), indent=2)}


def digests(files: int = 20) -> dict[str, str]:
    out: dict[str, str] = {}
    examples = sorted((ROOT / "examples").glob("*.eff"))
    items = [(p.name, p.read_text(encoding="utf-8"), str(p.parent)) for p in examples]
    items += [(n, t, None) for n, t in corpus(True, files) + corpus(False, files)]
    for name, text, folder in items:
        for fmt, body in outputs(text, name, folder).items():
            out[f"{name}:{fmt}"] = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return out


def per_file_ms(specs: list[tuple[str, str]], repeats: int) -> float:
    import effspec
    from effspec.engine import gap

    effspec.check_text(specs[0][1], specs[0][0])  # warm
    best = float("inf")
    for _ in range(repeats):
        gap.clear_memo()  # no run is searched before (check_text builds each IR afresh, so none would be found)
        start = time.process_time()
        for name, text in specs:
            effspec.check_text(text, name)
        best = min(best, time.process_time() - start)
    return best / len(specs) * 1000


def profile(specs: list[tuple[str, str]], top: int = 25) -> str:
    import cProfile
    import io
    import pstats

    import effspec

    effspec.check_text(specs[0][1], specs[0][0])
    prof = cProfile.Profile()
    prof.enable()
    for name, text in specs:
        effspec.check_text(text, name)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--digests", metavar="OUT")
    args = p.parse_args(argv)
    os.environ.setdefault("EFFSPEC_NO_CACHE", "1")
    if args.digests:
        Path(args.digests).write_text(json.dumps(digests(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    mismatching, clean = corpus(True, args.files), corpus(False, args.files)
    print(f"load average {os.getloadavg()[0]:.1f}, {args.files} 4-run specs each, CPU ms per file, min of {args.repeats}")
    print("| corpus | CPU per file | target |\n|---|---|---|")
    print(f"| every run's MFU claim mismatching | {per_file_ms(mismatching, args.repeats):.2f} ms | 15 ms |")
    print(f"| clean | {per_file_ms(clean, args.repeats):.2f} ms | 3 ms |")
    if args.profile:
        print(profile(mismatching))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
