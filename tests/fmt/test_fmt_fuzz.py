"""effspec fmt over the fuzz corpus: the inputs tests/security/test_fuzz.py generates.

Programs generated from the grammar (with comments between tokens) and the
examples mutated; deterministic, like tests/security/test_fuzz.py.  For any input:
format_text returns or refuses with coded diagnostics, never raises (a
FormatterError, its own check failing, is a finding too); a formatted text is
a fixed point and compiles to the same IR.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# The suite's own generators, in tests/security/test_fuzz.py (its folder is put on sys.path: a sibling stage's).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from test_fuzz import _GRAMMAR, fuzz, mutated  # noqa: E402

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
    assert _GRAMMAR is not None
    _round_trip(data.draw(_GRAMMAR, label="program"))


@fuzz(200)
@given(text=mutated())
def test_fmt_on_mutated_examples(text):
    _round_trip(text)
