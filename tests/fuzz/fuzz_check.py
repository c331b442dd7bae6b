"""atheris harness: the whole effspec pipeline on arbitrary bytes.

Long local runs, not CI (see README.md in this folder).  Any bytes are decoded
as UTF-8 with replacement, checked, and rendered as text and strict JSON;
every exception that escapes is a finding.  Seed the corpus with the
examples and the regression specs::

    python tests/fuzz/fuzz_check.py corpus/ examples/ tests/regressions/ -max_total_time=3600
"""

from __future__ import annotations

import json
import sys


def _setup():
    import atheris

    with atheris.instrument_imports():
        import effspec
        from effspec.report import text as output
    return atheris, effspec, output


def main() -> None:
    atheris, effspec, output = _setup()

    def test_one_input(data: bytes) -> None:
        text = data.decode("utf-8", errors="replace")
        result = effspec.check_text(text, "fuzz.eff")
        output.text(result)
        json.dumps(output.result_json(result), allow_nan=False)
        for d in result.diagnostics:
            if not (d.code.startswith("EFF") and len(d.code) == 6):
                raise AssertionError(f"uncoded diagnostic {d!r}")

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
