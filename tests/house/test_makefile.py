"""The set-up never traps: the Makefile checks the Python version before it makes
anything, and a .venv made by another Python is rebuilt rather than reused.

These run make on a copy of the Makefile in a temporary folder (`make -n`
prints the plan without running it; the version checks happen while make reads
the Makefile), so nothing is installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _old_python() -> str | None:
    """A Python 3.10 that really runs (a pyenv shim may exist for a version that is not selected)."""
    candidates = [shutil.which("python3.10"), *map(str, Path.home().glob(".pyenv/versions/3.10*/bin/python3.10"))]
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                                  text=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == "(3, 10)":
            return candidate
    return None


OLD_PYTHON = _old_python()

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=folder, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "x.eff").write_text("eff 1\n", encoding="utf-8")
    return tmp_path


@pytest.mark.skipif(OLD_PYTHON is None, reason="python3.10 is not installed")
def test_an_old_python_is_refused_by_name_before_anything_is_made(project: Path) -> None:
    done = make(project, f"PYTHON={OLD_PYTHON}", "demo")
    assert done.returncode == 2
    assert "effspec needs Python >= 3.11" in done.stderr
    assert "Python 3.10" in done.stderr and "make PYTHON=python3.11 demo" in done.stderr
    assert not (project / ".venv").exists()


@pytest.mark.skipif(OLD_PYTHON is None, reason="python3.10 is not installed")
def test_a_venv_made_by_another_python_is_rebuilt(project: Path) -> None:
    subprocess.run([OLD_PYTHON, "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=60)
    done = make(project, f"PYTHON={sys.executable}", "-n", "demo")
    assert f"note: .venv was made by Python 3.10, not {sys.executable} ({sys.version_info[0]}.{sys.version_info[1]}); " \
           "rebuilding it" in done.stdout
    assert not (project / ".venv").exists()
    assert f"{sys.executable} -m venv .venv" in done.stdout  # the plan makes a new one with the right Python


def test_a_missing_python_is_named_and_an_existing_venv_kept(project: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=60)
    done = make(project, "PYTHON=/nonexistent/python3", "demo")
    assert done.returncode == 2
    assert "/nonexistent/python3 is not found" in done.stderr
    assert (project / ".venv" / "bin" / "python").exists()  # a typo in PYTHON never deletes a working venv


def test_a_venv_of_the_same_python_is_kept(project: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=60)
    done = make(project, f"PYTHON={sys.executable}", "-n", "demo")
    assert "rebuilding" not in done.stdout
    assert (project / ".venv" / "bin" / "python").exists()


def test_make_test_names_missing_system_tools_and_installs_nothing(project: Path) -> None:
    done = make(project, "PATH=/usr/bin:/bin", "-n", "test")
    assert "apt-get" not in done.stdout
