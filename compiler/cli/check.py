"""`effspec check`: diagnostics for files and folders, in parallel for many files."""

from __future__ import annotations

import json
import os
import sys

from effspec.cli.common import ToolError, load_spec
from effspec.diagnostics import printable


def _expand(paths: list[str]) -> list[str]:
    """Files as given; folders become their `.eff` files, sorted."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs.sort()
                found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".eff")]
            out += found
        else:
            out.append(p)
    return out


def _check_one(path: str, fmt: str = "text"):
    """(path, payload, has errors, tool-error text or None), picklable.

    The payload is the file's output already formatted (text, or the JSON
    document) so a worker process sends back a few kB, not the whole result;
    SARIF needs every result at once, so it gets the Result itself.
    """
    from effspec.report.text import result_json, text

    try:
        result = load_spec(path)
    except ToolError as exc:
        return path, None, False, str(exc)
    payload = text(result) if fmt == "text" else result_json(result) if fmt == "json" else result
    return path, payload, result.has_errors, None


def _warm_up() -> None:
    """Load what every check needs: modules, the parser tables, the rules, the units."""
    from effspec import check_text

    check_text("eff 1\nrun warm { work { seq_len = 1 token/sequence  global_batch = 1 sequence } }\n")


def _check_all(paths: list[str], jobs: int, fmt: str) -> list[tuple]:
    """Check every path, in a process pool when there are enough of them; argument order is kept."""
    if jobs <= 1 or len(paths) < 8:
        return [_check_one(p, fmt) for p in paths]
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    _warm_up()  # forked workers inherit the loaded pipeline instead of each loading it
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(partial(_check_one, fmt=fmt), paths, chunksize=max(1, len(paths) // (jobs * 8))))


def cmd_check(args) -> int:
    paths = _expand(args.files)
    if not paths:
        raise ToolError("no .eff files found in " + ", ".join(args.files))
    jobs = args.jobs if args.jobs is not None else min(os.cpu_count() or 1, 8)
    status = 0
    payloads = []
    for _path, payload, has_errors, error in _check_all(paths, jobs, args.format):
        if error is not None:
            print(f"effspec: {printable(error)}", file=sys.stderr)
            status = 2
            continue
        payloads.append(payload)
        if has_errors and status == 0:
            status = 1
    if args.format == "json":
        one = len(args.files) == 1 and len(paths) == 1 and payloads
        sys.stdout.write(json.dumps(payloads[0] if one else payloads, indent=2, allow_nan=False) + "\n")
    elif args.format == "sarif":
        from effspec.report.sarif import sarif_log

        sys.stdout.write(json.dumps(sarif_log(payloads), indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(payloads) + "\n" if payloads else "")
    return status
