"""The command line: a thin shell over the pipeline.

Exit status: 0 no errors, 1 errors found (or a report could not be made),
2 the tool could not run (unreadable input, bad arguments, internal error).
"""

from __future__ import annotations

import argparse
import math
import sys

from effspec.cli.cache import add_arguments as add_cache_arguments
from effspec.cli.catalog import register as register_catalog
from effspec.cli.check import cmd_check
from effspec.cli.common import ToolError
from effspec.cli.explain import cmd_explain, cmd_list, cmd_presets
from effspec.cli.export import register as register_export
from effspec.cli.fix import add_flags as add_fix_flags
from effspec.cli.fmt import register as register_fmt
from effspec.cli.import_ import add_import_parser
from effspec.cli.lsp import cmd_lsp
from effspec.cli.report import cmd_report
from effspec.cli.select import code_list
from effspec.cli.traces import add_parser as add_traces_parser
from effspec.diagnostics import printable
from effspec.version import __version__, report_a_bug

__all__ = ["main", "parser", "ToolError"]


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


MAX_TIMEOUT = 86_400.0  # a day: beyond it a bound bounds nothing (and 1e308 overflows the thread join)


def seconds(text: str) -> float:
    """``--timeout``: finite seconds from 0 (no bound) to MAX_TIMEOUT; inf, nan and negatives are argument errors."""
    shown = repr(text[:40])  # repr: no control character reaches the terminal
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {shown}") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 (no bound) to {MAX_TIMEOUT:,.0f}, got {shown}")
    return value


def doc_base(text: str) -> str:
    """``--doc-base``: an http or https URL with a host (``front.config.doc_base_error``)."""
    from effspec.front.config import doc_base_error

    why = doc_base_error(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{text[:60]!r} {why}")
    return text


EXIT_CODES = """exit status:
  0  no finding at or above --fail-on (default: no errors), or --exit-zero
  1  findings at or above --fail-on remain (for report: the report could not be made)
  2  effspec could not run: bad arguments, an unreadable input, an internal error"""


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors echo arguments (file names from a glob) escaped."""

    def error(self, message: str):
        super().error(printable(message))


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="effspec", description="Compile and audit .eff training-efficiency specs.", epilog=EXIT_CODES,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"effspec {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check specs and print diagnostics", epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("files", nargs="+", metavar="FILE",
                   help=".eff files, IR files (.eff.json: spec/ir-json.md) or folders; `-` reads a spec from stdin")
    c.add_argument("--stdin-filename", metavar="NAME",
                   help="the name a spec read from stdin (`-`) is shown under; its folder finds the configuration")
    c.add_argument("--format", "--output-format", dest="format", choices=("text", "json", "sarif", "github", "junit"),
                   default="text",
                   help="output format (--output-format is the same flag)")
    for flag, what in (("--select", "check only these codes or prefixes (EFF2, EFF601); the default is every code"),
                       ("--ignore", "drop these codes or prefixes (recorded as suppressed)"),
                       ("--extend-select", "add codes or prefixes to --select"),
                       ("--extend-ignore", "add codes or prefixes to --ignore")):
        c.add_argument(flag, type=code_list, action="append", metavar="CODES",
                       help=what + "; comma-separated; front-end errors EFF001-EFF099 are never dropped")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain (2 still means it could not run)")
    c.add_argument("--fail-on", choices=("error", "warning", "info"), default="error",
                   help="exit 1 when a finding at or above this severity remains (default: error)")
    c.add_argument("--quiet", "-q", action="store_true", help="print the findings only: no per-file summary, no grand total")
    c.add_argument("--color", "--colour", choices=("auto", "always", "never"), default="auto",
                   help="colour text output (auto: on a terminal only; NO_COLOR turns it off, FORCE_COLOR on)")
    c.add_argument("--statistics", action="store_true", help="after the findings, count them per code, most frequent first (text output)")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for many files (default: CPUs)")
    c.add_argument("--no-inline-config", action="store_true",
                   help="ignore `# effspec:` pragmas in the specs (for specs written by someone else)")
    c.add_argument("--isolated", action="store_true",
                   help="apply no configuration file and no pragma: every finding at its default severity; "
                        "implies --no-cache")
    add_cache_arguments(c)
    c.add_argument("--show-suppressed", action="store_true", help="print each finding that pragmas or the configuration suppressed")
    c.add_argument("--show-settings", action="store_true",
                   help="print the settings that apply to each FILE, and the configuration file they come from; check nothing")
    add_fix_flags(c)
    c.set_defaults(func=cmd_check)
    r = sub.add_parser("report", help="render an auditable report; the format follows OUT's suffix",
                       description="One report of every FILE (a folder: its .eff files), evaluated once and written "
                                   "to each OUT (the format follows its suffix); OUT's folder is created if missing. "
                                   "All outputs are written, or none.")
    r.add_argument("inputs", nargs="+", metavar="FILE",
                   help=".eff files, IR files (.eff.json) or folders; several make one report of them all")
    r.add_argument("-o", "--output", required=True, action="append", metavar="OUT",
                   help=".html .pdf .json .sarif .md .tex; repeat for several outputs of one evaluation")
    r.add_argument("--paper", choices=("a4", "letter"), default="a4")
    r.add_argument("--no-inline-config", action="store_true",
                   help="ignore `# effspec:` pragmas in the spec (for specs written by someone else)")
    r.add_argument("--isolated", action="store_true",
                   help="apply no configuration file and no pragma: every finding at its default severity")
    r.add_argument("--timeout", type=seconds, default=120.0, metavar="SECONDS",
                   help="wall-clock bound on rendering, every format (default 120; 0 for none)")
    r.set_defaults(func=cmd_report)
    for command in (c, r):
        command.add_argument("--doc-base", type=doc_base, default=None, metavar="URL",
                             help="link rule pages under this http(s) URL (`{code}` in it is replaced, else /EFFnnn.md "
                                  "is appended), in HTML, PDF and SARIF; default: `doc_base` in [tool.effspec], else "
                                  "the page shipped with effspec and `effspec explain CODE`")
        command.add_argument("--allow-hardlinks", action="store_true",
                             help="read `file` references (and specs found in a folder) that are hard links; "
                                  "only for folders you trust, as a hard link can name any file on the disk")
    e = sub.add_parser("explain", help="print the page for a diagnostic code or a convention preset")
    e.add_argument("code", nargs="?", metavar="CODE", help="a code (EFF202) or a preset name (torchtitan)")
    e.add_argument("--list", action="store_true", help="list every code")
    e.add_argument("--presets", action="store_true", help="list every convention preset")
    e.set_defaults(func=lambda a: cmd_presets(a) if a.presets else cmd_list(a) if a.list or not a.code else cmd_explain(a))
    register_fmt(sub)
    register_export(sub)
    register_catalog(sub)
    s = sub.add_parser("lsp", help="run the language server on stdio (needs: pip install 'effspec[lsp]')")
    s.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only transport)")
    s.add_argument("--debounce-ms", type=float, default=None, metavar="MS",
                   help="wait this long after a change before re-checking (default 30)")
    s.add_argument("--no-inlay-hints", action="store_true", help="send no inlay hints after claims")
    s.set_defaults(func=cmd_lsp)
    add_import_parser(sub)
    add_traces_parser(sub)
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
        print(f"effspec: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: never a raw traceback
        if args.debug:
            raise
        target = ", ".join(getattr(args, "inputs", None) or getattr(args, "files", None) or getattr(args, "logs", None) or [])
        print(f"effspec: internal error while processing {printable(target)}: {type(exc).__name__}: {printable(str(exc))}\n"
              f"This is a bug in effspec {__version__}. {report_a_bug()}\n"
              f"(run with --debug for the traceback)", file=sys.stderr)
        return 2
