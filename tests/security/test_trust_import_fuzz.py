"""A bounded fuzz of `effspec import` on hostile logs (issue 26, item 6): every mutation of every committed
log fixture ends in an imported spec that compiles, or in a refusal (ImportFailure, which the CLI prints as one
line naming the log), never in another exception, which the CLI would call a bug in effspec.

The mutations are the ones the issue found internal errors with: deep nesting, a field of the wrong type,
zero, Infinity, a 301-digit figure, a step past 2^63, and cut or duplicated lines. Seeded and derandomized.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from conftest import cli as run_effspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import effspec
from effspec.cli.import_ import log_value_out_of_range
from effspec.importers import ImportFailure, import_logs
from effspec.importers.writer import render

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
FIXTURES = {
    "megatron": "megatron_train.log", "megatron_deepspeed": "megatron_deepspeed_bloom.log", "nanogpt": "nanogpt_train.log",
    "nemo": "nemo_train.log", "torchtitan": "torchtitan_train.log", "maxtext": "maxtext_train.log", "mllog": "mllog_gpt3.log",
}
HOSTILE = ["[" * 3000 + "]" * 3000, "Infinity", "NaN", "-1", "0", "9" * 301, str(2**63), str(2**64 + 7), "1e309",
           "[1, 2]", '"x"', "null", "{}", "\x00", "\u202e", "# effspec: file-ignore[EFF601]", "1e+3", "nan"]
NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?"


@st.composite
def hostile_log(draw) -> tuple[str, str]:
    import re

    fmt = draw(st.sampled_from(sorted(FIXTURES)))
    lines = (LOGS / FIXTURES[fmt]).read_text(encoding="utf-8").splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["number", "number", "token", "cut", "duplicate", "delete"]))
        line = lines[i]
        if op == "number" and re.search(NUMBER, line):
            spots = list(re.finditer(NUMBER, line))
            m = spots[draw(st.integers(0, len(spots) - 1))]
            lines[i] = line[:m.start()] + draw(st.sampled_from(HOSTILE)) + line[m.end():]
        elif op == "token":
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + draw(st.sampled_from(HOSTILE)) + line[at:]
        elif op == "cut":
            lines[i] = line[:draw(st.integers(0, len(line)))] + "\n"
        elif op == "duplicate":
            lines.insert(i, line)
        elif len(lines) > 1:
            del lines[i]
    return fmt, "".join(lines)


@settings(max_examples=160, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=hostile_log())
def test_hostile_logs_import_or_are_refused_never_an_internal_error(case: tuple[str, str]) -> None:
    fmt, text = case
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "hostile.log")
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            result = import_logs(fmt, [log])
        except ImportFailure as exc:
            assert "hostile.log" in str(exc) or "format" in str(exc)  # the refusal names the log (or the format)
            return
        files = render(os.path.join(tmp, "out.eff"), result.runs, f"effspec import {fmt}")
        spec = next(f for f in files if f.path.endswith(".eff"))
        for f in files:
            with open(f.path, "wb") as fh:
                for chunk in f.chunks():
                    fh.write(chunk)
        checked = effspec.load(spec.path)
        # what the CLI would refuse as "a bug in the importer": a front-end error in the spec it wrote that is not a
        # value out of range copied from a log line (which the CLI refuses as the log's fault, at that line)
        text = Path(spec.path).read_text(encoding="utf-8")
        wrong = [(d.code, d.message) for d in checked.diagnostics if d.code < "EFF100" and d.code != "EFF040"
                 and log_value_out_of_range(d, text) is None]
        assert wrong == []


def test_a_step_past_2_63_is_refused_at_its_line_naming_the_log(tmp_path: Path) -> None:
    text = (LOGS / "nanogpt_train.log").read_text(encoding="utf-8").replace("iter 20:", f"iter {2**63}:", 1)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s.startswith(f"iter {2**63}:"))
    log = tmp_path / "big.log"
    log.write_text(text, encoding="utf-8")
    done = run_effspec("import", "nanogpt", str(log), "-o", str(tmp_path / "o.eff"))
    assert done.returncode == 2 and "bug in effspec" not in done.stderr
    assert f"big.log:{line}: step 9223372036854775808 is out of range (a step number is below 2^63); nothing was written" \
        in done.stderr
    assert not (tmp_path / "o.eff").exists()


def test_a_record_nested_too_deeply_is_skipped_with_eff801_at_its_line(tmp_path: Path) -> None:
    lines = (LOGS / "mllog_gpt3.log").read_text(encoding="utf-8").splitlines(keepends=True)
    n = next(i for i, s in enumerate(lines) if s.startswith(":::MLLOG") and "submission_platform" in s)
    lines[n] = lines[n].replace('"value": ', '"value": ' + "[" * 5000 + "]" * 5000 + ', "v2": ', 1)
    log = tmp_path / "deep.log"
    log.write_text("".join(lines), encoding="utf-8")
    result = import_logs("mllog", [str(log)])
    assert [(d.code, d.span.line, d.message) for d in result.diagnostics if "nested" in d.message] == [
        ("EFF801", n + 1, "`:::MLLOG` record nested too deeply to read; skipped")]


def test_a_zero_model_width_is_the_logs_fault_at_its_line(tmp_path: Path) -> None:
    text = (LOGS / "maxtext_train.log").read_text(encoding="utf-8").replace("base_emb_dim: 2048", "base_emb_dim: 0", 1)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "base_emb_dim: 0" in s)
    log = tmp_path / "zero.log"
    log.write_text(text, encoding="utf-8")
    done = run_effspec("import", "maxtext", str(log), "-o", str(tmp_path / "o.eff"))
    assert done.returncode == 2 and "bug in the importer" not in done.stderr
    assert (f"effspec: zero.log:{line}: the log gives a value no run can have (EFF011: `d_model` must be greater than "
            "zero: `0`); nothing was written") in done.stderr
    assert not (tmp_path / "o.eff").exists()
