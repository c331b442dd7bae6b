"""`effspec check`: diagnostics for files and folders, in parallel for many files."""

from __future__ import annotations

import json
import os
import sys
from functools import partial

from effspec.cli.common import STDIN, ToolError, expand_paths, load_spec
from effspec.cli.fix import fix_first, print_fix_summary, rechecker, with_fixable
from effspec.diagnostics import printable
from effspec.version import __version__, report_a_bug


def read_stdin(name: str | None) -> tuple[bytes, str]:
    """`check -`: the spec's bytes from stdin (checked as a file's are: bytes that are not UTF-8 are
    EFF001), and the folder its configuration and `file` references are found from (that of
    --stdin-filename, else the current folder)."""
    from effspec.front.limits import LIMITS

    raw = sys.stdin.buffer.read(LIMITS.max_spec_bytes + 1)
    if len(raw) > LIMITS.max_spec_bytes:
        raise ToolError(f"stdin: the spec is larger than {LIMITS.max_spec_bytes:,} bytes")
    return raw, os.path.dirname(os.path.abspath(name)) if name else os.getcwd()


def _check_one(path: str, root: str | None = None, source: tuple[bytes, str] | None = None, fmt: str = "text",
               allow_hardlinks: bool = False, inline_config: bool | None = None, show_suppressed: bool = False,
               debug: bool = False, isolated: bool = False, selection=None, quiet: bool = False,
               stdin: tuple[bytes, str] | None = None):
    """(path, payload, summary, tool-error text or None, internal error or None), picklable.

    ``source`` is the spec's bytes and canonical folder when the result cache
    has read them (its key is their digest): they are checked, not read again.

    The summary is the remaining findings' (code, severity) pairs, what
    `--fail-on`, `--statistics` and the grand total need.

    The payload is the file's output already formatted (text, or the JSON
    document) so a worker process sends back a few kB, not the whole result;
    SARIF needs every result at once, so it gets the Result itself.

    One file's internal error never ends the check of the others: the file
    gets an EFF099 diagnostic naming it, and the command exits with 2.
    """
    try:
        if stdin is not None:  # `effspec check -`: (the bytes, the folder of --stdin-filename)
            source = stdin[0], os.path.realpath(stdin[1])
        if source is not None:
            if path.endswith(".json"):  # perhaps a JSON IR (spec/ir-json.md), as load_spec reads one
                from effspec.api import _check_ir_source as _check_source
            else:
                from effspec import _check_source

            result = _check_source(source[0], path, source[1], allow_hardlinks=allow_hardlinks,
                                   inline_config=inline_config, isolated=isolated)
        else:
            result = load_spec(path, root=root, allow_hardlinks=allow_hardlinks, inline_config=inline_config, isolated=isolated)
    except ToolError as exc:
        return path, None, False, str(exc), None
    except Exception as exc:
        if debug:
            raise
        result = internal_error_result(path, exc)
    if selection is not None:
        from effspec.cli.select import apply

        apply(result, selection)
    try:
        payload = _payload(result, fmt, show_suppressed, quiet)
    except Exception as exc:  # a finding the output cannot hold is a bug too, and this file's alone
        if debug:
            raise
        result = internal_error_result(path, exc)
        payload = _payload(result, fmt, show_suppressed, quiet)
    internal = next((d.message for d in result.diagnostics if d.code == "EFF099"), None)
    summary = [(d.code, d.severity) for d in result.diagnostics]  # counted as the file's own summary line counts
    summary += [("", s) for s, n in getattr(result, "omitted", {}).items() for _ in range(n)]
    folder = stdin[1] if stdin is not None else os.path.dirname(os.path.abspath(path))
    recheck = rechecker(path, folder, {"allow_hardlinks": allow_hardlinks, "inline_config": inline_config,
                                       "isolated": isolated}, selection)
    return path, payload, with_fixable(summary, result, recheck), None, internal


def _payload(result, fmt: str, show_suppressed: bool, quiet: bool = False):
    from effspec.report.text import result_json, text

    if fmt == "text":
        return text(result, show_suppressed=show_suppressed, quiet=quiet)
    if fmt in ("github", "junit"):
        from effspec.report.annotations import github, junit_suite

        return github(result) if fmt == "github" else junit_suite(result)
    if fmt == "json":
        payload = result_json(result)
        json.dumps(payload, allow_nan=False)  # fails here, for this file, rather than for the whole output
        return payload
    from effspec.report.sarif import sarif_log

    json.dumps(sarif_log([result]), allow_nan=False)  # the log joins every file later: fail here, for this one
    return result


def internal_error_result(path: str, exc: BaseException):
    """A Result for a file whose check raised: one EFF099 error that names the file and the exception."""
    from effspec import Diagnostic, Result
    from effspec.diagnostics import sanitize

    what = sanitize(f"{type(exc).__name__}: {exc}")
    what = what if len(what) <= 300 else what[:299] + "…"
    return Result(path, None, diagnostics=[Diagnostic(
        "EFF099", "error", None, f"internal error while checking {sanitize(path)}: {what}",
        f"this is a bug in effspec {__version__}, not in the spec; the other files were checked. "
        f"{report_a_bug()} (run with --debug for the traceback)")])


def _warm_up() -> None:
    """Load what every check needs: modules, the parser tables, the rules, the units."""
    from effspec import check_text

    check_text("eff 1\nrun warm { work { seq_len = 1 token/sequence  global_batch = 1 sequence } }\n")


def _check_all(items: list[tuple[str, str | None]], jobs: int, fmt: str, *, allow_hardlinks: bool = False,
               inline_config: bool | None = None, show_suppressed: bool = False, debug: bool = False,
               isolated: bool = False, selection=None, quiet: bool = False,
               stdin_text: tuple[bytes, str] | None = None, wrap=None,
               sources: list[tuple[bytes, str] | None] | None = None) -> list[tuple]:
    """Check every (path, root), in a process pool when there are enough of them; argument order is kept.
    ``wrap`` (the result cache's) wraps the check of one file; ``sources`` are the bytes and folder of
    each spec the cache has read already (None: read by the check)."""
    one = partial(_check_one, fmt=fmt, allow_hardlinks=allow_hardlinks, inline_config=inline_config,
                  show_suppressed=show_suppressed, debug=debug, isolated=isolated, selection=selection, quiet=quiet)
    if wrap is not None:
        one = wrap(one)
    read = sources if sources is not None else [None] * len(items)
    if stdin_text is not None:  # `-` is read once, here, and checked in this process
        return [one(p, r, s, stdin=stdin_text if r == STDIN else None) for (p, r), s in zip(items, read, strict=True)]
    if jobs <= 1 or len(items) < 8:
        return [one(p, r, s) for (p, r), s in zip(items, read, strict=True)]
    from concurrent.futures import ProcessPoolExecutor

    _warm_up()  # forked workers inherit the loaded pipeline instead of each loading it
    paths, roots = [p for p, _ in items], [r for _, r in items]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, paths, roots, read, chunksize=max(1, len(items) // (jobs * 8))))


def _selection(args):
    """--select, --ignore and their --extend- forms; a prefix no code starts with is an argument error."""
    from effspec.cli.select import Selection

    selection = Selection(args.select, args.ignore, args.extend_select, args.extend_ignore)
    unknown = selection.unknown() if selection.active else []
    if unknown:
        raise ToolError(f"no code starts with {', '.join(unknown)} (`effspec explain --list` lists every code)")
    return selection


def cmd_check(args) -> int:
    from effspec.cli.select import fails

    paths = expand_paths(args.files)
    if not paths:
        raise ToolError("no .eff files found in " + ", ".join(args.files))
    inline_config = False if args.no_inline_config else None
    if args.show_settings:
        return show_settings([p for p, _ in paths], args.format, inline_config, args.isolated)
    jobs = args.jobs if args.jobs is not None else min(os.cpu_count() or 1, 8)
    stdin_text = read_stdin(args.stdin_filename) if any(r == STDIN for _, r in paths) else None
    if stdin_text is not None:
        paths = [(args.stdin_filename or "-", r) if r == STDIN else (p, r) for p, r in paths]
    selection = _selection(args)
    status, fixed = fix_first(args, paths, selection, stdin_text, STDIN)
    if args.diff:  # --fix --diff: the diff is the output
        return status
    payloads, summaries = [], []
    options = {"allow_hardlinks": getattr(args, "allow_hardlinks", False), "inline_config": inline_config,
               "show_suppressed": args.show_suppressed, "debug": args.debug, "isolated": args.isolated,
               "selection": selection if selection.active else None, "quiet": args.quiet,
               "stdin_text": stdin_text}
    from effspec.cli.cache import cached

    checked = cached(args, paths, lambda items, wrap, sources: _check_all(items, jobs, args.format, wrap=wrap,
                                                                        sources=sources, **options), STDIN)
    for path, payload, summary, error, internal in checked:
        if error is not None:
            print(f"effspec: {printable(error)}", file=sys.stderr)
            status = 2
            continue
        payloads.append(payload)
        summaries.append((path, summary))
        if internal is not None:
            print(f"effspec: {internal} (EFF099)\nThis is a bug in effspec {__version__}. {report_a_bug()}\n"
                  "(run with --debug for the traceback)", file=sys.stderr)
            status = 2
        elif status == 0 and not args.exit_zero and fails({sev for _, sev in summary}, args.fail_on):
            status = 1
    if args.format == "json":  # always an array of file objects, even for one file (see spec/language.md)
        sys.stdout.write(json.dumps(payloads, indent=2, allow_nan=False) + "\n")
    elif args.format == "sarif":
        from effspec.report.sarif import sarif_log

        sys.stdout.write(json.dumps(sarif_log(payloads, getattr(args, "doc_base", None)), indent=2) + "\n")
    elif args.format == "github":
        sys.stdout.write("".join(p + "\n" for p in payloads if p))
    elif args.format == "junit":
        from effspec.report.annotations import junit

        sys.stdout.write(junit(payloads))
    else:
        parts = [p for p in payloads if p]
        if len(summaries) > 1 and not args.quiet:
            parts.append(grand_total(summaries))
        if args.statistics:
            parts.append(statistics(summaries))
        out = "\n\n".join(parts) + "\n" if parts else ""
        from effspec.cli.colour import colourise, wanted

        sys.stdout.write(colourise(out) if out and wanted(args.color, sys.stdout) else out)
    print_fix_summary(args, fixed, summaries)
    return status


def _counted(counts: dict[str, int]) -> str:
    words = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    return ", ".join(words) or "no findings"


def grand_total(summaries: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """'3 files: 4 errors, 2 warnings' over every file checked."""
    counts = {s: sum(sev == s for _, summary in summaries for _, sev in summary) for s in ("error", "warning", "info")}
    return f"{len(summaries)} file{'s' if len(summaries) != 1 else ''}: {_counted(counts)}"


def statistics(summaries: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """`--statistics`: one line per code, most frequent first, then by code: count, code, severity."""
    counts: dict[tuple[str, str], int] = {}
    for _, summary in summaries:
        for code, sev in summary:
            if code:
                counts[(code, sev)] = counts.get((code, sev), 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "\n".join(f"{n:>5}  {code}  {sev}" for (code, sev), n in rows) or "no findings"


def show_settings(paths: list[str], fmt: str, inline_config: bool | None, isolated: bool = False) -> int:
    """`check --show-settings`: for each file, the settings that apply and the file they come from."""
    from effspec.diagnostics import render_text, sanitize
    from effspec.front.config import Settings, project_settings

    docs, blocks = [], []
    for path in paths:
        # The folder effspec.load searches from: the one that holds the name (a symlink's own folder), resolved.
        settings = Settings() if isolated else project_settings(os.path.realpath(os.path.dirname(os.path.abspath(path))))
        inline = False if isolated else settings.inline_config if inline_config is None else inline_config
        flag = " (--isolated)" if isolated else " (--no-inline-config)" if inline_config is False else ""
        doc = {"file": path, **settings.to_json(), "inline_config": inline}
        docs.append(doc)
        if settings.path:
            root = f"{sanitize(os.path.dirname(settings.path))} (its pyproject.toml has [tool.effspec])"
        elif settings.root:
            root = f"{sanitize(settings.root)} (it holds .git)"
        else:
            root = "not searched (--isolated)" if isolated else "none found: searched up to /" if not settings.problems else "-"
        lines = [f"file: {sanitize(path)}",
                 f"configuration: {sanitize(settings.path) if settings.path else 'none'}" + (" (--isolated)" if isolated else ""),
                 f"project root: {root}",
                 f"ignore = {json.dumps(doc['ignore'])}",
                 f"severity = {json.dumps(doc['severity'], sort_keys=True)}",
                 f"inline_config = {'true' if inline else 'false'}" + flag]
        lines += [f"doc_base = {json.dumps(settings.doc_base)}"] if settings.doc_base else []
        lines += [render_text(d, None, path) for d in settings.problems]
        blocks.append("\n".join(lines))
    if fmt == "text":
        sys.stdout.write("\n\n".join(blocks) + "\n")
    else:
        sys.stdout.write(json.dumps(docs, indent=2) + "\n")  # an array of file objects, as `check --format json`
    return 0
