"""The command line: a thin shell over the pipeline.

Exit status: 0 no errors, 1 errors found (or a report could not be made),
2 the tool could not run (unreadable input, bad arguments, internal error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__

BUG_URL = "https://github.com/effspec/effspec/issues"
REPORT_FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".json": "json", ".sarif": "sarif",
                  ".md": "md", ".markdown": "md", ".tex": "tex"}


class ToolError(Exception):
    """The tool could not run (exit status 2)."""


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


def _load(path: str):
    from . import load

    try:
        return load(path)
    except FileNotFoundError:
        raise ToolError(f"{path}: no such file")
    except IsADirectoryError:
        raise ToolError(f"{path}: is a directory")
    except PermissionError:
        raise ToolError(f"{path}: permission denied")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path}: not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror or exc}")


def _check_one(path: str, fmt: str = "text"):
    """(path, payload, has errors, tool-error text or None), picklable.

    The payload is the file's output already formatted (text, or the JSON
    document) so a worker process sends back a few kB, not the whole result;
    SARIF needs every result at once, so it gets the Result itself.
    """
    from .output import result_json, text

    try:
        result = _load(path)
    except ToolError as exc:
        return path, None, False, str(exc)
    payload = text(result) if fmt == "text" else result_json(result) if fmt == "json" else result
    return path, payload, result.has_errors, None


def _warm_up() -> None:
    """Load what every check needs: modules, the parser tables, the rules, the units."""
    from . import check_text

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
    for path, payload, has_errors, error in _check_all(paths, jobs, args.format):
        if error is not None:
            print(f"effspec: {error}", file=sys.stderr)
            status = 2
            continue
        payloads.append(payload)
        if has_errors and status == 0:
            status = 1
    if args.format == "json":
        one = len(args.files) == 1 and len(paths) == 1 and payloads
        sys.stdout.write(json.dumps(payloads[0] if one else payloads, indent=2, allow_nan=False) + "\n")
    elif args.format == "sarif":
        from .sarif import sarif_log

        sys.stdout.write(json.dumps(sarif_log(payloads), indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(payloads) + "\n" if payloads else "")
    return status


def cmd_report(args) -> int:
    from .atomic import write_atomic

    suffix = os.path.splitext(args.output)[1].lower()
    fmt = REPORT_FORMATS.get(suffix)
    if fmt is None:
        raise ToolError(f"{args.output}: unknown report format `{suffix or '(none)'}`; use one of " + ", ".join(sorted(REPORT_FORMATS)))
    if os.path.isdir(args.output):
        raise ToolError(f"{args.output}: is a directory")
    result = _load(args.input)
    from .report import render

    try:
        data = _render_bounded(render, result, fmt, args.paper, args.timeout if fmt == "pdf" else None)
    except TimeoutError:
        raise ToolError(f"{args.output}: PDF rendering took longer than {args.timeout:g} s and was abandoned; "
                        f"the old output, if any, is unchanged (raise the bound with --timeout)")
    except Exception as exc:  # a report that fails midway leaves OUT untouched
        if args.debug:
            raise
        print(f"effspec: could not render {args.output}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    try:
        write_atomic(args.output, data)
    except OSError as exc:
        raise ToolError(f"{args.output}: cannot write ({exc.strerror or exc})")
    from .output import text

    print(text(result), file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 1 if result.has_errors else 0


def _render_bounded(render, result, fmt: str, paper: str, seconds: float | None) -> bytes:
    """``render(result, fmt, paper=…)`` with a wall-clock bound (PDF layout can
    take very long on a hostile spec).  No signals: the render runs in a daemon
    thread, so the bound also holds off the main thread and on every platform;
    an abandoned render dies with the process.  Raises TimeoutError."""
    if seconds is None or seconds <= 0:
        return render(result, fmt, paper=paper)
    import threading

    box: dict = {}

    def work() -> None:
        try:
            box["data"] = render(result, fmt, paper=paper)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=work, name="effspec-render", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(seconds)
    if "error" in box:
        raise box["error"]
    return box["data"]


def cmd_explain(args) -> int:
    from .explain import page

    text = page(args.code.upper())
    if text is None:
        raise ToolError(f"unknown code `{args.code}`; codes look like EFF202 (see `effspec explain --list`)")
    print(text)
    return 0


def cmd_list(_args) -> int:
    from .codes import CODES

    for code, (title, severity) in CODES.items():
        print(f"{code}  {severity:<7}  {title}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="effspec", description="Compile and audit .eff training-efficiency specs.")
    p.add_argument("--version", action="version", version=f"effspec {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check specs and print diagnostics")
    c.add_argument("files", nargs="+", metavar="FILE", help=".eff files or folders")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for many files (default: CPUs)")
    c.set_defaults(func=cmd_check)
    r = sub.add_parser("report", help="render an auditable report; the format follows OUT's suffix")
    r.add_argument("input", metavar="FILE")
    r.add_argument("-o", "--output", required=True, metavar="OUT", help=".html .pdf .json .sarif .md .tex")
    r.add_argument("--paper", choices=("a4", "letter"), default="a4")
    r.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="wall-clock bound on PDF rendering (default 120; 0 for none)")
    r.set_defaults(func=cmd_report)
    e = sub.add_parser("explain", help="print the page for a diagnostic code")
    e.add_argument("code", nargs="?", metavar="CODE")
    e.add_argument("--list", action="store_true", help="list every code")
    e.set_defaults(func=lambda a: cmd_list(a) if a.list or not a.code else cmd_explain(a))
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad arguments, 0 on --help
        return int(exc.code or 0)
    if getattr(args, "command", None) == "report":
        args.debug = args.debug
    try:
        return args.func(args)
    except ToolError as exc:
        print(f"effspec: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: never a raw traceback
        if args.debug:
            raise
        target = getattr(args, "input", None) or ", ".join(getattr(args, "files", []) or [])
        print(f"effspec: internal error while processing {target}: {type(exc).__name__}: {exc}\n"
              f"This is a bug in effspec {__version__}. Please report it with the spec that triggers it: {BUG_URL}\n"
              f"(run with --debug for the traceback)", file=sys.stderr)
        return 2
