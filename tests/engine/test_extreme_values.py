"""Extreme but legal numbers never crash a check or a report (issue 17).

Inputs each in range can still make an infinite, zero or NaN figure
(`step_time = 1e-320 s`, a subnormal device count, samples a hair apart).
A seeded sweep puts extreme values into the numeric literals of every
example, one or two at a time, and requires of every output: no exception,
JSON and SARIF that a parser rejecting NaN and Infinity accepts. The
reproductions of the issue are pinned by name below the sweep.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

import effspec
from effspec.report import render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
EXTREMES = ("0", "5e-324", "1e-320", "1e-300", "1e300", "1.7976931348623157e308", "1.0000000000000002",
            "0.9999999999999999", "2.2250738585072014e-308", "1e30", "1e-30")
# A numeric literal outside strings and comments (strings and comments are matched first and kept).
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])')
CASES = 1000


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def literal_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _LITERAL.finditer(text) if m.group(0)[0].isdigit() and text[:m.start()].count("\n") > 0]


def mutate(text: str, rng: random.Random) -> str:
    spans = literal_spans(text)
    for start, end in sorted(rng.sample(spans, k=min(len(spans), rng.choice((1, 1, 2)))), reverse=True):
        text = text[:start] + rng.choice(EXTREMES) + text[end:]
    return text


def check_every_output(text: str, name: str, formats: tuple[str, ...]) -> effspec.Result:
    result = effspec.check_text(text, name, folder=str(ROOT / "examples"))
    _strict(json.dumps(render_json(result), allow_nan=False))
    for fmt in formats:
        data = render(result, fmt)
        if fmt in ("json", "sarif"):
            _strict(data.decode("utf-8"))
        assert data
    return result


def render_json(result: effspec.Result) -> object:
    from effspec.report.text import result_json
    return result_json(result)


def test_extreme_values_in_every_numeric_literal_of_every_example() -> None:
    rng = random.Random(20261201)
    texts = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES}
    failures = []
    for case in range(CASES):
        name = rng.choice(sorted(texts))
        mutated = mutate(texts[name], rng)
        formats = ("json", "sarif", "md", "tex", "html") if case % 50 == 0 else ("json", "sarif")
        try:
            check_every_output(mutated, name, formats)
        except Exception as exc:  # collected, so one run shows every class of failure
            failures.append(f"case {case} ({name}): {type(exc).__name__}: {exc}")
    assert failures == [], "\n".join(failures)


def spec(count: str = "8 device", step: str = "1.0 s", claim: str = "", convention: str = "preset = palm") -> str:
    return f"""eff 1
run a {{
  model {{ kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }}
  convention {{ {convention} }}
  work {{ seq_len = 2048 token/sequence  global_batch = 256 sequence }}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = {count}  dtype = bf16  peak = catalog }}
  timing {{ step_time = {step} }}
  {claim}
}}
"""


@pytest.mark.parametrize("text, codes", [
    (spec(claim="claim throughput = 1e-300 token/s"), {"EFF601"}),
    (spec(claim="claim mfu = 1e300"), {"EFF604"}),
    (spec(count="5e-324 device", claim="claim throughput = 1 token/s"), {"EFF003"}),
    (spec(step="1e-320 s", claim="claim mfu = 40 %"), {"EFF702"}),
    (spec(step="1e-300 s", claim="claim mfu = 40 %"), {"EFF702"}),
    (spec(step="[1.0, 1.0000000000000002, 1.0, 1.0, 1.0] s"), set()),
])
def test_the_reproductions_give_coded_findings_in_every_format(text: str, codes: set[str]) -> None:
    result = check_every_output(text, "t.eff", ("json", "sarif", "md", "tex", "html"))
    assert codes <= {d.code for d in result.diagnostics}


def test_a_subnormal_step_time_names_the_figures_and_the_input() -> None:
    result = effspec.check_text(spec(step="1e-320 s", claim="claim mfu = 40 %"), "t.eff")
    [eff702] = [d for d in result.diagnostics if d.code == "EFF702"]
    assert (eff702.span.line, eff702.span.column) == (7, 24)  # the step time
    for figure in ("valid_tokens_per_second", "achieved_flops_per_device", "mfu", "hfu"):
        assert f"`{figure}` (infinite)" in eff702.message
    run = result.evaluation.runs["a"]
    assert "mfu" not in run.metrics and "mfu" in run.nonfinite
    assert run.claims["mfu"].status == "unrecoverable"


def test_a_device_count_must_be_whole() -> None:
    result = effspec.check_text(spec(count="7.5 device"), "t.eff")
    [d] = [d for d in result.diagnostics if d.code == "EFF003"]
    assert d.message == "`count` counts whole devices, found `7.5 device`"
    assert d.help == "write a whole number of devices, e.g. `count = 8 device`"


def test_a_ranks_table_of_zeros_is_an_input_error_not_nan(tmp_path: Path) -> None:
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n"
                                        + "".join(f"{r},n0,{s},0,0,0\n" for s in (1, 2) for r in range(4)))
    text = ('eff 1\nrun a {\n  hardware { accelerator = "H100-SXM5-80GB"  count = 4 device  dtype = bf16  peak = catalog }\n'
            '  timing { step_time = 1 s }\n  ranks { samples = file "ranks.csv" }\n}\n')
    result = effspec.check_text(text, "t.eff", folder=str(tmp_path))
    [d] = [d for d in result.diagnostics if d.code == "EFF011"]
    assert d.message == "`ranks.csv` row 2: `compute` + `comm` + `stall` is 0 s: a rank's step takes time"
    for fmt in ("json", "sarif"):
        _strict(render(result, fmt).decode("utf-8"))
