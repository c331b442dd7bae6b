"""effspec fmt over the fuzz corpus: the inputs tests/fuzz_inputs.py generates.

Programs generated from the grammar (with comments between tokens) and the
examples mutated; deterministic, like tests/security/test_fuzz.py.  For any input:
format_text returns or refuses with coded diagnostics, never raises (a
FormatterError, its own check failing, is a finding too); a formatted text is
a fixed point and compiles to the same IR.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")
from fuzz_inputs import GRAMMAR, fuzz, mutated  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from effspec.fmt import format_text, ir_signature  # noqa: E402


def _round_trip(text: str) -> None:
    result = format_text(text)
    if result.text is None:
        assert result.diagnostics and all(d.code in ("EFF001", "EFF030") for d in result.diagnostics)
        return
    assert format_text(result.text).text == result.text
    assert ir_signature(result.text) == ir_signature(text if not result.fixes else _fixed(text, result))


def _fixed(text: str, result) -> str:
    from effspec.fmt import _fix_units

    return _fix_units(text)[0]


@fuzz(200)
@given(data=st.data())
def test_fmt_on_programs_from_the_grammar(data):
    assert GRAMMAR is not None
    _round_trip(data.draw(GRAMMAR, label="program"))


@fuzz(200)
@given(text=mutated())
def test_fmt_on_mutated_examples(text):
    _round_trip(text)
