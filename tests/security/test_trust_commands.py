"""The commands that read no spec (`explain`, `catalog`) keep SECURITY.md's promises too.

Their argument is a name a reviewer may paste from a vendor's report or a CI log: it is echoed
escaped, never opened as a path, and a name that resolves to nothing is a one-line message with
an exit status, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import cli

HOSTILE = [
    "../../../etc/passwd",          # a path: never opened
    "EFF\x1b[31m601",               # an escape that would colour the terminal
    "H100\x1b]0;pwned\x07",         # an OSC title change
    "EFF601\u202e108FFE",           # a bidi override
    "A" * 5_000,                    # long
]


@pytest.mark.parametrize("name", HOSTILE, ids=["path", "csi", "osc", "bidi", "long"])
def test_explain_echoes_a_hostile_name_escaped_and_opens_nothing(tmp_path: Path, monkeypatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    opened: list[str] = []
    real_open = os.open

    def spy(path, *a, **kw):
        opened.append(os.fspath(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", spy)
    done = cli("explain", name)
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 2 and out == ""
    assert err.startswith("effspec: unknown code or preset `") and err.count("\n") == 1
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "/etc/passwd" not in " ".join(opened)


def test_explain_of_a_real_code_is_its_page() -> None:
    done = cli("explain", "eff601")  # codes are case-insensitive
    status, out, _ = done.returncode, done.stdout, done.stderr
    assert status == 0 and out.startswith("EFF601 — claim disagrees with the reconstruction (default severity: error)\n")


@pytest.mark.parametrize("name", HOSTILE[1:4], ids=["csi", "osc", "bidi"])
def test_catalog_echoes_a_hostile_name_escaped(name: str) -> None:
    done = cli("catalog", name)
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 1
    shown = out + err
    assert "no catalog accelerator" in shown
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown


def test_catalog_of_a_path_reads_no_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("H100-SXM5-80GB\n", encoding="utf-8")  # a file whose content would resolve
    done = cli("catalog", str(secret))
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 1 and "no catalog accelerator" in out + err
    assert "H100-SXM5-80GB" not in out + err
