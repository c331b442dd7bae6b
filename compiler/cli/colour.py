"""`check --color auto|always|never`: the rustc palette over text output.

Colour is added to text that is already rendered and sanitised (every
terminal control character from a spec or a file name was dropped or
written visibly), so the only escape codes in the output are these.
`auto` colours a terminal only, never a pipe or a file; NO_COLOR (set and not
empty) turns it off and FORCE_COLOR (set, not empty, not 0) on; an explicit
`always` or `never` wins over both.
"""

from __future__ import annotations

import os
import re

RESET = "\x1b[0m"
PALETTE = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[36m", "note": "\x1b[36m",
           "help": "\x1b[32m", "gutter": "\x1b[1;34m"}
_HEADER = re.compile(r"^(suppressed )?(error|warning|info)(\[EFF[0-9]+\])")
_GUTTER = re.compile(r"^( *)(-->|[0-9]* *\|)")
_CARET = re.compile(r"^( *\| *)(\^+)")
_TAIL = re.compile(r"^( *)= (note|help):")


def wanted(mode: str, stream, environ=os.environ) -> bool:
    if mode != "auto":
        return mode == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"


def colourise(text: str) -> str:
    """Colour rendered diagnostics: the header and carets in the severity's colour, notes cyan, help green."""
    out, severity = [], "error"
    for line in text.split("\n"):
        m = _HEADER.match(line)
        if m:
            severity = m.group(2)
            line = f"{m.group(1) or ''}{PALETTE[severity]}{m.group(2)}{m.group(3)}{RESET}{line[m.end():]}"
        elif m := _CARET.match(line):
            line = f"{PALETTE['gutter']}{m.group(1)}{RESET}{PALETTE[severity]}{m.group(2)}{line[m.end():]}{RESET}"
        elif m := _TAIL.match(line):
            word = m.group(2)
            line = f"{m.group(1)}{PALETTE['gutter']}={RESET} {PALETTE[word]}{word}{RESET}:{line[m.end():]}"
        elif m := _GUTTER.match(line):
            line = f"{m.group(1)}{PALETTE['gutter']}{m.group(2)}{RESET}{line[m.end():]}"
        out.append(line)
    return "\n".join(out)
