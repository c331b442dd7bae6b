"""Audit integrity (issue 19): a spec cannot subvert its own audit.

1. Pragmas count only in real comments; every output states what was
   suppressed and by what; `--no-inline-config` and `inline_config = false`
   ignore pragmas; a lowered severity never hides a finding.
2. The project configuration stops at the project root, says where it comes
   from (`--show-settings`), and is bounded before it is parsed.
3. (tests/test_determinism.py: byte-identical output under two hash seeds.)
4. One file's internal error does not hide the others' findings.
5. One line model: reports highlight the line the parser counted.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import effspec
from effspec import cli, load
from effspec.diagnostics import sanitize, source_lines

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE_B = (EXAMPLES / "example_b_vendor_claim.eff").read_text(encoding="utf-8")
EFFSPEC = str(Path(sys.executable).with_name("effspec"))


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The installed command, as a user runs it."""
    return subprocess.run([EFFSPEC, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


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
    return [(int(n), html.unescape(t)) for n, t in re.findall(r'<span class="hit"><span class="ln">(\d+)</span> (.*?)</span>\n', page)]


def _flagged(page: str) -> list[tuple[int, str]]:
    """(line number, text) of every flagged line of the report's source listing."""
    return [(int(n), html.unescape(t))
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


def test_line_separators_in_comments_keep_every_finding_on_its_line(tmp_path):
    # U+2028 and U+2029 are EFF001 (invisible characters) where they stand; the
    # missing `=` on the last line is EFF001 too.  Every excerpt is the line the
    # parser counted, and no line is split in two.
    source = ("eff 1\n# notes\u2028more notes\nrun a {\n  # a\u2029b\f\n  model { kind = dense_transformer }\n"
              "  hardware { peak catalog }\n}\n")
    page, result = _report_html(project(tmp_path), source)
    found = sorted((d.code, d.span.line, d.span.column) for d in result.diagnostics)
    assert found == [("EFF001", 2, 8), ("EFF001", 4, 6), ("EFF001", 6, 19)]
    hits = _excerpt_hits(page)
    for _code, line, _column in found:
        assert (line, _parser_line(source, line)) in hits
    assert dict(hits)[6] == "  hardware { peak catalog }"
    assert dict(_flagged(page)) == {n: _parser_line(source, n) for n in (2, 4, 6)}


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
