"""Issue 14, the reviewer's reading of a report: per-rank charts, GEMM tables with their run,
EFF203 on page 1, "assumed" badges that link to their cause, code spans in findings, rule links
to a configurable documentation base, and ids unique in every HTML document."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import effspec
from effspec.report import render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))


class _Anchors(HTMLParser):
    """Every id an HTML page defines, and every in-document reference it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.append(value)
            elif name in ("href", "xlink:href") and value.startswith("#"):
                self.refs.append(value[1:])
            self.refs += re.findall(r"url\(#([^)]+)\)", value)

    handle_startendtag = handle_starttag


def _anchors(html: str) -> _Anchors:
    parser = _Anchors()
    parser.feed(html)
    return parser


# ---------------------------------------------------------------------------
# 7. Inline SVGs: ids unique per document, every internal reference resolves


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_id_in_a_report_is_unique_and_every_reference_resolves(example):
    html = render(effspec.load(example), "html").decode("utf-8")
    page = _anchors(html)
    repeated = sorted({i for i in page.ids if page.ids.count(i) > 1})
    assert repeated == []
    assert sorted(set(page.refs) - set(page.ids)) == []
    assert page.refs  # the page links to its own source lines at least


def test_two_charts_of_one_page_share_no_id_and_stay_deterministic():
    from effspec.report import charts

    result = effspec.load(ROOT / "examples" / "example_a_measured.eff")
    first = render(result, "html")
    assert first == render(effspec.load(ROOT / "examples" / "example_a_measured.eff"), "html")
    svgs = re.findall(r"<svg.*?</svg>", first.decode("utf-8"), re.S)
    assert len(svgs) >= 2
    prefixes = [sorted({i.split("-", 1)[0] for i in _anchors(s).ids}) for s in svgs]
    assert prefixes == [[f"c{n}"] for n in range(1, len(svgs) + 1)]  # one prefix per chart, in page order
    # The rewrite leaves references to ids the chart does not define alone, and rewrites both kinds it does.
    svg = '<svg><defs><path id="g1"/></defs><use xlink:href="#g1"/><rect clip-path="url(#g1)"/><a href="#L3"/></svg>'
    assert charts.scope_ids(svg, "c7") == ('<svg><defs><path id="c7-g1"/></defs><use xlink:href="#c7-g1"/>'
                                           '<rect clip-path="url(#c7-g1)"/><a href="#L3"/></svg>')
