"""Write tests/slow_tests.txt: the tests `make test-fast` leaves out because a measured run found them slow.

    .venv/bin/python -m pytest -n 2 --dist loadfile -m "not slow" --junitxml=/tmp/fast.xml
    .venv/bin/python scripts/write_slow_tests.py /tmp/fast.xml            # tests of 0.3 s or more
    .venv/bin/python scripts/write_slow_tests.py /tmp/fast.xml --threshold 0.5

(`make slow-tests` runs both.) A test is named without its parameters: every case of a
parametrized test goes together, since the first case pays the set-up the others share.
The list only grows (a measured run does not see the tests already left out); take a
line out by hand when its test gets faster. `make test` runs every test whatever the list says.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "tests" / "slow_tests.txt"
HEADER = """\
# The tests `make test-fast` (pytest -m "not slow") leaves out besides tests/conftest.py's slow files,
# PDF tests, fuzzers and wheel tests: each took 0.3 s or more in a measured run of the fast set on 2 cores.
# Written by scripts/write_slow_tests.py (make slow-tests); file::test, without parameters.
"""


def measured(junit: Path, threshold: float) -> set[str]:
    """file::test of each test case of at least ``threshold`` seconds in the JUnit XML report."""
    found = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        if float(case.get("time", 0)) < threshold:
            continue
        module = case.get("classname", "")
        name = case.get("name", "").split("[", 1)[0]
        found.add(f"{module.replace('.', '/')}.py::{name}")
    return found


def listed(path: Path = LIST) -> set[str]:
    if not path.is_file():
        return set()
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("junit", type=Path, help="pytest's --junitxml report of a run of the fast set")
    p.add_argument("--threshold", type=float, default=0.3, help="seconds (default 0.3)")
    args = p.parse_args(argv)
    tests = sorted(listed() | measured(args.junit, args.threshold))
    LIST.write_text(HEADER + "".join(f"{t}\n" for t in tests), encoding="utf-8")
    print(f"{LIST.relative_to(ROOT)}: {len(tests)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
