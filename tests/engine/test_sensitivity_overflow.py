"""The flip search on a near-flat figure: a figure that barely moves with a knob asks for a change past any
float.  The search reports no flip there; before, ``(target / point) ** (1 / e)`` raised OverflowError
(found by tests/front/test_ir_json.py's grammar fuzz under xdist)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from effspec.engine import sensitivity
from effspec.engine.sensitivity import _Solver


def _solver(figure):
    solver = object.__new__(_Solver)
    solver.figure = figure  # type: ignore[method-assign]
    return solver


@pytest.mark.parametrize("exponent", [1e-8, -1e-8, 2e-9])
def test_near_flat_figure_has_no_flip(exponent):
    # F(r) = 1.0 · (1 + r)^exponent; the claim 2.0 ± 0.01 would need (1.99)^(1/exponent) − 1 ≈ e^(10^8)
    if exponent > 0:  # (a negative one underflows to 0, r = −1: out of range, no flip either)
        with pytest.raises(OverflowError):
            1.99 ** (1 / exponent)
    cr = SimpleNamespace(claimed=2.0, tolerance=0.01)
    solver = _solver(lambda knob, r, name: (1 + r) ** exponent)
    assert solver.solve(SimpleNamespace(name="k"), "mfu", 1.0, cr) is None


def test_ordinary_figure_still_flips():
    # F(r) = 0.5 · (1 + r): the claim 0.6 ± 0.006 is reached at r = 0.594 / 0.5 − 1 = 0.188 (rounded up, 2 digits: 0.19)
    cr = SimpleNamespace(claimed=0.6, tolerance=0.006)
    solver = _solver(lambda knob, r, name: 0.5 * (1 + r))
    flip = solver.solve(SimpleNamespace(name="k"), "mfu", 0.5, cr)
    assert flip is not None
    assert math.isclose(flip.change, 0.19) and math.isclose(flip.figure, 0.595)
    assert sensitivity.MAX_CHANGE == 10.0
