"""`effspec traces PATH... -o ranks.csv`: per-rank profiler traces to the
per-rank table that `ranks { samples = file "…" }` reads.

Exit status: 0 written (warnings allowed), 1 a trace or the set of traces is
bad (every problem is listed; the output is not touched), 2 the tool could not
run (no input, an unwritable output, a malformed scheduler address or file (a
coded diagnostic), a Dask scheduler that cannot be reached).
"""

from __future__ import annotations

import argparse
import sys

from effspec.cli.common import ToolError
from effspec.diagnostics import Diagnostic, Span, printable, render_text


class _FormatsHelp(argparse.HelpFormatter):
    """Lists every trace format (effspec.ranks.traces.formats), with its file names, under the options."""

    def format_help(self) -> str:
        from effspec.ranks.traces.formats import all_formats

        lines = ["", "trace formats (a file's name says which; a folder's entries with these names are read):"]
        for name, fmt in all_formats().items():
            lines.append(f"  {name:<10}{' '.join(fmt.suffixes):<22}{fmt.summary}")
        return super().format_help() + "\n".join(lines) + "\n"


def add_parser(sub) -> None:
    t = sub.add_parser("traces", help="reduce per-rank PyTorch profiler traces to a per-rank CSV",
                       formatter_class=_FormatsHelp,
                       description="Reduce per-rank PyTorch profiler (Kineto) traces to the per-rank, per-step table "
                       "that `ranks { samples = file \"…\" }` reads (method: spec/traces.md).")
    t.add_argument("paths", nargs="+", metavar="PATH", help="traces (.json / .json.gz, or another format below), or folders of them")
    t.add_argument("-o", "--output", metavar="CSV", help="the table to write (replaced only when complete); "
                   "with --diff, the comparison (else it goes to stdout)")
    t.add_argument("-j", "--jobs", type=int, default=None, help="workers (default: CPUs; 1 reduces serially)")
    t.add_argument("--executor", choices=("auto", "serial", "processes", "dask"), default="auto",
                   help="auto: a local process pool, which opens no network port (Dask only to attach to a named "
                   "scheduler); dask without a scheduler: a local Dask cluster over TLS with a temporary certificate "
                   "and no dashboard (pip install 'effspec[scale]')")
    t.add_argument("--scheduler", metavar="ADDRESS",
                   help="attach to a running Dask scheduler, SCHEME://HOST:PORT (also DASK_SCHEDULER_ADDRESS); "
                   "the traces are read by its workers: its security (TLS, who may submit work) is its owner's")
    t.add_argument("--scheduler-file", metavar="FILE",
                   help="attach to the Dask scheduler whose JSON file (dask scheduler --scheduler-file) names its address; "
                   "as with --scheduler, that cluster's security is its owner's")
    t.add_argument("--partial", action="store_true", help="accept a subset of the world's ranks (recorded in the CSV)")
    t.add_argument("--ranks-per-node", type=int, default=None, metavar="K",
                   help="for traces without host_name: node = rank // K")
    t.add_argument("--stream-above", type=int, default=None, metavar="BYTES",
                   help="parse traces larger than this (decompressed) in chunks (default 256 MiB)")
    t.add_argument("--max-trace-bytes", type=int, default=None, metavar="BYTES",
                   help="refuse a trace that decompresses to more (default 1 TiB)")
    t.add_argument("--allow-hardlinks", action="store_true",
                   help="read traces in a folder that are hard links (only for folders you trust)")
    t.add_argument("--rank-from", choices=("field", "name"), default="field",
                   help="field (default): the rank is distributedInfo.rank; name: a trace without it takes the rank "
                   "its file name gives (rank-3, rank3_, rank_3)")
    t.add_argument("--collective", metavar="NAME", action="append", default=[],
                   help="count kernels whose name contains NAME (any case) as communication, beside the built-in "
                   "collective table (spec/traces.md); repeat for several")
    t.add_argument("--window", metavar="LABEL", default=None,
                   help="cut steps on the spans of this record_function label (LABEL or LABEL#N) instead of "
                   "ProfilerStep#N; without either, a trace is one window over its device activity")
    t.add_argument("--diff", action="store_true",
                   help="compare two runs, PATH A and PATH B (each a table effspec traces wrote, or traces): the "
                   "step-time change with a bootstrap interval, per family, per kernel type and per rank")
    t.set_defaults(func=cmd_traces)


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise ToolError(f"{flag} must be at least 1")


def _render(code: str, severity: str, file: str, message: str, help: str = "", line: int = 0, column: int = 0) -> str:
    span = Span(line, column, line, column + 1) if line else None
    return render_text(Diagnostic(code, severity, span, message, help), None, file or "traces")


def _refuse_overwriting_a_trace(output: str, items) -> None:
    """ToolError when OUT is one of the traces (by inode: also through a
    symlink or a hard link).  Nothing is read or written."""
    import os

    for item in items:
        try:
            same = os.path.samefile(item.path, output)
        except (OSError, ValueError):  # OUT does not exist yet: not a trace
            same = False
        if same:
            raise ToolError(f"{printable(output)}: is the trace {printable(item.shown)}; not overwritten with the table "
                            "(choose another output file)")


def cmd_diff(args: argparse.Namespace) -> int:
    from effspec.atomic import write_atomic
    from effspec.ranks.traces import diff

    if len(args.paths) != 2:
        raise ToolError(f"--diff compares two runs: A and B (got {len(args.paths)} paths)")
    try:
        sides = [diff.load(p, p) for p in args.paths]
        text = diff.compare(*sides)
    except diff.TraceError as exc:
        print(_render(exc.code, "error", "traces --diff", exc.message, exc.help, exc.line, exc.column), file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomic(args.output, text)
    except OSError as exc:
        raise ToolError(f"{args.output}: cannot be written: {exc.strerror or exc}") from None
    return 0


def _check_collectives(names: list[str]) -> None:
    for name in names:
        if not name.strip() or len(name) > 200 or not name.isprintable():
            raise ToolError("--collective needs a kernel name (printable, at most 200 characters) that every "
                            "kernel of the collective library contains")


def cmd_traces(args: argparse.Namespace) -> int:
    from effspec.atomic import write_atomic
    from effspec.ranks.traces import combine, run

    if args.diff:
        return cmd_diff(args)
    if args.output is None:
        raise ToolError("-o/--output CSV is required (the table to write)")

    for value, flag in ((args.jobs, "--jobs"), (args.ranks_per_node, "--ranks-per-node"),
                        (args.stream_above, "--stream-above"), (args.max_trace_bytes, "--max-trace-bytes")):
        _positive(value, flag)
    _check_collectives(args.collective)
    if args.window is not None and not args.window.strip():
        raise ToolError("--window needs a record_function label (the name its spans carry)")
    try:  # a malformed address or scheduler file is refused before anything is read or connected to
        address = run.scheduler_address(args.scheduler, args.scheduler_file, args.executor in ("auto", "dask"))
    except run.TraceError as exc:
        where = args.scheduler_file if args.scheduler is None and args.scheduler_file is not None else "traces"
        print(_render(exc.code, "error", where, exc.message, exc.help, exc.line, exc.column), file=sys.stderr)
        return 2
    items, problems = run.discover(args.paths)
    if not items and not problems:
        raise ToolError("no trace files given")
    _refuse_overwriting_a_trace(args.output, items)
    defaults = run.Options()
    options = run.Options(args.ranks_per_node, args.stream_above or defaults.whole_limit,
                          args.max_trace_bytes or defaults.max_bytes, args.allow_hardlinks, args.rank_from,
                          args.window, tuple(args.collective))
    executor = run.choose_executor(args.executor, len(items), args.jobs, address)
    if executor == "dask" and not run.dask_available():
        raise ToolError("--executor dask needs dask.distributed: pip install 'effspec[scale]'")
    progress = run.Progress(len(items), sum(run._size(item.path) for item in items))
    try:
        results = run.run_map(items, options, executor, args.jobs, address, progress)
    except OSError as exc:  # a scheduler that cannot be reached, a pool that cannot start
        raise ToolError(f"the {executor} executor could not run: {exc}") from None
    except run.TraceError as exc:  # a local Dask cluster without TLS support
        print(_render(exc.code, "error", "traces", exc.message, exc.help), file=sys.stderr)
        return 2
    failures = problems + [r for r in results if isinstance(r, run.Failure)]
    summaries = [r for r in results if not isinstance(r, run.Failure)]
    out = [_render(f.code, "error", f.file, f.message, f.help, f.line, f.column) for f in failures]
    errors = len(failures)
    if summaries:
        found, missing, world = combine.check(summaries, args.partial)
        out += [_render(p.code, p.severity, p.file, p.message, p.help) for p in found]
        errors += sum(p.severity == "error" for p in found)
    for text in out:
        print(text, file=sys.stderr)
    if errors or not summaries:
        print(f"effspec traces: {errors} error{'s' if errors != 1 else ''}; {printable(args.output)} not written",
              file=sys.stderr)
        return 1
    text = combine.to_csv(summaries, missing, world, found)
    try:
        write_atomic(args.output, text)
    except OSError as exc:
        raise ToolError(f"{args.output}: cannot be written: {exc.strerror or exc}") from None
    rows = sum(len(s.rows) for s in summaries)
    print(f"effspec traces: {len(summaries)} trace{'s' if len(summaries) != 1 else ''} "
          f"({executor}), {rows} rows -> {printable(args.output)}", file=sys.stderr)
    return 0
