"""Deterministic output (issue 19): every example, every format, byte for byte under two hash seeds.

Iterating over a set or a dict of strings follows the hash seed, so an
output built that way differs between two runs of the same command (example
B's JSON and PDF once did, from a set in EFF602).  The CLI's ``main`` runs
for every example under one seed and again in a fresh interpreter under
another: `check` in text, JSON and SARIF (one file at a time, and the whole
folder through the process pool), and `report` to .json .sarif .md .tex
.html and .pdf (with ``SOURCE_DATE_EPOCH`` unset: the PDF must carry no date
of its own, and the second interpreter starts at least two seconds after the
first output was made, so a timestamp would differ).  The first seed is this
test process's own (for the PDFs: the process that made the session's render
cache entry, tests/rendering.py, which renders as ``report`` does); the
second interpreter's ``PYTHONHASHSEED`` is chosen so that a probe string
hashes differently there, which proves the two seeds differ.  A spec with
pragmas and a project configuration is added, so the suppression records
are compared too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import effspec_process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
SEEDS = ("1", "2")  # the installed command's two runs below

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


def _seed_other_than(hashes: set[int]) -> str:
    """A PYTHONHASHSEED under which rendering.PROBE hashes to none of ``hashes`` (the seeds that made the first outputs)."""
    from rendering import PROBE

    for seed in range(1, 100):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run([sys.executable, "-c", f"print(hash({PROBE!r}))"], capture_output=True, text=True, env=env,
                              check=True)
        if int(done.stdout) not in hashes:
            return str(seed)
    raise AssertionError("no hash seed differs from the first outputs'")  # pragma: no cover


def _outputs_in_a_fresh_interpreter(tmp_path: Path, formats: list[str], specs: list[str], seed: str,
                                    not_before: float) -> dict[str, bytes]:
    """The driver's outputs under ``PYTHONHASHSEED=seed``, started no earlier than ``not_before`` + 2 s."""
    out = tmp_path / f"seed{seed}"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env["PYTHONHASHSEED"] = seed
    time.sleep(max(0.0, not_before + 2 - time.time()))  # a date or time written into any output would now differ
    done = subprocess.run([sys.executable, "-c", DRIVER, str(out), ",".join(formats), *specs], cwd=ROOT, env=env,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _outputs_in_this_process(tmp_path: Path, formats: list[str], specs: list[str],
                             monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The driver's outputs here, under this process's hash seed, from the repository as the fresh interpreter runs."""
    out = tmp_path / "here"
    out.mkdir()
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["-c", str(out), ",".join(formats), *specs])
    exec(compile(DRIVER, "<driver>", "exec"), {"__name__": "__main__"})
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _assert_identical(first: dict[str, bytes], second: dict[str, bytes], expected_count: int) -> None:
    assert sorted(first) == sorted(second)
    assert len(first) == expected_count
    assert all(first.values()), [name for name, data in first.items() if not data]
    differ = [name for name in first if first[name] != second[name]]
    assert differ == [], f"output depends on the hash seed: {differ}"


def test_check_and_text_reports_are_byte_identical_under_two_hash_seeds(tmp_path, specs, monkeypatch):
    from rendering import PROBE

    formats = ["check-text", "check-json", "check-sarif", "json", "sarif", "md", "tex", "html"]
    started = time.time()
    here = _outputs_in_this_process(tmp_path, formats, specs, monkeypatch)
    there = _outputs_in_a_fresh_interpreter(tmp_path, formats, specs, _seed_other_than({hash(PROBE)}), started)
    _assert_identical(here, there, len(specs) * len(formats) + 1)
    # The suppression records are among what was compared.
    assert b'"effect": "lowered to info"' in here["pragmas.eff.json"]
    assert b"ignored by `ignore` in [tool.effspec] of pyproject.toml" in here["pragmas.eff.check-text"]


def test_pdf_reports_are_byte_identical_under_two_hash_seeds(tmp_path, specs, render_cache):
    from rendering import pdf_entries

    entries = pdf_entries(render_cache, [ROOT / s for s in specs])
    made = [json.loads(e["made.json"]) for e in entries.values()]
    first = {f"{name}.pdf": e["pdf"] for name, e in entries.items()}
    second = _outputs_in_a_fresh_interpreter(tmp_path, ["pdf"], specs, _seed_other_than({m["hash"] for m in made}),
                                             max(m["time"] for m in made))
    _assert_identical(first, second, len(specs))
    assert all(data.startswith(b"%PDF-") for data in first.values())
    # No dates in the document information either (WeasyPrint writes them only when the HTML has them).
    assert not any(b"/CreationDate" in data or b"/ModDate" in data for data in first.values())


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
