"""Number formatting shared by diagnostics, derivations and every report."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


# Inside `numbers_only()` (engine.gap's search, which keeps a re-evaluation's numbers and throws
# its derivation text away) `quantity` and `exact_operands` print nothing: the numbers do not
# depend on the text, so the search's results are the same, at half the cost.
_NUMBERS_ONLY: ContextVar[bool] = ContextVar("effspec_numbers_only", default=False)


@contextmanager
def numbers_only() -> Iterator[None]:
    """Derivation text is left empty while inside: for evaluations whose text nobody reads."""
    token = _NUMBERS_ONLY.set(True)
    try:
        yield
    finally:
        _NUMBERS_ONLY.reset(token)


# The formatters are pure, and a language server prints the same figures of its unchanged runs at every
# edit: their texts are remembered (bounded; typed, so 1 and 1.0 are separate keys though they print alike).
_REMEMBERED = 1 << 16


@functools.lru_cache(maxsize=_REMEMBERED, typed=True)
def sig(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, without exponent noise for ordinary sizes."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    if -4 <= magnitude < 9:
        decimals = max(0, digits - 1 - magnitude)
        text = f"{value:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.{digits - 1}e}".replace("e+", "e")


def quantity(value: float, unit: str, digits: int = 4) -> str:
    """A value in its unit, with an SI prefix for FLOP units: ``137.7 TFLOP/s``."""
    if _NUMBERS_ONLY.get():
        return ""
    return _quantity(value, unit, digits)


@functools.lru_cache(maxsize=_REMEMBERED, typed=True)
def _quantity(value: float, unit: str, digits: int) -> str:
    if unit == "":
        return sig(value, digits)
    if unit.startswith("FLOP") and abs(value) >= 1e3:
        for factor, prefix in _PREFIXES:
            if abs(value) >= factor:
                return f"{sig(value / factor, digits)} {prefix}{unit}"
    if unit in ("token", "sequence", "device", "param", "step") and abs(value) >= 1e4 and value == int(value):
        return f"{int(value):,} {unit}"
    if unit == "token/s" and abs(value) >= 1e4:  # rates read best as whole tokens per second
        return f"{value:,.0f} {unit}"
    return f"{sig(value, digits)} {unit}"


def percent(ratio: float, digits: int = 4) -> str:
    if _NUMBERS_ONLY.get():
        return ""
    return f"{sig(ratio * 100, digits)} %"


def metric_value(value: float, unit: str) -> str:
    """How a metric reads in prose: ratios as percent, others with their unit."""
    return percent(value) if unit == "" else quantity(value, unit)


_FACTORS = {prefix: factor for factor, prefix in _PREFIXES}


def shown(value: float, unit: str, digits: int = 4) -> str:
    """An operand of a derivation: ``unit`` "%" prints a ratio as a percent, else as :func:`quantity`."""
    return percent(value, digits) if unit == "%" else quantity(value, unit, digits)


def read_back(text: str, unit: str) -> float:
    """The value a reader recovers from ``shown(value, unit, digits)``: the inverse of the printing."""
    number, _, rest = text.partition(" ")
    value = float(number.replace(",", ""))
    if unit == "%":
        return value / 100
    if unit.startswith("FLOP") and rest != unit and rest[:1] in _FACTORS:
        value *= _FACTORS[rest[:1]]
    return value


def exact_operands(operands: Sequence[tuple[float, str]], compute: Callable[[Sequence[float]], float],
                   result: tuple[float, str]) -> list[str]:
    """Each operand printed with the fewest significant digits (four at least, the same for all) such that
    the formula, recomputed from the printed operands, gives the printed result at its printed precision.

    Example A's median step is 1.1001 s: ``2,035,712 token / 1.1 s`` gives 1,850,647, not the printed
    1,850,479 token/s, so the step is printed ``1.1001 s``.
    """
    if _NUMBERS_ONLY.get():
        return [""] * len(operands)
    target = shown(*result)
    texts = [shown(v, u) for v, u in operands]
    for digits in range(4, 18):
        texts = [shown(v, u, digits) for v, u in operands]
        try:
            again = compute([read_back(t, u) for t, (_, u) in zip(texts, operands, strict=False)])
        except (ArithmeticError, ValueError):
            return texts
        if shown(again, result[1]) == target:
            return texts
    return texts


def exact_digits(value: float, most: int = 6) -> int:
    """The fewest significant digits (four at least, ``most`` at most) that print ``value`` exactly:
    a median of 1.1001 s is printed ``1.1001 s``, not ``1.1 s``."""
    if _NUMBERS_ONLY.get():
        return most  # a number of digits for a text that is not printed
    for digits in range(4, most):
        if math.isfinite(value) and float(sig(value, digits)) == value:
            return digits
    return most
