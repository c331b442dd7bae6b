"""The rule recipe of CONTRIBUTING.md followed word for word on a copy of the tree, then the whole suite run there.

    .venv/bin/python scripts/recipe_proof.py            # or: make recipe-proof
    .venv/bin/python scripts/recipe_proof.py --keep DIR # make the copy in DIR (new or empty) and leave it

The copy gets the recipe's rule file and fixtures as given, and its commands run as written
(tests/recipes.py, as tests/house/test_recipes.py does), with the copy's package first on the
path; it is a git work tree with nothing committed, as a checkout with the recipe's files not yet
added is. Then `pytest` runs every test of the copy's suite, as `make test` does; the tests that
add the recipe's rule to a copy of their own, or show a copy without it, skip there, saying why.
The exit status is pytest's. It takes as long as `make test`: run it when a change touches the
rules, the recipe or what is generated from them; tests/house/test_recipes.py runs the tests that
read the rules on every `make test`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from recipes import followed_word_for_word, recipe_files  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keep", type=Path, help="make the copy in this folder (new or empty: nothing in it is removed) and leave it there")
    p.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = p.parse_args(argv)
    if args.keep:
        if args.keep.exists() and (not args.keep.is_dir() or any(args.keep.iterdir())):
            p.error(f"--keep {args.keep}: not an empty folder; name a new or empty one (nothing is removed)")
        args.keep.mkdir(parents=True, exist_ok=True)
        work = args.keep
    else:
        work = Path(tempfile.mkdtemp(prefix="effspec-recipe-proof-"))
    try:
        repo, env = followed_word_for_word("Add a rule", work, recipe_files("Add a rule"))
        # A git work tree, as a contributor's checkout is (tests that snapshot the checkout ask git for its
        # files); the recipe's files are left uncommitted, as they are before the contributor commits them.
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        with open(repo / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
            exclude.write(".venv\n")  # the link to this interpreter's environment (tree_copy)
        print(f"recipe-proof: the rule recipe followed in {repo}; running the whole suite there", flush=True)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        jobs = os.environ.get("JOBS", "auto")
        return subprocess.run([sys.executable, "-m", "pytest", "-n", jobs, "--dist", "loadfile", "-p", "no:cacheprovider",
                               *args.pytest_args], cwd=repo, env=env).returncode
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
