"""Imported specs are in `effspec fmt` layout (issue 25): `effspec fmt --check` exits 0 on what `effspec import`
writes, for every real excerpt under tests/fixtures/logs/real/ (each with the format its folder names), every
synthetic fixture beside them (through `auto`), and `effspec import hf-config`.

Before the writer passed its text through effspec.fmt.format_text, `fmt --check` exited 1 on every imported spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli
from real_logs import REAL

FIXTURES = REAL.parent
REAL_LOGS = sorted(p for p in REAL.glob("*/*") if p.name not in ("SOURCE", "SOURCE.md") and p.is_file())
SYNTHETIC = sorted(p for p in FIXTURES.glob("*") if p.suffix in (".log", ".jsonl"))
# Excerpts that are no importable run, by design (tests/importers/test_import_real_nemo.py tests each refusal): no spec to lay out.
NO_RUN = {"nemo1_empty_issue11900.log": "every bar's figures are empty",
          "nemo1_launcher_issue55.log": "no bar has `train_step_timing in s=` (log_step_timing off)",
          "nemo1_rlhf_config_dump.log": "a config dump only: the job reached no training step"}
FOLDER_FORMAT = {"maxtext": "maxtext", "megatron": "megatron", "megatron_deepspeed": "megatron_deepspeed",
                 "mllog": "mllog", "nanogpt": "nanogpt", "nemo": "nemo", "torchtitan": "torchtitan"}


def imported_is_formatted(tmp_path: Path, fmt: str, source: Path) -> str:
    out = tmp_path / "run.eff"
    done = cli("import", fmt, str(source), "-o", str(out))
    status, _, err = done.returncode, done.stdout, done.stderr
    assert status == 0, err
    done = cli("fmt", "--check", str(out))
    status, stdout, err = done.returncode, done.stdout, done.stderr
    assert status == 0, stdout + err
    assert "0 files would be reformatted, 1 already formatted" in stdout + err
    return out.read_text(encoding="utf-8")


def test_every_real_folder_is_a_format() -> None:
    assert {p.parent.name for p in REAL_LOGS} == set(FOLDER_FORMAT)
    assert len(REAL_LOGS) >= 25


@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_excerpt_imports_in_fmt_layout(tmp_path: Path, log: Path) -> None:
    if log.name in NO_RUN:
        done = cli("import", FOLDER_FORMAT[log.parent.name], str(log), "-o", str(tmp_path / "run.eff"))
        status, _, err = done.returncode, done.stdout, done.stderr
        assert status == 2 and "no NeMo training line found" in err, NO_RUN[log.name]
        return
    text = imported_is_formatted(tmp_path, FOLDER_FORMAT[log.parent.name], log)
    assert text.startswith("eff 1\n")


@pytest.mark.parametrize("log", SYNTHETIC, ids=lambda p: p.name)
def test_synthetic_fixture_imports_in_fmt_layout(tmp_path: Path, log: Path) -> None:
    imported_is_formatted(tmp_path, "auto", log)


def test_hf_config_import_is_in_fmt_layout(tmp_path: Path) -> None:
    text = imported_is_formatted(tmp_path, "hf-config", FIXTURES.parent / "hf_config" / "llama-3.1-8b.json")
    assert "model {" in text
