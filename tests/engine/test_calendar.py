"""Calendar: efficiency, goodput, the calendar table, and parts exceeding the wall clock."""

from __future__ import annotations

import pytest

import effspec
from effspec.report.text import result_json

RUN = '''eff 1
run r {{
  work {{ seq_len = 2048 token/sequence  global_batch = 256 sequence }}
  timing {{ step_time = [2.0] s  warmup = 0 step }}
  calendar {{
    wall_clock = 100000 s
    steps = {steps} step
    lost_time = 10000 s
    checkpoint_time = 5000 s
    interruptions = 3
    repeated_tokens = 1000000000 token
  }}
}}
'''


def test_calendar_efficiency_goodput_and_table():
    result = effspec.check_text(RUN.format(steps=40000), "t.eff")
    rr = result.evaluation.runs["r"]
    # calendar_efficiency = 40,000 × 2.0 s / 100,000 s = 0.80
    assert rr.metrics["calendar_efficiency"].value == pytest.approx(0.80)
    # goodput = (40,000 × 2048 × 256 − 1e9) / 100,000 s = (20,971,520,000 − 1,000,000,000) / 1e5 = 199,715.2 token/s
    assert rr.metrics["goodput"].value == pytest.approx(199715.2)
    table = {row.category: row for row in rr.calendar_table.rows}
    assert table["productive_steps"].seconds == pytest.approx(80000.0)
    assert table["lost_time"].seconds == 10000.0 and table["checkpoint_time"].seconds == 5000.0
    # unclassified = 100,000 − 80,000 − 10,000 − 5,000 = 5,000 s = 5 %
    assert table["unclassified"].seconds == pytest.approx(5000.0)
    assert table["unclassified"].share == pytest.approx(0.05)
    assert sum(r.share for r in rr.calendar_table.rows) == pytest.approx(1.0)
    assert rr.calendar_table.overrun == 0.0 and rr.calendar_table.interruptions == 3
    assert not [d for d in result.diagnostics if d.code == "EFF011"]
    js = result_json(result)["runs"]["r"]["calendar"]
    assert js["unclassified"] == pytest.approx(5000.0) and js["wall_clock"] == 100000.0


def test_parts_exceeding_the_wall_clock_are_eff011_at_the_block():
    from effspec.engine.evaluate import evaluate

    result = effspec.check_text(RUN.format(steps=48000), "t.eff")
    # EFF011 is a front-end error: the check stops evaluating there (no figure, no warning under it), so the
    # table is read from the engine directly.
    assert result.evaluation is None
    # 48,000 × 2.0 s = 96,000 s + 10,000 + 5,000 = 111,000 s > 100,000 s, by 11,000 s
    table = evaluate(result.spec).runs["r"].calendar_table
    assert table.declared_sum == pytest.approx(111000.0) and table.overrun == pytest.approx(11000.0)
    hits = [d for d in result.diagnostics if d.code == "EFF011" and "exceed its wall clock" in d.message]
    assert len(hits) == 1
    assert (hits[0].span.line, hits[0].span.column) == (5, 3)  # the `calendar` block
    assert "by 11000 s" in hits[0].message
