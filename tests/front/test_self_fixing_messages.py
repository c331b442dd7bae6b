"""Error messages that say the fix (issue 15): `1,000`, an unclosed block, `TFLOPs` in any case,
and a front-end error found while evaluating, which stops the check before any warning.

Positions are counted by hand from the spec text in each test (1-based line and column).
"""

from __future__ import annotations

import json

import pytest
from conftest import cli

from effspec import check_text


def only_error(text: str):
    (d,) = [d for d in check_text(text).diagnostics if d.severity == "error"]
    return d


def where(d) -> tuple[int, int, int, int]:
    return d.span.line, d.span.column, d.span.end_line, d.span.end_column


# --- 1,000 -------------------------------------------------------------------------------------

THOUSANDS = ("eff 1\n"
             "run r {\n"
             "  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }\n"
             "  claim throughput = 1,000,000 token/s\n"
             "}\n")


def test_a_thousands_separator_suggests_underscores_or_nothing():
    d = only_error(THOUSANDS)
    assert d.code == "EFF001"
    assert d.message == "`1,000,000` is not a number: `,` separates list items, and a number has no thousands separator"
    assert d.help == "write `1_000_000` or `1000000`"
    # "  claim throughput = " is 21 characters: the number starts at column 22 and is 9 long
    assert where(d) == (4, 22, 4, 31)


def test_one_thousands_group_in_a_key():
    d = only_error("eff 1\nrun r {\n  work { seq_len = 1,000 token/sequence  global_batch = 256 sequence }\n}\n")
    assert d.help == "write `1_000` or `1000`"
    assert where(d) == (3, 20, 3, 25)  # "  work { seq_len = " is 19 characters


def test_a_comma_that_is_no_thousands_group_keeps_the_plain_message():
    d = only_error("eff 1\nrun r {\n  work { seq_len = 1,5 token/sequence }\n}\n")
    assert "thousands" not in d.message and "`,`" in d.message


# --- unclosed blocks ---------------------------------------------------------------------------

UNCLOSED_MODEL = ("eff 1\n"
                  "run r {\n"
                  "  model { kind = custom  flops_per_token = 1.2e10 FLOP/token\n"   # line 3: `{` at column 9
                  "  work { seq_len = 1000 token/sequence  global_batch = 256 sequence }\n"
                  "}\n")


def test_an_unclosed_block_points_at_its_brace_not_at_the_end_of_the_file():
    # By count, the `}` of line 5 closes `model`; by its indentation it is run r's, so `model` is the one open.
    d = only_error(UNCLOSED_MODEL)
    assert d.code == "EFF001"
    assert d.message == "the file ended early: block `model` is not closed"
    assert d.help == "add the `}` that closes block `model`"
    assert where(d) == (3, 9, 3, 10)


def test_an_unclosed_run_points_at_the_run_brace():
    d = only_error("eff 1\nrun train_7b {\n  work { seq_len = 1000 token/sequence  global_batch = 256 sequence }\n")
    assert d.message == "the file ended early: run `train_7b` is not closed"
    assert where(d) == (2, 14, 2, 15)  # "run train_7b " is 13 characters


def test_an_unclosed_block_before_the_next_run_points_at_its_brace_and_the_next_run_is_still_checked():
    text = ("eff 1\n"
            "run a {\n"
            "  model { kind = custom  flops_per_token = 1.2e10 FLOP/token\n"   # line 3: never closed
            "  work { seq_len = 1000 token/sequence  global_batch = 256 sequence }\n"
            "}\n"
            "\n"
            "run b {\n"
            "  work { seq_len = 1000 tokens/sequence  global_batch = 256 sequence }\n"   # line 8: an error of its own
            "}\n")
    errors = [d for d in check_text(text).diagnostics if d.severity == "error"]
    assert [(d.message, d.span.line, d.span.column) for d in errors] == [
        ("block `model` is not closed before `run b`", 3, 9),
        ("unknown unit `tokens`", 8, 25),
    ]
    assert errors[0].help == ("add the `}` that closes block `model`: `run` and `scaling` start a statement only "
                              "outside every block")


def test_braces_in_strings_and_comments_do_not_count():
    text = 'eff 1\nrun r {  # a { in a comment\n  title = "a { in a string"\n'
    d = only_error(text)
    assert d.message == "the file ended early: run `r` is not closed" and where(d) == (2, 7, 2, 8)


def test_the_cli_prints_file_line_and_column_of_the_brace(tmp_path):
    (tmp_path / "open.eff").write_text(UNCLOSED_MODEL, encoding="utf-8")
    proc = cli("check", "open.eff", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("error[EFF001]: the file ended early: block `model` is not closed\n"
                                  " --> open.eff:3:9\n")


# --- TFLOPs, any case --------------------------------------------------------------------------

PEAK = 'eff 1\nrun r {\n  hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  peak = 989.4 %s }\n}\n'


@pytest.mark.parametrize("written, meant", [("TFLOPs", "TFLOP/s"), ("tflops", "TFLOP/s"), ("TFlops", "TFLOP/s"),
                                            ("Tflops", "TFLOP/s"), ("TFLOPS", "TFLOP/s"), ("GFlops", "GFLOP/s"),
                                            ("pflops", "PFLOP/s"), ("FLOPs", "FLOP/s")])
def test_a_flop_rate_in_any_case_suggests_the_unit(written, meant):
    d = only_error(PEAK % written)
    assert (d.code, d.message, d.help) == ("EFF001", f"unknown unit `{written}`", f"write `{meant}`")
    # '  hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  peak = 989.4 ' is 76 characters
    assert where(d) == (3, 77, 3, 77 + len(written))


# --- a front-end error stops evaluation --------------------------------------------------------

UNKNOWN_ACCELERATOR = ("eff 1\n"
                       "run r {\n"
                       "  model { kind = custom  flops_per_token = 1.2e10 FLOP/token }\n"
                       "  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }\n"
                       '  hardware { accelerator = "Z9000"  count = 16 device  dtype = bf16  peak = catalog }\n'
                       "  timing { step_time = 10 s  warmup = 0 step  boundary = \"end\" }\n"
                       "  claim mfu = 47\n"
                       "}\n")


def test_an_unknown_accelerator_is_the_only_finding():
    # Before: EFF020 among EFF605, EFF502, EFF602, EFF603 and EFF604 (the claim read as 4700 %),
    # all computed from a run whose denominator is unknown.
    result = check_text(UNKNOWN_ACCELERATOR)
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("EFF020", 5, 77)]
    assert result.diagnostics[0].message == "`Z9000` is not in the peak catalog"
    assert result.evaluation is None


def test_the_cli_shows_only_the_front_end_error_and_empty_runs(tmp_path):
    (tmp_path / "z.eff").write_text(UNKNOWN_ACCELERATOR, encoding="utf-8")
    proc = cli("check", "z.eff", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.count("error[") == 1 and "warning[" not in proc.stdout and "info[" not in proc.stdout
    doc = json.loads(cli("check", "--format", "json", "z.eff", cwd=tmp_path).stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    assert [d["code"] for d in doc["diagnostics"]] == ["EFF020"]
    assert doc["runs"] == {} and doc["scalings"] == {}  # spec/language.md: front-end errors, empty runs
