"""Severity overrides and suppressions: line pragmas, file pragmas, pyproject.

- ``# effspec: ignore[EFF203]`` at the end of a line drops that code's findings on the line
  (``# effspec: ignore`` drops all of them).
- ``# effspec: file-ignore[EFF504]`` anywhere drops the code in the whole file.
- ``# effspec: severity[EFF503]=error`` anywhere sets the code's severity in the file.
- ``[tool.effspec]`` in the nearest pyproject.toml above the spec:
  ``ignore = ["EFF504"]`` and ``severity = { EFF503 = "error" }``.

Front-end errors (EFF001-EFF030) cannot be switched off or downgraded: a spec
that does not parse or type-check has no meaning to audit.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import cache

from effspec.diagnostics import SEVERITIES, Diagnostic

_PRAGMA = re.compile(r"#\s*effspec:\s*(ignore|file-ignore|severity)(?:\[([A-Z0-9, ]+)\](?:\s*=\s*(\w+))?)?")


def _protected(code: str) -> bool:
    return code < "EFF100"


@cache
def project_settings(folder: str | None) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """(ignored codes, severity overrides) from the nearest pyproject.toml with [tool.effspec]."""
    if folder is None:
        return frozenset(), ()
    import tomllib

    here = os.path.abspath(folder)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                with open(candidate, "rb") as fh:
                    tool = tomllib.load(fh).get("tool", {}).get("effspec")
            except (OSError, tomllib.TOMLDecodeError):
                tool = None
            if isinstance(tool, dict):
                ignore = tool.get("ignore", [])
                severity = tool.get("severity", {})
                ignore = frozenset(c for c in ignore if isinstance(c, str)) if isinstance(ignore, list) else frozenset()
                pairs = (tuple(sorted((k, v) for k, v in severity.items() if isinstance(v, str) and v in SEVERITIES))
                         if isinstance(severity, dict) else ())
                return ignore, pairs
        parent = os.path.dirname(here)
        if parent == here:
            return frozenset(), ()
        here = parent


def configure(diags: list[Diagnostic], text: str, folder: str | None) -> list[Diagnostic]:
    ignored, severities = project_settings(folder)
    severity = dict(severities)
    file_ignored: set[str] = set(ignored)
    line_ignored: dict[int, set[str] | None] = {}
    if "effspec:" in text:
        for number, line in enumerate(text.split("\n"), start=1):
            for kind, codes, value in _PRAGMA.findall(line):
                code_list = {c.strip() for c in codes.split(",") if c.strip()} if codes else None
                if kind == "ignore":
                    line_ignored[number] = None if code_list is None else (line_ignored.get(number) or set()) | code_list
                elif kind == "file-ignore" and code_list:
                    file_ignored |= code_list
                elif kind == "severity" and code_list and value in SEVERITIES:
                    for c in code_list:
                        severity[c] = value
    out = []
    for d in diags:
        if not _protected(d.code):
            if d.code in file_ignored:
                continue
            if d.span is not None and d.span.line in line_ignored:
                codes = line_ignored[d.span.line]
                if codes is None or d.code in codes:
                    continue
            if d.code in severity:
                d = replace(d, severity=severity[d.code])
        out.append(d)
    return out
