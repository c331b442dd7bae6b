"""CONTRIBUTING.md's recipes as data, and a copy of the tree with one of them followed word for word.

Shared by tests/house/test_recipes.py (each recipe on a copy, the tests it names run there) and
scripts/recipe_proof.py (the rule recipe on a copy, the whole suite run there).  The recipe texts are
read from CONTRIBUTING.md itself, so the document and what is proved cannot drift apart.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def recipe_section(title: str) -> str:
    """The text under the heading ``## title``, up to the next heading of that level."""
    return CONTRIBUTING.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def recipe_block(title: str, language: str) -> str:
    """The first fenced block of ``language`` under the heading ``title``."""
    match = re.search(rf"^(`{{3,}}){language}\n(.*?)\n\1\n", recipe_section(title), re.S | re.M)
    if match is None:
        raise LookupError(f"CONTRIBUTING.md: no ```{language} block under '## {title}'")
    return match.group(2) + "\n"


def recipe_files(title: str) -> dict[str, str]:
    """Each file the recipe under ``title`` gives whole: a fenced block right after a line that ends in
    `` `path`: ``, by path."""
    blocks = re.finditer(r"`([\w./-]+)`:\n\n(`{3,})\w+\n(.*?)\n\2\n", recipe_section(title), re.S)
    return {m.group(1): m.group(3) + "\n" for m in blocks}


def recipe_commands(title: str) -> list[str]:
    """The lines of the recipe's ```sh block (none without one): the commands it says to run, as written."""
    if "```sh\n" not in recipe_section(title):
        return []
    return [line for line in recipe_block(title, "sh").splitlines() if line.strip()]


def tree_copy(dest: Path) -> Path:
    """A copy of this tree's files (git's tracked and untracked-but-not-ignored files, else all but the
    build outputs), with `.venv` standing for the interpreter running the tests."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if listed.returncode == 0 and listed.stdout:
        for name in listed.stdout.decode().split("\0"):
            if name and (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:  # an unpacked sdist: no git
        shutil.copytree(ROOT, dest, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".venv", ".git", "out", "build", "*.egg-info", "__pycache__", "*.pyc"))
    (dest / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return dest


def followed_word_for_word(title: str, work: Path, files: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A copy of the tree in ``work`` with the recipe's new ``files`` added as given and its ```sh commands
    run as written (the copy's package first on the path, laid out as the wheel lays it out, made of links
    into the copy so what the commands write lands there); the copy and the environment to run its tests in."""
    repo = tree_copy(work / "repo")
    for name, text in files.items():
        if (repo / name).exists():
            raise FileExistsError(f"{name}: the recipe adds files; it edits none")
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    site = work / "site"
    (site / "effspec").mkdir(parents=True)
    for entry in (repo / "compiler").iterdir():
        (site / "effspec" / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for data in ("grammar", "templates", "spec"):
        (site / "effspec" / data).symlink_to(repo / data, target_is_directory=True)
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONHASHSEED", None)
    for command in recipe_commands(title):
        done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{command}: {done.stderr}")
    return repo, env


def applied(title: str) -> bool:
    """Whether every file the recipe adds is already in this tree (a copy scripts/recipe_proof.py made)."""
    files = recipe_files(title)
    return bool(files) and all((ROOT / name).is_file() for name in files)
