"""`effspec fmt`: rewrite specs in the canonical layout (see effspec.fmt).

Exit status: 0 nothing to change (or every file rewritten), 1 with --check or
--diff when a file would change, 2 when a file cannot be formatted (a syntax
error the formatter cannot fix, an unreadable file, a formatter bug).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys

from effspec.diagnostics import printable, render_text

EPILOG = """\
exit status:
  0  every file is formatted (or was rewritten)
  1  --check or --diff: some file would be reformatted
  2  some file cannot be formatted: a syntax error, an unreadable file
"""


def register(sub) -> argparse.ArgumentParser:
    f = sub.add_parser("fmt", help="rewrite specs in the canonical layout",
                       description="Rewrite .eff specs in one canonical layout, keeping every comment. "
                                   "Files are replaced atomically, and only when the layout changes.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("files", nargs="+", metavar="FILE", help=".eff files or folders; - reads stdin and writes stdout")
    f.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would be reformatted")
    f.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of the changes (exit 1 if any)")
    f.set_defaults(func=cmd_fmt)
    return f


def _expand(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if p != "-" and os.path.isdir(p):
            for root, dirs, files in os.walk(p):  # symlinked folders are listed, never entered
                dirs.sort()
                out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".eff")]
        else:
            out.append(p)
    return out


def _read(path: str) -> str:
    from effspec.cli.common import reading

    if path == "-":
        return sys.stdin.read()
    with reading(path), open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _one(path: str, args) -> tuple[int, bool]:
    """Format one file: (0 done, 1 would change, 2 cannot format; whether the layout changes)."""
    from effspec.cli.common import ToolError
    from effspec.fmt import FormatterError, format_text

    shown = "<stdin>" if path == "-" else path
    try:
        source = _read(path)
    except ToolError as exc:
        print(f"effspec: {printable(str(exc))}", file=sys.stderr)
        return 2, False
    try:
        result = format_text(source)
    except FormatterError as exc:
        print(f"effspec: {printable(shown)}: not formatted: {exc} (a bug in effspec fmt; the file is unchanged)",
              file=sys.stderr)
        return 2, False
    if result.text is None:
        for d in result.diagnostics:
            print(render_text(d, source, shown), file=sys.stderr)
        print(f"effspec: {printable(shown)}: not formatted (fix the errors above)", file=sys.stderr)
        return 2, False
    if path == "-" and not (args.check or args.diff):
        sys.stdout.write(result.text)
        return 0, result.changed
    if not result.changed:
        return 0, False
    if args.diff:
        sys.stdout.write(unified_diff(source, result.text, shown))
    if args.check or args.diff:
        if args.check:
            print(f"would reformat {printable(shown)}", file=sys.stderr)
        return 1, True
    write_back(path, result.text)
    print(f"reformatted {printable(shown)}", file=sys.stderr)
    return 0, True


def unified_diff(source: str, new: str, shown: str) -> str:
    """The unified diff from ``source`` to ``new``, both named ``shown`` (`fmt --diff`, `check --fix --diff`)."""
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in difflib.unified_diff(_lines(source), _lines(new), fromfile=shown, tofile=shown))


def write_back(path: str, text: str) -> None:
    """Replace the file ``path`` names with ``text``, atomically; through a symlink, not over it."""
    from effspec.atomic import write_atomic

    write_atomic(os.path.realpath(path), text)


def _lines(text: str) -> list[str]:
    """Lines with their \\n, split on \\n only (as the parser counts them; not on \\f or U+2028)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def cmd_fmt(args) -> int:
    from effspec.cli.common import ToolError

    paths = _expand(args.files)
    if not paths:
        raise ToolError("no .eff files found in " + ", ".join(args.files))
    outcomes = [_one(p, args) for p in paths]
    if paths != ["-"]:
        changed = sum(1 for _, c in outcomes if c)
        failed = sum(1 for s, _ in outcomes if s == 2)
        done = "would be reformatted" if args.check or args.diff else "reformatted"
        words = [f"{changed} file{'s' * (changed != 1)} {done}",
                 f"{len(paths) - changed - failed} already formatted"] + ([f"{failed} not formatted"] if failed else [])
        print(", ".join(words), file=sys.stderr)
    return max(s for s, _ in outcomes)
