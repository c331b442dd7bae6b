"""`effspec fmt`: rewrite specs in the canonical layout (see effspec.fmt).

Exit status: 0 nothing to change (or every file rewritten), 1 with --check or
--diff when a file would change, 2 when a file cannot be formatted (a syntax
error the formatter cannot fix, an unreadable file, a formatter bug).
"""

from __future__ import annotations

import argparse
import difflib
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


def _read(path: str, root: str | None) -> str:
    """The text to format: stdin for `-`, else the spec as `effspec check` reads it (a spec found in a folder
    through a symlink leading out of it, or a hard link, is refused, as check refuses it)."""
    from effspec.cli.common import STDIN, ToolError, read_as_checked
    from effspec.front.limits import LIMITS

    if root == STDIN:
        return sys.stdin.read()
    read = read_as_checked(path, root)
    if read is None:
        raise ToolError(f"{path}: larger than {LIMITS.max_spec_bytes:,} bytes; not formatted")
    return read[0]


def _one(path: str, root: str | None, args) -> tuple[int, bool]:
    """Format one file: (0 done, 1 would change, 2 cannot format; whether the layout changes)."""
    from effspec.cli.common import ToolError, replace_text
    from effspec.fmt import FormatterError, format_text

    shown = "<stdin>" if path == "-" else path
    try:
        source = _read(path, root)
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
    try:
        replace_text(path, source, result.text, "reformatted")
    except ToolError as exc:
        print(f"effspec: {printable(str(exc))}", file=sys.stderr)
        return 2, True
    print(f"reformatted {printable(shown)}", file=sys.stderr)
    return 0, True


def unified_diff(source: str, new: str, shown: str) -> str:
    """The unified diff from ``source`` to ``new``, both named ``shown`` (`fmt --diff`, `check --fix --diff`)."""
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in difflib.unified_diff(_lines(source), _lines(new), fromfile=shown, tofile=shown))


def _lines(text: str) -> list[str]:
    """Lines with their \\n, split on \\n only (as the parser counts them; not on \\f or U+2028)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def cmd_fmt(args) -> int:
    from effspec.cli.common import STDIN, ToolError, expand_paths

    items = expand_paths(args.files)
    if not items:
        raise ToolError("no .eff files found in " + ", ".join(args.files))
    outcomes = [_one(p, root, args) for p, root in items]
    paths = [p for p, _ in items]
    if [r for _, r in items] != [STDIN]:
        changed = sum(1 for _, c in outcomes if c)
        failed = sum(1 for s, _ in outcomes if s == 2)
        done = "would be reformatted" if args.check or args.diff else "reformatted"
        words = [f"{changed} file{'s' * (changed != 1)} {done}",
                 f"{len(paths) - changed - failed} already formatted"] + ([f"{failed} not formatted"] if failed else [])
        print(", ".join(words), file=sys.stderr)
    return max(s for s, _ in outcomes)
