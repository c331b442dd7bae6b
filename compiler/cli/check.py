"""`effspec check`: diagnostics for files and folders, in parallel for many files."""

from __future__ import annotations

import json
import os
import sys
from functools import partial

from effspec.cli.common import ToolError, load_spec
from effspec.diagnostics import printable


def _expand(paths: list[str]) -> list[tuple[str, str | None]]:
    """Each file to check, with the folder it was found in (None when named).

    Files are taken as given; folders become their `.eff` files, sorted.  A
    spec found in a folder is then read under the rules of a `file`
    reference (see effspec.load's ``root``): a symlink that leaves the folder
    or points into /proc, /sys, /dev or /run, or a hard link, is refused, not
    read; the user never named it.
    """
    out: list[tuple[str, str | None]] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):  # symlinked folders are listed, never entered
                dirs.sort()
                out += [(os.path.join(root, f), p) for f in sorted(files) if f.endswith(".eff")]
        else:
            out.append((p, None))
    return out


def _check_one(path: str, root: str | None = None, fmt: str = "text", allow_hardlinks: bool = False):
    """(path, payload, has errors, tool-error text or None), picklable.

    The payload is the file's output already formatted (text, or the JSON
    document) so a worker process sends back a few kB, not the whole result;
    SARIF needs every result at once, so it gets the Result itself.
    """
    from effspec.report.text import result_json, text

    try:
        result = load_spec(path, root=root, allow_hardlinks=allow_hardlinks)
    except ToolError as exc:
        return path, None, False, str(exc)
    payload = text(result) if fmt == "text" else result_json(result) if fmt == "json" else result
    return path, payload, result.has_errors, None


def _warm_up() -> None:
    """Load what every check needs: modules, the parser tables, the rules, the units."""
    from effspec import check_text

    check_text("eff 1\nrun warm { work { seq_len = 1 token/sequence  global_batch = 1 sequence } }\n")


def _check_all(items: list[tuple[str, str | None]], jobs: int, fmt: str, allow_hardlinks: bool = False) -> list[tuple]:
    """Check every (path, root), in a process pool when there are enough of them; argument order is kept."""
    one = partial(_check_one, fmt=fmt, allow_hardlinks=allow_hardlinks)
    if jobs <= 1 or len(items) < 8:
        return [one(p, r) for p, r in items]
    from concurrent.futures import ProcessPoolExecutor

    _warm_up()  # forked workers inherit the loaded pipeline instead of each loading it
    paths, roots = [p for p, _ in items], [r for _, r in items]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, paths, roots, chunksize=max(1, len(items) // (jobs * 8))))


def cmd_check(args) -> int:
    paths = _expand(args.files)
    if not paths:
        raise ToolError("no .eff files found in " + ", ".join(args.files))
    jobs = args.jobs if args.jobs is not None else min(os.cpu_count() or 1, 8)
    status = 0
    payloads = []
    for _path, payload, has_errors, error in _check_all(paths, jobs, args.format, getattr(args, "allow_hardlinks", False)):
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
