"""Change-to-diagnostics latency of `effspec lsp`, for a 4-run and a 100-run spec.

Two figures per spec size, each the median (and max) over N edits of one claim's
value, after the document is open and the server warm:

- **check**: `effspec.lsp.analysis.analyze` + the LSP conversion, in this
  process (what the server does per change), with a full parse and with the
  server's incremental parser (only the edited run re-parsed);
- **round trip**: a `textDocument/didChange` sent to `effspec lsp --debounce-ms 0`
  in a subprocess over stdio, until its `publishDiagnostics` arrives
  (JSON-RPC framing and serialization included; the default debounce, 30 ms,
  adds to this in an editor).

    .venv/bin/python benchmarks/lsp_latency.py            # 20 edits per size
    .venv/bin/python benchmarks/lsp_latency.py --edits 50
    .venv/bin/python benchmarks/lsp_latency.py --mismatch # every run's MFU claim disagrees (issue 29)

Targets (issue 16): within 50 ms for a 4-run spec and 200 ms for a 100-run spec.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from gen import generate_spec  # noqa: E402
from lsp_client import Client, uri_of  # noqa: E402

TARGETS_MS = {4: 50.0, 100: 200.0}


def edits(text: str, n: int) -> list[str]:
    """n versions of ``text``, each with the first MFU claim's value changed."""
    import re

    m = re.search(r"claim mfu\s*= ([0-9.]+)", text)
    at, end = m.start(1), m.end(1)
    return [text[:at] + f"{30 + (i % 40)}.{i % 10}" + text[end:] for i in range(n)]


def in_process(text: str, n: int, path: str, incremental: bool = True) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per edit."""
    from effspec.lsp import analysis, features
    from effspec.lsp.incremental import IncrementalParser

    uri = Path(path).as_uri()
    parser = IncrementalParser() if incremental else None
    analysis.analyze(uri, text, parser=parser)  # warm
    out, cpu = [], []
    for version in edits(text, n):
        start, start_cpu = time.perf_counter(), time.process_time()
        a = analysis.analyze(uri, version, parser=parser)
        features.diagnostics(a)
        features.inlay_hints(a, features.T.Range(start=features.T.Position(line=0, character=0),
                                                 end=features.T.Position(line=10**6, character=0)), features.Settings())
        out.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return out, cpu


def round_trip(text: str, n: int, path: str) -> list[float]:
    client = Client([sys.executable, "-m", "effspec", "lsp", "--debounce-ms", "0"], cwd=ROOT)
    try:
        client.initialize(Path(path).parent)
        uri = uri_of(path)
        client.open(uri, text)
        client.diagnostics(uri, version=1)
        out = []
        for i, version_text in enumerate(edits(text, n), start=2):
            start = time.perf_counter()
            client.change(uri, version_text, i)
            client.diagnostics(uri, version=i)
            out.append((time.perf_counter() - start) * 1000)
        return out
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--edits", type=int, default=20)
    p.add_argument("--mismatch", action="store_true",
                   help="every run's MFU claim disagrees with its reconstruction (each explains its gap)")
    args = p.parse_args(argv)
    print(f"effspec lsp latency, Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}, {args.edits} edits per size"
          f"{', every claim mismatching' if args.mismatch else ''}\n")
    print("| spec | full check in process: median (max) [CPU] | incremental check in process: median (max) [CPU] "
          "| didChange → publishDiagnostics over stdio: median (max) | target |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for runs in (4, 100):
            text = generate_spec(runs, seed=7, mismatch=args.mismatch)
            path = os.path.join(folder, f"spec_{runs}.eff")
            Path(path).write_text(text, encoding="utf-8")
            full, full_cpu = in_process(text, args.edits, path, incremental=False)
            local, local_cpu = in_process(text, args.edits, path)
            wire = round_trip(text, args.edits, path)
            print(f"| {runs} runs ({len(text.splitlines())} lines) "
                  f"| {statistics.median(full):.1f} ms ({max(full):.1f}) [{statistics.median(full_cpu):.1f} ms] "
                  f"| {statistics.median(local):.1f} ms ({max(local):.1f}) [{statistics.median(local_cpu):.1f} ms] "
                  f"| {statistics.median(wire):.1f} ms ({max(wire):.1f}) | {TARGETS_MS[runs]:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
