"""Issue 19, bounded cost: a hostile spec or CSV cannot make output, memory or time grow without bound.

Nothing here asserts a duration.  Sizes and counts are asserted exactly or
against a linear bound; wall clock appears only as a generous subprocess
timeout, so a slow machine cannot make a test flaky.  Peak memory is measured
in a child process with ``resource.getrusage`` (``ru_maxrss``), which is
deterministic enough for bounds with a wide margin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig

import pytest

from effspec import check_text
from effspec.diagnostics import EXCERPT_COLUMNS, MAX_DIAGNOSTICS, MAX_MESSAGE_CHARS, Diagnostic, Span, cap, render_text
from effspec.report import render
from effspec.report.text import result_json
from effspec.report.text import text as text_output

EFFSPEC = os.path.join(sysconfig.get_path("scripts"), "effspec")
TIMEOUT = 600  # seconds: a bound against hangs, never a performance assertion


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([EFFSPEC, *args], capture_output=True, timeout=TIMEOUT, cwd=cwd)


def duplicate_keys(n: int, one_line: bool) -> str:
    """``seq_len`` set ``n`` times in one block: n - 1 EFF003 "set twice" errors."""
    sep = " " if one_line else "\n  "
    return "eff 1\nrun a { work {" + sep + sep.join(f"seq_len = {i} token/sequence" for i in range(1, n + 1)) + " } }\n"


# ----------------------------------------------------------------------------
# 1. Diagnostics: capped per file, excerpts windowed, output linear in the input


@pytest.fixture(scope="module")
def duplicates():
    """{(n, one_line): (input bytes, text bytes, json bytes, html bytes, result)} for 1k, 4k and 16k keys."""
    out = {}
    for one_line in (True, False):
        for n in (1_000, 4_000, 16_000):
            spec = duplicate_keys(n, one_line)
            result = check_text(spec, "dup.eff")
            out[n, one_line] = (len(spec.encode()), len(text_output(result).encode()),
                                len(json.dumps(result_json(result), indent=2).encode()), len(render(result, "html")), result)
    return out


@pytest.mark.parametrize("one_line", [True, False], ids=["one line", "many lines"])
def test_output_grows_at_most_linearly_with_duplicate_keys(duplicates, one_line):
    for fmt in (1, 2, 3):  # text, json, html
        small, large = duplicates[1_000, one_line][fmt], duplicates[16_000, one_line][fmt]
        assert large / small < 20, (fmt, small, large)  # 16× the input: linear would be 16, quadratic 256
        assert duplicates[4_000, one_line][fmt] <= large
    spec_bytes = duplicates[16_000, one_line][0]
    text_bytes, json_bytes, html_bytes = duplicates[16_000, one_line][1:4]
    # Findings are capped, so text and JSON do not grow with them at all; the
    # HTML holds the source once (with ~70 bytes of markup per line), so it
    # grows with the input, once.
    assert text_bytes < 200_000 and json_bytes < 200_000
    assert html_bytes < 4 * spec_bytes + 500_000 and html_bytes < 3_000_000


@pytest.mark.parametrize("one_line", [True, False], ids=["one line", "many lines"])
def test_findings_are_capped_errors_first_and_the_rest_counted(duplicates, one_line):
    result = duplicates[16_000, one_line][4]
    shown = result.diagnostics
    assert len(shown) == MAX_DIAGNOSTICS + 1 == 201
    assert [d.code for d in shown[:-1]] == ["EFF003"] * 200
    # Source order: the first 200 duplicates (the 2nd to the 201st `seq_len`).
    lines = [d.span.line for d in shown[:-1]]
    assert lines == ([2] * 200 if one_line else list(range(4, 204)))
    note = shown[-1]
    assert (note.code, note.severity, note.span) == ("EFF030", "info", None)
    assert note.message == "and 15,799 more findings not shown (15,799 errors)"
    assert result.omitted == {"error": 15_799}
    assert result.has_errors
    document = result_json(result)
    assert document["omitted"] == {"total": 15_799, "error": 15_799}
    assert len(document["diagnostics"]) == 201
    out = text_output(result)
    assert out.endswith("dup.eff: 15999 errors, 1 info")  # the totals stay honest
    assert "info[EFF030]: and 15,799 more findings not shown (15,799 errors)" in out
    html = render(result, "html").decode()
    assert "and 15,799 more findings not shown (15,799 errors)" in html
    assert '<span class="sev sev-error">15999 errors</span>' in html


def test_the_cap_keeps_errors_ahead_of_warnings_and_infos():
    # 300 infos, 300 warnings, then 3 errors at the end of the file.
    diags = ([Diagnostic("EFF605", "info", Span(n, 1, n, 2), "i") for n in range(1, 301)]
             + [Diagnostic("EFF504", "warning", Span(n, 1, n, 2), "w") for n in range(301, 601)]
             + [Diagnostic("EFF601", "error", Span(n, 1, n, 2), "e") for n in range(601, 604)])
    kept, omitted = cap(diags)
    assert omitted == {"warning": 103, "info": 300}
    assert [(d.severity, d.span.line) for d in kept[:-1]] == (
        [("warning", n) for n in range(301, 498)] + [("error", n) for n in range(601, 604)])
    assert kept[-1].message == "and 403 more findings not shown (103 warnings, 300 infos)"
    assert cap(diags[:200]) == (diags[:200], {})


def test_no_cap_below_the_limit():
    result = check_text(duplicate_keys(200, one_line=True), "dup.eff")
    assert [d.code for d in result.diagnostics] == ["EFF003"] * 199 and result.omitted == {}
    assert "omitted" not in result_json(result)


def test_excerpt_is_a_window_around_the_caret():
    line = "".join(f"{i:03d}," for i in range(100))  # 400 characters, `k,` at 4k
    d = Diagnostic("EFF003", "error", Span(1, 201, 1, 204), "m", label="here")
    out = render_text(d, line, "w.eff").split("\n")
    # The caret at column 201: the window starts 40 columns before it and is 120 wide.
    assert out[3] == "1 | …" + line[160:280] + "…"
    assert out[4] == "  | " + " " * 41 + "^^^ here"
    assert line[200:203] == "050"
    # Near the start and the end of the line only one side is cut.
    first = render_text(Diagnostic("EFF003", "error", Span(1, 5, 1, 6), "m"), line, "w.eff").split("\n")
    assert first[3] == "1 | " + line[:120] + "…" and first[4] == "  | " + " " * 4 + "^"
    last = render_text(Diagnostic("EFF003", "error", Span(1, 400, 1, 401), "m"), line, "w.eff").split("\n")
    assert last[3] == "1 | …" + line[-120:] and last[4] == "  | " + " " * (1 + 119) + "^"
    # A line that fits is shown whole, as before.
    short = render_text(Diagnostic("EFF003", "error", Span(1, 5, 1, 6), "m"), line[:EXCERPT_COLUMNS], "w.eff").split("\n")
    assert short[3] == "1 | " + line[:120]


def test_wide_characters_keep_the_caret_under_its_token():
    line = "名" * 200 + " bad " + "x" * 200
    d = Diagnostic("EFF003", "error", Span(1, 202, 1, 205), "m")
    out = render_text(d, line, "w.eff").split("\n")
    start = 201 - 40
    assert out[3] == "1 | …" + line[start:start + 120] + "…"
    # "…" is one column, each of the 39 ideographs before ` bad` two.
    assert out[4] == "  | " + " " * (1 + 2 * 39 + 1) + "^^^"


def test_report_excerpt_is_windowed_too():
    result = check_text(duplicate_keys(4_000, one_line=True), "dup.eff")
    from effspec.report.context import build

    report = build(result)
    lengths = {len(x.text) for f in report.findings for x in f.excerpt}
    assert max(lengths) == EXCERPT_COLUMNS + 2  # 120 columns and a "…" on each side
    assert all(x.text.startswith("…") for x in report.findings[5].excerpt)


def test_long_messages_are_clipped():
    name = "k" * 50_000
    result = check_text(f"eff 1\nrun a {{ work {{ {name} = 1 token }} }}\n", "long.eff")
    (d,) = [d for d in result.diagnostics if d.code == "EFF002"]
    assert len(d.message) == MAX_MESSAGE_CHARS and d.message.endswith("…")
    assert len(text_output(result)) < 5_000


def test_cli_four_thousand_duplicates_on_one_line(tmp_path):
    """The reproduction: 4,000 duplicate keys on one line printed 289 MB; 10,000 made a 1.2 GB HTML file."""
    spec = tmp_path / "dup.eff"
    spec.write_text(duplicate_keys(4_000, one_line=True))
    for fmt in ("text", "json", "sarif"):
        done = run_cli("check", "--format", fmt, str(spec))
        assert done.returncode == 1, done.stderr
        assert len(done.stdout) < 200_000, (fmt, len(done.stdout))
    document = json.loads(run_cli("check", "--format", "json", str(spec)).stdout)
    assert document["omitted"] == {"total": 3_799, "error": 3_799}
    big = tmp_path / "dup10k.eff"
    big.write_text(duplicate_keys(10_000, one_line=True))
    out = tmp_path / "dup.html"
    done = run_cli("report", str(big), "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert out.stat().st_size < big.stat().st_size + 500_000
    assert len(done.stderr) < 200_000
