"""The framework version from the log's evidence (issue 25): argument names that exist only in some
versions, then the dates on the log's lines against each preset's boundary commit date, then
--framework-version; the evidence that decided it is written (`from log "FILE:LINE"`, `from assumed`),
and EFF806 (info) names the other preset where the evidence leaves it open.  The boundaries are data on
the presets (`Preset.since`, `Preset.since_commit`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from real_logs import do_import, field, real

from effspec.front.presets import by_name, family

ISSUE_756 = real("megatron", "megatron_lm_issue756.log")


def redated(tmp_path: Path, date: str, name: str = "dated.log", head: str = "") -> Path:
    """The real #756 lines with their timestamps moved to ``date`` (everything else as printed)."""
    text = re.sub(r"\[2024-04-06 ", f"[{date} ", ISSUE_756.read_text(encoding="utf-8"))
    out = tmp_path / name
    out.write_text(head + text, encoding="utf-8")
    return out


def test_the_boundaries_are_data_on_the_presets() -> None:
    # upstream commit dates: NVIDIA/Megatron-LM 2748e7c7d4 (2023-11-26), e116d81ed7 (2024-03-25),
    # 8873b55d6a (2025-03-06); microsoft/Megatron-DeepSpeed b7b2d5ef (PR #371, 2024-08-19);
    # AI-Hypercomputer/maxtext 2adc3bab1 (PR #1988, 2025-07-22); NVIDIA/NeMo 6251117f4c (PR #14424, 2025-08-09)
    assert [(p.name, p.since) for p in family("megatron_lm")] == [
        ("megatron_lm", "2025-03-06"), ("megatron_lm_2024", "2024-03-25"), ("megatron_lm_2023", "2023-11-26")]
    assert [(p.name, p.since) for p in family("megatron_deepspeed")] == [
        ("megatron_deepspeed", "2024-08-19"), ("megatron_deepspeed_pre371", "")]
    assert [(p.name, p.since) for p in family("maxtext")] == [("maxtext", "2025-07-22"), ("maxtext_pre1988", "")]
    assert [(p.name, p.since) for p in family("nemo")] == [("nemo", "2025-08-09"), ("nemo_pre14424", "")]
    for name in ("megatron_lm", "megatron_lm_2024", "megatron_lm_2023", "megatron_deepspeed", "maxtext", "nemo"):
        preset = by_name(name)
        assert preset is not None and preset.since_commit.split("@")[1][:7] in preset.upstream, name


@pytest.mark.parametrize(("date", "preset", "open_to"), [
    ("2024-03-30", "megatron_lm_2024", "megatron_lm_2023"),  # the issue's log: 5 days after e116d81ed7
    ("2024-03-24", "megatron_lm_2023", None),  # the day before e116d81ed7: the oldest form, nothing older
    ("2025-03-06", "megatron_lm", "megatron_lm_2024"),  # the day of 8873b55d6a
    ("2026-01-16", "megatron_lm", None),  # well after every boundary
])
def test_dated_lines_choose_the_preset_in_force_then(tmp_path: Path, date: str, preset: str, open_to: str | None) -> None:
    text, err, out = do_import(tmp_path, "megatron", redated(tmp_path, date))
    assert field(text, "preset") == (preset, 'log "dated.log:1"')
    assert f"the log's first date is {date} (line 1): `{preset}`" in text
    if open_to:
        assert "info[EFF806]" in err and f"would count as `{open_to}`" in err and "--> dated.log:1:1" in err
    else:
        assert "EFF806" not in err
    assert "0 log line(s) skipped or repaired" in err  # an info finding is not a skipped line


def test_a_flag_the_dates_allow_refines_them(tmp_path: Path) -> None:
    """Dated 2024-03-30, a checkout of 2024-02 is possible: the flag decides, with no finding."""
    text, err, out = do_import(tmp_path, "megatron", redated(tmp_path, "2024-03-30"), "--framework-version", "2024-02")
    assert field(text, "preset")[0] == "megatron_lm_2023"
    assert "from paper \"Megatron-LM 2023-11-26 to 2024-03-24 (--framework-version 2024-02)\"" in text
    assert "which the log's first date (2024-03-30, line 1) allows" in text and "EFF806" not in err


def test_a_flag_after_the_logs_date_loses_to_it_with_eff806(tmp_path: Path) -> None:
    text, err, out = do_import(tmp_path, "megatron", redated(tmp_path, "2024-03-30"), "--framework-version", "2025-06")
    assert field(text, "preset") == ("megatron_lm_2024", 'log "dated.log:1"')
    assert "info[EFF806]: --framework-version 2025-06 selects `megatron_lm` (from 2025-03-06), but the log is dated " \
           "2024-03-30: `megatron_lm_2024` is used" in err


def test_version_only_argument_names_come_before_the_dates(tmp_path: Path) -> None:
    """`checkpoint_activations` (renamed in 2022) decides over lines dated 2026."""
    dump = ("------------------------ arguments ------------------------\n"
            "  checkpoint_activations .......................... True\n"
            "-------------------- end of arguments ---------------------\n")
    text, err, out = do_import(tmp_path, "megatron", redated(tmp_path, "2026-01-16", head=dump))
    assert field(text, "preset") == ("megatron_lm_2023", 'log "dated.log:2"')
    assert "the dump names `checkpoint_activations`" in text


def test_no_evidence_is_assumed_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "undated.log"
    log.write_text(re.sub(r"^ \[[^]]*\] ", " ", ISSUE_756.read_text(encoding="utf-8"), flags=re.M), encoding="utf-8")
    text, err, out = do_import(tmp_path, "megatron", log)
    assert field(text, "preset") == ("megatron_lm", 'assumed "Megatron-LM 2025-03-06 and later: the log does not print the version"')


def test_megatron_deepspeed_dates_before_pr_371_are_eq3(tmp_path: Path) -> None:
    """The 2021 fork's DeepSpeed start-up line (2021-06-10) is before every later preset: eq. 3, no finding."""
    text, err, out = do_import(tmp_path, "megatron_deepspeed", real("megatron_deepspeed", "bigscience_meg_ds_3d_gpt2_perf_n16_ds_on.out"))
    assert field(text, "preset")[0] == "megatron_deepspeed_pre371"
    assert "`megatron_deepspeed_pre371` (the oldest form read) was in force then" in text and "EFF806" not in err


def test_each_importer_takes_its_boundary_from_its_preset() -> None:
    """One source of truth: the importers' boundary dates are the presets' `since` (MaxText's was its own
    2025-07-01 while the preset said 2025-07-22, the merge of PR #1988)."""
    from effspec.importers import maxtext, megatron, megatron_deepspeed, nemo

    assert maxtext.CAUSAL_SINCE == by_name("maxtext").since == "2025-07-22"
    assert nemo.CAUSAL_SINCE == by_name("nemo").since == "2025-08-09"
    assert megatron_deepspeed.PR_371 == by_name("megatron_deepspeed").since == "2024-08-19"
    assert by_name("megatron_lm").since == megatron.NEW_FORMULA


@pytest.mark.parametrize(("version", "preset"), [
    ("2025-07-21", "maxtext_pre1988"),  # the day before PR #1988's merge (2adc3bab1): full attention
    ("2025-07-22", "maxtext"),  # the day of the merge: causal
    ("2025-07", "maxtext_pre1988"),  # a month is its first day, before the merge (with 2025-07-01 it was `maxtext`)
])
def test_maxtext_version_boundary_is_the_presets_date(tmp_path: Path, version: str, preset: str) -> None:
    log = tmp_path / "m.log"
    log.write_text("completed step: 2, seconds: 0.206, TFLOP/s/device: 72.958, loss: 9.352\n", encoding="utf-8")
    text, _, _ = do_import(tmp_path, "maxtext", log, "--framework-version", version)
    assert field(text, "preset")[0] == preset
