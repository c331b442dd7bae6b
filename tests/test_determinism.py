"""Deterministic output (issue 19): every example, every format, byte for byte under two hash seeds.

Iterating over a set or a dict of strings follows the hash seed, so an
output built that way differs between two runs of the same command (example
B's JSON and PDF once did, from a set in EFF602).  Each seed gets its own
interpreter, which runs the CLI's ``main`` for every example: `check` in
text, JSON and SARIF (one file at a time, and the whole folder through the
process pool), and `report` to .json .sarif .md .tex .html and .pdf
(with ``SOURCE_DATE_EPOCH`` unset: the PDF must carry no date of its own,
and the second interpreter starts two seconds after the first, so a
timestamp would differ).  A spec with pragmas and a
project configuration is added, so the suppression records are compared too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import effspec_process

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
SEEDS = ("1", "2")

DRIVER = r"""
import contextlib, io, os, sys
from effspec.cli import main

out, formats, specs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
for spec in specs:
    name = os.path.basename(spec)
    for fmt in formats:
        if fmt.startswith("check-"):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
                main(["check", "--jobs", "1", "--format", fmt[6:], spec])
            with open(os.path.join(out, name + "." + fmt), "w", encoding="utf-8") as fh:
                fh.write(buffer.getvalue())
        else:
            with contextlib.redirect_stderr(io.StringIO()):
                main(["report", spec, "-o", os.path.join(out, name + "." + fmt)])
if "check-json" in formats:  # the whole folder at once, through the process pool
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "--jobs", "2", "--format", "json", *specs])
    with open(os.path.join(out, "all.check-json"), "w", encoding="utf-8") as fh:
        fh.write(buffer.getvalue())
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> list[str]:
    """The examples (relative paths, run from the repository), and a spec with pragmas and a configuration."""
    folder = tmp_path_factory.mktemp("suppressed")
    (folder / ".git").mkdir()
    (folder / "pyproject.toml").write_text('[tool.effspec]\nignore = ["EFF101", "EFF605"]\nseverity = { EFF602 = "info" }\n',
                                           encoding="utf-8")
    text = (ROOT / "examples" / "example_b_vendor_claim.eff").read_text(encoding="utf-8")
    text = text.replace("# the sparse peak: must be flagged", "# effspec: ignore[EFF202]")
    (folder / "pragmas.eff").write_text(text + "# effspec: file-ignore[EFF601]\n# effspec: severity[EFF401]=info\n",
                                        encoding="utf-8")
    return [str(p.relative_to(ROOT)) for p in EXAMPLES] + [str(folder / "pragmas.eff")]


def _outputs_under_two_seeds(tmp_path: Path, formats: list[str], specs: list[str]) -> dict[str, dict[str, bytes]]:
    """Run the driver once per seed, both at once; {seed: {output name: bytes}}."""
    runs = {}
    for i, seed in enumerate(SEEDS):
        out = tmp_path / f"seed{seed}"
        out.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
        env["PYTHONHASHSEED"] = seed
        if i:
            time.sleep(2)  # a date or time written into any output would now differ
        runs[seed] = (out, subprocess.Popen([sys.executable, "-c", DRIVER, str(out), ",".join(formats), *specs],
                                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    found = {}
    for seed, (out, process) in runs.items():
        _stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr.decode(errors="replace")
        found[seed] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    return found


def _assert_identical(found: dict[str, dict[str, bytes]], expected_count: int) -> None:
    first, second = (found[s] for s in SEEDS)
    assert sorted(first) == sorted(second)
    assert len(first) == expected_count
    assert all(first.values()), [name for name, data in first.items() if not data]
    differ = [name for name in first if first[name] != second[name]]
    assert differ == [], f"output depends on the hash seed: {differ}"


def test_check_and_text_reports_are_byte_identical_under_two_hash_seeds(tmp_path, specs):
    formats = ["check-text", "check-json", "check-sarif", "json", "sarif", "md", "tex", "html"]
    found = _outputs_under_two_seeds(tmp_path, formats, specs)
    _assert_identical(found, len(specs) * len(formats) + 1)
    # The suppression records are among what was compared.
    assert b'"effect": "lowered to info"' in found["1"]["pragmas.eff.json"]
    assert b"ignored by `ignore` in [tool.effspec] of pyproject.toml" in found["1"]["pragmas.eff.check-text"]


def test_pdf_reports_are_byte_identical_under_two_hash_seeds(tmp_path, specs):
    found = _outputs_under_two_seeds(tmp_path, ["pdf"], specs)
    _assert_identical(found, len(specs))
    assert all(data.startswith(b"%PDF-") for data in found["1"].values())
    # No dates in the document information either (WeasyPrint writes them only when the HTML has them).
    assert not any(b"/CreationDate" in data or b"/ModDate" in data for data in found["1"].values())


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_the_installed_command_checks_the_examples_folder_identically_under_two_hash_seeds(tmp_path, fmt):
    """`effspec check examples/` as a user runs it (the process pool included), once per seed."""
    outputs = []
    for seed in SEEDS:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = effspec_process("check", "--jobs", "2", "--format", fmt, "examples", cwd=ROOT, env=env, text=False,
                               timeout=600)
        assert done.returncode == 1, done.stderr.decode(errors="replace")  # example B has errors
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert all(f"examples/{p.name}".encode() in outputs[0] for p in EXAMPLES)
