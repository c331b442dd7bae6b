"""`effspec import FORMAT LOG... -o OUT.eff`: a training log to a spec with its sources.

The formats are whatever compiler/importers/ holds (discovery); they are looked
up only when this command runs or its help is shown, so other commands do not
pay for importing them.
"""

from __future__ import annotations

import argparse
import os
import sys

from effspec.cli.common import ToolError

MAX_SHOWN_WARNINGS = 20


class _Formats:
    """argparse `choices` that discovers the formats on first use."""

    def _names(self) -> list[str]:
        from effspec.importers import all_importers

        return [*all_importers(), "auto", "hf-config"]

    def __contains__(self, item: object) -> bool:
        return item in self._names()

    def __iter__(self):
        return iter(self._names())


class _FormatsHelp(argparse.RawDescriptionHelpFormatter):
    """Lists every format, with what it reads, under the usage."""

    def format_help(self) -> str:
        from effspec.importers import all_importers

        lines = ["", "formats:"]
        for name, imp in all_importers().items():
            lines.append(f"  {name:<20}{imp.framework}: {imp.summary}")
        lines.append(f"  {'auto':<20}detect the format from the log's first lines")
        return super().format_help() + "\n".join(lines) + "\n"


def add_import_parser(sub) -> None:
    i = sub.add_parser("import", help="turn a training log into a spec (`auto` detects the format)",
                       formatter_class=_FormatsHelp,
                       description="Read a training log and write OUT.eff, with every value's log line, the framework's "
                                   "figures as claims, the step times in a CSV beside OUT, and `TODO` where the log is silent.")
    i.add_argument("format", metavar="FORMAT", choices=_Formats(), help="a format below, or auto")
    i.add_argument("logs", nargs="+", metavar="LOG", help="training logs (each one becomes a run)")
    i.add_argument("-o", "--output", required=True, metavar="OUT.eff", help="the spec to write; CSVs go beside it")
    i.add_argument("--framework-version", metavar="VERSION", default=None,
                   help="the framework's version when the log does not print it (sets the FLOP convention)")
    i.add_argument("--config", metavar="FILE", default=None,
                   help="the run's config file, for formats that read one (torchtitan: its TOML); the log's values win")
    i.add_argument("--model-config", metavar="CONFIG.json", default=None,
                   help="a Hugging Face config.json: fills each run's model block, each key cited with its line")
    i.add_argument("--force", action="store_true", help="replace OUT and its CSVs if they exist (a log is never replaced)")
    i.set_defaults(func=cmd_import)


def log_value_out_of_range(d, text: str) -> str | None:
    """The `FILE:LINE` a value out of range (EFF011) in the imported spec was copied from, or None when the
    finding is not on a line citing the log (then the importer wrote it wrong)."""
    import re

    if d.code != "EFF011" or d.span is None:
        return None
    lines = text.split("\n")
    line = lines[d.span.line - 1] if 0 < d.span.line <= len(lines) else ""
    m = re.search(r'from log "([^"\\]*)"', line)
    return m[1] if m else None


def fmt_layout(text: str) -> str:
    """The imported spec in `effspec fmt` layout (so `effspec fmt --check` passes on what import writes).  The
    formatter checks that its output compiles to the same IR; where it cannot format the text (a syntax error,
    which the import's own compile check then reports as a bug in the importer), the text is kept as written."""
    from effspec.fmt import FormatterError, format_text

    try:
        formatted = format_text(text)
    except FormatterError:
        return text
    return formatted.text if formatted.text is not None else text


def cmd_import(args) -> int:
    from effspec.importers import ImportFailure, import_logs
    from effspec.importers.writer import render

    out = args.output
    if not out.endswith(".eff"):
        raise ToolError(f"{out}: the output must be a `.eff` file")
    if os.path.isdir(out):
        raise ToolError(f"{out}: is a directory")
    for log in args.logs + ([args.config] if args.config else []):
        if os.path.islink(log) and not os.path.exists(log):
            raise ToolError(f"{log}: is a symlink that leads nowhere (its target is missing, or links loop)")
        if not os.path.exists(log):
            raise ToolError(f"{log}: no such file")
    if args.format == "hf-config":
        return _hf_config_only(args, out)
    try:
        result = import_logs(args.format, args.logs, args.framework_version, progress=sys.stderr.isatty(),
                             config=args.config)
    except ImportFailure as exc:
        _warnings(exc.diagnostics, 0)
        raise ToolError(str(exc)) from None
    except IsADirectoryError as exc:
        raise ToolError(f"{exc.filename}: is a directory") from None
    except OSError as exc:
        raise ToolError(f"{exc.filename or ' '.join(args.logs)}: {exc.strerror or exc}") from None
    if args.model_config:
        _model_config(result.runs, args.model_config)
    command = f"effspec import {args.format}" + (f" --framework-version {args.framework_version}" if args.framework_version else "")
    files = render(out, result.runs, command, layout=fmt_layout)
    _refuse_overwrites([f.path for f in files], args.logs + ([args.config] if args.config else []), args.force, out)
    text = _write(files, out)
    _report(result, out, text, [f.path for f in files])
    return 0


def _model_config(runs, path: str) -> None:
    """Each run's model block from a Hugging Face config.json (effspec.importers.hf_config); EFF810 when unusable."""
    from effspec.diagnostics import printable
    from effspec.front.files import read_regular_file
    from effspec.front.limits import LIMITS
    from effspec.importers.hf_config import ConfigError, read
    from effspec.importers.reader import display_name

    name = display_name(path)
    try:
        fields = read(read_regular_file(path, LIMITS.max_config_bytes, follow_symlinks=True), name)
    except ConfigError as exc:
        raise ToolError(f"{printable(name)}:{exc.line}: {exc.code} {printable(str(exc))}") from None
    except OSError as exc:
        raise ToolError(f"{printable(name)}: {exc.strerror or exc}") from None
    for run in runs:
        run.blocks["model"] = list(fields)


def _hf_config_only(args, out: str) -> int:
    """`effspec import hf-config config.json -o model.eff`: a spec whose run has only the config's model block."""
    from effspec.importers.reader import display_name
    from effspec.importers.record import ImportedRun
    from effspec.importers.writer import render

    if len(args.logs) != 1:
        raise ToolError("hf-config reads one config.json")
    run = ImportedRun("hf-config", "Hugging Face config", display_name(args.logs[0]), run_id="model")
    _model_config([run], args.logs[0])
    files = render(out, [run], "effspec import hf-config", layout=fmt_layout)
    _refuse_overwrites([f.path for f in files], args.logs, args.force, out)
    _write(files, out)
    from effspec.diagnostics import printable

    print(f"wrote {printable(out)}", file=sys.stderr)
    return 0


def _beside(out: str, path: str) -> str:
    """An output's path as the user would name it: beside OUT, as OUT was given."""
    return os.path.join(os.path.dirname(out), os.path.basename(path))


def _refuse_overwrites(paths: list[str], logs: list[str], force: bool, out: str) -> None:
    for path in paths:
        if not os.path.lexists(path):
            continue
        shown = _beside(out, path)
        for log in logs:
            try:
                same = os.path.samefile(path, log)
            except OSError:
                same = os.path.realpath(path) == os.path.realpath(log)
            if same:
                raise ToolError(f"{shown}: is the log being imported; choose another output name (a log is never replaced)")
        if os.path.isdir(path):
            raise ToolError(f"{shown}: is a directory")
        if not force:
            raise ToolError(f"{shown}: exists; pass --force to replace it (it may hold values you filled in)")


def _write(files, out: str) -> str:
    """OUT is checked to compile first (against the CSVs' first rows), then the CSVs are written, then OUT:
    OUT never points at a missing CSV, and a failed import leaves every old file as it was."""
    import tempfile

    from effspec import check_text
    from effspec.atomic import write_atomic

    text = files[-1].head().decode("utf-8")
    try:
        with tempfile.TemporaryDirectory(prefix="effspec-import-") as folder:
            for f in files[:-1]:
                with open(os.path.join(folder, os.path.basename(f.path)), "wb") as fh:
                    fh.write(f.head())
            check = check_text(text, file=out, folder=folder)
    except OSError as exc:
        raise ToolError(f"{_beside(out, exc.filename) if exc.filename else out}: cannot write ({exc.strerror or exc})") from None
    wrong = [d for d in check.diagnostics if d.code < "EFF100" and d.code != "EFF040"]
    if wrong:
        d = wrong[0]
        cited = log_value_out_of_range(d, text)
        if cited is not None:  # a value the log gives that no run can have (`d_model` 0): the log's fault, at its line
            raise ToolError(f"{cited}: the log gives a value no run can have ({d.code}: {d.message}); nothing was written")
        raise ToolError(f"the imported spec does not compile ({d.code} at line {d.span.line if d.span else '?'}: "
                        f"{d.message}); this is a bug in the importer, nothing was written")
    try:
        for f in files:
            write_atomic(f.path, f.chunks())
    except OSError as exc:
        raise ToolError(f"{_beside(out, exc.filename) if exc.filename else out}: cannot write ({exc.strerror or exc})") from None
    return text


def _warnings(diagnostics, dropped: int) -> None:
    from effspec.diagnostics import render_text

    for d in diagnostics[:MAX_SHOWN_WARNINGS]:
        print(render_text(d, None, d.file) + "\n", file=sys.stderr)
    hidden = len(diagnostics) - MAX_SHOWN_WARNINGS + dropped
    if hidden > 0:
        print(f"effspec: {hidden} more EFF801/EFF805 warning(s) not shown", file=sys.stderr)


def _report(result, out: str, text: str, files: list[str]) -> None:
    """What was written, on standard error; every path through ``printable`` (a hostile name cannot drive the terminal)."""
    from effspec.diagnostics import printable

    _warnings(result.diagnostics, result.dropped_warnings)
    todos = [n + 1 for n, line in enumerate(text.split("\n")) if " = TODO" in line]
    samples = sum(len(r.steps) for r in result.runs)
    for path in files:  # beside OUT, named as OUT was given
        print(f"wrote {printable(_beside(out, path))}", file=sys.stderr)
    formats = ", ".join(sorted(set(result.formats.values())))
    shown = printable(out)
    print(f"{shown}: {len(result.runs)} run(s) ({formats}), {samples} step sample(s), "
          f"{sum(d.severity != 'info' for d in result.diagnostics) + result.dropped_warnings} log line(s) skipped or "
          "repaired", file=sys.stderr)
    if todos:
        print(f"{shown}: fill in the {len(todos)} `TODO` line(s) (" + ", ".join(str(n) for n in todos[:12])
              + (", …" if len(todos) > 12 else "") + f"), then run `effspec check {shown}`", file=sys.stderr)
