"""Reading untrusted specs (issue 19, the reading side).

Each test plants what a hostile vendor, or another local user, would plant,
and asserts it is not read, not executed and not echoed:

1. lark's parser cache was a pickle in the shared temp folder: a planted one
   must not run; the tables live as JSON in effspec's owner-checked folder.
2. A spec found in a folder that is a symlink leaving the folder (or into
   /proc) is refused; a named spec in a pseudo-filesystem too.
3. `file "…"` is opened beneath the spec's folder: no check-then-open race,
   no hard link to a file outside unless --allow-hardlinks.
4. Lone surrogates from the Python API are EFF001, and every format renders.
5. `report` never overwrites its input.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import pickle
import random
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import cli as run_effspec
from conftest import effspec_process

import effspec
from effspec import check_text
from effspec.front import files, syntax
from effspec.front.ir import Samples
from effspec.report import render
from effspec.report.text import result_json
from effspec.report.text import text as text_output

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_A = ROOT / "examples" / "example_a_measured.eff"
SECRET = "SECRET-3b9f61"  # planted in every file that must never be read

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix", reason="POSIX file semantics")


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command in this process (conftest.cli), or, given an environment, as a process of its own
    (conftest.effspec_process): a secret
    planted in the environment is in a new process's /proc/self/environ (not in this one's, which was fixed at
    start-up), and TMPDIR is read once per process."""
    if env is None:
        return run_effspec(*args, cwd=cwd)
    return effspec_process(*args, env=env, cwd=cwd)


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
    path = cache_home / syntax.parser_cache_file()
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
    path = cache_home / syntax.parser_cache_file()
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
    raw = read_owned(cache_root(), syntax.parser_cache_file(), 1 << 22)
    if damage in ("garbage", "wrong key"):  # our own file, but not tables made for this grammar and lark
        assert raw is not None and syntax._load_tables(key) is None
    else:  # a file or folder someone else could have written: not even read
        assert raw is None and syntax._load_tables(key) is None
    syntax.parser.cache_clear()
    _parses_example_a()  # built afresh from the grammar, and right


# ---------------------------------------------------------------------------
# 2. Specs that are symlinks


@pytest.fixture()
def vendor(tmp_path):
    """vendor/ holds one honest spec; outside/ holds a secret spec next to it."""
    (tmp_path / "vendor").mkdir()
    (tmp_path / "outside").mkdir()
    shutil.copy(EXAMPLE_A, tmp_path / "vendor" / "a.eff")
    shutil.copy(EXAMPLE_A.with_name("llm3b_64_steps.csv"), tmp_path / "vendor")
    (tmp_path / "outside" / "secret.eff").write_text(f"token = {SECRET}\n")
    return tmp_path


def test_folder_check_refuses_a_symlink_to_proc_self_environ(vendor):
    os.symlink("/proc/self/environ", vendor / "vendor" / "claims.eff")
    env = dict(os.environ, EFFSPEC_TEST_SECRET=SECRET)
    for fmt in ("text", "json", "sarif"):
        proc = run_cli("check", "--format", fmt, "vendor", env=env, cwd=vendor)
        assert proc.returncode == 2
        assert proc.stderr.splitlines()[0] == \
            "effspec: vendor/claims.eff: is a symlink to /proc/self/environ, a system pseudo-filesystem; not read"
        assert SECRET not in proc.stdout + proc.stderr
        assert "EFF601" in proc.stdout and "a.eff" in proc.stdout  # the honest spec beside it is still checked


def test_folder_check_refuses_a_symlink_to_a_file_outside(vendor):
    os.symlink("../outside/secret.eff", vendor / "vendor" / "claims.eff")
    proc = run_cli("check", "vendor", cwd=vendor)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["effspec: vendor/claims.eff: is a symlink to ../outside/secret.eff, outside vendor; not read"]
    assert SECRET not in proc.stdout + proc.stderr
    assert "vendor/a.eff: 2 errors" in proc.stdout


def test_folder_check_refuses_an_absolute_symlink_to_a_file_outside(vendor):
    os.symlink(vendor / "outside" / "secret.eff", vendor / "vendor" / "claims.eff")
    proc = run_cli("check", str(vendor / "vendor"))
    assert proc.returncode == 2
    assert f"is a symlink to {vendor / 'outside' / 'secret.eff'}, outside {vendor / 'vendor'}; not read" in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_folder_check_does_not_enter_a_symlinked_folder(vendor):
    os.symlink("../outside", vendor / "vendor" / "more")
    proc = run_cli("check", "vendor", cwd=vendor)
    assert proc.returncode == 1 and proc.stderr == ""
    assert SECRET not in proc.stdout and "secret.eff" not in proc.stdout


def test_folder_check_follows_a_symlink_that_stays_inside(vendor):
    os.symlink("a.eff", vendor / "vendor" / "b.eff")
    proc = run_cli("check", "vendor", cwd=vendor)
    assert proc.returncode == 1, proc.stderr
    assert "vendor/a.eff: 2 errors" in proc.stdout and "vendor/b.eff: 2 errors" in proc.stdout


def test_folder_check_refuses_a_hard_link_unless_allowed(vendor):
    os.link(vendor / "outside" / "secret.eff", vendor / "vendor" / "claims.eff")
    proc = run_cli("check", "vendor", cwd=vendor)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["effspec: vendor/claims.eff: is a hard link (one file with 2 names, which may lie "
                                        "outside vendor); not read (--allow-hardlinks reads it)"]
    assert SECRET not in proc.stdout + proc.stderr
    allowed = run_cli("check", "--allow-hardlinks", "vendor", cwd=vendor)
    assert allowed.returncode == 1 and "vendor/claims.eff:1:1" in allowed.stdout  # read, and not a spec


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_named_symlink_into_proc_is_refused_and_says_where_it_points(vendor, command):
    os.symlink("/proc/self/environ", vendor / "vendor" / "x.eff")
    env = dict(os.environ, EFFSPEC_TEST_SECRET=SECRET)
    args = ["check", "vendor/x.eff"] if command == "check" else ["report", "vendor/x.eff", "-o", "out.html"]
    proc = run_cli(*args, env=env, cwd=vendor)
    assert proc.returncode == 2
    assert proc.stderr == "effspec: vendor/x.eff: is a symlink to /proc/self/environ, a system pseudo-filesystem; not read\n"
    assert SECRET not in proc.stdout
    assert not (vendor / "out.html").exists()


def test_a_named_spec_in_proc_is_refused():
    proc = run_cli("check", "/proc/self/environ", env=dict(os.environ, EFFSPEC_TEST_SECRET=SECRET))
    assert proc.returncode == 2
    assert proc.stderr.startswith("effspec: /proc/self/environ: lies in a system pseudo-filesystem (/proc/")
    assert proc.stderr.endswith("/environ); not read\n") and SECRET not in proc.stdout + proc.stderr


def test_a_named_symlink_to_an_ordinary_file_is_still_followed(vendor):
    os.symlink(EXAMPLE_A, vendor / "vendor" / "mine.eff")  # the user named it: their choice
    proc = run_cli("check", "vendor/mine.eff", cwd=vendor)
    assert proc.returncode == 1 and "vendor/mine.eff: 2 errors" in proc.stdout


# ---------------------------------------------------------------------------
# 3. `file "…"`: opened beneath the folder, one name


CSV_SPEC = 'eff 1\nrun a {\n  timing { step_time = file "d/steps.csv" column "t" }\n}\n'
INSIDE, OUTSIDE = "t,note\n1.5,fine\n", f"t,note\n9.25,{SECRET}\n"


def _samples(result) -> tuple[float, ...] | None:
    if result.spec is None:
        return None
    value = result.spec.runs[0].block("timing").value("step_time")
    return value.values if isinstance(value, Samples) else None


@pytest.fixture()
def race_dirs(tmp_path):
    spec, outside = tmp_path / "spec", tmp_path / "outside"
    (spec / "d").mkdir(parents=True)
    outside.mkdir()
    (spec / "d" / "steps.csv").write_text(INSIDE)
    (outside / "steps.csv").write_text(OUTSIDE)
    return spec, outside


def test_file_reference_race_never_reads_outside(race_dirs):
    """A thread swaps the intermediate folder `d` for a symlink to a folder
    outside and back, at least 2,000 times, while the main thread checks the
    spec in a loop.  Every check must either read the inside file or refuse."""
    spec, outside = race_dirs
    os.symlink(outside, spec / ".evil")
    rng = random.Random(19)
    pauses = [rng.randrange(0, 200) for _ in range(997)]  # seeded busy-waits between renames
    swaps = 0
    stop = threading.Event()

    def swapper() -> None:
        nonlocal swaps
        d, real, evil = spec / "d", spec / ".real", spec / ".evil"
        while not stop.is_set():
            os.rename(d, real)  # `d` is now missing: a check may find nothing
            os.rename(evil, d)  # `d` is a symlink to the outside folder
            swaps += 1
            for _ in range(pauses[swaps % len(pauses)]):
                pass
            os.rename(d, evil)
            os.rename(real, d)  # `d` is the real folder again
            swaps += 1
            for _ in range(pauses[(swaps * 7) % len(pauses)]):
                pass

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two threads finely
    thread = threading.Thread(target=swapper, daemon=True)
    outcomes = {"inside": 0, "refused": 0}
    try:
        thread.start()
        deadline = time.monotonic() + 15
        checks = 0
        while (swaps < 2000 or checks < 1000) and time.monotonic() < deadline:
            result = check_text(CSV_SPEC, "a.eff", str(spec))
            checks += 1
            assert SECRET not in outputs(result)
            samples = _samples(result)
            assert samples in (None, (1.5,)), samples  # never 9.25, the outside value
            if samples == (1.5,):
                outcomes["inside"] += 1
            else:
                assert [c for c, *_ in codes(result)] == ["EFF020"], outputs(result)
                outcomes["refused"] += 1
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_interval)
    assert swaps >= 2000 and checks >= 1000, f"only {swaps} swaps and {checks} checks in 15 s"
    assert outcomes["inside"] > 0 and outcomes["refused"] > 0, outcomes  # the race really ran both ways


def _swap_before_reading(monkeypatch, spec, outside, name: str) -> None:
    """`d` becomes a symlink to the outside folder right before ``d/name`` is read (the spec's
    folder was resolved, the walk beneath it has not begun): its one read (issue 26)."""
    run = files._Walk.run

    def swap_then_walk(self, rel):
        if rel == f"d/{name}" and not (spec / "d").is_symlink():
            os.rename(spec / "d", spec / ".real")
            os.symlink(outside, spec / "d")
        return run(self, rel)

    monkeypatch.setattr(files._Walk, "run", swap_then_walk)


def _unswap(spec) -> None:
    os.unlink(spec / "d")
    os.rename(spec / ".real", spec / "d")


def test_a_folder_swapped_between_resolving_and_reading_is_refused(race_dirs, monkeypatch):
    """The widest window, made deterministic: `d` becomes a symlink to the outside
    folder after the spec's folder was resolved and before the CSV is read.  A swap
    after that read (before the CSV is parsed) reaches nothing: the CSV is read once
    (issue 26), and the parser gets those bytes."""
    spec, outside = race_dirs
    with monkeypatch.context() as m:
        _swap_before_reading(m, spec, outside, "steps.csv")
        result = check_text(CSV_SPEC, "a.eff", str(spec))
    assert codes(result) == [("EFF020", 3, 29)]  # at the path `"d/steps.csv"`, as every refusal while resolving
    assert f"`d/steps.csv` leaves the spec's folder through the symlink `d` → `{outside}`" in result.diagnostics[0].message
    assert SECRET not in outputs(result) and _samples(result) is None
    _unswap(spec)
    original = files.read_csv_header_and_rows

    def swap_then_parse(*args, **kwargs):
        os.rename(spec / "d", spec / ".real")
        os.symlink(outside, spec / "d")
        return original(*args, **kwargs)

    monkeypatch.setattr(files, "read_csv_header_and_rows", swap_then_parse)
    result = check_text(CSV_SPEC, "a.eff", str(spec))
    assert _samples(result) == (1.5,)  # the inside file's one row, never 9.25
    assert "EFF020" not in [c for c, *_ in codes(result)] and SECRET not in outputs(result)


RANKS_SPEC = '''eff 1
run r {
  model { kind = custom  flops_per_token = 1e9 FLOP/token }
  convention { preset = palm }
  work { valid_tokens = 1000000 token }
  hardware { accelerator = "TestGPU"  count = 2 device  dtype = bf16  peak = 100 TFLOP/s }
  timing { step_time = [1.0, 1.0] s  warmup = 0 step }
  ranks { samples = file "d/ranks.csv" }
}
'''
RANKS_INSIDE = "rank,node,step,compute,comm,stall\n0,n0,0,0.9,0.05,0.05\n1,n0,0,0.9,0.05,0.05\n"
RANKS_OUTSIDE = f"rank,node,step,compute,comm,stall\n0,{SECRET},0,0.9,0.05,0.05\n1,n0,0,x{SECRET},0.05,0.05\n"


def test_the_rank_loader_reads_beneath_the_folder_too(tmp_path, monkeypatch):
    """`ranks` is read (once) beneath the folder while building, and parsed while
    evaluating: a swap of `d` for a symlink to the outside folder before the read is
    refused, and one between the read and the parse reaches nothing."""
    spec, outside = tmp_path / "spec", tmp_path / "outside"
    (spec / "d").mkdir(parents=True)
    outside.mkdir()
    (spec / "d" / "ranks.csv").write_text(RANKS_INSIDE)
    (outside / "ranks.csv").write_text(RANKS_OUTSIDE)
    clean = check_text(RANKS_SPEC, "r.eff", str(spec))
    assert not [c for c in codes(clean) if c[0] in ("EFF020", "EFF003")]

    with monkeypatch.context() as m:
        _swap_before_reading(m, spec, outside, "ranks.csv")
        result = check_text(RANKS_SPEC, "r.eff", str(spec))
    refused = [d for d in result.diagnostics if d.code == "EFF020"]
    assert [(d.span.line, d.span.column) for d in refused] == [(8, 26)]  # at the path `"d/ranks.csv"`
    assert f"`d/ranks.csv` leaves the spec's folder through the symlink `d` → `{outside}`" in refused[0].message
    assert SECRET not in outputs(result)
    _unswap(spec)

    from effspec.ranks import loader

    original = loader.load_rank_table

    def swap_then_load(*args, **kwargs):
        os.rename(spec / "d", spec / ".real")
        os.symlink(outside, spec / "d")
        return original(*args, **kwargs)

    monkeypatch.setattr(loader, "load_rank_table", swap_then_load)
    result = check_text(RANKS_SPEC, "r.eff", str(spec))
    assert not [c for c in codes(result) if c[0] in ("EFF020", "EFF003")]  # the inside table, parsed
    assert result.evaluation.runs["r"].diagnosis is not None
    assert SECRET not in outputs(result)


def test_a_hard_link_in_the_folder_is_refused_unless_allowed(tmp_path):
    spec, outside = tmp_path / "spec", tmp_path / "outside"
    spec.mkdir()
    outside.mkdir()
    (outside / "steps.csv").write_text(OUTSIDE)
    os.link(outside / "steps.csv", spec / "steps.csv")
    (spec / "a.eff").write_text(CSV_SPEC.replace("d/steps.csv", "steps.csv"))
    proc = run_cli("check", "--format", "json", "spec/a.eff", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (doc,) = json.loads(proc.stdout)
    assert [(d["code"], d["line"], d["column"]) for d in doc["diagnostics"]] == [("EFF020", 3, 29)]
    assert doc["diagnostics"][0]["message"] == "`steps.csv` is a hard link (one file with 2 names)"
    assert SECRET not in proc.stdout + proc.stderr
    # The user vouches for the folder: the file is read (its note column is not).
    allowed = run_cli("check", "--format", "json", "--allow-hardlinks", "spec/a.eff", cwd=tmp_path)
    assert not [d for d in json.loads(allowed.stdout)[0]["diagnostics"] if d["code"] in ("EFF020", "EFF003")]
    assert SECRET not in allowed.stdout


def test_a_hard_linked_rank_csv_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "elsewhere.csv").write_text(RANKS_OUTSIDE)
    os.link(tmp_path / "elsewhere.csv", tmp_path / "d" / "ranks.csv")
    result = check_text(RANKS_SPEC, "r.eff", str(tmp_path))
    refused = [d for d in result.diagnostics if d.code == "EFF020"]
    assert [(d.span.line, d.span.column, d.message) for d in refused] == \
        [(8, 26, "`d/ranks.csv` is a hard link (one file with 2 names)")]
    assert SECRET not in outputs(result)


def test_symlinks_inside_the_folder_resolve_component_by_component(tmp_path):
    spec = tmp_path / "spec"
    (spec / "data" / "deep").mkdir(parents=True)
    (spec / "data" / "deep" / "real.csv").write_text(INSIDE)
    (spec / "data" / "deep" / "steps.csv").symlink_to("../deep/real.csv")  # `..` inside, after a symlink
    (spec / "d").symlink_to("data/deep")  # relative, inside
    assert _samples(check_text(CSV_SPEC, "a.eff", str(spec))) == (1.5,)
    (spec / "d").unlink()
    (spec / "d").symlink_to(spec / "data" / "deep")  # absolute, inside
    assert _samples(check_text(CSV_SPEC, "a.eff", str(spec))) == (1.5,)
    (spec / "d").unlink()
    (spec / "d").symlink_to(spec / "data" / ".." / ".." / "spec" / "data" / "deep")  # absolute, but climbs out on the way
    assert "leaves the spec's folder" in check_text(CSV_SPEC, "a.eff", str(spec)).diagnostics[0].message


def test_a_symlink_that_climbs_out_is_named_in_the_message(tmp_path):
    spec = tmp_path / "spec"
    spec.mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "steps.csv").write_text(OUTSIDE)
    (spec / "d").symlink_to("../d")
    result = check_text(CSV_SPEC, "a.eff", str(spec))
    assert codes(result) == [("EFF020", 3, 29)]
    assert result.diagnostics[0].message == "`d/steps.csv` leaves the spec's folder through the symlink `d` → `../d`"
    assert SECRET not in outputs(result)


def test_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "d").symlink_to("e")
    (tmp_path / "e").symlink_to("d")
    result = check_text(CSV_SPEC, "a.eff", str(tmp_path))
    assert codes(result) == [("EFF020", 3, 29)]
    assert result.diagnostics[0].message == "`d/steps.csv` has too many levels of symbolic links"


def test_open_beneath_refuses_a_root_that_became_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.csv").write_text(INSIDE)
    (tmp_path / "link").symlink_to("real")
    fd, path = files.open_beneath(str(tmp_path / "real"), "x.csv")
    os.close(fd)
    assert path == str(tmp_path / "real" / "x.csv")
    with pytest.raises(files.Refused) as exc:
        files.open_beneath(str(tmp_path / "link"), "x.csv")  # roots are canonical; a symlink means a swap
    assert exc.value.reason == "changed"


@pytest.mark.skipif(not hasattr(os, "O_PATH") or os.geteuid() != 0, reason="needs O_PATH, and root to become another user")
def test_a_folder_with_search_but_no_read_permission_can_be_walked():
    """A spec under a 0711 home folder: an ordinary open may pass through it, so
    the walk must too (its folders are opened O_PATH, not for reading)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="effspec-perm-", dir="/tmp"))
    try:
        (base / "pub").mkdir()
        (base / "pub" / "steps.csv").write_text(INSIDE)
        base.chmod(0o711)
        (base / "pub").chmod(0o755)
        (base / "pub" / "steps.csv").chmod(0o644)
        pid = os.fork()
        if pid == 0:  # the child becomes `nobody`, who may search base but not list it
            status = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                try:
                    os.listdir(base)
                except PermissionError:
                    fd, _ = files.open_beneath(str(base / "pub"), "steps.csv")
                    status = 0 if os.read(fd, 64) == INSIDE.encode() else 3
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------------------
# 4. Lone surrogates


SURROGATE_SPEC = 'eff 1\n# note \udcff\nrun a {\n  title = "x\ud800y"\n  hardware { count = 1 device }\n}\n'


def test_lone_surrogates_are_eff001_at_their_place():
    result = check_text(SURROGATE_SPEC)
    assert codes(result) == [("EFF001", 2, 8), ("EFF001", 4, 13)]
    assert [d.message for d in result.diagnostics] == [
        "lone surrogate U+DCFF in a comment: the text is not valid Unicode",
        "lone surrogate U+D800 in a string: the text is not valid Unicode",
    ]
    assert result.spec is None
    assert result.source == SURROGATE_SPEC.replace("\udcff", "\ufffd").replace("\ud800", "\ufffd")


def test_a_surrogate_outside_a_string_is_eff001_too():
    result = check_text("eff 1\nrun a\ud83d { }\n")
    assert ("EFF001", 2, 6) in codes(result)


@pytest.mark.parametrize("fmt", ["json", "sarif", "md", "html", "tex", "pdf"])
def test_every_format_renders_a_result_with_surrogates(fmt):
    result = check_text(SURROGATE_SPEC, "s.eff")
    data = render(result, fmt)
    assert isinstance(data, bytes) and data
    if fmt != "pdf":
        shown = data.decode("utf-8")  # strict: valid UTF-8 throughout
        if fmt != "tex":  # LaTeX macros carry figures only
            assert "lone surrogate U+D800 in a string" in shown
    text_output(result).encode("utf-8")


def test_surrogates_in_the_api_never_reach_an_encoder():
    for text in ("\ud800", "eff 1\n\udfff", "eff 1\nrun a { title = \"\ud83d\ude00\" }\n"):
        result = effspec.check_text(text)
        assert result.has_errors and {d.code for d in result.diagnostics} == {"EFF001"}
        text_output(result).encode("utf-8")
        render(result, "html")


# ---------------------------------------------------------------------------
# 5. report never overwrites its input


def _report_input(tmp_path) -> Path:
    spec = tmp_path / "spec.md"  # a spec whose name is also a report's
    spec.write_bytes(EXAMPLE_A.read_bytes())
    for csv in EXAMPLE_A.parent.glob("*.csv"):  # the step times it reads: a spec that compiles
        (tmp_path / csv.name).write_bytes(csv.read_bytes())
    return spec


@pytest.mark.parametrize("how", ["same path", "another spelling", "symlink", "hard link"])
def test_report_refuses_to_overwrite_its_input(tmp_path, how):
    spec = _report_input(tmp_path)
    before = spec.read_bytes()
    out = {"same path": "spec.md", "another spelling": "./sub/../spec.md", "symlink": "link.md", "hard link": "hard.md"}[how]
    (tmp_path / "sub").mkdir()
    if how == "symlink":
        (tmp_path / "link.md").symlink_to("spec.md")
    elif how == "hard link":
        os.link(spec, tmp_path / "hard.md")
    proc = run_cli("report", "spec.md", "-o", out, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"effspec: {out}: is the spec spec.md; not overwritten with its report (choose another output file)\n"
    assert spec.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".effspec-")) == []  # no temporary left


def test_report_refuses_to_overwrite_a_file_the_spec_reads(tmp_path):
    (tmp_path / "steps.md").write_text("t\n1.5\n")  # a CSV with a report's suffix
    (tmp_path / "a.eff").write_text('eff 1\nrun a {\n  timing { step_time = file "steps.md" column "t" }\n}\n')
    proc = run_cli("report", "a.eff", "-o", "steps.md", cwd=tmp_path)
    assert proc.returncode == 2
    assert "effspec: steps.md: is " in proc.stderr and "steps.md, a file the spec reads; not overwritten" in proc.stderr
    assert (tmp_path / "steps.md").read_text() == "t\n1.5\n"


def test_report_to_a_new_file_still_works(tmp_path):
    _report_input(tmp_path)
    proc = run_cli("report", "spec.md", "-o", "report.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # example A has two errors
    assert json.loads((tmp_path / "report.json").read_text())["file"] == "spec.md"
