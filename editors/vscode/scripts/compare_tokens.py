"""The Python TextMate matcher of tests/lsp/test_lsp_grammar.py, and its comparison with the real engine.

`scripts/tokenize.js` runs vscode-textmate (with Oniguruma) over the examples and writes each token as
`[file, line, column, text, scope]`; this compares those scopes with :func:`scopes`, a small matcher of
the grammar's single-line patterns (earliest match first, ties to the first pattern):

    python editors/vscode/scripts/compare_tokens.py OUT.json    # prints each difference; exit 1 if any
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
GRAMMAR = json.loads((HERE.parent / "syntaxes" / "eff.tmLanguage.json").read_text(encoding="utf-8"))
PATTERNS = [(re.compile(p["match"]), p) for p in GRAMMAR["patterns"]]


def scopes(line: str) -> list[str | None]:
    """The scope of each character of one line (None where no pattern applies)."""
    out: list[str | None] = [None] * len(line)
    pos = 0
    while pos < len(line):
        best = None
        for regex, pattern in PATTERNS:
            m = regex.search(line, pos)
            if m is not None and (best is None or m.start() < best[0].start()):
                best = (m, pattern)
        if best is None:
            break
        m, pattern = best
        if "name" in pattern:
            for i in range(m.start(), m.end()):
                out[i] = pattern["name"]
        for group, capture in pattern.get("captures", {}).items():
            if m.group(int(group)) is not None:
                for i in range(m.start(int(group)), m.end(int(group))):
                    out[i] = capture["name"]
        pos = m.end() if m.end() > pos else pos + 1
    return out


def compare_with_vscode(tokens_json: str) -> int:
    """Compare editors/vscode/scripts/tokenize.js's output (the real engine) with :func:`scopes`; the count of differences."""
    tokens = json.loads(Path(tokens_json).read_text(encoding="utf-8"))
    texts = {p.name: p.read_text(encoding="utf-8").split("\n") for p in (ROOT / "examples").glob("*.eff")}
    diffs = 0
    for file, line, col, text, scope in tokens:
        ours = scopes(texts[file][line - 1])
        for i in range(col - 1, col - 1 + len(text)):
            if text.strip() and (ours[i] or "source.eff") != scope:
                diffs += 1
                print(f"{file}:{line}:{i + 1} {text!r}: vscode {scope}, ours {ours[i]}")
    print(f"{len(tokens)} tokens, {diffs} differences")
    return diffs


if __name__ == "__main__":
    sys.exit(1 if compare_with_vscode(sys.argv[1]) else 0)
