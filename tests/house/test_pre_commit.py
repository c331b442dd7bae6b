"""The pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit itself.

The test commits a snapshot of this checkout (its tracked and untracked,
not ignored files: the code under test, uncommitted changes included) to a
local git repository, points a project's `.pre-commit-config.yaml` at it, and
runs `pre-commit` there.  pre-commit clones the hooks' repository (a local
path: no network) and installs effspec into a virtualenv of its own with pip,
which needs effspec's dependencies from a package index (or pip's
find-links).  When none is reachable the test is skipped, saying so; every
other failure fails it.  The dependencies come as wheels built once
(conftest's dependency_wheelhouse, keyed by pyproject.toml; kept between runs
under $EFFSPEC_TEST_WHEELHOUSE): the install takes about 20 s from them, a
minute from the index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = os.path.join(os.path.dirname(sys.executable), "pre-commit")

MESSY = 'eff 1\nrun r { timing { step_time = [1.0,2.0] s  warmup=0 step }  title="t" }\n'
TIDY = 'eff 1\n\nrun r {\n  title = "t"\n  timing {\n    step_time = [1.0, 2.0] s\n    warmup    = 0 step\n  }\n}\n'
# pip's words for "no index reachable" (DNS, refused connection, proxy, no such package offline)
_OFFLINE = re.compile(r"NewConnectionError|Temporary failure in name resolution|Name or service not known|"
                      r"Network is unreachable|ProxyError|Could not find a version that satisfies|"
                      r"No matching distribution found|Failed to establish a new connection")


def test_hooks_file_declares_both_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"effspec-check", "effspec-fmt"}
    assert hooks["effspec-check"]["entry"] == "effspec check"
    assert hooks["effspec-fmt"]["entry"] == "effspec fmt"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["files"] == r"\.eff$"
        assert re.search(hook["files"], "specs/run.eff") and not re.search(hook["files"], "run.eff.txt")


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _snapshot(dest: Path) -> str:
    """This checkout as one commit in a new repository at ``dest``; its hash."""
    listed = subprocess.run(["git", "ls-files", "-c", "-o", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "snapshot", cwd=dest)
    return _git("rev-parse", "HEAD", cwd=dest).strip()


def _pre_commit(*args: str, cwd: Path, home: Path, wheels: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    if wheels is not None:  # effspec's dependencies from the session's wheelhouse (conftest), not the index
        env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    return subprocess.run([PRE_COMMIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def test_pre_commit_runs_effspec_check_and_effspec_fmt(tmp_path, dependency_wheelhouse):
    if not os.access(PRE_COMMIT, os.X_OK):
        pytest.skip("pre-commit is not installed (it is in the test extras: pip install -e '.[test]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hooks_repo, project, home = tmp_path / "hooks", tmp_path / "project", tmp_path / "home"
    hooks_repo.mkdir()
    project.mkdir()
    rev = _snapshot(hooks_repo)
    _git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks_repo}\n  rev: {rev}\n  hooks:\n  - id: effspec-check\n  - id: effspec-fmt\n",
        encoding="utf-8")
    (project / "tidy.eff").write_text(TIDY, encoding="utf-8")
    (project / "messy.eff").write_text(MESSY, encoding="utf-8")
    (project / "notes.txt").write_text("eff { not a spec", encoding="utf-8")
    _git("add", "-A", cwd=project)

    install = _pre_commit("install-hooks", cwd=project, home=home, wheels=dependency_wheelhouse)
    if install.returncode != 0 and _OFFLINE.search(install.stdout + install.stderr + _log(home)):
        pytest.skip("pre-commit could not install effspec's dependencies into its hook environment: "
                    "no package index is reachable (the hooks need pip to install lark, pint, ...)")
    assert install.returncode == 0, install.stdout + install.stderr + _log(home)

    # fmt rewrites the messy spec: the hook fails, as pre-commit hooks that change files do
    first = _pre_commit("run", "--all-files", cwd=project, home=home)
    assert first.returncode == 1, first.stdout
    assert re.search(r"^effspec check\.+Passed$", first.stdout, re.M), first.stdout
    assert re.search(r"^effspec fmt\.+Failed$", first.stdout, re.M), first.stdout
    assert "files were modified by this hook" in first.stdout
    assert "reformatted messy.eff" in first.stdout
    assert (project / "messy.eff").read_text(encoding="utf-8") == TIDY
    assert (project / "notes.txt").read_text(encoding="utf-8") == "eff { not a spec"  # not an .eff file

    _git("add", "-A", cwd=project)
    second = _pre_commit("run", "--all-files", cwd=project, home=home)
    assert second.returncode == 0, second.stdout
    assert re.search(r"^effspec fmt\.+Passed$", second.stdout, re.M), second.stdout

    # a spec with an error fails the check hook, with the file:line:column of the error
    (project / "bad.eff").write_text('eff 1\n\nrun r {\n  hardware { count = -8 device }\n}\n', encoding="utf-8")
    _git("add", "-A", cwd=project)
    third = _pre_commit("run", "--files", "bad.eff", cwd=project, home=home)
    assert third.returncode == 1, third.stdout
    assert re.search(r"^effspec check\.+Failed$", third.stdout, re.M), third.stdout
    assert re.search(r"error\[EFF0\d\d\]: .*\n\s*--> bad\.eff:4:\d+", third.stdout), third.stdout

    # a file that is not .eff is never given to the hooks
    fourth = _pre_commit("run", "--files", "notes.txt", cwd=project, home=home)
    assert fourth.returncode == 0, fourth.stdout
    assert re.search(r"^effspec check\.+\(no files to check\)Skipped$", fourth.stdout, re.M), fourth.stdout


def _log(home: Path) -> str:
    log = home / "pre-commit.log"
    return log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
