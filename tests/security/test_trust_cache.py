"""Issue 26, the result cache and the reading of a check's files: what a check reads is what it
checks, and a warm `check` says what a cold one would say now.

3.  Read once, hash what was read: the spec, each CSV and per-rank table are
    opened and read once per check, the cache key is the digest of those
    bytes, and the evaluation uses them.  A file rewritten right after a read
    never gets an entry that pairs one content's key with another's verdict.
7.  A warm check repeats no message that changed: a refused symlink now
    pointing elsewhere, a changed hard-link count, a new neighbouring file.
15. The cache secret is used only when it is ours and 0600; otherwise it is
    replaced, and stderr says so.
16. `--isolated`: a named spec that is a symlink leading out of its folder is
    an EFF020 error naming the link and its target; nothing of it is read.
14. A spec that is not UTF-8 is an EFF001 error at its first bad byte, in every
    format of `check` and in `report`'s output.

The checks run in this process (`effspec.cli.main`) with their own
XDG_CACHE_HOME and the cache on (tests/conftest.py turns it off elsewhere).
The expected findings come from the files written here: `seq_len = 2O48`
(a letter O) is a syntax error, a row `x.0` is EFF003, 12 rows are "12 samples".
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import effspec
from effspec.cli import cache, check, main
from effspec.front.config import project_settings

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file semantics")

SPEC = """eff 1

run r {
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  timing {
    boundary  = "optimizer step end, after cuda synchronize"
    step_time = file "steps.csv" column "step_seconds"
  }
}
"""
BAD_SPEC = SPEC.replace("seq_len = 2048", "seq_len = 2O48")  # the same size: a rewrite in place
ROWS = ["4.0", "4.1", "4.0", "3.9", "4.0", "4.1", "4.0", "3.9", "4.0", "4.0", "4.1", "4.0"]  # 12 samples
CSV = "step_seconds\n" + "".join(r + "\n" for r in ROWS)
BAD_CSV = CSV.replace("3.9", "x.0", 1)  # row 5 (line 5) is not a number; the same size
SECRET = "SECRET-26c41e"  # in every file that must never be read


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project (its root holds .git) with specs/s.eff reading specs/steps.csv, checked from its root."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    (root / "specs" / "s.eff").write_text(SPEC, encoding="utf-8")
    (root / "specs" / "steps.csv").write_text(CSV, encoding="utf-8")
    monkeypatch.delenv("EFFSPEC_NO_CACHE", raising=False)
    monkeypatch.delenv("EFFSPEC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    for cached in (cache.secret, cache.catalog_digest, project_settings):
        cached.cache_clear()
    yield root
    for cached in (cache.secret, cache.catalog_digest, project_settings):
        cached.cache_clear()


def effspec_check(capsys, *args: str) -> tuple[int, str, str]:
    """`effspec check ARGS` in this process: (status, stdout, stderr)."""
    status = main(["check", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def checked_files(monkeypatch) -> list[str]:
    """The specs the next checks really check (not taken from the cache), as they are named."""
    seen: list[str] = []
    real = check._check_one

    def counting(path, *a, **kw):
        seen.append(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(check, "_check_one", counting)
    return seen


def warm_says_what_no_cache_says(capsys, *args: str) -> str:
    """The cached check's output, asserted equal to that of a check without the cache."""
    warm = effspec_check(capsys, *args)
    fresh = effspec_check(capsys, "--no-cache", *args)
    assert warm == fresh
    return warm[1]


# ----------------------------------------------------------------------------
# 3. Read once, hash what was read


def _rewrite_after_reads(monkeypatch, target: Path, other: str, after: int) -> list[int]:
    """Rewrite ``target`` in place (same inode, same size) with ``other`` right after the
    ``after``-th read that returns bytes of it, whoever reads (os.read and os.pread are watched).
    Returns the list the count is kept in."""
    ino = target.stat().st_ino
    count = [0]
    real_read, real_pread = os.read, os.pread

    def watch(fd: int, data: bytes) -> bytes:
        if data and os.fstat(fd).st_ino == ino:
            count[0] += 1
            if count[0] == after:
                with open(target, "r+b") as fh:
                    fh.write(other.encode("utf-8"))
        return data

    monkeypatch.setattr(os, "read", lambda fd, n: watch(fd, real_read(fd, n)))
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: watch(fd, real_pread(fd, n, offset)))
    return count


@pytest.mark.parametrize("after", [1, 2, 3])
@pytest.mark.parametrize("which", ["spec", "csv"])
def test_a_rewrite_right_after_a_read_never_stores_another_contents_verdict(project, monkeypatch, capsys, which, after):
    """The spec (or its CSV) is rewritten right after the first, second or third read of it
    during a cold check.  Whatever was stored, every later warm check says what a check
    without the cache says, for either content.  Before: the spec's (or the CSV's) digest was
    taken by one read and the check used another, and after the second read the entry paired
    the good content's digest with the bad content's verdict."""
    target = project / "specs" / ("s.eff" if which == "spec" else "steps.csv")
    good, bad = (SPEC, BAD_SPEC) if which == "spec" else (CSV, BAD_CSV)
    assert len(good.encode()) == len(bad.encode())
    with monkeypatch.context() as m:
        _rewrite_after_reads(m, target, bad, after)
        effspec_check(capsys, "specs/s.eff")  # cold: stores whatever it decided
    for content in (good, bad, good):
        target.write_text(content, encoding="utf-8")
        out = warm_says_what_no_cache_says(capsys, "specs/s.eff")
        if content == bad:
            assert "error[EFF001]" in out if which == "spec" else "`x.0` is not a number" in out
        else:
            assert "has 12 samples" in out and "error[" not in out


def test_the_verdict_is_of_the_bytes_read_and_stored_under_their_digest(project, monkeypatch, capsys):
    """The spec is rewritten (bad) right after its one read: the cold check says what the
    good bytes say, and its entry is a hit for the good content only."""
    spec = project / "specs" / "s.eff"
    with monkeypatch.context() as m:
        count = _rewrite_after_reads(m, spec, BAD_SPEC, 1)
        status, cold, _ = effspec_check(capsys, "specs/s.eff")
    assert count[0] == 1  # read once: the rewrite came after the only read
    assert "has 12 samples" in cold and "EFF001" not in cold  # the bytes that were read
    assert spec.read_text(encoding="utf-8") == BAD_SPEC
    seen = checked_files(monkeypatch)
    spec.write_text(SPEC, encoding="utf-8")
    assert effspec_check(capsys, "specs/s.eff") == (status, cold, "") and seen == []  # the good bytes' entry: a hit
    spec.write_text(BAD_SPEC, encoding="utf-8")
    assert "error[EFF001]" in effspec_check(capsys, "specs/s.eff")[1] and seen == ["specs/s.eff"]  # a miss


def _count_access(monkeypatch, names: set[str]) -> dict[str, list[int]]:
    """{name: [opens, reads that returned bytes]} for the files of these names, from now on."""
    counts = {n: [0, 0] for n in names}
    fds: dict[int, str] = {}
    real_open, real_read, real_pread = os.open, os.read, os.pread

    def counting_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        name = os.path.basename(os.fsdecode(path))
        if name in counts:
            counts[name][0] += 1
            fds[fd] = name
        else:
            fds.pop(fd, None)
        return fd

    def seen(fd: int, data: bytes) -> bytes:
        if data and fd in fds:
            counts[fds[fd]][1] += 1
        return data

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "read", lambda fd, n: seen(fd, real_read(fd, n)))
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: seen(fd, real_pread(fd, n, offset)))
    return counts


TWO_RUNS = """eff 1

run a {
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  timing { step_time = file "steps.csv" column "step_seconds" }
}

run b {
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  timing { step_time = file "./steps.csv" column "step_seconds" }
  ranks { samples = file "ranks.csv" }
}
"""
RANKS = "rank,node,step,compute,comm,stall\n0,n0,0,0.9,0.05,0.05\n1,n0,0,0.9,0.05,0.05\n"


@pytest.mark.parametrize("how", ["cold", "warm", "no cache", "report", "check_text"])
def test_each_file_a_check_uses_is_opened_and_read_once(project, monkeypatch, capsys, tmp_path, how):
    """Two runs read steps.csv (spelled two ways) and one reads ranks.csv: each file is opened
    once and read once per check, with the cache (cold or warm), without it, by `report` and by
    check_text.  Before: the CSV was opened once to resolve it and once to read it, and a cold
    cached check read the spec twice."""
    (project / "specs" / "s.eff").write_text(TWO_RUNS, encoding="utf-8")
    (project / "specs" / "ranks.csv").write_text(RANKS, encoding="utf-8")
    if how == "warm":
        effspec_check(capsys, "specs/s.eff")
    with monkeypatch.context() as m:
        counts = _count_access(m, {"s.eff", "steps.csv", "ranks.csv"})
        if how == "report":
            assert main(["report", "specs/s.eff", "-o", str(tmp_path / "out.json")]) in (0, 1)
        elif how == "check_text":
            result = effspec.check_text(TWO_RUNS, "s.eff", str(project / "specs"))
            counts["s.eff"] = [1, 1]  # the text is given
        else:
            effspec_check(capsys, *(["--no-cache"] if how == "no cache" else []), "specs/s.eff")
    capsys.readouterr()
    assert counts == {"s.eff": [1, 1], "steps.csv": [1, 1], "ranks.csv": [1, 1]}
    if how == "check_text":
        runs = result.spec.runs  # type: ignore[attr-defined]
        assert [r.block("timing").value("step_time").values for r in runs] == [tuple(map(float, ROWS))] * 2
        assert result.evaluation.runs["b"].diagnosis is not None  # type: ignore[attr-defined]


def test_two_references_to_one_file_see_one_version(project, monkeypatch, capsys):
    """steps.csv is rewritten right after the check read it for run a: run b (another spelling
    of the same file) gets the same bytes, not the new version."""
    (project / "specs" / "s.eff").write_text(TWO_RUNS.replace('  ranks { samples = file "ranks.csv" }\n', ""),
                                             encoding="utf-8")
    with monkeypatch.context() as m:
        _rewrite_after_reads(m, project / "specs" / "steps.csv", BAD_CSV, 1)
        result = effspec.load(project / "specs" / "s.eff")
    assert [d.code for d in result.diagnostics if d.code == "EFF003"] == []
    assert [r.block("timing").value("step_time").values for r in result.spec.runs] == [tuple(map(float, ROWS))] * 2


# ----------------------------------------------------------------------------
# 7. A warm check repeats no message that changed


def test_a_refused_symlink_pointed_elsewhere_is_a_miss(project, monkeypatch, capsys):
    outside = project / "outside"
    outside.mkdir()
    (outside / "a.csv").write_text(CSV, encoding="utf-8")
    (outside / "b.csv").write_text(CSV, encoding="utf-8")  # the same content: only the message differs
    link = project / "specs" / "steps.csv"
    link.unlink()
    link.symlink_to("../outside/a.csv")
    first = warm_says_what_no_cache_says(capsys, "specs/s.eff")
    assert "through the symlink `steps.csv` → `../outside/a.csv`" in first
    link.unlink()
    link.symlink_to("../outside/b.csv")
    second = warm_says_what_no_cache_says(capsys, "specs/s.eff")
    assert "through the symlink `steps.csv` → `../outside/b.csv`" in second and "a.csv" not in second


def test_a_changed_hard_link_count_is_a_miss(project, monkeypatch, capsys, tmp_path):
    csv = project / "specs" / "steps.csv"
    os.link(csv, tmp_path / "second-name.csv")
    assert "is a hard link (one file with 2 names)" in warm_says_what_no_cache_says(capsys, "specs/s.eff")
    os.link(csv, tmp_path / "third-name.csv")
    assert "is a hard link (one file with 3 names)" in warm_says_what_no_cache_says(capsys, "specs/s.eff")


def test_a_new_neighbouring_file_is_a_miss(project, monkeypatch, capsys):
    spec = project / "specs" / "s.eff"
    spec.write_text(SPEC.replace('file "steps.csv"', 'file "times.csv"'), encoding="utf-8")
    first = warm_says_what_no_cache_says(capsys, "specs/s.eff")
    assert "file `times.csv` not found" in first and "did you mean `steps.csv`?" in first
    (project / "specs" / "timse.csv").write_text("", encoding="utf-8")  # a closer name beside it
    second = warm_says_what_no_cache_says(capsys, "specs/s.eff")
    assert "did you mean `timse.csv`?" in second and "did you mean `steps.csv`?" not in second


# ----------------------------------------------------------------------------
# 15. The cache secret is used only when it is ours and private


def _key_file(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "effspec" / "result-cache-key"


@pytest.mark.parametrize("problem", ["readable by others", "another user's"])
def test_a_secret_others_may_read_or_another_users_is_replaced_and_said(project, monkeypatch, capsys, tmp_path, problem):
    status, cold, err = effspec_check(capsys, "specs/s.eff")
    key = _key_file(tmp_path)
    assert err == "" and stat.S_IMODE(key.stat().st_mode) == 0o600
    old = key.read_bytes()
    if problem == "readable by others":
        key.chmod(0o644)
        why = "its mode is 0644, so others may read it (it must be 0600)"
    else:
        if os.getuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(key, 4242, -1)
        why = "it belongs to another user (uid 4242)"
    cache.secret.cache_clear()
    seen = checked_files(monkeypatch)
    assert effspec_check(capsys, "specs/s.eff") == (status, cold, (
        f"effspec: note: the result cache's secret {key} is not used: {why}; a new one replaces it "
        "(results cached with the old one are checked again)\n"))
    assert seen == ["specs/s.eff"]  # the entry made with the old secret was not trusted
    st = key.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert key.read_bytes() != old and len(key.read_bytes()) == 64
    cache.secret.cache_clear()
    assert effspec_check(capsys, "specs/s.eff") == (status, cold, "") and seen == ["specs/s.eff"]  # a hit, no note


# ----------------------------------------------------------------------------
# 16. --isolated reads no named spec through a symlink out of its folder


@pytest.fixture
def vendor(tmp_path: Path, monkeypatch) -> Path:
    """vendor/ holds one honest spec and x.eff, a symlink to a secret outside; y.eff is a symlink to x.eff."""
    (tmp_path / "vendor").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.eff").write_text(f"{SECRET} first line\n", encoding="utf-8")
    (tmp_path / "vendor" / "x.eff").symlink_to("../outside/secret.eff")
    (tmp_path / "vendor" / "y.eff").symlink_to("x.eff")
    (tmp_path / "vendor" / "honest.eff").write_text(SPEC.replace(' file "steps.csv" column "step_seconds"', " [4.0, 4.1] s"),
                                                    encoding="utf-8")
    (tmp_path / "vendor" / "inside.eff").symlink_to("honest.eff")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


X_REFUSED = "vendor/x.eff is a symlink to ../outside/secret.eff, which leads outside its folder vendor; not read"
Y_REFUSED = ("vendor/y.eff is reached through the symlink vendor/x.eff → ../outside/secret.eff, which leads "
             "outside its folder vendor; not read")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_isolated_refuses_a_named_symlink_out_of_its_folder_with_a_coded_error(vendor, capsys, fmt):
    status, out, err = effspec_check(capsys, "--isolated", "--format", fmt, "vendor/honest.eff", "vendor/inside.eff",
                                     "vendor/x.eff", "vendor/y.eff")
    assert status == 1 and err == ""
    assert SECRET not in out and "first line" not in out
    if fmt == "text":
        assert f"error[EFF020]: {X_REFUSED}\n --> vendor/x.eff\n" in out
        assert f"error[EFF020]: {Y_REFUSED}\n --> vendor/y.eff\n" in out
        assert "vendor/inside.eff: 3 warnings, 1 info" in out  # a symlink that stays inside is followed, as honest.eff
    elif fmt == "json":
        files = {f["file"]: [(d["code"], d["message"]) for d in f["diagnostics"]] for f in json.loads(out)}
        assert files["vendor/x.eff"] == [("EFF020", X_REFUSED)] and files["vendor/y.eff"] == [("EFF020", Y_REFUSED)]
        assert files["vendor/inside.eff"] == files["vendor/honest.eff"] != []
    else:
        results = json.loads(out)["runs"][0]["results"]
        refused = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                    r["message"]["text"].split(" Help: ")[0]) for r in results if r["ruleId"] == "EFF020"]
        assert refused == [("EFF020", "error", "./vendor/x.eff", X_REFUSED), ("EFF020", "error", "./vendor/y.eff", Y_REFUSED)]


def test_isolated_report_refuses_it_too_and_writes_nothing(vendor, capsys):
    assert main(["report", "--isolated", "vendor/x.eff", "-o", "out.json"]) == 1
    err = capsys.readouterr().err
    assert f"error[EFF020]: {X_REFUSED}" in err and SECRET not in err
    assert not (vendor / "out.json").exists()


def test_isolated_fix_neither_shows_nor_rewrites_the_target_of_a_named_symlink_out_of_its_folder(vendor, capsys):
    """`check --isolated --fix` read the target and `--diff` printed its lines; `--fix` rewrote it."""
    target = vendor / "outside" / "secret.eff"
    target.write_text(f"eff 1\n# {SECRET}\nrun a {{ hardware {{ peak = 10 TFLOPS }} }}\n", encoding="utf-8")  # a safe fix
    before = target.read_bytes()
    assert main(["check", "--isolated", "--fix", "--diff", "vendor/x.eff"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"effspec: vendor/x.eff: {X_REFUSED.removeprefix('vendor/x.eff ')}\n"
    status, text, err = effspec_check(capsys, "--isolated", "--fix", "vendor/x.eff")
    assert status == 1 and f"error[EFF020]: {X_REFUSED}" in text and SECRET not in text + err
    assert target.read_bytes() == before


def test_without_isolated_a_named_symlink_is_still_followed(vendor, capsys):
    """The user's own choice outside audit mode: the target is read (it is not a spec: EFF001)."""
    status, out, _ = effspec_check(capsys, "--no-cache", "vendor/x.eff")
    assert status == 1 and "error[EFF001]" in out and "EFF020" not in out


# ----------------------------------------------------------------------------
# 14. A spec that is not UTF-8 is a coded error in every output

NOT_UTF8 = b"eff 1\nrun a { # caf\xe9\n}\n"  # 0xe9 is Latin-1's é: line 2, column 14
AT = ("EFF001", "not UTF-8 text: byte 0xe9 at line 2, column 14")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_spec_that_is_not_utf8_is_an_eff001_error_in_every_format(project, capsys, fmt):
    (project / "specs" / "bad.eff").write_bytes(NOT_UTF8)
    cold = effspec_check(capsys, "--format", fmt, "specs/bad.eff", "specs/s.eff")
    assert cold == effspec_check(capsys, "--format", fmt, "specs/bad.eff", "specs/s.eff")  # warm: the same
    status, out, err = cold
    assert status == 1 and err == ""
    if fmt == "text":
        assert f"error[{AT[0]}]: {AT[1]}\n --> specs/bad.eff:2:14\n" in out
        assert "specs/bad.eff: 1 error" in out and "specs/s.eff: " in out
    elif fmt == "json":
        doc = json.loads(out)
        assert [f["file"] for f in doc] == ["specs/bad.eff", "specs/s.eff"]
        assert [(d["code"], d["message"], d["line"], d["column"]) for d in doc[0]["diagnostics"]] == [(*AT, 2, 14)]
    else:
        results = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "EFF001"]
        assert len(results) == 1
        where = results[0]["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uri"] == "./specs/bad.eff"
        assert (where["region"]["startLine"], where["region"]["startColumn"]) == (2, 14)
        assert results[0]["message"]["text"].startswith(AT[1])


def test_a_spec_that_is_not_utf8_is_named_with_its_position_by_report(project, capsys, tmp_path):
    (project / "specs" / "bad.eff").write_bytes(NOT_UTF8)
    assert main(["report", "specs/bad.eff", "-o", str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert f"error[{AT[0]}]: {AT[1]}\n --> specs/bad.eff:2:14\n" in err
    assert "specs/bad.eff does not compile (the EFF0xx errors above)" in err
    assert not (tmp_path / "out.json").exists()


def test_load_gives_the_eff001_result_rather_than_raising(project):
    (project / "specs" / "bad.eff").write_bytes(NOT_UTF8)
    result = effspec.load(project / "specs" / "bad.eff")  # raised UnicodeDecodeError before
    assert [(d.code, d.message, d.span.line, d.span.column) for d in result.diagnostics] == [(*AT, 2, 14)]
    assert result.source is not None and result.source.splitlines()[1] == "run a { # caf\ufffd"


@pytest.mark.parametrize("fmt", ["text", "sarif"])
def test_stdin_that_is_not_utf8_is_the_same_eff001_error(project, capsys, monkeypatch, fmt):
    """`check -` said it on stderr only (exit 2); now it is in the output, as a file's is."""
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(NOT_UTF8)))
    status, out, err = effspec_check(capsys, "-", "--stdin-filename", "specs/piped.eff", "--format", fmt)
    assert status == 1 and err == ""
    if fmt == "text":
        assert f"error[{AT[0]}]: {AT[1]}\n --> specs/piped.eff:2:14\n" in out
    else:
        [result] = json.loads(out)["runs"][0]["results"]
        assert (result["ruleId"], result["message"]["text"].split(" Help: ")[0]) == AT
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
