"""The on-disk unit-word table: equal to pint for every grammar word, and
ignored safely when it is corrupt, stale, foreign or in a folder not ours."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from effspec.front import units

ROOT = Path(__file__).resolve().parents[2]


def grammar_unit_words() -> list[str]:
    """UNIT_WORD's alternatives, read here independently of units.unit_words()."""
    text = (ROOT / "grammar" / "eff.lark").read_text(encoding="utf-8")
    body = text.split("UNIT_WORD:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r'"([^"]+)"', body)


@pytest.fixture()
def fresh_pint():
    """A pint registry built here, without effspec's cache, with the project's units."""
    import pint

    ureg = pint.UnitRegistry()
    for line in ("FLOP = [flop]", "token = [token]", "sequence = [sequence]", "sample = [sample]",
                 "step = [step]", "device = [device]", "param = [param]"):
        ureg.define(line)
    return ureg


@pytest.fixture()
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    units.unit_table.cache_clear()
    yield home
    units.unit_table.cache_clear()


def _table_file(home: Path) -> Path:
    return home / "effspec" / units.table_file()


def test_words_are_the_grammar_words():
    assert list(units.unit_words()) == grammar_unit_words()
    assert len(grammar_unit_words()) >= 30  # FLOP prefixes, counting units, times, power


def test_cached_table_equals_pint_for_every_grammar_word(cache_home, fresh_pint, monkeypatch):
    built = units.unit_table()  # cache miss: computed from pint, then written
    assert _table_file(cache_home).is_file()
    units.unit_table.cache_clear()

    def no_pint(*_a, **_k):
        raise AssertionError("a warm cache must not consult pint")

    monkeypatch.setattr(units, "pint_table", no_pint)
    loaded = units.unit_table()  # cache hit: read back from JSON
    assert loaded == built
    for w in grammar_unit_words():
        base = fresh_pint.Quantity(1.0, w).to_base_units()
        expected_dims = tuple(sorted((str(k), int(v)) for k, v in dict(base.dimensionality).items() if v))
        factor, dims = loaded[w]
        assert factor == pytest.approx(float(base.magnitude), rel=1e-15), w
        assert dims == expected_dims, w


def test_hand_checked_entries(cache_home):
    table = units.unit_table()
    assert table["TFLOP"] == (1e12, (("[flop]", 1),))  # tera = 10^12
    assert table["ms"] == (1e-3, (("[time]", 1),))
    assert table["day"] == (86400.0, (("[time]", 1),))  # 24 x 3600 s
    assert table["h"] == (3600.0, (("[time]", 1),))
    assert table["kW"] == (1000.0, (("[length]", 2), ("[mass]", 1), ("[time]", -3)))  # W = kg m^2 s^-3
    assert table["Mtoken"] == (1e6, (("[token]", 1),))
    # parse_unit composes words: TFLOP/s = 1e12 FLOP per second.
    assert units.parse_unit("TFLOP/s") == (1e12, (("[flop]", 1), ("[time]", -1)))


def test_file_is_json_not_pickle(cache_home):
    units.unit_table()
    raw = _table_file(cache_home).read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    assert doc["key"] == units.table_key()
    assert doc["units"]["GFLOP"] == [1e9, [["[flop]", 1]]]


def _expect_rebuilt(home: Path, fresh_pint) -> None:
    """The table comes from pint again and the file is rewritten valid."""
    units.unit_table.cache_clear()
    table = units.unit_table()
    assert table["TFLOP"] == (1e12, (("[flop]", 1),))
    assert len(table) == len(grammar_unit_words())
    doc = json.loads(_table_file(home).read_text(encoding="utf-8"))
    assert doc["key"] == units.table_key()


@pytest.mark.parametrize("content", [
    b"",
    b"\x80\x81 not utf-8",
    b"{",
    b"[]",
    b"null",
    b'{"key": 1, "units": {}}',
    b"\x80\x04\x95pickle-like bytes",
    b"[" * 100000,  # deep nesting must not escape as RecursionError
])
def test_corrupt_file_is_ignored(cache_home, fresh_pint, content):
    units.unit_table()
    _table_file(cache_home).write_bytes(content)
    _expect_rebuilt(cache_home, fresh_pint)


@pytest.mark.parametrize("mutate", [
    lambda d: d["units"]["TFLOP"].__setitem__(0, float("nan")) or d,
    lambda d: d["units"]["TFLOP"].__setitem__(0, -1.0) or d,
    lambda d: d["units"]["TFLOP"].__setitem__(0, True) or d,
    lambda d: d["units"]["TFLOP"].__setitem__(0, "1e12") or d,
    lambda d: d["units"]["TFLOP"].__setitem__(1, [["[flop]", 1.5]]) or d,
    lambda d: d["units"]["TFLOP"].__setitem__(1, [["__import__('os')", 1]]) or d,
    lambda d: d["units"]["TFLOP"].__setitem__(1, [["[time]", 1], ["[flop]", 1]]) or d,  # unsorted
    lambda d: d["units"].pop("TFLOP") and d,
    lambda d: d["units"].__setitem__("extra", [1.0, []]) or d,
    lambda d: d["key"].__setitem__("pint", ["/elsewhere/pint", ["0.1"], []]) or d,  # another pint
    lambda d: d["key"].__setitem__("format", 0) or d,
    lambda d: d["key"].__setitem__("definitions", ["FLOP = [time]"]) or d,
])
def test_malformed_or_foreign_table_is_ignored(cache_home, fresh_pint, mutate):
    units.unit_table()
    path = _table_file(cache_home)
    doc = mutate(json.loads(path.read_text(encoding="utf-8")))
    # NaN is written as the bare token NaN, which json.load accepts: the reader must still refuse it.
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert units.read_table(str(path), units.table_key()) is None
    _expect_rebuilt(cache_home, fresh_pint)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership")
def test_group_writable_folder_is_not_trusted(cache_home):
    units.unit_table()
    folder = cache_home / "effspec"
    path = _table_file(cache_home)
    assert units.read_table(str(path), units.table_key()) is not None
    os.chmod(folder, 0o777)
    try:
        assert units.read_table(str(path), units.table_key()) is None
        units.unit_table.cache_clear()
        assert units.unit_table()["day"] == (86400.0, (("[time]", 1),))  # still right, from pint
    finally:
        os.chmod(folder, 0o700)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_folder_or_file_owned_by_another_user_is_not_trusted(cache_home):
    units.unit_table()
    folder, path = cache_home / "effspec", _table_file(cache_home)
    key = units.table_key()
    os.chown(path, 12345, -1)
    assert units.read_table(str(path), key) is None
    os.chown(path, 0, -1)
    os.chown(folder, 12345, -1)
    try:
        assert units.read_table(str(path), key) is None
    finally:
        os.chown(folder, 0, -1)


def test_unwritable_cache_still_checks(tmp_path, monkeypatch):
    # XDG_CACHE_HOME pointing at a file: no cache at all, values from pint.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    units.unit_table.cache_clear()
    try:
        assert units.unit_table()["PFLOP"] == (1e15, (("[flop]", 1),))
    finally:
        units.unit_table.cache_clear()


def test_warm_cache_check_does_not_import_pint(tmp_path):
    spec = ROOT / "examples" / "example_c_scaling.eff"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    code = ("import sys, effspec\n"
            f"r = effspec.load({str(spec)!r})\n"
            "print('pint' in sys.modules, len(r.diagnostics))")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split()[0] == "True"  # cold cache: pint computed the table
    assert second.stdout.split() == ["False", first.stdout.split()[1]]  # warm: same findings, no pint


def test_two_installs_used_alternately_keep_an_entry_each(cache_home, monkeypatch):
    """Issue 17: one file per user made two venvs (two pint installs) evict each other, so
    every run paid pint's start-up. Each install's key now names its own file."""
    real_key = units.table_key()
    install_b = dict(real_key, pint=["/other/venv/site-packages/pint", ["0.24"], []])
    builds = []
    real_build = units.pint_table
    monkeypatch.setattr(units, "pint_table", lambda words=None: builds.append(1) or real_build(words))

    def check_with(key):
        monkeypatch.setattr(units, "table_key", lambda: key)
        units.unit_table.cache_clear()
        return units.unit_table()

    a = check_with(real_key)
    b = check_with(install_b)
    assert len(builds) == 2  # each install builds once
    assert check_with(real_key) == a and check_with(install_b) == b
    assert len(builds) == 2  # then both are served from the cache, alternately
    files = sorted(p.name for p in (cache_home / "effspec").glob("units-v1-*.json"))
    assert len(files) == 2 and units.table_file(real_key) in files and units.table_file(install_b) in files


def test_old_entries_are_pruned_to_the_newest_few(tmp_path):
    from effspec.front.cachedir import KEEP, keyed_name, prune

    folder = tmp_path / "c"
    folder.mkdir(mode=0o700)
    names = [keyed_name("units-v1", str(i)) for i in range(KEEP + 3)]
    for i, name in enumerate(names):
        path = folder / name
        path.write_text("{}", encoding="utf-8")
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))  # oldest first
    (folder / "parser-v1-0000000000000000.json").write_text("{}", encoding="utf-8")
    prune(str(folder), "units-v1")
    left = sorted(p.name for p in folder.glob("units-v1-*.json"))
    assert left == sorted(names[3:])  # the three oldest went
    assert (folder / "parser-v1-0000000000000000.json").exists()  # another kind is not touched
