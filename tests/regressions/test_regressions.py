"""One `.eff` per finding of the fuzzers or of a hostile-input review.

Each file says what it must produce on its second line,
``# expect: CODE LINE:COLUMN``, and why it exists on its third.  The test
loads it through the whole pipeline and both outputs; the expected coded
diagnostic must appear at exactly that place, and the echoed source must
carry no control or bidi character.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from effspec import load
from effspec.report.text import result_json
from effspec.report.text import text as text_output

HERE = os.path.dirname(__file__)
CASES = sorted(f for f in os.listdir(HERE) if f.endswith(".eff"))
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


@pytest.mark.parametrize("name", CASES)
def test_regression(name):
    path = os.path.join(HERE, name)
    with open(path, encoding="utf-8", newline="") as fh:
        expect = fh.read().split("\n")[1]
    m = re.fullmatch(r"# expect: (EFF\d{3}) (\d+):(\d+)", expect)
    assert m, f"{name}: second line must be `# expect: CODE LINE:COLUMN`"
    code, line, column = m.group(1), int(m.group(2)), int(m.group(3))
    result = load(path)
    assert (code, line, column) in [(d.code, d.span.line, d.span.column) for d in result.diagnostics if d.span]
    shown = text_output(result)
    assert not _INVISIBLE.search(shown.replace("\n", ""))
    json.dumps(result_json(result), allow_nan=False)


def test_form_feed_does_not_shift_the_echoed_line():
    shown = text_output(load(os.path.join(HERE, "form_feed_caret_line.eff")))
    assert "5 | run a { x = 1 }" in shown
