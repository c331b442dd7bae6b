"""Every printed derivation recomputes, with a pocket calculator, to its printed result (issue 14).

The parser here is independent of effspec's printing: it reads the text a reviewer reads
(thousands separators, SI prefixes, percents, units), evaluates the left side, and checks the
right side at the precision it is printed with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import cli as run_effspec

from effspec.display import exact_digits, exact_operands, read_back, shown

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.eff"))

_PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21, "Y": 1e24}
_NUM = r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?"
_UNIT = r"[kMGTPEZY]?FLOP(?:/token|/s)?|token/sequence|token/s|token|sequence|step|device|s|%"
_QTY = re.compile(rf"({_NUM})(?: ({_UNIT}))?(?![\w/])")
_LABEL = re.compile(r"[A-Za-z_][\w]*(?:\([^)]*\))? (?=\d)")  # `qkv_projection 6.291e09`, `recompute(full) 3.5e11`


def _value(number: str, unit: str | None) -> float:
    v = float(number.replace(",", ""))
    if unit == "%":
        return v / 100
    if unit and "FLOP" in unit:
        return v * _PREFIX[unit[: unit.index("FLOP")]]
    return v


def _half_ulp(number: str, unit: str | None) -> float:
    """Half a unit in the last printed place, in the value's own scale."""
    mantissa, _, exponent = number.replace(",", "").partition("e")
    decimals = len(mantissa.partition(".")[2])
    ulp = 10.0 ** (-decimals) * (10.0 ** int(exponent) if exponent else 1.0)
    return 0.5 * _value(repr(ulp), unit) if unit else 0.5 * ulp


def recompute(text: str) -> tuple[float, float, float]:
    """(recomputed left side, printed result, half its last place) of ``lhs = result``."""
    lhs, _, rhs = text.rpartition(" = ")
    rhs = rhs.split(" over ")[0]
    m = _QTY.fullmatch(rhs.strip())
    assert m, f"result not a quantity: {rhs!r}"
    printed, half = _value(m[1], m[2]), _half_ulp(m[1], m[2])
    expr = _QTY.sub(lambda q: repr(_value(q[1], q[2])), _LABEL.sub("", lhs))
    expr = expr.replace("×", "*").replace("−", "-")
    assert re.fullmatch(r"[\d.e+\-*/() ]+", expr), f"not arithmetic: {expr!r} from {text!r}"
    return eval(expr), printed, half  # noqa: S307 - checked above to be digits and operators only


def _derivations(example: str) -> list[str]:
    proc = run_effspec("check", f"examples/{example}", "--format", "json", cwd=ROOT)
    out: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, dict):
            if isinstance(o.get("substituted"), str):
                out.append(o["substituted"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(json.loads(proc.stdout))
    return out


def test_the_parser_reads_example_a_as_a_reviewer_would():
    # 2,035,712 / 1.1 = 1,850,647.3, so the old text did not recompute
    got, printed, half = recompute("2,035,712 token / 1.1 s = 1,850,479 token/s")
    assert round(got) == 1_850_647 and printed == 1_850_479 and half == 0.5
    got, printed, half = recompute("32.82 PFLOP / (1.1 s × 63.32 PFLOP/s) = 47.12 %")
    assert abs(got - 32.82e15 / (1.1 * 63.32e15)) < 1e-12 and printed == pytest.approx(0.4712)
    assert half == pytest.approx(0.00005)
    got, _, _ = recompute("(1 + 2) × (qkv 6.291e09) + recompute(full) 1e09 = 19.87 GFLOP/token")
    assert got == pytest.approx(3 * 6.291e9 + 1e9)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_derivation_of_every_example_recomputes(example):
    checked = 0
    for text in _derivations(example):
        if " = " not in text or text.startswith(("median of", "mean of", "p50 of")):
            continue  # a declared value, or a statistic of the samples: nothing to multiply out
        got, printed, half = recompute(text)
        assert abs(got - printed) <= half * (1 + 1e-9), f"{example}: {text} recomputes to {got!r}"
        checked += 1
    assert checked >= 5, example


def test_example_a_prints_the_median_it_divides_by():
    texts = _derivations("example_a_measured.eff")
    assert "2,035,712 token / 1.1001 s = 1,850,479 token/s" in texts
    assert "median of 500 samples (rows 21–520) = 1.1001 s" in texts


def test_operands_get_digits_only_when_the_result_needs_them():
    # 1,000,000 / 3 s = 333,333 token/s: 3 s is exact, nothing to add
    assert exact_operands([(1e6, "token"), (3.0, "s")], lambda x: x[0] / x[1], (1e6 / 3, "token/s")) == \
        ["1,000,000 token", "3 s"]
    # 1e6 / 2.87654 s = 347,643.4 token/s: four digits (2.877 s) give 347,584, five (2.8765) 347,644, six suffice
    texts = exact_operands([(1e6, "token"), (2.87654, "s")], lambda x: x[0] / x[1], (1e6 / 2.87654, "token/s"))
    assert texts == ["1,000,000 token", "2.87654 s"]
    assert read_back("63.322 PFLOP/s", "FLOP/s") == pytest.approx(63.322e15)
    assert read_back("47.12 %", "%") == pytest.approx(0.4712)
    assert shown(0.4712, "%") == "47.12 %"
    assert exact_digits(1.1001) == 5 and exact_digits(4.01) == 4 and exact_digits(1 / 3) == 6
