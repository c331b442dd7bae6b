"""Jupyter: the report's summary and findings inline (``Result._repr_html_``).

The fragment is cut from the page :func:`effspec.report.html.render_html` makes, so it
comes from the same templates with the same autoescaping: a spec string renders as
text in a notebook exactly as in the HTML report.  The report's stylesheet is not
included (it styles the whole page, and a notebook is someone else's page); a few
rules scoped to the fragment's own class keep the tables readable.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from effspec.report.html import prefixed, render_html

if TYPE_CHECKING:
    from effspec import Result
from effspec.report.sections import build

SECTIONS = ("summary", "findings")
_STYLE = ("<style>.effspec-report table{border-collapse:collapse}"
          ".effspec-report td,.effspec-report th{padding:0.15em 0.5em;vertical-align:top}"
          ".effspec-report tr.notes td,.effspec-report tr.status td,.effspec-report tr.versus td{font-size:85%}"
          ".effspec-report .excerpt{white-space:pre-wrap}</style>")


def section(page: str, name: str) -> str:
    """``<section id="name">…</section>`` of a rendered report page (sections do not nest)."""
    start = page.find(f'<section id="{name}">')
    if start < 0:
        return ""
    end = page.find("</section>", start)
    return page[start:end + len("</section>")]


_LINK = re.compile(r'<a([^>]*?) href="#([^"]*)"([^>]*)>(.*?)</a>', re.S)
_ID = re.compile(r'\sid="([^"]*)"')


def render_notebook(result: Result) -> str:
    """The summary and findings of the result's report, as one fragment a notebook page can hold
    several of: every id is prefixed with a digest of the fragment (two reports in one notebook
    do not share ``#finding-1``), and a link whose target is not in the fragment (an input row
    or a source line: those sections are the appendix, not shown inline) becomes plain text."""
    page = render_html(build(result))
    body = "\n".join(section(page, s) for s in SECTIONS)
    prefix = "effspec-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:10] + "-"
    body = prefixed(body, prefix)
    ids = set(_ID.findall(body))
    body = _LINK.sub(lambda m: m[0] if m[2] in ids else f"<span{m[1]}{m[3]}>{m[4]}</span>", body)
    return f'<div class="effspec-report">{_STYLE}{body}</div>'
