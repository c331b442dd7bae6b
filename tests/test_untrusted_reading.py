"""Reading untrusted specs (issue 19, the reading side).

Each test plants what a hostile vendor, or another local user, would plant,
and asserts it is not read, not executed and not echoed:

1. lark's parser cache was a pickle in the shared temp folder: a planted one
   must not run; the tables live as JSON in effspec's owner-checked folder.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from effspec.front import syntax
from effspec.report.text import result_json
from effspec.report.text import text as text_output

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_A = ROOT / "examples" / "example_a_measured.eff"
_SCRIPT = Path(sys.executable).with_name("effspec")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "effspec"]
SECRET = "SECRET-3b9f61"  # planted in every file that must never be read

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix", reason="POSIX file semantics")


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def codes(result) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics if d.span]


def outputs(result) -> str:
    """Everything a check shows: the text and the JSON outputs."""
    return text_output(result) + json.dumps(result_json(result), ensure_ascii=False)


# ---------------------------------------------------------------------------
# 1. The parser cache


class _Plant:
    """Unpickling this creates ``marker``: proof that a pickle was loaded."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def lark_temp_cache_path(tmpdir: Path) -> Path:
    """The file that `Lark(grammar, parser="lalr", lexer="contextual",
    propagate_positions=True, cache=True)` reads, computed as lark 1.x does in
    lark/lark.py: ``tempfile.gettempdir() + "/.lark_cache_<user>_<sha256>_<major>_<minor>.tmp"``,
    where the digest covers the grammar, the options as passed (in order,
    ``k + str(v)``), lark's version and ``str(sys.version_info[:2])``."""
    import lark

    options = {"parser": "lalr", "lexer": "contextual", "propagate_positions": True, "cache": True}
    options_str = "".join(k + str(v) for k, v in options.items())
    digest = hashlib.sha256((syntax.grammar_text() + options_str + lark.__version__ + str(sys.version_info[:2])).encode("utf8"))
    major, minor = sys.version_info[:2]
    return tmpdir / f".lark_cache_{getpass.getuser()}_{digest.hexdigest()}_{major}_{minor}.tmp"


def test_a_pickle_planted_where_lark_caches_is_not_executed(tmp_path):
    tmpdir, cache, marker = tmp_path / "shared-tmp", tmp_path / "cache", tmp_path / "PWNED"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), XDG_CACHE_HOME=str(cache))
    planted = lark_temp_cache_path(tmpdir)
    planted.write_bytes(b"any hash line\n" + pickle.dumps(_Plant(str(marker))))

    # Control: the planted file is exactly what lark's own cache would unpickle
    # (the call effspec made before), so the test below can fail.
    control = subprocess.run(
        [sys.executable, "-c", "from lark import Lark; from effspec.front.syntax import grammar_text; "
         "Lark(grammar_text(), parser='lalr', lexer='contextual', propagate_positions=True, cache=True)"],
        env=env, capture_output=True, text=True, timeout=120)
    assert control.returncode == 0, control.stderr
    assert marker.exists(), "the planted path is not where lark looks: update lark_temp_cache_path"
    marker.unlink()
    planted.write_bytes(b"any hash line\n" + pickle.dumps(_Plant(str(marker))))

    for _ in range(2):  # a cold cache, then a warm one
        proc = run_cli("check", str(EXAMPLE_A), env=env)
        assert proc.returncode == 1, proc.stderr  # example A: 2 errors, as always
        assert "examples/example_a_measured.eff: 2 errors" in proc.stdout.replace(os.sep, "/")
        assert not marker.exists()
    assert sorted(p.name for p in tmpdir.iterdir()) == [planted.name]  # nothing new in the shared folder


@pytest.fixture()
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    syntax.parser.cache_clear()
    yield home / "effspec"
    syntax.parser.cache_clear()


def _parses_example_a() -> None:
    tree = syntax.parser().parse(EXAMPLE_A.read_text(encoding="utf-8"))
    assert [str(r.children[1]) for r in tree.find_data("run")] == ["llm3b_64"]


def test_the_parser_tables_are_json_in_the_owner_checked_folder(cache_home, monkeypatch):
    _parses_example_a()
    path = cache_home / syntax._PARSER_FILE
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert stat.S_IMODE(cache_home.stat().st_mode) == 0o700
    doc = json.loads(path.read_bytes())  # plain JSON: loading it cannot run code
    assert doc["d"][0] == ["key", syntax._parser_key(syntax.grammar_text())]

    import lark

    def no_build(*_a, **_k):
        raise AssertionError("a warm cache must not rebuild the tables")

    syntax.parser.cache_clear()
    monkeypatch.setattr(lark.Lark, "__init__", no_build)  # Lark.load does not call it
    _parses_example_a()


@pytest.mark.parametrize("damage", ["garbage", "wrong key", "group-writable", "folder world-writable", "symlink"])
def test_a_damaged_or_foreign_parser_cache_is_rebuilt_not_trusted(cache_home, damage, tmp_path):
    _parses_example_a()
    path = cache_home / syntax._PARSER_FILE
    if damage == "garbage":
        path.write_bytes(b'{"d": [["key", [1, 2]]]}' * 3)
    elif damage == "wrong key":
        path.write_text(path.read_text().replace(syntax._parser_key(syntax.grammar_text()), "0" * 64))
    elif damage == "group-writable":
        path.chmod(0o620)
    elif damage == "folder world-writable":
        cache_home.chmod(0o777)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        shutil.copy(path, elsewhere)
        path.unlink()
        path.symlink_to(elsewhere)
    from effspec.front.cachedir import cache_root, read_owned

    key = syntax._parser_key(syntax.grammar_text())
    raw = read_owned(cache_root(), syntax._PARSER_FILE, 1 << 22)
    if damage in ("garbage", "wrong key"):  # our own file, but not tables made for this grammar and lark
        assert raw is not None and syntax._load_tables(key) is None
    else:  # a file or folder someone else could have written: not even read
        assert raw is None and syntax._load_tables(key) is None
    syntax.parser.cache_clear()
    _parses_example_a()  # built afresh from the grammar, and right
