"""`effspec import`: training logs to specs, one module per format.

For every format: a fixture (tests/fixtures/logs/, made by make_fixtures.py
around lines quoted verbatim from public sources) is imported through the CLI;
the step-time CSV is checked against the log line by line; every value and
claim that cites a log line is checked against that line; the unfilled spec
fails `effspec check` with EFF040 exactly on its `TODO` lines; and once the
test fills them in, `effspec check` runs (exit 0 or 1, never 2) and the
framework's own figures agree with what effspec reconstructs, where the
convention matches.  Then: `auto` detection, the one-file extension point,
malformed lines (EFF801), hostile file names and contents, the overwrite
rules, and a round trip from a spec's step times to a Megatron log and back.
Then: every format's CSV sample by sample and every claim against its log
line; the long seeded logs (320 steps, warm-up, a stall, a restart); huge
lines, binary, NUL and non-UTF-8 bytes, escapes and symlinks; bounded memory;
atomic outputs; torchtitan's TOML; a fuzz; the imported examples and the
README's three commands, run as shown.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli as run_effspec
from conftest import effspec_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peak import PEAK_KB
from real_logs import has
from write_import_examples import EXAMPLES, QWEN3_4B_LIKE, fill, make_example

from effspec import load
from effspec.cli import main
from effspec.importers import all_importers
from effspec.rules.pages import IMPORTER

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
FORMATS = ("maxtext", "megatron", "megatron_deepspeed", "mllog", "nanogpt", "nemo", "torchtitan")
CITE = re.compile(r'from log "([^"]+?):(\d+)(?: \([^"]*\))?"')


def run_import(tmp_path: Path, fmt: str, log: str, *extra: str, out: str = "run.eff") -> tuple[int, str, Path]:
    """`effspec import FMT LOG -o tmp/OUT` through effspec.cli.main; (status, stderr, OUT)."""
    target = tmp_path / out
    proc = run_effspec("import", fmt, str(LOGS / log), "-o", str(target), *extra, cwd=tmp_path)
    return proc.returncode, proc.stderr, target


def check_json(path: Path) -> tuple[int, dict]:
    proc = run_effspec("check", str(path), "--format", "json")
    return proc.returncode, json.loads(proc.stdout)[0]


def codes(doc: dict) -> set[str]:
    return {d["code"] for d in doc["diagnostics"]}


def the_run(doc: dict) -> dict:
    (run,) = doc["runs"].values()
    return run


def steps_csv(out: Path) -> list[dict[str, str]]:
    with open(out.with_name(out.stem + "_steps.csv"), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def log_lines(name: str) -> list[str]:
    return (LOGS / name).read_bytes().decode("utf-8", errors="replace").split("\n")


def assert_citations_hold(out: Path, log: str) -> int:
    """Every `from log "LOG:N"` (one line) in OUT: the value's number literal appears on log line N.

    Returns how many numeric citations were checked."""
    lines = [ln.replace(",", "").replace("\r", " ") for ln in log_lines(log)]
    checked = 0
    for spec_line in out.read_text(encoding="utf-8").split("\n"):
        m = CITE.search(spec_line)
        if not m:
            continue
        assert m.group(1) == log, spec_line
        cited = lines[int(m.group(2)) - 1]
        if "(" in m.group(0):
            continue  # a derived value (its citation says how): checked in the format's own test
        value = spec_line.split("=", 1)[1].split(" from ")[0]
        number = re.search(r"(?<![A-Za-z_0-9.])([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)", value)
        if number and "*" not in value:  # a literal as printed (derived products cite two lines and are checked apart)
            assert number.group(1) in cited, f"{number.group(1)} not on line {m.group(2)}: {cited[:160]}"
            checked += 1
    return checked


def todo_lines(out: Path) -> list[int]:
    return [n for n, line in enumerate(out.read_text(encoding="utf-8").split("\n"), 1) if " = TODO" in line]


def assert_unfilled_fails(out: Path) -> None:
    """The import as written: `effspec check` exits 1 with EFF040 exactly on its TODO lines, nothing else front-end."""
    status, doc = check_json(out)
    assert status == 1
    front = [(d["code"], d["line"]) for d in doc["diagnostics"] if d["code"] < "EFF100"]
    assert front == [("EFF040", n) for n in todo_lines(out)]
    assert all("replace `TODO` with" in d["help"] for d in doc["diagnostics"])


def claim(doc: dict, name: str) -> dict:
    return the_run(doc)["claims"][name]


# ----------------------------------------------------------------------------
# Discovery: one file per format


def test_every_format_is_found_by_discovery_and_named_after_its_module() -> None:
    importers = all_importers()
    assert tuple(importers) == FORMATS
    for name, imp in importers.items():
        assert type(imp).__module__ == f"effspec.importers.{name}"
        assert imp.framework and imp.summary


def test_import_help_lists_every_format(capsys) -> None:
    assert main(["import", "--help"]) == 0
    out = capsys.readouterr().out
    for name, imp in all_importers().items():
        assert f"  {name:<20}{imp.framework}: " in out
    assert "  auto " in out


def _package_copy(tmp_path: Path) -> Path:
    """tmp/effspec = compiler/ with grammar/, templates/ and spec/ inside, as setuptools' package-dir maps them."""
    pkg = tmp_path / "site" / "effspec"
    shutil.copytree(ROOT / "compiler", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for data in ("grammar", "templates", "spec"):
        shutil.copytree(ROOT / data, pkg / data, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg.parent


TINY_IMPORTER = '''"""A format for the extension-point test: `TINYLOG step N took X s`."""
import re

from effspec.importers.base import LogFormat
from effspec.importers.common import summarize, timing_fields, todo_hardware
from effspec.importers.record import Convention, ImportedRun, Step

LINE = re.compile(r"^TINYLOG step (\\d+) took ([0-9.]+) s$")


class Importer(LogFormat):
    name = "tinylog"
    framework = "TinyLog"
    summary = "`TINYLOG step N took X s` lines"

    def detect(self, lines):
        return 1.0 if any(LINE.match(t) for t in lines) else 0.0

    def convention(self, version, run):
        return Convention("tinylog", {"attention": "full", "logits": "included", "embeddings": "excluded",
                                      "recompute": "excluded"}, "TinyLog", "tinylog.py", "TinyLog counts like PaLM")

    def parse(self, path, lines):
        run = ImportedRun(self.name, self.framework, lines.name)
        for item in lines:
            m = LINE.match(item.text)
            if m:
                run.steps.append(Step(int(m.group(1)), item.number, m.group(2)))
        if not run.steps:
            return []
        timing_fields(run, summarize([float(s.time) for s in run.steps]), "step lines")
        todo_hardware(run)
        return [run]
'''


def test_one_new_file_adds_a_format_to_the_cli_and_to_auto(tmp_path: Path) -> None:
    site = _package_copy(tmp_path)
    (site / "effspec" / "importers" / "tinylog.py").write_text(TINY_IMPORTER, encoding="utf-8")
    log = tmp_path / "tiny.log"
    log.write_text("hello\nTINYLOG step 1 took 2.5 s\nTINYLOG step 2 took 1.25 s\nTINYLOG step 3 took 1.5 s\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1")
    probe = subprocess.run([sys.executable, "-c", "import effspec; print(effspec.__file__)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, check=True)
    assert probe.stdout.strip() == str(site / "effspec" / "__init__.py")  # the copy, not the worktree
    helped = effspec_process("import", "--help", env=env, cwd=tmp_path, module=True)
    assert helped.returncode == 0 and "  tinylog             TinyLog: `TINYLOG step N took X s` lines" in helped.stdout
    done = effspec_process("import", "auto", str(log), "-o", "tiny.eff", env=env, cwd=tmp_path, module=True)
    assert done.returncode == 0, done.stderr
    assert "(tinylog)" in done.stderr
    assert (tmp_path / "tiny_steps.csv").read_text(encoding="utf-8") == "step,line,step_time_s,flags\n1,2,2.5,\n2,3,1.25,\n3,4,1.5,\n"
    assert has((tmp_path / "tiny.eff").read_text(encoding="utf-8"),
               'step_time = file "tiny_steps.csv" column "step_time_s" s  from log "tiny.log:2-4 (3 step lines)"')


# ----------------------------------------------------------------------------
# auto


@pytest.mark.parametrize(("log", "fmt"), [
    ("megatron_train.log", "megatron"), ("megatron_timers.log", "megatron"), ("megatron_broken.log", "megatron"),
    ("megatron_deepspeed_bloom.log", "megatron_deepspeed"), ("nanogpt_train.log", "nanogpt"),
    ("nanochat_train.log", "nanogpt"), ("torchtitan_train.log", "torchtitan"), ("torchtitan_ranks.log", "torchtitan"),
    ("maxtext_train.log", "maxtext"), ("mllog_gpt3.log", "mllog"), ("nemo_train.log", "nemo"),
])
def test_auto_detects_each_fixture_as_its_format(tmp_path: Path, log: str, fmt: str) -> None:
    status, err, _ = run_import(tmp_path, "auto", log)
    assert status == 0, err
    assert f"1 run(s) ({fmt})" in err


def test_auto_on_a_log_of_no_known_format_exits_2_naming_the_formats_tried(tmp_path: Path) -> None:
    junk = tmp_path / "junk.log"
    junk.write_text("compiling...\nloss went down\n" * 50, encoding="utf-8")
    proc = run_effspec("import", "auto", str(junk), "-o", str(tmp_path / "o.eff"))
    assert proc.returncode == 2
    assert proc.stderr == ("effspec: junk.log: no line of a known training log in its first lines; formats tried: "
                           + ", ".join(FORMATS) + " (name the format instead of `auto` if the log is one of them)\n")
    assert not (tmp_path / "o.eff").exists()


def test_a_named_format_that_finds_nothing_exits_2_saying_what_it_reads(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "maxtext", "nemo_train.log")
    assert status == 2
    assert err.startswith("effspec: nemo_train.log: no MaxText training line found (format `maxtext`); it reads: ")
    assert not out.exists()


# ----------------------------------------------------------------------------
# Megatron-LM


def test_megatron_import_values_csv_and_claim(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "megatron", "megatron_train.log")
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    # The iteration lines, sample by sample, by line number: the CSV holds what the log prints.
    log = log_lines("megatron_train.log")
    expected = {n: re.search(r"elapsed time per iteration \(ms\): ([0-9.]+)", line).group(1)
                for n, line in enumerate(log, 1) if " iteration " in line}
    rows = steps_csv(out)
    assert {int(r["line"]): r["step_time_ms"] for r in rows} == expected
    assert len(rows) == 12 and rows[0]["flags"] == "warmup" and rows[4]["tflops_per_gpu"] == "490.0"
    # The kept samples' median is iteration 5's 15800.0 ms (hand-sorted: 5 below, 5 above, 24880.2 a stall),
    # so the claim is the TFLOP/s/GPU printed on that verbatim line, 54.
    assert has(text, "  claim tflops_per_device = 490.0 TFLOP/s  from log \"megatron_train.log:54\"")
    assert '    warmup    = 1 step ' in text and "line 50" in text
    assert has(text, 'step_time = file "run_steps.csv" column "step_time_ms" ms  from log "megatron_train.log:50-64 (12 iteration lines)"')
    for line in ("layers          = 84 ", "d_model         = 8192 ", "kv_heads        = 8 ", "ffn             = swiglu ",
                 "d_ff            = 28672 ", "vocab           = 152576 ", "seq_len      = 8192 token/sequence ",
                 "global_batch = 2048 sequence ", "count       = 1024 device ", "dtype       = bf16 ", "tp          = 8 ",
                 "preset = megatron_lm  from log \"megatron_train.log:48\""):  # its first date, 2026-01-16 (issue 25)
        assert has(text, line), line
    assert "straggler detector, line 58: round-trip time 3453.08 ms (rank 8) to 3468.20 ms (rank 0); throughput " \
           "296.02 TF (rank 0) to 297.32 TF (rank 8)" in text
    assert assert_citations_hold(out, "megatron_train.log") == 16  # 6 shape, 2 work, 6 layout, count, the claim


def test_megatron_unfilled_fails_then_filled_reproduces_the_logged_tflops(tmp_path: Path) -> None:
    _, _, out = run_import(tmp_path, "megatron", "megatron_train.log")
    assert todo_lines(out) == [48, 51]  # accelerator and peak: the log names no device
    assert_unfilled_fails(out)
    fill(out, {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF503"}  # the stall at iteration 10 (24.88 s) is real
    c = claim(doc, "tflops_per_device")
    # Megatron's formula on the dump's shape at 15.8 s on 1,024 GPUs: 490.03 TFLOP/s (make_fixtures.megatron_flops).
    assert c["status"] == "consistent" and c["reconstructed"] == pytest.approx(490.0308e12, rel=1e-5)


def test_megatron_framework_version_sets_the_convention(tmp_path: Path) -> None:
    status, _, out = run_import(tmp_path, "megatron", "megatron_train.log", "--framework-version", "2024-06")
    assert status == 0
    text = out.read_text(encoding="utf-8")
    assert has(text, 'preset = megatron_lm_2024  from paper "Megatron-LM 2024-03-25 to 2025-03-05 (--framework-version 2024-06)"')
    fill(out, {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"})
    _, doc = check_json(out)
    # The 2024 formula counts the full s^2 matrix: 490.0 TFLOP/s is then too low a claim for this log.
    assert claim(doc, "tflops_per_device")["status"] == "mismatch" and "EFF601" in codes(doc)


def test_megatron_unreadable_framework_version_exits_2(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "megatron", "megatron_train.log", "--framework-version", "latest-ish")
    assert status == 2 and "cannot read the Megatron-LM version `latest-ish`" in err and "YYYY[-MM[-DD]]" in err
    assert not out.exists()


def test_megatron_per_rank_timers_become_the_ranks_csv_and_find_the_straggler(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "megatron", "megatron_timers.log")
    assert status == 0, err
    with open(tmp_path / "run_ranks.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5 * 8  # iterations 2-6 carry timers, 8 ranks each
    first = {int(r["rank"]): r for r in rows if r["step"] == "2"}
    # rank 0, iteration 2: forward-compute 400.50 + backward-compute 800.50 ms; forward-recv 30.50 + backward-send
    # 20.50 + all-grads-sync 50.50 ms; the 1600.0 ms iteration leaves 297.5 ms.
    assert (first[0]["compute"], first[0]["comm"], first[0]["stall"]) == ("1.201", "0.1015", "0.2975")
    # rank 5 computes 30 % slower (520.25 + 1040.25 ms) and waits for nobody.
    assert (first[5]["compute"], first[5]["stall"]) == ("1.5605", "0")
    fill(out, {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0
    diagnosis = the_run(doc)["diagnosis"]
    assert diagnosis["family"] == "straggler" and diagnosis["ranks"] == [5]


def test_megatron_broken_lines_are_eff801_and_the_import_goes_on(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "megatron", "megatron_broken.log")
    assert status == 0
    log = log_lines("megatron_broken.log")
    cut, mixed, bad = (n for n, line in enumerate(log, 1) if line.startswith((" [2026-02-01 11:00:06]", " [2026-02-01 11:00:07]",
                                                                               " [2026-02-01 11:00:08]")))
    assert f"warning[EFF801]: iteration line cut short (the log was truncated while it was written); skipped\n  --> megatron_broken.log:{cut}:1" in err
    assert f"warning[EFF801]: two iteration lines interleaved on one line (several ranks printing at once); skipped\n  --> megatron_broken.log:{mixed}:1" in err
    column = log[bad - 1].index("\ufffd") + 1
    assert f"warning[EFF801]: bytes that are not UTF-8 (0xff); read with U+FFFD in their place\n  --> megatron_broken.log:{bad}:{column}" in err
    rows = steps_csv(out)
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4, 5, 8]  # 6 cut, 7 interleaved; 8 read past its bad byte
    assert "3 log line(s) skipped or repaired" in err


def _megatron_log(tmp_path: Path, body: list[str]) -> Path:
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_args
    finally:
        sys.path.remove(str(LOGS))
    log = tmp_path / "m.log"
    log.write_text("\n".join(megatron_args({"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
                                           "world_size": 8, "log_interval": 1}) + body) + "\n", encoding="utf-8")
    return log


def test_megatron_primus_pairs_read_the_first_figure(tmp_path: Path) -> None:
    # The Primus fork's fields, verbatim from shared/reference/frameworks-and-logs.md section 3; the other fields
    # follow Megatron-LM's format string.
    fields = ("elapsed time per iteration (ms): 13372.8/13364.7 | throughput per GPU (TFLOP/s/GPU): 567.6/568.0 | "
              "tokens per GPU (tokens/s/GPU): 9801.4/9807.3 |")
    tail = " global batch size:   256 | lm loss: 2.000000E+00 | number of skipped iterations:   0 | number of nan iterations:   0 |"
    log = _megatron_log(tmp_path, [f" iteration {it}/ 5000 | consumed samples: {256 * it} | {fields}{tail}" for it in (125, 126, 127)])
    proc = run_effspec("import", "megatron", str(log), "-o", "o.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r["step_time_ms"] for r in steps_csv(tmp_path / "o.eff")] == ["13372.8"] * 3
    text = (tmp_path / "o.eff").read_text(encoding="utf-8")
    assert has(text, 'claim tflops_per_device = 567.6 TFLOP/s  from log "m.log:')
    assert has(text, "claim throughput        = 9801.4 token/s/device * hardware.count  from log")


def test_megatron_restart_is_flagged_and_the_last_dump_rules(tmp_path: Path) -> None:
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_args, megatron_iteration
    finally:
        sys.path.remove(str(LOGS))
    lines = [megatron_iteration("2026-01-01 00:00:00", it, 9, 8 * it, 100.0, 1.0, 1e-4, 8, 2.0) for it in (1, 2, 3, 4)]
    lines += megatron_args({"num_layers": 3, "hidden_size": 256, "num_attention_heads": 4, "world_size": 8})
    lines += [megatron_iteration("2026-01-01 01:00:00", it, 9, 8 * it, 100.0 if it > 3 else 900.0, 1.0, 1e-4, 8, 2.0)
              for it in (3, 4, 5)]
    log = _megatron_log(tmp_path, lines)
    proc = run_effspec("import", "megatron", str(log), "-o", "o.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = steps_csv(tmp_path / "o.eff")
    assert [(r["step"], r["flags"]) for r in rows] == [("1", ""), ("2", ""), ("3", ""), ("4", ""), ("3", "restart"), ("4", ""), ("5", "")]
    text = (tmp_path / "o.eff").read_text(encoding="utf-8")
    assert "In the steps CSV: 1 line(s) flagged restart (column `flags`); they stay in the samples." in text
    assert "The log holds 2 argument dumps (restarts); the values are the last dump's." in text
    assert re.search(r"layers  += 3 ", text)


def test_progress_bar_on_request(tmp_path: Path, capsys) -> None:
    from effspec.importers.reader import LogReader

    reader = LogReader(str(LOGS / "nemo_train.log"), progress=True)
    assert sum(1 for _ in reader) == 4 + 4 + 4 + 4  # 4 header lines, then 3 lines of carriage-return updates
    assert capsys.readouterr().err.endswith("\rreading nemo_train.log: 100 %\n")


@pytest.mark.parametrize("code", sorted(c for c in IMPORTER if c != "EFF810"))  # EFF810: tests/importers/test_hf_config.py
def test_importer_code_pages_run(tmp_path: Path, code: str) -> None:
    """The Example log of an importer code's page yields it; the Use instead log does not."""
    from effspec.rules.pages import page

    blocks = re.findall(r"```text\n(.*?)```", page(code), flags=re.S)
    assert len(blocks) == 2
    header = (LOGS / "megatron_broken.log").read_text(encoding="utf-8", errors="replace").split(" [2026")[0]
    for i, block in enumerate(blocks):
        log = tmp_path / f"page{i}.log"
        log.write_text(header + block, encoding="utf-8")
        proc = run_effspec("import", "megatron", str(log), "-o", str(tmp_path / f"p{i}.eff"))
        assert (f"[{code}]" in proc.stderr) == (i == 0), proc.stderr


# ----------------------------------------------------------------------------
# nanoGPT / nanochat


def test_nanogpt_import_and_check(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "nanogpt", "nanogpt_train.log")
    assert status == 0, err
    log = log_lines("nanogpt_train.log")
    expected = {n: re.search(r"time ([0-9.]+)ms", line).group(1) for n, line in enumerate(log, 1) if line.startswith("iter ")}
    assert {int(r["line"]): r["step_time_ms"] for r in steps_csv(out)} == expected
    text = out.read_text(encoding="utf-8")
    # kept: 12 samples after iter 0 (31.25 s); median between 420.31 (iter 30) and 420.48 (iter 120):
    # 420.395; nearest and earliest is iter 30, line 26, printing mfu 39.96 %.
    assert has(text, 'claim mfu = 39.96 %  from log "nanogpt_train.log:26"')
    assert "EMA 0.9/0.1" in text and "312e12 (A100 BF16, hard-coded in estimate_mfu)" in text
    assert "valid_tokens = 491520 token " in text and "seq_len      = 1024 token/sequence " in text
    assert assert_citations_hold(out, "nanogpt_train.log") >= 4
    assert_unfilled_fails(out)
    fill(out, {"layers": "12", "heads": "12", "d_model": "768", "d_ff": "3072", "accelerator": '"A100-SXM4-40GB"',
               "count": "8 device", "dtype": "bf16", "peak": "312 TFLOP/s"})
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF503", "EFF603"}
    c = claim(doc, "mfu")  # the EMA-smoothed 39.96 % against 6N + 12LHQT at the median 420.395 ms: 40.03 %
    assert c["status"] == "consistent" and c["reconstructed"] == pytest.approx(0.40034, abs=5e-5)


def test_nanochat_needs_nothing_filled_and_reproduces_its_three_figures(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "nanogpt", "nanochat_train.log")
    assert status == 0, err
    assert todo_lines(out) == []  # device, peak, dtype, shape, batch and world size are all in the log
    text = out.read_text(encoding="utf-8")
    # The verbatim step-4 line (PR #147) is the kept sample nearest the median (989.44 ms: 5 below, 5 above).
    for line in ('claim mfu             = 74.13 %  from log "nanochat_train.log:24"',
                 'claim throughput      = 529882 token/s  from log "nanochat_train.log:24"',
                 'claim flops_per_token = 3.491758e+09 FLOP/token  from log "nanochat_train.log:16"',
                 'count       = 8 device                  from log "nanochat_train.log:17,18 '):
        assert has(text, line), line
    assert assert_citations_hold(out, "nanochat_train.log") >= 8
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF503"}
    assert {k: v["status"] for k, v in the_run(doc)["claims"].items()} == dict.fromkeys(
        ("mfu", "throughput", "flops_per_token"), "consistent")
    # 6·(20·12·1280² + 65536·1280) + 12·10·128·2048·20 = 3,491,758,080: nanochat's estimate_flops, exactly.
    assert claim(doc, "flops_per_token")["reconstructed"] == 3_491_758_080


# ----------------------------------------------------------------------------
# torchtitan


def test_torchtitan_import_strips_colours_and_claims_its_rates(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "torchtitan", "torchtitan_train.log")
    assert status == 0, err
    rows = steps_csv(out)
    assert [(r["step"], r["tps"], r["tflops"], r["mfu"]) for r in rows][:2] == [("1", "1205", "37.73", "1.68"),
                                                                               ("2", "9902", "310.06", "13.78")]
    assert rows[4] == {"step": "5", "line": "12", "tps": "9966", "tflops": "312.06", "mfu": "13.87", "flags": ""}
    assert rows[0]["flags"] == "warmup"
    text = out.read_text(encoding="utf-8")
    for line in ('claim throughput        = 9966 token/s/device * hardware.count  from log "torchtitan_train.log:12"',
                 'claim tflops_per_device = 312.06 TFLOP/s  from log "torchtitan_train.log:12"',
                 'claim mfu               = 13.87 %  from log "torchtitan_train.log:12"',
                 'accelerator = "NVIDIA B200"      from log "torchtitan_train.log:4"',
                 'peak        = 2.250e+15 FLOP/s   from log "torchtitan_train.log:5"'):
        assert has(text, line), line
    assert "\x1b" not in text and "step_time" not in text  # the console line has no step time: no timing input
    assert assert_citations_hold(out, "torchtitan_train.log") >= 4
    assert_unfilled_fails(out)
    fill(out, QWEN3_4B_LIKE)
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF602", "EFF605"}  # claims only: the basis claim cannot confirm itself
    run = the_run(doc)
    # tps implies the step: 65,536 tokens / (9,966 x 8) = 0.82199 s; 31.38 GFLOP/token at that step gives 312.75
    # TFLOP/s (the log: 312.06, i.e. 31.31 GFLOP/token) and 13.90 % of 2.25 PFLOP/s (the log: 13.87 %).
    assert run["implied"]["step_time"]["value"] == pytest.approx(65536 / (9966 * 8))
    assert claim(doc, "tflops_per_device")["status"] == "consistent"
    assert claim(doc, "mfu")["status"] == "consistent"


def test_torchtitan_keeps_one_ranks_lines_and_skips_broken_ones(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "torchtitan", "torchtitan_ranks.log")
    assert status == 0
    assert [r["step"] for r in steps_csv(out)] == ["1", "2", "3", "4", "5"]  # rank 0's lines only
    assert "two metrics lines interleaved on one line (several ranks printing at once); skipped\n  --> torchtitan_ranks.log:12:1" in err
    assert "metrics line cut short (no `tps:`, `tflops:` and `mfu:`); skipped\n  --> torchtitan_ranks.log:13:1" in err


# ----------------------------------------------------------------------------
# MaxText


def test_maxtext_import_flags_the_warmup_artefact_and_checks(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "maxtext", "maxtext_train.log")
    assert status == 0, err
    rows = steps_csv(out)
    assert [(r["step"], r["step_time_s"], r["tflops"], r["flags"]) for r in rows[:3]] == [
        ("0", "44.923", "17.022", "warmup"), ("1", "0.319", "2400.734", "warmup"), ("2", "5.658", "135.158", "")]
    log = log_lines("maxtext_train.log")
    expected = {n: re.search(r"seconds: ([0-9.]+)", line).group(1) for n, line in enumerate(log, 1) if "completed step" in line}
    assert {int(r["line"]): r["step_time_s"] for r in rows} == expected
    text = out.read_text(encoding="utf-8")
    # kept: steps 2-9; median of 5.402 5.658 5.667 5.668 5.668 5.668 5.669 5.669 is 5.668, first at step 5 (line 23).
    for line in ('claim tflops_per_device    = 134.909 TFLOP/s  from log "maxtext_train.log:23"',
                 'claim throughput           = 8671.794 token/s/device * hardware.count  from log "maxtext_train.log:23"',
                 'claim model_flops_per_step = 764.67 TFLOP/device * hardware.count  from log "maxtext_train.log:16"',
                 'global_batch = 96 sequence           from log "maxtext_train.log:8,14"',
                 'count       = 4 device    from log "maxtext_train.log:14"',  # aligned under "TPU v5p"
                 'warmup    = 2 step'):
        assert has(text, line), line
    assert has(text, "kind    = TODO")  # no num_experts line: dense or MoE is not guessed
    assert assert_citations_hold(out, "maxtext_train.log") >= 4
    assert_unfilled_fails(out)
    # deepseek2-16b (MoE with MLA) has no effspec shape; its FLOPs per token are MaxText's own:
    # 764.67 TFLOP per device / (24 x 2048 tokens per device) = 15.557 GFLOP/token.
    text = out.read_text(encoding="utf-8")
    text = re.sub(r"  model \{.*?\n  \}\n", "  model { kind = custom  flops_per_token = 15.557e9 FLOP/token }\n", text, flags=re.S)
    out.write_text(text, encoding="utf-8")
    fill(out, {"dtype": "bf16", "peak": "459 TFLOP/s"})
    status, doc = check_json(out)
    # the log's "TFRT TPU v5" is JAX's name for a v5p (a v5e is "TPU v5 lite"): written "TPU v5p", whose catalog
    # peak is the 459 TFLOP/s filled in (no EFF206)
    assert status == 0 and codes(doc) == {"EFF502"}
    assert {k: v["status"] for k, v in the_run(doc)["claims"].items()} == dict.fromkeys(
        ("tflops_per_device", "throughput", "model_flops_per_step"), "consistent")
    assert the_run(doc)["metrics"]["mfu"]["value"] == pytest.approx(134.9078 / 459, rel=1e-4)  # the docs' 29.40 %


def test_maxtext_metrics_jsonl(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "auto", "maxtext_metrics.jsonl")
    assert status == 0 and "1 run(s) (maxtext)" in err
    assert "metrics record that is not whole JSON with `step` and `perf/step_time_seconds`; skipped\n --> maxtext_metrics.jsonl:5:1" in err
    rows = steps_csv(out)
    assert [(r["step"], r["line"], r["step_time_s"], r["flags"]) for r in rows] == [
        ("0", "1", "44.92301", "warmup"), ("1", "2", "0.31912", "warmup"), ("2", "3", "5.65801", ""), ("3", "4", "5.40205", ""),
        ("4", "6", "5.66912", ""), ("5", "7", "5.66802", ""), ("6", "8", "5.66799", "")]
    # kept: 5.40205 5.65801 5.66799 5.66802 5.66912: the median is step 6's, line 8
    assert has(out.read_text(encoding="utf-8"), 'claim tflops_per_device = 134.9139 TFLOP/s  from log "maxtext_metrics.jsonl:8"')


# ----------------------------------------------------------------------------
# Megatron-DeepSpeed (BLOOM)


def test_megatron_deepspeed_tflops_are_claimed_under_the_checkpointing_convention(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "megatron_deepspeed", "megatron_deepspeed_bloom.log")
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    for line in ('preset = megatron_deepspeed_pre371  from assumed "Megatron-DeepSpeed eq. 3 (BLOOM\'s fork, before 2024-08-19): '
                 'the log does not print the version"',
                 'recompute = full   from log "megatron_deepspeed_bloom.log:6"  # checkpoint_activations True',
                 'claim tflops_per_device = 149.77 TFLOP/s  from log "megatron_deepspeed_bloom.log:27"',
                 'claim throughput        = 19.561 sequence/s * 2048 token/sequence  from log "megatron_deepspeed_bloom.log:27"'):
        assert has(text, line), line
    rows = steps_csv(out)
    assert rows[3] == {"step": "85376", "line": "27", "step_time_s": "104.70", "tflops": "149.77",
                       "samples_per_second": "19.561", "global_batch": "2048", "consumed_samples": "158692272",
                       "consumed_tokens": "325001773056", "flags": ""}
    assert assert_citations_hold(out, "megatron_deepspeed_bloom.log") >= 10
    assert_unfilled_fails(out)
    fill(out, {"accelerator": '"A100-SXM4-80GB"', "peak": "catalog"})
    status, doc = check_json(out)
    # EFF102: eq. 3 with f = 4 counts the recomputed forward: hardware FLOPs, said so.  EFF502: 7 samples.
    assert status == 0 and codes(doc) == {"EFF102", "EFF502"}
    c = claim(doc, "tflops_per_device")  # 96·B·s·L·h²·(1 + s/6h + V/16Lh) / (104.70 s x 384) = 149.763 TFLOP/s
    assert c["status"] == "consistent" and c["reconstructed"] == pytest.approx(149.763e12, rel=1e-5)
    assert claim(doc, "throughput")["status"] == "consistent"


# ----------------------------------------------------------------------------
# MLPerf


def test_mllog_import_gives_calendar_target_and_no_convention(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "mllog", "mllog_gpt3.log")
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    for line in ('wall_clock = 2990.000 s   from log "mllog_gpt3.log:8,13 (run_stop time_ms - run_start time_ms)"',
                 'steps      = 384 step     from log "mllog_gpt3.log:12 (samples_count 589824 / global_batch_size 1536)"',
                 'value      = 2.6893            from log "mllog_gpt3.log:12"',
                 'reached_at = 384 step          from log "mllog_gpt3.log:12 (samples_count 589824 / global_batch_size 1536)"',
                 "tracked_stats throughput 5154997.267404211 (line 11)"):
        assert has(text, line), line
    assert "convention" not in text.split("run mllog_gpt3")[1].split("# MLPerf reports")[1].split("model {")[1]
    assert not (tmp_path / "run_steps.csv").exists()  # no step times in an MLPerf log
    assert assert_citations_hold(out, "mllog_gpt3.log") >= 4
    assert_unfilled_fails(out)
    # submission_platform `64xDGXH100` (line 5): the catalog's DGX H100 is the H100-SXM5 (issue 25)
    assert has(text, 'accelerator = "H100-SXM5"   from log "mllog_gpt3.log:5"')
    fill(out, {"kind": "dense_transformer", "layers": "96", "d_model": "12288", "heads": "96", "ffn": "gelu",
               "d_ff": "49152", "vocab": "51200", "count": "512 device",
               "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF101", "EFF605"}


# ----------------------------------------------------------------------------
# NeMo


def test_nemo_progress_bar_updates_are_samples(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "nemo", "nemo_train.log")
    assert status == 0, err
    rows = steps_csv(out)
    assert [r["step"] for r in rows] == [str(s) for s in range(88, 100)]
    assert [r["line"] for r in rows] == ["5"] * 4 + ["6"] * 4 + ["7"] * 4  # carriage-return updates share a line
    assert rows[-1] == {"step": "99", "line": "7", "step_time_s": "3.590", "consumed_samples": "25600.0", "flags": ""}
    text = out.read_text(encoding="utf-8")
    # kept: all 12 (5.402 s is a stall, not a leading sample); median (3.593 + 3.595) / 2 = 3.594; nearest, and
    # earliest of the two, is step 90's 3.595 (line 5)
    assert has(text, 'global_batch = 256 sequence   from log "nemo_train.log:5 (consumed_samples 23296.0 / (global_step 90 + 1))"')
    assert_unfilled_fails(out)
    fill(out, {"kind": "dense_transformer", "layers": "96", "d_model": "18432", "heads": "96  kv_heads = 8",
               "ffn": "swiglu", "d_ff": "73728", "vocab": "256000", "seq_len": "4096 token/sequence",
               "accelerator": '"H100-SXM5-80GB"', "count": "2048 device", "dtype": "bf16", "peak": "catalog"})
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF503"}
    assert the_run(doc)["metrics"]["step_time"]["value"] == pytest.approx(3.594)


# ----------------------------------------------------------------------------
# Outputs: atomic, never over a log, hostile names and contents


def test_a_log_is_never_overwritten_even_with_force(tmp_path: Path) -> None:
    log = tmp_path / "run.eff"
    shutil.copy(LOGS / "nemo_train.log", log)
    before = log.read_bytes()
    proc = run_effspec("import", "nemo", str(log), "-o", str(log), "--force")
    assert proc.returncode == 2 and "is the log being imported" in proc.stderr
    csv_log = tmp_path / "out_steps.csv"
    shutil.copy(LOGS / "nemo_train.log", csv_log)
    proc = run_effspec("import", "nemo", str(csv_log), "-o", str(tmp_path / "out.eff"),
                           "--force")
    assert proc.returncode == 2 and "out_steps.csv: is the log being imported" in proc.stderr
    assert log.read_bytes() == before and csv_log.read_bytes() == (LOGS / "nemo_train.log").read_bytes()
    assert not (tmp_path / "out.eff").exists()


def test_existing_outputs_need_force(tmp_path: Path) -> None:
    out = tmp_path / "run.eff"
    out.write_text("eff 1\n# my filled-in values\n", encoding="utf-8")
    status, err, _ = run_import(tmp_path, "nemo", "nemo_train.log")
    assert status == 2 and "run.eff: exists; pass --force to replace it" in err
    assert out.read_text(encoding="utf-8") == "eff 1\n# my filled-in values\n"
    assert not (tmp_path / "run_steps.csv").exists()
    status, _, _ = run_import(tmp_path, "nemo", "nemo_train.log", "--force")
    assert status == 0 and out.read_text(encoding="utf-8").startswith("eff 1\n\n# Imported by `effspec import nemo`")


def test_hostile_log_names_are_tamed_in_the_spec(tmp_path: Path) -> None:
    name = 'x"\\ }\n run evil { \u202e.log'
    log = tmp_path / name
    shutil.copy(LOGS / "nemo_train.log", log)
    proc = run_effspec("import", "nemo", str(log), "-o", str(tmp_path / "o.eff"))
    assert proc.returncode == 0, proc.stderr
    result = load(tmp_path / "o.eff")
    assert [d.code for d in result.diagnostics if d.code not in ("EFF040",)] == []
    text = (tmp_path / "o.eff").read_text(encoding="utf-8")
    assert "\u202e" not in text and "\\" not in text
    # The name survives only inside strings and comments, with its quote, backslash and line break replaced.
    assert [line for line in text.split("\n") if line.lstrip().startswith("run ")] == ["run x______run_evil {"]
    assert 'from log "x__ }_ run evil { .log:5-7 (12 progress-bar steps)"' in text
    assert (tmp_path / "o_steps.csv").exists()


def test_hostile_log_contents_reach_the_spec_only_as_checked_literals(tmp_path: Path) -> None:
    text = (LOGS / "megatron_timers.log").read_text(encoding="utf-8")
    text = text.replace("  num_layers ...................................... 24",
                        '  num_layers ...................................... 24 } run evil { title = "x"')
    text = text.replace("  seq_length ...................................... 2048",
                        "  seq_length ...................................... 1e400")
    log = tmp_path / "hostile.log"
    log.write_text(text, encoding="utf-8")
    proc = run_effspec("import", "megatron", str(log), "-o", str(tmp_path / "o.eff"))
    assert proc.returncode == 0, proc.stderr
    spec = (tmp_path / "o.eff").read_text(encoding="utf-8")
    assert spec.count("\nrun ") == 1 and "evil {" not in spec
    assert has(spec, "layers          = TODO  # not in the argument dump") and has(spec, "seq_len      = TODO")


# ----------------------------------------------------------------------------
# Round trip: a spec's step times -> a Megatron log -> the same figures


def test_round_trip_from_a_specs_step_times_through_a_megatron_log(tmp_path: Path) -> None:
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_args, megatron_iteration
    finally:
        sys.path.remove(str(LOGS))
    with open(ROOT / "examples" / "llm3b_64_steps.csv", newline="", encoding="utf-8") as fh:
        seconds = [float(r["step_seconds"]) for r in csv.DictReader(fh)]
    # Example A's run, written out the way Megatron-LM prints it (times rounded to 0.1 ms, as it rounds them).
    lines = megatron_args({"num_layers": 32, "hidden_size": 2560, "num_attention_heads": 32, "group_query_attention": True,
                           "num_query_groups": 8, "ffn_hidden_size": 6912, "swiglu": True, "seq_length": 4096,
                           "global_batch_size": 512, "world_size": 64, "bf16": True, "padded_vocab_size": 50304,
                           "log_interval": 1, "untie_embeddings_and_output_weights": False, "micro_batch_size": 8,
                           "data_parallel_size": 64, "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
                           "recompute_granularity": "selective"})
    lines += [megatron_iteration("2026-10-14 08:00:00", i + 1, len(seconds), 512 * (i + 1), s * 1000, None, 3e-4, 512, 2.5)
              for i, s in enumerate(seconds)]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_effspec("import", "megatron", "a.log", "-o", "a.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = steps_csv(tmp_path / "a.eff")
    assert [float(r["step_time_ms"]) / 1000 for r in rows] == pytest.approx(seconds, abs=5e-5)
    fill(tmp_path / "a.eff", {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"})
    _, doc = check_json(tmp_path / "a.eff")
    imported = the_run(doc)
    original = the_run(json.loads(run_effspec("check",
                                                  str(ROOT / "examples" / "example_a_measured.eff"), "--format", "json").stdout)[0])
    # Example A drops 20 warm-up steps by declaration; the importer's rule drops the leading samples more than
    # 1.5x off the median (the first 3 here).  On the same samples, the same figures: with Example A's warm-up
    # written in, the step statistics agree to the log's 0.1 ms rounding.
    assert imported["step_statistics"]["warmup_excluded"] == 3 and seconds[2] > 1.5 * sorted(seconds)[260] > seconds[3]
    text = (tmp_path / "a.eff").read_text(encoding="utf-8")
    (tmp_path / "a.eff").write_text(re.sub(r"warmup    = 3 step", "warmup    = 20 step", text), encoding="utf-8")
    _, doc = check_json(tmp_path / "a.eff")
    imported = the_run(doc)
    assert imported["step_statistics"]["count"] == original["step_statistics"]["count"] == 500
    for key in ("median", "mean", "p5", "p95", "p99", "min", "max", "stall_steps"):
        assert imported["step_statistics"][key] == pytest.approx(original["step_statistics"][key], abs=1e-4), key
    # What a Megatron-LM log cannot carry, written back from Example A: its padded and dropped tokens (line 31-32),
    # its own FLOP convention (palm, causal; the import states Megatron-LM's) and its measured peak.  Then every
    # figure Example A has is the imported run's: MFU, HFU, throughput, FLOPs per token and per step, the peak.
    text = (tmp_path / "a.eff").read_text(encoding="utf-8")
    text = re.sub(r"  convention \{.*?\}\n", "  convention {\n    preset = palm\n    attention = causal\n"
                  "    recompute = excluded\n  }\n", text, flags=re.S)
    text = re.sub(r"(    global_batch = 512 sequence[^\n]*\n)", r"\1    padded_tokens = 61440 token\n    dropped_tokens = 0 token\n", text)
    text = re.sub(r"(    peak        = catalog[^\n]*\n)", r"\1    measured_peak = 780 TFLOP/s\n", text)
    (tmp_path / "a.eff").write_text(text, encoding="utf-8")
    status, doc = check_json(tmp_path / "a.eff")
    imported = the_run(doc)
    assert status == 0
    assert set(imported["metrics"]) >= set(original["metrics"]) >= {"mfu", "hfu", "valid_tokens_per_second", "flops_per_token"}
    for key, metric in original["metrics"].items():
        assert imported["metrics"][key]["value"] == pytest.approx(metric["value"], rel=1e-4), key
    # MFU by hand.  Per layer: attention 2560² (Q) + 2·2560·(8·80) (K, V) + 2560² (O) = 16,384,000; SwiGLU
    # 3·2560·6912 = 53,084,160; x 32 layers + the logits 2560·50304 = N = 2,351,759,360.  PaLM with causal attention:
    # 6N + 12·L·d·s / 2 = 14,110,556,160 + 2,013,265,920 = 16,123,822,080 FLOP/token, over 4096·512 - 61,440 =
    # 2,035,712 valid tokens, at the median kept step, on 64 x 989.4 TFLOP/s (H100 SXM5 dense BF16).
    per_token = 6 * (32 * (2 * 2560**2 + 2 * 2560 * 640 + 3 * 2560 * 6912) + 2560 * 50304) + 12 * 32 * 2560 * 4096 // 2
    assert per_token == 16_123_822_080
    mfu = per_token * 2_035_712 / (statistics.median(seconds[20:]) * 64 * 989.4e12)
    assert imported["metrics"]["mfu"]["value"] == pytest.approx(mfu, rel=1e-4) and round(mfu, 4) == 0.4712


def test_the_fixtures_are_what_make_fixtures_writes() -> None:
    """The committed logs are reproducible: the seeded script regenerates them byte for byte."""
    sys.path.insert(0, str(LOGS))
    try:
        import make_fixtures
    finally:
        sys.path.remove(str(LOGS))
    for name, make in make_fixtures.FIXTURES.items():
        assert (LOGS / name).read_bytes() == make().encode("utf-8"), name
    assert (LOGS / "megatron_broken.log").read_bytes() == make_fixtures.megatron_broken().encode("utf-8", errors="surrogateescape")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_are_a_fresh_import_plus_their_fill_ins(tmp_path: Path, name: str) -> None:
    made = make_example(name, tmp_path, run_effspec)
    assert made.read_bytes() == (ROOT / "examples" / f"{name}.eff").read_bytes()
    for written in [*tmp_path.glob("*.csv"), tmp_path / f"{name}_report.md"]:
        assert written.read_bytes() == (ROOT / "examples" / written.name).read_bytes(), written.name
    # The findings examples/README.md explains, and every claim reproduced.
    status, doc = check_json(made)
    assert status == 0 and codes(doc) == EXAMPLE_FINDINGS[name]
    assert {c["status"] for c in the_run(doc)["claims"].values()} <= {"consistent", "unrecoverable"}


EXAMPLE_FINDINGS = {"megatron_import": {"EFF503"}, "torchtitan_import": {"EFF602", "EFF605"},
                    "maxtext_import": {"EFF502"}}


# ----------------------------------------------------------------------------
# Every format: every CSV sample against its log line, every claim against the line it cites.
# The expectations are read from the log by the regular expressions below (written here, from the
# fixtures' format strings, not from the importers), and the claims' lines are the hand-derived
# medians noted beside each case.

_MEGATRON = r"iteration\s+(?P<step>\d+)/.*elapsed time per iteration \(ms\): (?P<step_time_ms>[0-9.]+)"
SAMPLES: dict[str, tuple[str, str, dict[str, tuple[str, int]]]] = {
    # log: (format, one step's pattern, {claim: (printed literal, cited line)})
    # 12 iterations; kept 2-12, median 15800.0 ms at iteration 5 (line 54).
    "megatron_train.log": ("megatron", _MEGATRON + r".*throughput per GPU \(TFLOP/s/GPU\): (?P<tflops_per_gpu>[0-9.]+)"
                           r".*global batch size:\s+(?P<global_batch>\d+)", {"tflops_per_device": ("490.0", 54)}),
    # no throughput printed: no claim.
    "megatron_timers.log": ("megatron", r"consumed samples:\s+(?P<consumed_samples>\d+) \| " + _MEGATRON.split(".*", 1)[1]
                            + r".*global batch size:\s+(?P<global_batch>\d+)", {}),
    # 7 iterations (none warm-up), median 104.70 s at iteration 85376 (line 27), the verbatim line.
    "megatron_deepspeed_bloom.log": ("megatron_deepspeed", r"iteration\s+(?P<step>\d+)/.*elapsed time per iteration \(s\): "
                                     r"(?P<step_time_s>[0-9.]+).*global batch size: (?P<global_batch>\d+).*samples per second: "
                                     r"(?P<samples_per_second>[0-9.]+) \| TFLOPs: (?P<tflops>[0-9.]+)",
                                     {"tflops_per_device": ("149.77", 27), "throughput": ("19.561", 27)}),
    # kept: 12 after iter 0; median 420.395 ms between iter 30 (line 26) and iter 120; nanoGPT prints mfu -100.00 %
    # until it has measured 5 iterations, which is no figure (the CSV leaves it empty).
    "nanogpt_train.log": ("nanogpt", r"^iter (?P<step>\d+): .*time (?P<step_time_ms>[0-9.]+)ms, mfu (?P<mfu_percent>-?[0-9.]+)%",
                          {"mfu": ("39.96", 26)}),
    # median 989.44 ms at step 4 (line 24, verbatim); FLOPs per token from line 16.
    "nanochat_train.log": ("nanogpt", r"^step (?P<step>\d+)/.*dt: (?P<step_time_ms>[0-9.]+)ms \| tok/sec: (?P<tok_per_sec>[0-9,]+) "
                           r"\| mfu: (?P<mfu_percent>[0-9.]+)",
                           {"mfu": ("74.13", 24), "throughput": ("529,882", 24), "flops_per_token": ("3.491758e+09", 16)}),
    # rates only; kept 2-10, median tps 9,966 at step 5 (line 12, verbatim).
    "torchtitan_train.log": ("torchtitan", r"step:\s+(?P<step>\d+)\s.*tps: (?P<tps>[0-9,]+)\s+tflops: (?P<tflops>[0-9,.]+)\s+mfu: "
                             r"(?P<mfu>[0-9.]+)%", {"throughput": ("9,966", 12), "tflops_per_device": ("312.06", 12),
                                                     "mfu": ("13.87", 12)}),
    # kept 2-9; median 5.668 s, first at step 5 (line 23); per-step TFLOPs on line 16.
    "maxtext_train.log": ("maxtext", r"^completed step: (?P<step>\d+), seconds: (?P<step_time_s>[0-9.]+), TFLOP/s/device: "
                          r"(?P<tflops>[0-9.]+), Tokens/s/device: (?P<tokens>[0-9.]+)",
                          {"tflops_per_device": ("134.909", 23), "throughput": ("8671.794", 23),
                           "model_flops_per_step": ("764.67", 16)}),
    # 12 updates on 3 physical lines (carriage returns); NeMo prints no rate: no claim.
    "nemo_train.log": ("nemo", r"global_step=(?P<step>\d+)\.00, consumed_samples=(?P<consumed_samples>[0-9.]+), "
                       r"train_step_timing in s=(?P<step_time_s>[0-9.]+)\]", {}),
}


def expected_samples(log: str, pattern: str) -> list[dict[str, str]]:
    """Each step the pattern finds in the log, with its physical line (progress-bar updates split at \\r)."""
    rows = []
    for n, line in enumerate(log_lines(log), 1):
        for segment in line.split("\r"):
            m = re.search(pattern, re.sub(r"\x1b\[[0-9;]*m", "", segment))
            if m:
                fields = {k: v.replace(",", "") for k, v in m.groupdict().items()}
                if "step" in fields:
                    fields["step"] = str(int(fields["step"]))  # nanochat prints 00004
                rows.append({"line": str(n), **fields})
    return rows


def claims_cited(out: Path, log: str) -> dict[str, tuple[str, int]]:
    """Every `claim` line: its name, its first number, and the log line it cites; that line must print the number."""
    lines = log_lines(log)
    found = {}
    for spec_line in out.read_text(encoding="utf-8").split("\n"):
        if not spec_line.lstrip().startswith("claim "):
            continue
        m = re.match(r'\s*claim (\w+)\s+= ([0-9.e+]+) .*from log "' + re.escape(log) + r':(\d+)"', spec_line)
        assert m, f"a claim without its log line: {spec_line}"
        name, number, n = m.group(1), m.group(2), int(m.group(3))
        printed = re.findall(r"[0-9][0-9,]*(?:\.[0-9]+)?(?:e[+-][0-9]+)?", lines[n - 1])
        literal = next((p for p in printed if p.replace(",", "") == number), None)
        assert literal is not None, f"{name}: {number} is not printed on line {n}: {lines[n - 1][:200]}"
        found[name] = (literal, n)
    return found


@pytest.mark.parametrize("log", sorted(SAMPLES))
def test_every_sample_and_every_claim_is_its_log_line(tmp_path: Path, log: str) -> None:
    fmt, pattern, claims = SAMPLES[log]
    status, err, out = run_import(tmp_path, fmt, log)
    assert status == 0, err
    expected = expected_samples(log, pattern)
    assert len(expected) >= 6
    rows = steps_csv(out)
    for row in expected:
        if row.get("mfu_percent") == "-100.00":
            row["mfu_percent"] = ""  # nanoGPT's sentinel before its first measurement
    assert [{k: r[k] for k in expected[0]} for r in rows] == expected
    assert claims_cited(out, log) == claims


def test_every_maxtext_metrics_record_is_its_csv_row(tmp_path: Path) -> None:
    status, _, out = run_import(tmp_path, "maxtext", "maxtext_metrics.jsonl")
    assert status == 0
    expected = []
    for n, line in enumerate(log_lines("maxtext_metrics.jsonl"), 1):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # line 5, cut short (the importer's EFF801)
        expected.append((n, record["step"], record["perf/step_time_seconds"], record["perf/per_device_tflops_per_sec"],
                         record["perf/per_device_tokens_per_sec"]))
    assert len(expected) == 7
    assert [(int(r["line"]), int(r["step"]), float(r["step_time_s"]), float(r["tflops"]), float(r["tokens"]))
            for r in steps_csv(out)] == expected
    # kept: steps 2-6 (5.40205 5.65801 5.66799 5.66802 5.66912): the median is step 6's 5.66799 s, line 8.
    # The model TFLOP per device and step (`perf/per_device_tflops`, the console's `Total TFLOPs`), from the first
    # record that gives it (line 1; every record gives the same 764.67).
    assert claims_cited(out, "maxtext_metrics.jsonl") == {"tflops_per_device": ("134.9139", 8),
                                                          "throughput": ("8671.857219225863", 8),
                                                          "model_flops_per_step": ("764.67", 1)}


def test_mllog_has_no_step_samples_and_no_unit_for_its_throughput(tmp_path: Path) -> None:
    """MLPerf's tracked_stats throughput has no stated unit: it is offered as a claim to add, not claimed."""
    status, _, out = run_import(tmp_path, "mllog", "mllog_gpt3.log")
    assert status == 0
    assert claims_cited(out, "mllog_gpt3.log") == {}
    value = json.loads(log_lines("mllog_gpt3.log")[10].split(":::MLLOG ", 1)[1])["value"]["throughput"]
    assert has(out.read_text(encoding="utf-8"), f'add `claim throughput = {value} token/s  from log "mllog_gpt3.log:11"`')


# ----------------------------------------------------------------------------
# Hostile logs: huge lines, binary, NUL and non-UTF-8 bytes, terminal escapes, symlinks.
# Each is an EFF801 at FILE:LINE:COLUMN (the import goes on) or a one-line refusal (exit 2); never a traceback.


def test_hostile_bytes_are_coded_at_their_line_and_the_samples_survive(tmp_path: Path) -> None:
    lines = (LOGS / "megatron_train.log").read_bytes().split(b"\n")
    iteration = {int(re.search(rb" iteration +(\d+)/", ln).group(1)): i for i, ln in enumerate(lines) if b" iteration " in ln}
    lines[iteration[3]] = lines[iteration[3]].replace(b" iteration ", b" iteration\x00\x00 ", 1)
    lines[iteration[4]] = b"\x1b]0;pwned\x07\x1b[31m" + lines[iteration[4]] + b"\x1b[0m"
    lines.insert(iteration[8] + 1, b"\xff\xfebinary \x9c\x80 junk")
    lines.insert(iteration[1], b" [2026-01-16 07:30:00] " + b"x" * 3_000_000)  # 3 MB, no line break
    log = tmp_path / "hostile.log"
    log.write_bytes(b"\n".join(lines))
    found = [(re.search(rb" iteration\x00* +(\d+)/ ", ln), i) for i, ln in enumerate(lines)]
    numbers = {int(m.group(1)): i + 1 for m, i in found if m}
    huge, junk = iteration[1] + 1, iteration[8] + 3  # 1-based, after the two insertions
    proc = run_effspec("import", "megatron", str(log), "-o", "o.eff", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    err = proc.stderr
    assert f"warning[EFF801]: line longer than 1,048,576 bytes: read up to there, the rest skipped\n  --> hostile.log:{huge}:1" in err
    assert f"warning[EFF801]: NUL bytes in the line; read without them\n  --> hostile.log:{numbers[3]}:1" in err
    assert f"warning[EFF801]: bytes that are not UTF-8 (0xff); read with U+FFFD in their place\n  --> hostile.log:{junk}:1" in err
    assert "\x1b" not in err and f"hostile.log:{numbers[4]}:" not in err  # colour and title codes are stripped silently
    assert "3 log line(s) skipped or repaired" in err
    # The twelve samples are the fixture's, each on its (shifted) line.
    original = {n: re.search(r"elapsed time per iteration \(ms\): ([0-9.]+)", line).group(1)
                for n, line in enumerate(log_lines("megatron_train.log"), 1) if " iteration " in line}
    rows = steps_csv(tmp_path / "o.eff")
    assert [r["step_time_ms"] for r in rows] == list(original.values())
    assert [int(r["line"]) for r in rows] == [numbers[s] for s in range(1, 13)]
    spec = (tmp_path / "o.eff").read_text(encoding="utf-8")
    assert "\x1b" not in spec and "\x00" not in spec and "pwned" not in spec
    assert has(spec, f'claim tflops_per_device = 490.0 TFLOP/s  from log "hostile.log:{numbers[5]}"')


def test_a_binary_file_is_refused_naming_what_was_looked_for(tmp_path: Path) -> None:
    import random

    rng = random.Random(13)
    blob = tmp_path / "weights.bin"
    blob.write_bytes(bytes(rng.randrange(256) for _ in range(200_000)))
    status, err, out = run_import(tmp_path, "auto", str(blob))
    assert status == 2 and "Traceback" not in err
    assert "weights.bin: no line of a known training log in its first lines; formats tried: " in err
    status, err, out = run_import(tmp_path, "megatron", str(blob))
    assert status == 2 and "Traceback" not in err and "weights.bin: no Megatron-LM training line found" in err
    assert re.search(r"warning\[EFF801\]: bytes that are not UTF-8 \(0x[0-9a-f]{2}\); read with U\+FFFD in their place\n"
                     r" +--> weights\.bin:1:\d+", err)
    assert not out.exists()


def test_a_log_named_through_a_symlink_is_read_and_cited_by_the_name_given(tmp_path: Path) -> None:
    (tmp_path / "link.log").symlink_to(LOGS / "nemo_train.log")
    proc = run_effspec("import", "nemo", "link.log", "-o", "o.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert 'from log "link.log:5-7 (12 progress-bar steps)"' in (tmp_path / "o.eff").read_text(encoding="utf-8")


@pytest.mark.parametrize(("target", "message"), [
    ("nowhere.log", "is a symlink that leads nowhere (its target is missing, or links loop)"),
    ("loop.log", "is a symlink that leads nowhere (its target is missing, or links loop)"),
    ("/proc/self/environ", "lies in a system pseudo-filesystem (devices, /proc and /sys are never read)"),
    ("/dev/zero", "lies in a system pseudo-filesystem (devices, /proc and /sys are never read)"),
    (".", "is a directory"),
])
def test_symlinked_logs_that_lead_nowhere_or_to_system_files_are_refused(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "loop.log").symlink_to("link.log")
    (tmp_path / "link.log").symlink_to(target)
    proc = run_effspec("import", "auto", "link.log", "-o", "o.eff", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, f"effspec: link.log: {message}\n")
    assert not (tmp_path / "o.eff").exists()


def test_a_symlinked_output_is_replaced_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    (tmp_path / "o.eff").symlink_to(victim)
    (tmp_path / "o_steps.csv").symlink_to(victim)
    proc = run_effspec("import", "nemo", str(LOGS / "nemo_train.log"), "-o", "o.eff",
                           "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    assert not (tmp_path / "o.eff").is_symlink() and not (tmp_path / "o_steps.csv").is_symlink()
    assert (tmp_path / "o_steps.csv").read_text(encoding="utf-8").startswith("step,line,step_time_s,")
    # An output that leads to the log itself is refused, and the log is left as it was.
    log = tmp_path / "copy.log"
    shutil.copy(LOGS / "nemo_train.log", log)
    (tmp_path / "p_steps.csv").symlink_to(log)
    proc = run_effspec("import", "nemo", "copy.log", "-o", "p.eff", "--force", cwd=tmp_path)
    assert proc.returncode == 2 and "p_steps.csv: is the log being imported" in proc.stderr
    assert log.read_bytes() == (LOGS / "nemo_train.log").read_bytes()


# ----------------------------------------------------------------------------
# README: "From a log to an audited report in three commands", run as shown.


def test_readme_three_commands_from_a_log_to_a_report(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From a log to an audited report in three commands\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```console\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2
    shutil.copy(ROOT / "examples" / "megatron_import.log", tmp_path / "train.log")
    shown: list[tuple[str, str]] = []  # (command, its output as shown)
    for block in blocks:
        for part in block.split("$ ")[1:]:
            command, _, output = part.partition("\n")
            shown.append((command, output))
    assert [c for c, _ in shown] == ["effspec import auto train.log -o run.eff", "effspec check run.eff",
                                     "effspec report run.eff -o run.html"]
    for command, output in shown[:2]:
        proc = subprocess.run([sys.executable, "-m", *command.split()], capture_output=True, text=True, cwd=tmp_path)
        assert proc.stdout + proc.stderr == output, command
    assert todo_lines(tmp_path / "run.eff") == [48, 51]
    fill(tmp_path / "run.eff", {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"})
    proc = run_effspec("report", "run.eff", "-o", "run.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "run.md").read_text(encoding="utf-8")
    # As the README says: the claim is consistent (490.0 printed, 490.03 by Megatron-LM's count), and EFF503.
    assert "| `tflops_per_device` | 490 TFLOP/s | 490 TFLOP/s | consistent | inputs |" in report
    assert "**EFF503** warning" in report and "0 errors, 1 warning, 0 info" in report


def test_hostile_output_and_log_names_cannot_drive_the_terminal(tmp_path: Path) -> None:
    name = "o\x1b]0;t\x07\u202e"
    shutil.copy(LOGS / "megatron_broken.log", tmp_path / f"{name}.log")
    proc = run_effspec("import", "megatron", f"{name}.log", "-o", f"{name}.eff", cwd=tmp_path, text=False)
    assert proc.returncode == 0
    err = proc.stderr.decode("utf-8")
    assert not {c for c in err if not (c.isprintable() or c in "\n\t")}, err
    # The CSV's name is made safe (it is quoted inside the spec); OUT's is shown escaped, as it is on disk.
    assert "wrote o__0_t_steps.csv\nwrote o\\x1b]0;t\\x07\\u202e.eff\n" in err
    # A refusal names the path the same way.
    proc = run_effspec("import", "megatron", f"{name}.log", "-o", f"{name}.eff", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    assert proc.stderr.decode("utf-8") == ("effspec: o__0_t_steps.csv: exists; pass --force to replace it "
                                           "(it may hold values you filled in)\n")


# ----------------------------------------------------------------------------
# The long synthetic logs (make_fixtures.LONG, seeded): 320 steps each, warm-up spikes at steps 1-3, a stall at
# step 150, and a restart after step 220 from the step-200 checkpoint.

LONG = {"megatron_long.log": "megatron_train.log", "torchtitan_long.log": "torchtitan_train.log",
        "maxtext_long.log": "maxtext_train.log", "nanogpt_long.log": "nanogpt_train.log",
        "megatron_deepspeed_long.log": "megatron_deepspeed_bloom.log", "nemo_long.log": "nemo_train.log"}


@pytest.mark.parametrize("log", sorted(LONG))
def test_long_logs_every_sample_warmup_and_restart(tmp_path: Path, log: str) -> None:
    fmt, pattern, _ = SAMPLES[LONG[log]]
    status, err, out = run_import(tmp_path, "auto", log)
    assert status == 0, err
    assert f"1 run(s) ({fmt}), 320 step sample(s), 0 log line(s) skipped or repaired" in err
    expected = expected_samples(log, pattern)
    for row in expected:
        if row.get("mfu_percent") == "-100.00":
            row["mfu_percent"] = ""
    rows = steps_csv(out)
    assert len(expected) == len(rows) == 320
    assert [{k: r[k] for k in expected[0]} for r in rows] == expected
    # The step number goes back once, after the 220th sample (steps 201-300 again): that row, and only it, says restart.
    first = 0 if fmt in ("maxtext", "nemo") else 1  # MaxText and NeMo's global_step count from 0
    steps = [int(r["step"]) for r in rows]
    assert steps == list(range(first, first + 220)) + list(range(first + 200, first + 300))
    assert [i for i, r in enumerate(rows) if "restart" in r["flags"]] == [220]
    # The warm-up: the three leading spikes (30x, 3x, 1.8x the base), each over 1.5x the median of all 320.
    assert [i for i, r in enumerate(rows) if "warmup" in r["flags"]] == [0, 1, 2]
    text = out.read_text(encoding="utf-8")
    # torchtitan prints rates, not step times: no timing block, the warm-up is said in a comment.
    warmup = "warm-up lines (first 3) are flagged in the CSV" if fmt == "torchtitan" else "warmup    = 3 step"
    assert warmup in text and "1 line(s) flagged restart (column `flags`)" in text
    assert len(claims_cited(out, log)) == len(SAMPLES[LONG[log]][2])  # each claim on the line it cites


def test_the_long_logs_are_seeded() -> None:
    sys.path.insert(0, str(LOGS))
    try:
        import make_fixtures
    finally:
        sys.path.remove(str(LOGS))
    assert set(LONG) == set(make_fixtures.LONG)
    assert make_fixtures.long_times(7, 1.0) == make_fixtures.long_times(7, 1.0) != make_fixtures.long_times(8, 1.0)


# ----------------------------------------------------------------------------
# A large log is streamed: memory does not grow with the log.

_RSS = f"""
import sys
from effspec.cli import main
status = main(["import", "megatron", sys.argv[1], "-o", sys.argv[2]])
print(status, {PEAK_KB})
"""


def _big_megatron_log(path: Path, lines: int) -> None:
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_args, megatron_iteration
    finally:
        sys.path.remove(str(LOGS))
    head = megatron_args({"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "world_size": 8, "log_interval": 1})
    template = megatron_iteration("2026-01-01 00:00:00", 999_999_999, 999_999_999, 8, 1234.5, 10.0, 1e-4, 8, 2.0)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(head) + "\n")
        for i in range(1, lines + 1):
            fh.write(template.replace("999999999/999999999", f"{i:9d}/{lines:9d}", 1) + "\n")


def test_a_large_log_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    peaks = {}
    for lines in (20_000, 160_000):
        log = tmp_path / f"big{lines}.log"
        _big_megatron_log(log, lines)
        proc = subprocess.run([sys.executable, "-c", _RSS, str(log), str(tmp_path / f"big{lines}.eff")],
                              capture_output=True, text=True, timeout=600)
        status, rss_kib = proc.stdout.split()
        assert status == "0", proc.stderr
        peaks[lines] = int(rss_kib) / 1024
        with open(tmp_path / f"big{lines}_steps.csv", encoding="utf-8") as fh:
            assert sum(1 for _ in fh) == lines + 1
    size = (tmp_path / "big160000.log").stat().st_size
    assert size > 50 * 2**20  # over 50 MB, 8 times the smaller log
    # 140,000 more samples (about 50 MB more log) cost under 20 MB (measured: 12.5, about 90 bytes a sample: three
    # numbers in arrays, the figures spooled to disk), not the log's size.
    assert peaks[160_000] - peaks[20_000] < 20, peaks


# ----------------------------------------------------------------------------
# torchtitan's TOML config (--config): what the console log does not print, each value citing its config line.


def test_torchtitan_config_fills_the_layout_recompute_and_dtype(tmp_path: Path) -> None:
    status, err, out = run_import(tmp_path, "torchtitan", "torchtitan_train.log", "--config", str(LOGS / "torchtitan_train.toml"))
    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    toml = (LOGS / "torchtitan_train.toml").read_text(encoding="utf-8").split("\n")
    # By hand from the fixture: [parallelism] is lines 29-34, [activation_checkpoint] mode line 37, [training]'s
    # mixed_precision_param line 27, [model] name line 14; dp = shard 8 (line 31) x replicate 1 (line 30).
    for key, n in (("tensor_parallel_degree = 1", 32), ("pipeline_parallel_degree = 1", 33), ("context_parallel_degree = 1", 34),
                   ("data_parallel_shard_degree = 8", 31), ("data_parallel_replicate_degree = 1", 30),
                   ('mode = "selective"', 37), ('mixed_precision_param = "bfloat16"', 27), ('name = "qwen3"', 14)):
        assert toml[n - 1].startswith(key), (n, toml[n - 1])
    for line in ('tp        = 1           from log "torchtitan_train.toml:32"',
                 'pp        = 1           from log "torchtitan_train.toml:33"',
                 'cp        = 1           from log "torchtitan_train.toml:34"',
                 'dp        = 8           from log "torchtitan_train.toml:31,30 (data_parallel_shard_degree x '
                 'data_parallel_replicate_degree)"',
                 'recompute = selective   from log "torchtitan_train.toml:37"',
                 'dtype       = bf16               from log "torchtitan_train.toml:27"',
                 "Model qwen3 4B (torchtitan_train.toml:14)",
                 # The log printed seq_len and the global batch (line 6): the log, what ran, is kept over the config.
                 'seq_len      = 4096 token/sequence   from log "torchtitan_train.log:6"'):
        assert has(text, line), line
    assert_unfilled_fails(out)
    fill(out, {k: v for k, v in QWEN3_4B_LIKE.items() if k != "dtype"})
    status, doc = check_json(out)
    assert status == 0 and codes(doc) == {"EFF602", "EFF605"}  # 1 x 1 x 1 x 8 = the 8 devices: no EFF205
    assert claim(doc, "tflops_per_device")["status"] == "consistent"


def test_a_config_that_does_not_parse_is_eff801_at_its_line_and_the_import_goes_on(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[parallelism]\ntensor_parallel_degree = 2\npipeline_parallel_degree = = 1\n", encoding="utf-8")
    status, err, out = run_import(tmp_path, "torchtitan", "torchtitan_train.log", "--config", str(bad))
    assert status == 0 and "Traceback" not in err
    assert re.search(r"warning\[EFF801\]: config that does not parse as TOML \(.*\); not read\n +--> bad\.toml:3:\d+", err), err
    assert "parallelism {" not in out.read_text(encoding="utf-8")
    status, err, _ = run_import(tmp_path, "nemo", "nemo_train.log", "--config", str(bad), out="n.eff")
    assert status == 2 and "format `nemo` reads no config file (--config); formats that do: torchtitan" in err


def test_megatron_skipped_and_nan_iterations_are_flagged(tmp_path: Path) -> None:
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_iteration
    finally:
        sys.path.remove(str(LOGS))
    # Iteration 3 says `number of skipped iterations:   1` (a loss-scale overflow), iteration 5 `number of nan
    # iterations:   1`; the others 0.
    body = [megatron_iteration("2026-01-01 00:00:00", it, 6, 8 * it, 100.0, 1.0, 1e-4, 8, 2.0,
                               skipped=int(it == 3), nan=int(it == 5)) for it in range(1, 7)]
    log = _megatron_log(tmp_path, body)
    proc = run_effspec("import", "megatron", str(log), "-o", "o.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [(r["step"], r["flags"]) for r in steps_csv(tmp_path / "o.eff")] == [
        ("1", ""), ("2", ""), ("3", "skipped"), ("4", ""), ("5", "nan"), ("6", "")]
    assert "In the steps CSV: 1 line(s) flagged skipped, 1 line(s) flagged nan (column `flags`); they stay in the samples." \
        in (tmp_path / "o.eff").read_text(encoding="utf-8")


@pytest.mark.parametrize("failing_call", [1, 2])  # 1: the CSV's head, checked before anything is written; 2: its write
def test_a_failed_write_leaves_every_old_output_as_it_was(tmp_path: Path, monkeypatch, capsys, failing_call: int) -> None:
    """Outputs are replaced atomically (effspec.atomic): the CSVs first, then OUT, each complete or not at all."""
    import effspec.importers.writer as writer

    out, csv_file = tmp_path / "run.eff", tmp_path / "run_steps.csv"
    out.write_text("eff 1\n# my filled-in values\n", encoding="utf-8")
    csv_file.write_text("old,csv\n", encoding="utf-8")
    real, calls = writer._csv, []

    def failing(rows):
        calls.append(1)
        chunks = real(rows)
        yield next(chunks)
        if len(calls) == failing_call:
            raise OSError(28, "No space left on device", str(csv_file))
        yield from chunks

    monkeypatch.setattr(writer, "_csv", failing)
    status = main(["import", "nemo", str(LOGS / "nemo_train.log"), "-o", str(out), "--force"])
    assert status == 2
    assert "run_steps.csv: cannot write (No space left on device)" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "eff 1\n# my filled-in values\n"
    assert csv_file.read_text(encoding="utf-8") == "old,csv\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.eff", "run_steps.csv"]  # no temporary file left
    assert len(calls) == failing_call


# ----------------------------------------------------------------------------
# Fuzz: fragments of every fixture's lines, cut, spliced, with hostile bytes between; never a traceback, and
# whatever the import writes compiles (only EFF040 on its TODO lines).

_FRAGMENTS = sorted({line for log in sorted(SAMPLES) + ["mllog_gpt3.log", "megatron_timers.log"]
                     for line in (LOGS / log).read_bytes().split(b"\n")[:80] if line and not line.startswith(b"#")})
_NOISE = [b"\x00", b"\xff\xfe", b"\x1b[31m", b"\x1b]0;t\x07", b"\r", b"|", b"  ", b"}", b'"', b"\\", b"1e400", b"nan",
          b"-1", b"\xe2\x80\xae", b"[rank1]:", b":::MLLOG {", b"9" * 30]


@st.composite
def _hostile_log(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 25))):
        line = draw(st.sampled_from(_FRAGMENTS))
        if draw(st.booleans()):
            cut = draw(st.integers(0, len(line)))
            line = line[:cut] + draw(st.sampled_from(_NOISE)) + line[cut + draw(st.integers(0, 8)):]
        lines.append(line)
    return b"\n".join(lines)


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=_hostile_log(), fmt=st.sampled_from(["auto", *FORMATS]))
def test_fuzzed_logs_import_or_refuse_and_what_is_written_compiles(tmp_path_factory, data: bytes, fmt: str) -> None:
    from effspec import check_text
    from effspec.importers import ImportFailure, import_logs
    from effspec.importers.writer import render

    folder = tmp_path_factory.mktemp("fuzz")
    log = folder / "f.log"
    log.write_bytes(data)
    try:
        result = import_logs(fmt, [str(log)])
    except ImportFailure:
        return  # exit 2, with its message
    files = render(str(folder / "o.eff"), result.runs, f"effspec import {fmt}")
    for f in files[:-1]:
        Path(f.path).write_bytes(b"".join(f.chunks()))
    text = b"".join(files[-1].chunks()).decode("utf-8")
    check = check_text(text, file="o.eff", folder=str(folder))
    assert [d.code for d in check.diagnostics if d.code < "EFF100" and d.code != "EFF040"] == [], text
    assert all(d.code in ("EFF801", "EFF805", "EFF806") and d.span is not None and d.span.line >= 1 for d in result.diagnostics)


@pytest.mark.parametrize(("fmt", "log", "version", "preset"), [
    ("megatron", "megatron_train.log", None, "megatron_lm"),
    ("megatron", "megatron_train.log", "2025-03-06", "megatron_lm"),
    ("megatron", "megatron_train.log", "2025-03-05", "megatron_lm_2024"),
    ("megatron", "megatron_train.log", "2024-03-25", "megatron_lm_2024"),
    ("megatron", "megatron_train.log", "2024-01", "megatron_lm_2023"),
    ("megatron", "megatron_train.log", "megatron_lm_2023", "megatron_lm_2023"),
    ("megatron_deepspeed", "megatron_deepspeed_bloom.log", None, "megatron_deepspeed_pre371"),
    ("megatron_deepspeed", "megatron_deepspeed_bloom.log", "2024-08-19", "megatron_deepspeed"),
    ("maxtext", "maxtext_train.log", None, "maxtext"),
    ("maxtext", "maxtext_train.log", "2025-06", "maxtext_pre1988"),
    ("nemo", "nemo_train.log", None, "nemo"),
    ("nemo", "nemo_train.log", "2025-08-08", "nemo_pre14424"),
    ("torchtitan", "torchtitan_train.log", None, "torchtitan"),
    ("nanogpt", "nanogpt_train.log", None, "nanogpt"),
])
def test_the_convention_is_the_frameworks_preset_at_its_version(tmp_path: Path, fmt: str, log: str, version: str | None,
                                                                 preset: str) -> None:
    """The version boundaries are the upstream commits' dates (spec/importers.md's table); no version: stated as assumed."""
    status, err, out = run_import(tmp_path, fmt, log, *(["--framework-version", version] if version else []))
    assert status == 0, err
    written = re.findall(r"^  convention \{ preset = (\w+) from (assumed|paper|log) ", out.read_text(encoding="utf-8"), flags=re.M)
    # megatron_train.log's lines are dated (2026-01-16): the date decides when no flag is given (issue 25)
    origin = "paper" if version is not None else "log" if log == "megatron_train.log" else "assumed"
    assert written == [(preset, origin)]


def test_maxtext_config_params_give_the_mla_moe_shape_and_the_claims_agree(tmp_path: Path) -> None:
    """The docs' log with the rest of its `Config param` lines: deepseek2-16b's, from
    AI-Hypercomputer/maxtext src/MaxText/configs/models/deepseek2-16b.yml (48445cf), in pyconfig's format."""
    params = {"base_num_query_heads": "16", "base_num_kv_heads": "16", "base_mlp_dim": "10944", "base_moe_mlp_dim": "1408",
              "base_num_decoder_layers": "27", "first_num_dense_layers": "1", "mlp_activations": "['silu', 'linear']",
              "vocab_size": "102400", "num_experts": "64", "num_experts_per_tok": "6", "shared_experts": "2",
              "attention_type": "mla", "q_lora_rank": "0", "kv_lora_rank": "512", "qk_nope_head_dim": "128",
              "qk_rope_head_dim": "64", "v_head_dim": "128"}
    lines = log_lines("maxtext_train.log")
    at = max(i for i, line in enumerate(lines) if line.startswith("Config param "))  # line 9, max_target_length
    lines[at + 1:at + 1] = [f"Config param {k}: {v}" for k, v in params.items()]
    (tmp_path / "deepseek2.log").write_text("\n".join(lines), encoding="utf-8")
    line_of = {k: at + 2 + i for i, k in enumerate(params)}  # 1-based: the inserted lines follow line at + 1
    proc = run_effspec("import", "maxtext", "deepseek2.log", "-o", "d.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "d.eff").read_text(encoding="utf-8")
    for key, name, value in (("kv_lora_rank", "kv_lora_rank", "512"), ("qk_rope_head_dim", "qk_rope_head_dim", "64"),
                             ("v_head_dim", "v_head_dim", "128"), ("q_lora_rank", "q_lora_rank", "0"),
                             ("shared_experts", "shared_experts", "2"), ("experts", "num_experts", "64"),
                             ("layers", "base_num_decoder_layers", "27"), ("heads", "base_num_query_heads", "16")):
        assert re.search(rf"^    {key} +=  ?{value} +from log \"deepseek2\.log:{line_of[name]}\"", text, re.M), key
    # 27 decoder layers, the first dense: 26 MoE layers, citing both lines.
    assert re.search(rf'moe_layers += 26 +from log "deepseek2\.log:{line_of["base_num_decoder_layers"]},'
                     rf'{line_of["first_num_dense_layers"]} \(base_num_decoder_layers - first_num_dense_layers\)"', text)
    assert todo_lines(tmp_path / "d.eff") and "plain multi-head attention is counted" not in text
    fill(tmp_path / "d.eff", {"dtype": "bf16", "peak": "459 TFLOP/s"})
    status, doc = check_json(tmp_path / "d.eff")
    assert status == 0 and codes(doc) == {"EFF502"}  # "TPU v5" written as the v5p it is: its 459 is the catalog's
    # With MLA counted, effspec's FLOPs per token are MaxText's own: 764.67 TFLOP per device per step over
    # 24 x 2048 tokens per device = 15.557 GFLOP/token; all three claims agree.
    assert the_run(doc)["metrics"]["flops_per_token"]["value"] == pytest.approx(764.67e12 / (24 * 2048), rel=1e-4)
    assert {k: v["status"] for k, v in the_run(doc)["claims"].items()} == dict.fromkeys(
        ("tflops_per_device", "throughput", "model_flops_per_step"), "consistent")


def test_megatron_mla_moe_mtp_dump_gives_deepseek_v3s_shape(tmp_path: Path) -> None:
    """A DeepSeek-V3 argument dump (Megatron-LM's MLA, MoE and MTP arguments) imports to the shape that
    examples/deepseek_v3.eff declares from the technical report, key for key."""
    sys.path.insert(0, str(LOGS))
    try:
        from make_fixtures import megatron_args, megatron_iteration
    finally:
        sys.path.remove(str(LOGS))
    dump = {"num_layers": 61, "hidden_size": 7168, "num_attention_heads": 128, "multi_latent_attention": True,
            "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128,
            "group_query_attention": False, "ffn_hidden_size": 18432, "swiglu": True, "num_experts": 256,
            "moe_router_topk": 8, "moe_ffn_hidden_size": 2048, "moe_shared_expert_intermediate_size": 2048,
            "moe_layer_freq": "([0]*3+[1]*58)", "mtp_num_layers": 1, "padded_vocab_size": 129280, "seq_length": 4096,
            "global_batch_size": 15360, "world_size": 2048, "untie_embeddings_and_output_weights": True, "log_interval": 1}
    lines = megatron_args(dump)
    lines += [megatron_iteration("2026-01-01 00:00:00", it, 9, 15360 * it, 19910.0, None, 1e-4, 15360, 2.0) for it in range(1, 8)]
    (tmp_path / "v3.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    line_of = {row.split()[0]: n for n, row in enumerate(lines, 1) if row.startswith("  ")}
    proc = run_effspec("import", "megatron", "v3.log", "-o", "v3.eff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "v3.eff").read_text(encoding="utf-8")
    expected = {"q_lora_rank": ("1536", "q_lora_rank"), "kv_lora_rank": ("512", "kv_lora_rank"),
                "qk_nope_head_dim": ("128", "qk_head_dim"), "qk_rope_head_dim": ("64", "qk_pos_emb_head_dim"),
                "v_head_dim": ("128", "v_head_dim"), "mtp_depth": ("1", "mtp_num_layers"), "moe_layers": ("58", "moe_layer_freq"),
                "experts": ("256", "num_experts"), "top_k": ("8", "moe_router_topk"), "d_ff_expert": ("2048", "moe_ffn_hidden_size")}
    for key, (value, arg) in expected.items():
        assert re.search(rf'^    {key} += {value} +from log "v3\.log:{line_of[arg]}"', text, re.M), key
    assert re.search(rf'shared_experts += 1 +from log "v3\.log:{line_of["moe_shared_expert_intermediate_size"]},'
                     rf'{line_of["moe_ffn_hidden_size"]} ', text)
    assert not re.search(r"^    (kv_heads|head_dim) ", text, re.M)  # GQA's keys do not apply to MLA
    # The same shape as examples/deepseek_v3.eff under its convention (palm, causal): the same FLOPs per token.
    text = re.sub(r"  convention \{.*?\}\n", "  convention { preset = palm  attention = causal }\n", text, flags=re.S)
    (tmp_path / "v3.eff").write_text(text, encoding="utf-8")
    fill(tmp_path / "v3.eff", {"accelerator": '"H800-SXM5-80GB"', "dtype": "fp8", "peak": "catalog"})
    status, doc = check_json(tmp_path / "v3.eff")
    assert status in (0, 1) and not [c for c in codes(doc) if c < "EFF100"]
    _, example = check_json(ROOT / "examples" / "deepseek_v3.eff")
    reference = example["runs"]["deepseek_v3"]["metrics"]["flops_per_token"]["value"]
    assert reference == pytest.approx(260.64e9, rel=1e-4)  # examples/README.md: 260.64 GFLOP/token
    assert the_run(doc)["metrics"]["flops_per_token"]["value"] == pytest.approx(reference, rel=1e-12)


def test_the_cli_shows_a_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    import pty

    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "effspec", "import", "nemo", str(LOGS / "nemo_long.log"), "-o", "t.eff"],
                              stdout=subprocess.DEVNULL, stderr=secondary, cwd=tmp_path, timeout=120)
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert proc.returncode == 0
    assert b"\rreading nemo_long.log:   0 %" in shown and b"\rreading nemo_long.log: 100 %\r\n" in shown
    _, err, _ = run_import(tmp_path, "nemo", "nemo_long.log", out="u.eff")  # standard error a pipe: no bar
    assert "reading nemo_long.log" not in err


@pytest.mark.parametrize(("flag", "recompute"), [("True", "full"), ("False", "none")])
def test_megatron_lm_reads_checkpoint_activations_as_full_recomputation(tmp_path: Path, flag: str, recompute: str) -> None:
    """Megatron-LM before recompute_granularity (2022) printed `checkpoint_activations`: True is full recomputation
    (issue 25). A `recompute_granularity None` beside it does not override it."""
    text = (LOGS / "megatron_train.log").read_text(encoding="utf-8")
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "recompute_granularity ......" in s)
    text = text.replace("  recompute_granularity ........................... None\n",
                        "  recompute_granularity ........................... None\n"
                        f"  checkpoint_activations .......................... {flag}\n", 1)
    (tmp_path / "old.log").write_text(text, encoding="utf-8")
    target = tmp_path / "run.eff"
    proc = run_effspec("import", "megatron", str(tmp_path / "old.log"), "-o", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = target.read_text(encoding="utf-8")
    assert re.search(rf'recompute += {recompute} +from log "old.log:{line + 1}" +# checkpoint_activations {flag}', written), \
        [s for s in written.splitlines() if "recompute" in s]


@pytest.mark.parametrize("prefix", ["2024-05-01 12:00:03,512 INFO ", "[rank0]: ", "> ", "train.py | "])
def test_nanogpt_lines_with_any_prefix_are_the_same_samples(tmp_path: Path, prefix: str) -> None:
    """A timestamp, a `[rank0]:` from torchrun, or a quote's `> ` before `iter N:` (issue 25): the same samples,
    at the same lines, as the bare log."""
    from effspec.importers import import_logs

    bare = (LOGS / "nanogpt_train.log").read_text(encoding="utf-8")
    prefixed = "".join(prefix + s if s.startswith("iter ") else s for s in bare.splitlines(keepends=True))
    (tmp_path / "p.log").write_text(prefixed, encoding="utf-8")
    want = [(s.step, s.line, s.time, s.figures) for s in import_logs("nanogpt", [str(LOGS / "nanogpt_train.log")]).runs[0].steps]
    got = import_logs("nanogpt", [str(tmp_path / "p.log")]).runs[0]
    assert [(s.step, s.line, s.time, s.figures) for s in got.steps] == want and len(want) >= 10


def test_nanogpt_lines_without_mfu_are_samples_without_an_mfu_claim(tmp_path: Path) -> None:
    """Early nanoGPT printed `iter 100: loss 4.1, time 312.5ms` (no mfu): each is a sample, and no MFU is claimed."""
    from effspec.importers import import_logs

    text = "".join(f"iter {i * 10}: loss {4.1 - i / 100:.4f}, time {312.5 + i:.2f}ms\n" for i in range(12))
    (tmp_path / "early.log").write_text(text, encoding="utf-8")
    run = import_logs("nanogpt", [str(tmp_path / "early.log")]).runs[0]
    assert [(s.step, s.line, s.time) for s in run.steps] == [(i * 10, i + 1, f"{312.5 + i:.2f}") for i in range(12)]
    assert all("mfu_percent" not in s.figures for s in run.steps)
    assert [c.name for c in run.claims if c.name == "mfu"] == []
