"""SECURITY.md names the test that keeps each promise; every name it gives must exist.

A test id is written `tests/path.py::test_name`; a following `::other_name`
refers to the same file. Renaming or deleting a test that a promise cites
fails here, so the page cannot drift from the suite.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"`(tests/[\w/]+\.py)?::(test_\w+)`")


def cited_tests(text: str) -> list[tuple[str, str]]:
    cited, current = [], None
    for match in CITED.finditer(text):
        current = match[1] or current
        assert current is not None, f"`::{match[2]}` cites no file before it"
        cited.append((current, match[2]))
    return cited


@functools.cache
def defined_tests(path: Path) -> set[str]:
    """The functions a test file defines (parsed once: the page cites most files many times)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_security_md_cites_exists() -> None:
    cited = cited_tests((ROOT / "SECURITY.md").read_text(encoding="utf-8"))
    assert len(cited) >= 40  # the page cites its tests; a regex gone wrong would find none
    missing = [f"{f}::{name}" for f, name in cited
               if not (ROOT / f).is_file() or name not in defined_tests(ROOT / f)]
    assert missing == []


def test_every_promise_cites_a_test() -> None:
    """Each bullet of the promise sections names at least one test."""
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    body = text.split("## Code execution and leaks", 1)[1].split("## Reporting a vulnerability", 1)[0]
    bullets = re.split(r"\n- ", body)[1:]
    assert bullets
    bare = [b.split(".")[0][:80] for b in bullets if not CITED.search(b)]
    assert bare == []


def test_the_citation_parser_follows_the_file() -> None:
    text = "`tests/a.py::test_x`, `::test_y` and `tests/b.py::test_z`"
    assert cited_tests(text) == [("tests/a.py", "test_x"), ("tests/a.py", "test_y"), ("tests/b.py", "test_z")]


def test_every_command_is_in_the_table_with_a_test() -> None:
    """SECURITY.md covers every command: each subcommand of `effspec --help` has a row in the
    "Every command" table, and the row cites a test that exists."""
    import argparse

    from effspec.cli import parser

    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    table = text.split("## Every command", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `(\w+)` \|(.*)\|$", table, re.M)}
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == set(rows), (sorted(commands), sorted(rows))
    for name, row in rows.items():
        cited = cited_tests(row)
        assert cited, f"`{name}` names no test"
        for f, test in cited:
            assert test in defined_tests(ROOT / f), f"`{name}` cites {f}::{test}, which does not exist"
    sections = {h for h in re.findall(r"^## (.+)$", text, re.M)}
    assert any(h.startswith("Imported logs") for h in sections) and any(h.startswith("Profiler traces") for h in sections)
