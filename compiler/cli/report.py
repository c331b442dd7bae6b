"""`effspec report`: one auditable report of one or more specs; the format follows each output's suffix."""

from __future__ import annotations

import os
import sys
from functools import partial

from effspec.cli.common import ToolError, load_spec
from effspec.diagnostics import printable

REPORT_FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".json": "json", ".sarif": "sarif",
                  ".md": "md", ".markdown": "md", ".tex": "tex"}
FORMAT_NAMES = {"html": "HTML", "pdf": "PDF", "json": "JSON", "sarif": "SARIF", "md": "Markdown", "tex": "LaTeX"}


def _outputs(names: list[str]) -> list[tuple[str, str]]:
    """Each -o OUT with its format (from its suffix); a ToolError, before anything is read, for a bad one."""
    out: list[tuple[str, str]] = []
    for name in names:
        suffix = os.path.splitext(name)[1].lower()
        fmt = REPORT_FORMATS.get(suffix)
        if fmt is None:
            raise ToolError(f"{name}: unknown report format `{suffix or '(none)'}`; use one of " + ", ".join(sorted(REPORT_FORMATS)))
        if os.path.isdir(name):
            raise ToolError(f"{name}: is a directory")
        if any(os.path.abspath(name) == os.path.abspath(seen) for seen, _ in out):
            raise ToolError(f"{name}: named twice with -o")
        out.append((name, fmt))
    return out


def _inputs(names: list[str]) -> list[tuple[str, str | None]]:
    """Each spec to report on, with the folder it was found in (None when named): `check`'s rules."""
    from effspec.cli.common import STDIN, expand_paths

    items = expand_paths(names)
    if any(root == STDIN for _, root in items):
        raise ToolError("-: `effspec report` reads no spec from stdin; name the file")
    if not items:
        raise ToolError("no .eff files found in " + ", ".join(names))
    return items


def _make_folders(outputs: list[tuple[str, str]]) -> None:
    """Create each output's missing folders, as the user named them (os.makedirs: a folder that
    exists is used as it is; a dangling symlink or a file in the way is an error, never replaced)."""
    for name, _fmt in outputs:
        folder = os.path.dirname(os.path.abspath(name))
        if os.path.isdir(folder):
            continue
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"{name}: cannot create its folder ({exc.strerror or exc})") from None


def cmd_report(args) -> int:
    """Every input is loaded and evaluated once; each output is rendered from those results;
    then all outputs are written together (all or none), their folders created if missing."""
    from effspec.atomic import write_all_atomic
    from effspec.report.text import text

    outputs = _outputs(args.output)
    options = {"allow_hardlinks": getattr(args, "allow_hardlinks", False),
               "inline_config": False if getattr(args, "no_inline_config", False) else None,
               "isolated": getattr(args, "isolated", False)}
    items = _inputs(args.inputs)
    results = [load_spec(path, root=root, **options) for path, root in items]
    for name, _fmt in outputs:
        for (path, _root), result in zip(items, results, strict=True):
            _refuse_overwriting_an_input(name, path, result)
    broken = [path for (path, _root), result in zip(items, results, strict=True) if _does_not_compile(result)]
    if broken:
        for (path, _root), result in zip(items, results, strict=True):
            if path in broken:
                print(text(result), file=sys.stderr)
        for name, _fmt in outputs:
            print(f"effspec: {', '.join(printable(p) for p in broken)} does not compile (the EFF0xx errors above); "
                  f"{printable(name)} was not written" + (" and is unchanged" if os.path.exists(name) else ""),
                  file=sys.stderr)
        return 1
    rendered = []
    for name, fmt in outputs:
        data = _rendered(results, name, fmt, args, len(outputs))
        if data is None:
            return 1
        rendered.append((name, data))
    _make_folders(outputs)
    try:
        write_all_atomic(rendered)
    except OSError as exc:
        raise ToolError(f"cannot write the report ({exc.strerror or exc}: {exc.filename or ''}); "
                        f"every output is unchanged") from None
    for result in results:
        print(text(result), file=sys.stderr)
    for name, _fmt in outputs:
        print(f"wrote {printable(name)}", file=sys.stderr)
    return 1 if any(result.has_errors for result in results) else 0


def _rendered(results: list, name: str, fmt: str, args, count: int) -> bytes | None:
    """The bytes of one output, or None (said on stderr) when rendering failed; no output is written then."""
    from effspec.report import render_many

    try:
        doc_base = getattr(args, "doc_base", None)  # without the flag, render reads the configuration's
        return _render_bounded(partial(render_many, doc_base=doc_base) if doc_base else render_many, results, fmt, args.paper,
                               args.timeout)  # every format: HTML grew 0.5 s a run
    except TimeoutError:
        raise ToolError(f"{name}: {FORMAT_NAMES[fmt]} rendering took longer than {args.timeout:g} s and was abandoned; "
                        + ("the old output, if any, is unchanged" if count == 1
                           else "no output was written; the old ones, if any, are unchanged")
                        + " (raise the bound with --timeout)") from None
    except Exception as exc:  # a report that fails midway leaves every OUT untouched
        if args.debug:
            raise
        print(f"effspec: could not render {printable(name)}: {type(exc).__name__}: {printable(str(exc))}"
              + ("" if count == 1 else "; no output was written"), file=sys.stderr)
        return None


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
