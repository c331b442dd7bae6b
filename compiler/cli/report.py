"""`effspec report`: one auditable report; the format follows the output's suffix."""

from __future__ import annotations

import os
import sys
from functools import partial

from effspec.cli.common import ToolError, load_spec
from effspec.diagnostics import printable

REPORT_FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".json": "json", ".sarif": "sarif",
                  ".md": "md", ".markdown": "md", ".tex": "tex"}
FORMAT_NAMES = {"html": "HTML", "pdf": "PDF", "json": "JSON", "sarif": "SARIF", "md": "Markdown", "tex": "LaTeX"}


def cmd_report(args) -> int:
    from effspec.atomic import write_atomic

    suffix = os.path.splitext(args.output)[1].lower()
    fmt = REPORT_FORMATS.get(suffix)
    if fmt is None:
        raise ToolError(f"{args.output}: unknown report format `{suffix or '(none)'}`; use one of " + ", ".join(sorted(REPORT_FORMATS)))
    if os.path.isdir(args.output):
        raise ToolError(f"{args.output}: is a directory")
    result = load_spec(args.input, allow_hardlinks=getattr(args, "allow_hardlinks", False),
                         inline_config=False if getattr(args, "no_inline_config", False) else None,
                         isolated=getattr(args, "isolated", False))
    _refuse_overwriting_an_input(args.output, args.input, result)
    if _does_not_compile(result):
        from effspec.report.text import text

        print(text(result), file=sys.stderr)
        print(f"effspec: {printable(args.input)} does not compile (the EFF0xx errors above); "
              f"{printable(args.output)} was not written" + (" and is unchanged" if os.path.exists(args.output) else ""),
              file=sys.stderr)
        return 1
    from effspec.report import render

    try:
        doc_base = getattr(args, "doc_base", None)  # without the flag, render reads the configuration's
        data = _render_bounded(partial(render, doc_base=doc_base) if doc_base else render, result, fmt, args.paper,
                               args.timeout)  # every format: HTML grew 0.5 s a run
    except TimeoutError:
        raise ToolError(f"{args.output}: {FORMAT_NAMES[fmt]} rendering took longer than {args.timeout:g} s and was abandoned; "
                        f"the old output, if any, is unchanged (raise the bound with --timeout)") from None
    except Exception as exc:  # a report that fails midway leaves OUT untouched
        if args.debug:
            raise
        print(f"effspec: could not render {printable(args.output)}: {type(exc).__name__}: {printable(str(exc))}", file=sys.stderr)
        return 1
    try:
        write_atomic(args.output, data)
    except OSError as exc:
        raise ToolError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    from effspec.report.text import text

    print(text(result), file=sys.stderr)
    print(f"wrote {printable(args.output)}", file=sys.stderr)
    return 1 if result.has_errors else 0


def _does_not_compile(result) -> bool:
    """Front-end errors (EFF0xx): the spec was not understood, so a report of it would only
    list them, and must not replace a good report of an earlier version (a `make` rule
    would then see a fresh file and never rebuild). Audit findings still get their report, and
    so does a project configuration that could not apply (EFF030/EFF031 on the pyproject.toml,
    not on the spec): the report shows that error with the findings."""
    config_problems = getattr(getattr(result, "settings", None), "problems", ())
    about_config = {(d.code, d.message[:60]) for d in config_problems}  # as shown: cap() may clip a long message
    return any(d.severity == "error" and d.code.startswith("EFF0") and (d.code, d.message[:60]) not in about_config
               for d in result.diagnostics)


def _refuse_overwriting_an_input(output: str, spec: str, result) -> None:
    """ToolError when OUT is the spec or a file it reads: the same file by
    inode, so also through a symlink or a hard link.  Nothing is written."""
    from effspec.front.ir import FileRef, Samples

    inputs = [spec]
    folder = os.path.dirname(os.path.abspath(spec))
    for run in getattr(result.spec, "runs", None) or ():
        for block in run.blocks:
            for entry in block.entries:
                value = entry.value
                if isinstance(value, FileRef):
                    inputs.append(value.path)
                elif isinstance(value, Samples) and value.origin == "file" and value.file:
                    inputs.append(os.path.join(folder, value.file))
    for path in inputs:
        try:
            same = os.path.samefile(path, output)
        except (OSError, ValueError):  # OUT does not exist yet (or cannot be looked at): not an input
            same = False
        if same:
            what = f"the spec {spec}" if path is spec else f"{path}, a file the spec reads"
            raise ToolError(f"{output}: is {what}; not overwritten with its report (choose another output file)")


def _render_bounded(render, result, fmt: str, paper: str, seconds: float | None) -> bytes:
    """``render(result, fmt, paper=…)`` with a wall-clock bound (PDF layout can
    take very long on a hostile spec).  No signals: the render runs in a daemon
    thread, so the bound also holds off the main thread and on every platform;
    an abandoned render dies with the process.  Raises TimeoutError."""
    if seconds is None or not seconds > 0:  # 0 (or, from the API, nan) is no bound
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
