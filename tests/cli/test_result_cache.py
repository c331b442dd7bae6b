"""`effspec check`'s result cache (effspec.cli.cache): hits, misses, safety, output identity.

Most tests run the installed console script (`.venv/bin/effspec`) with their
own XDG_CACHE_HOME (the per-user secret lives there) and the cache turned back
on (tests/conftest.py turns it off for the rest of the suite).  A hit is seen
from outside: the entry file is left as it was (same inode, same mtime), and a
miss rewrites it (os.replace: a new inode).  The expected findings are
derived from the spec and CSV written here: 12 rows in steps.csv are "12
samples" in EFF501's message, a row `abc` on line 3 is EFF003 at "row 3".
No timing is asserted (benchmarks/edges_bench.py measures warm against cold).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli as run_effspec
from conftest import effspec_process

ROOT = Path(__file__).resolve().parents[2]
EFFSPEC = Path(sys.executable).parent / "effspec"
EXAMPLES = ROOT / "examples"

SPEC = """eff 1

run r {
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  timing {
    boundary  = "optimizer step end, after cuda synchronize"
    step_time = file "steps.csv" column "step_seconds"
  }
}
"""
ROWS = ["4.0", "4.1", "4.0", "3.9", "4.0", "4.1", "4.0", "3.9", "4.0", "4.0", "4.1", "4.0"]  # 12 samples


def _csv(rows: list[str]) -> str:
    return "step_seconds\n" + "".join(r + "\n" for r in rows)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project (its root holds .git) with one spec that reads steps.csv."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    (root / "specs" / "s.eff").write_text(SPEC, encoding="utf-8")
    (root / "specs" / "steps.csv").write_text(_csv(ROWS), encoding="utf-8")
    return root


def _env(tmp_path: Path, home: str = "xdg", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EFFSPEC_NO_CACHE", "EFFSPEC_CACHE_DIR")}
    env.update(XDG_CACHE_HOME=str(tmp_path / home), NO_COLOR="1", **extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`effspec ARGS` in this process (conftest.cli: the package's per-process memos, the cache's secret among
    them, cleared before and after, so each call starts as a new process does); the concurrent writers, stdin and
    the import probe below run the installed command."""
    proc = run_effspec(*args, cwd=cwd, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert "internal error" not in proc.stderr
    return proc


def entries(folder: Path) -> dict[str, tuple[int, int]]:
    """Each entry of a cache folder: (inode, mtime); a rewritten entry changes both."""
    out = {}
    for p in sorted(folder.glob("*.json")):
        st = p.stat()
        out[p.name] = (st.st_ino, st.st_mtime_ns)
    return out


def secret(tmp_path: Path, home: str = "xdg") -> bytes:
    return bytes.fromhex((tmp_path / home / "effspec" / "result-cache-key").read_text())


def _split(entry: Path) -> tuple[bytes, dict, bytes]:
    """An entry's MAC, header and body (the layout: MAC line, header line, body)."""
    mac, _, rest = entry.read_bytes().partition(b"\n")
    header, _, body = rest.partition(b"\n")
    return mac, json.loads(header), body


def _sign(entry: Path, key: bytes, meta: dict, body: bytes) -> None:
    """Write ``body`` as the entry, its header updated to it and MACed with ``key``."""
    header = json.dumps({**meta, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()},
                        separators=(",", ":")).encode()
    mac = hmac.new(key, entry.name.encode() + b"\0" + header, hashlib.sha256).hexdigest().encode()
    entry.write_bytes(mac + b"\n" + header + b"\n" + body)


def valid(entry: Path, key: bytes) -> bool:
    mac, meta, body = _split(entry)
    header = entry.read_bytes().split(b"\n", 2)[1]
    good = hmac.new(key, entry.name.encode() + b"\0" + header, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(mac, good) or meta["sha256"] != hashlib.sha256(body).hexdigest():
        return False
    json.loads(body)
    return True


def check_formats() -> list[str]:
    """Every format `check --format` accepts, read from the parser itself."""
    from effspec.cli import parser

    sub = next(a for a in parser()._actions if a.dest == "command")
    check = sub.choices["check"]
    return list(next(a for a in check._actions if a.dest == "format").choices)


# ----------------------------------------------------------------------------
# Output identity


@pytest.mark.parametrize("fmt", check_formats())
def test_warm_output_is_byte_identical_to_cold_in_every_format(fmt, tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)  # 13 specs: the cold run takes the process pool, its workers write the entries
    (folder / ".git").mkdir()
    env = _env(tmp_path)
    args = ["check", "ex", "--format", fmt, "--statistics"]
    reference = run([*args, "--no-cache"], tmp_path, env)
    assert not (folder / ".effspec_cache").exists()
    cold = run(args, tmp_path, env)
    written = entries(folder / ".effspec_cache")
    assert len(written) == len(list(folder.glob("*.eff"))) + len(list(folder.rglob("*.eff.json")))  # a folder: both kinds
    warm = run(args, tmp_path, env)
    assert entries(folder / ".effspec_cache") == written  # every file a hit: nothing rewritten
    assert cold.stdout == reference.stdout
    assert warm.stdout == cold.stdout
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr)


def test_a_warm_sarif_log_links_rules_under_the_documentation_base(tmp_path):
    """The rule table is stored without its links: a warm log still follows --doc-base, or the
    configuration's doc_base, which the cached part of each file carries."""
    folder = tmp_path / "ex"
    folder.mkdir()
    shutil.copy(EXAMPLES / "example_b_vendor_claim.eff", folder)
    (folder / ".git").mkdir()
    env = _env(tmp_path)
    base = "https://docs.example.org/rules"
    for extra, pyproject in (([], None), (["--doc-base", base], None), ([], f'[tool.effspec]\ndoc_base = "{base}"\n')):
        if pyproject:
            (folder / "pyproject.toml").write_text(pyproject)
        args = ["check", "ex", "--format", "sarif", *extra]
        reference = run([*args, "--no-cache"], tmp_path, env)
        cold, warm = run(args, tmp_path, env), run(args, tmp_path, env)
        assert warm.stdout == cold.stdout == reference.stdout
        rules = {r["id"]: r for r in json.loads(warm.stdout)["runs"][0]["tool"]["driver"]["rules"]}
        if extra or pyproject:
            assert rules["EFF202"]["helpUri"] == f"{base}/EFF202.md"
        else:
            assert "helpUri" not in rules["EFF202"]
        assert "effspec explain EFF202" in rules["EFF202"]["help"]["text"]


def test_a_mix_of_hits_and_misses_prints_the_same_as_no_cache(tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)
    env = _env(tmp_path)
    for fmt in check_formats():
        run(["check", "ex", "--format", fmt], tmp_path, env)
    touched = folder / "example_b_vendor_claim.eff"
    touched.write_text(touched.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    for fmt in check_formats():
        mixed = run(["check", "ex", "--format", fmt, "--statistics"], tmp_path, env)
        reference = run(["check", "ex", "--format", fmt, "--statistics", "--no-cache"], tmp_path, env)
        assert mixed.stdout == reference.stdout, fmt


# ----------------------------------------------------------------------------
# Hits and misses


def test_unchanged_file_is_a_hit_and_a_content_change_a_miss(project, tmp_path):
    env = _env(tmp_path)
    cache = project / ".effspec_cache"  # at the project root (the folder holding .git), not beside the spec
    cold = run(["check", "specs/s.eff"], project, env)
    assert "EFF501" in cold.stdout and "has 12 samples" in cold.stdout
    before = entries(cache)
    assert len(before) == 1
    assert run(["check", "specs/s.eff"], project, env).stdout == cold.stdout
    assert entries(cache) == before
    spec = project / "specs" / "s.eff"
    spec.write_text(SPEC.replace('column "step_seconds"', 'column "step_seconds"  warmup = 2 step'), encoding="utf-8")
    changed = run(["check", "specs/s.eff"], project, env)
    assert "EFF501" not in changed.stdout  # warm-up declared: the finding is gone, not served from the cache
    assert entries(cache).keys() == before.keys() and entries(cache) != before


def test_a_configuration_change_is_a_miss(project, tmp_path):
    env = _env(tmp_path)
    assert "EFF501" in run(["check", "specs/s.eff"], project, env).stdout
    (project / "pyproject.toml").write_text('[tool.effspec]\nignore = ["EFF501"]\n', encoding="utf-8")
    ignored = run(["check", "specs/s.eff"], project, env)
    assert "warning[EFF501]" not in ignored.stdout
    assert "suppressed" in ignored.stdout
    (project / "pyproject.toml").write_text('[tool.effspec]\nseverity = { EFF501 = "error" }\n', encoding="utf-8")
    raised = run(["check", "specs/s.eff"], project, env)
    assert "error[EFF501]" in raised.stdout and raised.returncode == 1


def test_flags_that_change_the_findings_are_part_of_the_key(project, tmp_path):
    env = _env(tmp_path)
    assert "warning[EFF501]" in run(["check", "specs/s.eff"], project, env).stdout
    assert "warning[EFF501]" not in run(["check", "specs/s.eff", "--ignore", "EFF5"], project, env).stdout
    selected = run(["check", "specs/s.eff", "--select", "EFF5"], project, env).stdout
    assert "warning[EFF101]" not in selected and "warning[EFF501]" in selected
    quiet = run(["check", "specs/s.eff", "-q"], project, env).stdout
    assert "s.eff: 2 warnings, 1 info" not in quiet
    assert "s.eff: 2 warnings, 1 info" in run(["check", "specs/s.eff"], project, env).stdout


def test_a_referenced_file_change_or_removal_is_a_miss(project, tmp_path):
    env = _env(tmp_path)
    csv = project / "specs" / "steps.csv"
    assert "has 12 samples" in run(["check", "specs/s.eff"], project, env).stdout
    csv.write_text(_csv([*ROWS, "4.2"]), encoding="utf-8")
    assert "has 13 samples" in run(["check", "specs/s.eff"], project, env).stdout
    csv.write_text(_csv(["4.0", "abc"]), encoding="utf-8")
    bad = run(["check", "specs/s.eff"], project, env).stdout
    assert "error[EFF003]" in bad and "row 3" in bad and "`abc` is not a number" in bad
    csv.unlink()
    assert "file `steps.csv` not found" in run(["check", "specs/s.eff"], project, env).stdout
    csv.write_text(_csv(ROWS), encoding="utf-8")  # a file that appears is a miss too
    back = run(["check", "specs/s.eff"], project, env).stdout
    assert "has 12 samples" in back and "EFF020" not in back


def test_a_symlinked_reference_pointed_elsewhere_is_a_miss(project, tmp_path):
    env = _env(tmp_path)
    specs = project / "specs"
    (specs / "a.csv").write_text(_csv(ROWS), encoding="utf-8")
    (specs / "b.csv").write_text(_csv(ROWS[:5]), encoding="utf-8")
    (specs / "steps.csv").unlink()
    (specs / "steps.csv").symlink_to("a.csv")
    assert "has 12 samples" in run(["check", "specs/s.eff"], project, env).stdout
    (specs / "steps.csv").unlink()
    (specs / "steps.csv").symlink_to("b.csv")
    assert "has 5 samples" in run(["check", "specs/s.eff"], project, env).stdout


def _in_process(project: Path, tmp_path: Path, monkeypatch, capsys) -> tuple[str, list[str]]:
    """`effspec check specs/s.eff` in this process; (stdout, the files actually checked)."""
    from effspec.cli import check, main

    checked: list[str] = []
    real = check._check_one

    def counting(path, *a, **kw):
        checked.append(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(check, "_check_one", counting)
    assert main(["check", "specs/s.eff"]) in (0, 1)
    return capsys.readouterr().out, checked


@pytest.fixture
def in_process(project, tmp_path, monkeypatch):
    from effspec.cli import cache
    from effspec.front.config import project_settings

    monkeypatch.delenv("EFFSPEC_NO_CACHE", raising=False)
    monkeypatch.delenv("EFFSPEC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(project)
    for cached in (cache.secret, cache.catalog_digest, project_settings):
        cached.cache_clear()
    yield
    for cached in (cache.secret, cache.catalog_digest, project_settings):
        cached.cache_clear()


def test_a_version_change_is_a_miss(in_process, project, tmp_path, monkeypatch, capsys):
    from effspec.cli import cache

    first, checked = _in_process(project, tmp_path, monkeypatch, capsys)
    assert checked == ["specs/s.eff"] and "has 12 samples" in first
    again, checked = _in_process(project, tmp_path, monkeypatch, capsys)
    assert checked == [] and again == first
    monkeypatch.setattr(cache, "__version__", "99.0.0")
    upgraded, checked = _in_process(project, tmp_path, monkeypatch, capsys)
    assert checked == ["specs/s.eff"] and upgraded == first


def test_a_catalog_change_is_a_miss(in_process, project, tmp_path, monkeypatch, capsys):
    from effspec.cli import cache

    _in_process(project, tmp_path, monkeypatch, capsys)
    assert _in_process(project, tmp_path, monkeypatch, capsys)[1] == []
    edited = tmp_path / "peaks.json"
    data = json.loads(Path(cache.catalog_path()).read_text(encoding="utf-8"))
    data["accelerators"][0]["peaks"][0]["tflops"] += 1
    edited.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(cache, "catalog_path", lambda: str(edited))
    cache.catalog_digest.cache_clear()
    assert _in_process(project, tmp_path, monkeypatch, capsys)[1] == ["specs/s.eff"]


# ----------------------------------------------------------------------------
# Damage, planted entries and the folder


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "oversized", "not-json"])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(damage, project, tmp_path):
    from effspec.cli.cache import ENTRY_LIMIT

    env = _env(tmp_path)
    cold = run(["check", "specs/s.eff", "--format", "json"], project, env)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    data = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "oversized":
        with open(entry, "r+b") as fh:
            fh.truncate(ENTRY_LIMIT + 1)  # sparse: the size says it all
    else:
        _, meta, body = _split(entry)
        _sign(entry, secret(tmp_path), meta, body[:-1])  # no longer JSON, but MACed properly: only the parse refuses it
    again = run(["check", "specs/s.eff", "--format", "json"], project, env)
    assert again.stdout == cold.stdout
    assert entry.stat().st_size == len(data) and valid(entry, secret(tmp_path))  # rewritten whole


def _planted(entry: Path, key: bytes) -> None:
    """Rewrite an entry to say "no findings", MACed with ``key``."""
    _, meta, body = _split(entry)
    doc = json.loads(body)
    doc["payload"], doc["summary"] = "s.eff: no findings", []
    _sign(entry, key, meta, json.dumps(doc, separators=(",", ":")).encode())


def test_a_planted_entry_is_a_miss_and_the_real_findings_are_shown(project, tmp_path):
    # The vendor's own machine made this cache, with the vendor's secret, and edited it to say "no findings".
    vendor = _env(tmp_path, "vendor-xdg")
    run(["check", "specs/s.eff"], project, vendor)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    _planted(entry, secret(tmp_path, "vendor-xdg"))
    assert run(["check", "specs/s.eff"], project, vendor).stdout == "s.eff: no findings\n"  # (the vendor fooled only itself)
    reviewer = _env(tmp_path, "reviewer-xdg")
    shown = run(["check", "specs/s.eff", "--format", "text"], project, reviewer)
    assert "warning[EFF501]" in shown.stdout and "has 12 samples" in shown.stdout
    assert shown.stdout.rstrip().endswith("s.eff: 2 warnings, 1 info")
    assert valid(entry, secret(tmp_path, "reviewer-xdg"))  # the planted entry was replaced by a real one


def test_an_entry_with_a_forged_mac_is_a_miss(project, tmp_path):
    env = _env(tmp_path)
    run(["check", "specs/s.eff"], project, env)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    _planted(entry, b"\0" * 32)
    shown = run(["check", "specs/s.eff"], project, env)
    assert "warning[EFF501]" in shown.stdout and "no findings" not in shown.stdout


def test_an_edited_body_under_its_old_mac_is_a_miss(project, tmp_path):
    env = _env(tmp_path)
    run(["check", "specs/s.eff"], project, env)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    mac, meta, body = _split(entry)
    doc = json.loads(body)
    doc["payload"], doc["summary"] = "s.eff: no findings", []
    forged = json.dumps(doc, separators=(",", ":")).encode()
    header = json.dumps(meta, separators=(",", ":")).encode()
    entry.write_bytes(mac + b"\n" + header + b"\n" + forged)  # the body no longer matches its header's digest
    assert "warning[EFF501]" in run(["check", "specs/s.eff"], project, env).stdout
    meta = {**meta, "size": len(forged), "sha256": hashlib.sha256(forged).hexdigest()}
    header = json.dumps(meta, separators=(",", ":")).encode()
    entry.write_bytes(mac + b"\n" + header + b"\n" + forged)  # a header to match, under the old MAC
    assert "warning[EFF501]" in run(["check", "specs/s.eff"], project, env).stdout


def test_the_secret_is_private_and_lives_in_effspecs_own_cache_folder(project, tmp_path):
    run(["check", "specs/s.eff"], project, _env(tmp_path))
    key_file = tmp_path / "xdg" / "effspec" / "result-cache-key"
    assert key_file.stat().st_mode & 0o077 == 0
    assert len(secret(tmp_path)) == 32
    assert not list(project.rglob("result-cache-key"))


def test_a_cache_folder_that_is_a_symlink_is_not_used(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".effspec_cache").symlink_to(outside)
    shown = run(["check", "specs/s.eff"], project, _env(tmp_path))
    assert "warning[EFF501]" in shown.stdout
    assert list(outside.iterdir()) == []


def test_a_cache_folder_others_may_write_is_not_used(project, tmp_path):
    folder = project / ".effspec_cache"
    folder.mkdir()
    folder.chmod(0o777)
    shown = run(["check", "specs/s.eff"], project, _env(tmp_path))
    assert "warning[EFF501]" in shown.stdout
    assert list(folder.iterdir()) == []


def test_an_entry_that_is_a_symlink_is_not_read(project, tmp_path):
    env = _env(tmp_path)
    run(["check", "specs/s.eff"], project, env)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    target = tmp_path / "elsewhere.json"
    entry.rename(target)
    _planted(target, secret(tmp_path))  # valid MAC, but reached through a symlink
    entry.symlink_to(target)
    assert "warning[EFF501]" in run(["check", "specs/s.eff"], project, env).stdout
    assert not entry.is_symlink()  # replaced by a real entry


def test_the_cache_folder_is_tagged_and_ignored_by_git(project, tmp_path):
    run(["check", "specs/s.eff"], project, _env(tmp_path))
    folder = project / ".effspec_cache"
    assert (folder / "CACHEDIR.TAG").read_bytes().startswith(b"Signature: 8a477f597d28d172789f06886806bc55\n")
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


# ----------------------------------------------------------------------------
# Flags and environment, through the installed command


def test_no_cache_writes_nothing(project, tmp_path):
    run(["check", "specs/s.eff", "--no-cache"], project, _env(tmp_path))
    assert not (project / ".effspec_cache").exists()
    assert not (tmp_path / "xdg" / "effspec" / "result-cache-key").exists()


def test_isolated_implies_no_cache(project, tmp_path):
    run(["check", "specs/s.eff", "--isolated"], project, _env(tmp_path))
    assert not (project / ".effspec_cache").exists()
    helptext = run_effspec("check", "--help").stdout
    assert "implies --no-cache" in " ".join(helptext.split())


def test_effspec_no_cache_in_the_environment_writes_nothing(project, tmp_path):
    run(["check", "specs/s.eff"], project, _env(tmp_path, EFFSPEC_NO_CACHE="1"))
    assert not (project / ".effspec_cache").exists()


def test_cache_dir_flag_and_environment_are_honoured(project, tmp_path):
    by_env, by_flag = tmp_path / "env-cache", tmp_path / "flag-cache"
    env = _env(tmp_path, EFFSPEC_CACHE_DIR=str(by_env))
    run(["check", "specs/s.eff"], project, env)
    assert len(entries(by_env)) == 1 and (by_env / "CACHEDIR.TAG").exists()
    run(["check", "specs/s.eff", "--cache-dir", str(by_flag)], project, env)  # the flag wins over the environment
    assert len(entries(by_flag)) == 1
    assert len(entries(by_env)) == 1
    assert not (project / ".effspec_cache").exists()
    before = entries(by_flag)
    run(["check", "specs/s.eff", "--cache-dir", str(by_flag)], project, env)
    assert entries(by_flag) == before  # a hit


def test_the_cache_sits_beside_the_spec_outside_a_project(tmp_path):
    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / "s.eff").write_text(SPEC, encoding="utf-8")
    (folder / "steps.csv").write_text(_csv(ROWS), encoding="utf-8")
    run(["check", str(folder / "s.eff")], tmp_path, _env(tmp_path))
    assert len(entries(folder / ".effspec_cache")) == 1


def test_stdin_is_checked_not_cached(project, tmp_path):
    proc = effspec_process("check", "-", "--stdin-filename", "specs/s.eff", stdin=SPEC, cwd=project, env=_env(tmp_path))
    assert "has 12 samples" in proc.stdout
    assert not (project / ".effspec_cache").exists() or entries(project / ".effspec_cache") == {}


# ----------------------------------------------------------------------------
# Concurrency


def test_concurrent_runs_leave_every_entry_valid(tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)
    env = _env(tmp_path)
    reference = run(["check", "ex", "--no-cache", "--format", "json"], tmp_path, env).stdout
    for _round in range(2):  # the first round races to create the folder and every entry, the second to replace them
        procs = [subprocess.Popen([str(EFFSPEC), "check", "ex", "--format", "json", "-j", str(1 + i % 2)], cwd=tmp_path,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
        outs = [p.communicate(timeout=300) for p in procs]
        assert [p.returncode for p in procs] == [1] * 4, [err for _, err in outs]
        assert all(out == reference for out, _ in outs)
        if _round == 0:  # damage every other entry: the second round races to rewrite them
            for entry in sorted((folder / ".effspec_cache").glob("*.json"))[::2]:
                entry.write_bytes(b"")
    cache = folder / ".effspec_cache"
    names = sorted(p.name for p in cache.iterdir())
    assert not [n for n in names if n.startswith(".tmp-")]
    assert all(valid(p, secret(tmp_path)) for p in cache.glob("*.json"))
    assert len(list(cache.glob("*.json"))) == len(list(folder.glob("*.eff")))
    before = entries(cache)
    assert run(["check", "ex", "--format", "json"], tmp_path, env).stdout == reference
    assert entries(cache) == before


# ----------------------------------------------------------------------------
# Weight


PROBE = """
import json, sys
from effspec.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
loaded = sorted({m for m in sys.modules if m.split('.')[0] in ('lark', 'pint', 'numpy')
                 or m.startswith(('effspec.engine', 'effspec.rules', 'effspec.front.syntax', 'effspec.front.units',
                                  'effspec.front.build'))})
sys.stderr.write('\\nLOADED=' + json.dumps(loaded) + '\\n')
sys.exit(status)
"""


@pytest.mark.parametrize("fmt", check_formats())
def test_a_warm_check_loads_neither_the_parser_the_units_nor_the_engine(fmt, tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)
    env = _env(tmp_path)
    loaded = []
    for _attempt in ("cold", "warm"):
        proc = subprocess.run([sys.executable, "-c", PROBE, "check", "ex", "--format", fmt], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stderr
        loaded.append(json.loads(proc.stderr.rsplit("LOADED=", 1)[1]))
    assert any(m.startswith("effspec.engine") for m in loaded[0])  # the cold run did the work
    assert loaded[1] == []  # (SARIF's rule table too comes from the cache, with the version in its key)


def test_a_planted_entry_costs_one_small_read(in_process, project, tmp_path, monkeypatch, capsys):
    """The MAC covers a one-line header; an entry whose header does not verify is never read further,
    however large it is (a planted 60 MiB entry, sparse here)."""
    from effspec.cli import cache

    _in_process(project, tmp_path, monkeypatch, capsys)
    (entry,) = (project / ".effspec_cache").glob("*.json")
    with open(entry, "r+b") as fh:
        fh.write(b"0" * 64)  # a MAC of the right shape, not of this header
        fh.truncate(60 * 1024 * 1024)
    bodies: list[int] = []
    real = cache._read_until
    monkeypatch.setattr(cache, "_read_until", lambda fd, size: bodies.append(size) or real(fd, size))
    out, checked = _in_process(project, tmp_path, monkeypatch, capsys)
    assert checked == ["specs/s.eff"] and "warning[EFF501]" in out
    assert bodies == []
    assert _in_process(project, tmp_path, monkeypatch, capsys)[1] == []  # rewritten, then a hit...
    assert len(bodies) == 1  # ...whose body was read once


def test_a_chosen_cache_folder_that_cannot_be_used_is_named_with_the_reason(project, tmp_path):
    # a file where the folder should be, then a folder others can write to: a note each, the check
    # itself as without a cache, and nothing written there
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    proc = run(["check", "specs/s.eff", "--cache-dir", str(blocker)], project, _env(tmp_path))
    assert "has 12 samples" in proc.stdout  # checked all the same
    assert (f"effspec: note: the cache folder {blocker} is not used: it cannot be opened as a folder"
            in proc.stderr) and "checking without the cache" in proc.stderr
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    proc = run(["check", "specs/s.eff"], project, _env(tmp_path, EFFSPEC_CACHE_DIR=str(shared)))
    assert "is not used: it is not owned by you, or others can write to it" in proc.stderr
    assert entries(shared) == {}
    # the project's default folder is not the user's choice: no note for it
    proc = run(["check", "specs/s.eff"], project, _env(tmp_path))
    assert "cache folder" not in proc.stderr and len(entries(project / ".effspec_cache")) == 1
