"""Issue 17: the run limit was checked after a full parse, so rejecting an 8,000-run
file cost 13 s and 450 MiB. The pre-scan counts top-level runs and scalings first.
"""

from __future__ import annotations

import dataclasses

import effspec
from effspec.front import build, syntax
from effspec.front.limits import LIMITS


def lower_run_limit(monkeypatch, limit: int) -> None:
    lowered = dataclasses.replace(LIMITS, max_runs=limit)
    for module in (syntax, build):
        monkeypatch.setattr(module, "LIMITS", lowered)


def test_an_oversize_file_is_rejected_before_the_parser_runs(monkeypatch) -> None:
    def no_parser():
        raise AssertionError("the parser was asked to read a file over the run limit")

    monkeypatch.setattr(syntax, "parser", no_parser)
    runs = LIMITS.max_runs + 3_000  # 8,000 with the default limit
    text = "eff 1\n" + "".join(f"run r{i} {{ timing {{ step_time = 1 s }} }}\n" for i in range(runs))
    result = effspec.check_text(text, "big.eff")
    [diag] = result.diagnostics
    assert diag.code == "EFF030"
    assert (diag.span.line, diag.span.column) == (LIMITS.max_runs + 2, 1)  # the first run over the limit
    assert f"declares {runs:,} runs and scalings; the limit is {LIMITS.max_runs:,}" in diag.message


def test_run_and_scaling_inside_strings_comments_and_blocks_do_not_count(monkeypatch) -> None:
    lower_run_limit(monkeypatch, 2)
    text = ('eff 1\n# run a { } run b { } run c { }\n'
            'run x { title = "run y { } scaling z { }" }\n'
            'scaling s { baseline = x  runs = [x] }\n')
    assert [d.code for d in effspec.check_text(text, "t.eff").diagnostics if d.code == "EFF030"] == []


def test_a_run_named_scaling_counts_once(monkeypatch) -> None:
    lower_run_limit(monkeypatch, 2)
    text = "eff 1\nrun scaling { }\nrun run { }\n"
    assert [d.code for d in effspec.check_text(text, "t.eff").diagnostics if d.code == "EFF030"] == []
    text += "run third { }\n"
    assert [(d.code, d.span.line) for d in effspec.check_text(text, "t.eff").diagnostics
            if d.code == "EFF030"] == [("EFF030", 4)]
