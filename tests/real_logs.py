"""Helpers for the tests of real, cited log excerpts (tests/fixtures/logs/real/<format>/, each with a SOURCE)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from conftest import cli

REAL = Path(__file__).resolve().parent / "fixtures" / "logs" / "real"


def real(fmt: str, name: str) -> Path:
    path = REAL / fmt / name
    assert name in (REAL / fmt / "SOURCE").read_text(encoding="utf-8"), f"{name} is not cited in {fmt}/SOURCE"
    return path


def lines_of(path: Path) -> list[str]:
    """The log's lines, 1-based through index + 1 (as the importer numbers them)."""
    return path.read_bytes().decode("utf-8", errors="replace").split("\n")


def do_import(tmp_path: Path, fmt: str, log: Path, *extra: str, out: str = "run.eff") -> tuple[str, str, Path]:
    """`effspec import FMT LOG -o tmp/OUT`: (the spec's text, stderr, OUT); the import must succeed."""
    target = tmp_path / out
    done = cli("import", fmt, str(log), "-o", str(target), *extra)
    status, _, err = done.returncode, done.stdout, done.stderr
    assert status == 0, err
    return target.read_text(encoding="utf-8"), err, target


def steps(out: Path) -> list[dict[str, str]]:
    with open(out.with_name(out.stem + "_steps.csv"), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


_STRING_OR_SPACES = re.compile(r'"(?:[^"\\\n]|\\.)*"|  +')


def squeeze(text: str) -> str:
    """Text with each run of spaces outside a string written as one: the spec's words and values as
    written, whatever columns `effspec fmt` aligns them to (a string's own spaces are kept)."""
    return _STRING_OR_SPACES.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)


def has(text: str, line: str) -> bool:
    """Whether the spec holds ``line`` (its words, values, citations and comment, in order), in any
    column alignment: `effspec fmt` pads keys and `from` to line up within a block."""
    return squeeze(line) in squeeze(text)


def field(text: str, key: str) -> tuple[str, str]:
    """(value, `from …` citation) of the one `KEY = VALUE from …` line (or `BLOCK { KEY = VALUE from … }`, a block
    of one key on one line, as `effspec fmt` writes it)."""
    found = re.findall(rf"(?:^\s+|\{{ ){re.escape(key)}\s+= (.+?)\s+from (\w+ \"[^\"]*\")", text, flags=re.M)
    assert len(found) == 1, (key, found)
    return found[0]


def todo(text: str, key: str) -> bool:
    return re.search(rf"(?:^\s+|\{{ ){re.escape(key)}\s+= TODO\b", text, flags=re.M) is not None


def fill(path: Path, values: dict[str, str]) -> None:
    """Replace `KEY = TODO` by `KEY = VALUE`, each exactly once; nothing may be left TODO."""
    text = path.read_text(encoding="utf-8")
    for key, value in values.items():
        text, n = re.subn(rf"^(\s+{key}\s+= |.*\{{ {key} = )TODO\b", lambda m, v=value: m.group(1) + v, text, flags=re.M)
        assert n == 1, f"{key}: {n} TODO lines"
    assert " = TODO" not in text, text
    path.write_text(text, encoding="utf-8")


def add(path: Path, block: str, lines: str) -> None:
    """Add lines at the top of a block (keys the log does not give and no TODO asks for)."""
    text = path.read_text(encoding="utf-8")
    text, n = re.subn(rf"^(  {block} \{{\n)", lambda m: m.group(1) + lines, text, flags=re.M)
    if n == 0:  # a block of one key on one line, as `effspec fmt` writes it: opened out, the lines first
        text, n = re.subn(rf"^  {block} \{{ (.*) \}}( *#.*)?$", lambda m: f"  {block} {{\n{lines}    {m.group(1)}{m.group(2) or ''}\n  }}",
                          text, flags=re.M)
    if n == 0:  # no such block yet: a new one before `hardware`
        text, n = re.subn(r"^(  hardware \{\n)", lambda m: f"  {block} {{\n{lines}  }}\n\n" + m.group(1), text, flags=re.M)
    assert n == 1, block
    path.write_text(text, encoding="utf-8")


def check(path: Path) -> tuple[int, dict]:
    done = cli("check", str(path), "--format", "json")
    status, out, _ = done.returncode, done.stdout, done.stderr
    return status, json.loads(out)[0]


def the_run(doc: dict) -> dict:
    (run,) = doc["runs"].values()
    return run
