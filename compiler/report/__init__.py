"""Auditable reports of a checked spec: HTML, PDF, JSON, SARIF, Markdown, LaTeX.

``render(result, fmt, paper=...)`` returns the bytes of one report;
``render_many(results, fmt, paper=...)`` one report of several specs.  Heavy
libraries (Jinja2, matplotlib, WeasyPrint) are imported only inside the
formats that need them, so ``effspec check`` never pays for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from effspec import Result

__all__ = ["FORMATS", "render"]

FORMATS = ("html", "pdf", "json", "sarif", "md", "tex")


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


def render(result: Result, fmt: str, paper: str = "a4", doc_base: str | None = None) -> bytes:
    """The report of ``result`` (an :class:`effspec.Result`) in ``fmt``, as bytes.

    ``paper`` (``a4`` or ``letter``) sets the PDF page size; ``doc_base`` (an http(s) URL)
    is where rule links point (HTML, PDF, SARIF), else the configuration's ``doc_base``,
    else the page shipped with the package and ``effspec explain CODE``.
    """
    if fmt == "json":
        from effspec.report.text import result_json

        return (json.dumps(result_json(result), indent=2, allow_nan=False) + "\n").encode("utf-8")
    if fmt == "sarif":
        from effspec.report.sarif import sarif_log

        return (json.dumps(sarif_log([result], doc_base), indent=2) + "\n").encode("utf-8")
    if fmt == "md":
        from effspec.report.markdown import render_markdown

        return render_markdown(result).encode("utf-8")
    if fmt == "tex":
        from effspec.report.latex import render_latex

        return render_latex(result).encode("utf-8")
    if fmt in ("html", "pdf"):
        from effspec.report.sections import build

        report = build(result, charts=True, doc_base=doc_base)
        if fmt == "html":
            from effspec.report.html import render_html

            return render_html(report).encode("utf-8")
        from effspec.report.pdf import render_pdf

        return render_pdf(report, paper)
    raise ValueError(f"unknown report format {fmt!r}; use one of " + ", ".join(FORMATS))


def render_many(results: Iterable[Result], fmt: str, paper: str = "a4", doc_base: str | None = None) -> bytes:
    """One report of several checked specs, in the order given.

    JSON: an array of the file objects (one object each, as ``render`` writes
    for one spec); SARIF: one log, one artifact per spec; Markdown: the specs'
    sections one after the other; LaTeX: one file of macros, a name defined
    once (later specs' clashing names are skipped with a comment); HTML and
    PDF: one document, a contents list of the specs, then each spec's report
    with its anchors prefixed (``s1-``, ``s2-``…) so that every id is unique.
    One spec is exactly ``render(result, fmt)``; ``doc_base`` as there.
    """
    results = list(results)
    if len(results) == 1:
        return render(results[0], fmt, paper=paper, doc_base=doc_base)
    if fmt == "json":
        from effspec.report.text import result_json

        return (json.dumps([result_json(r) for r in results], indent=2, allow_nan=False) + "\n").encode("utf-8")
    if fmt == "sarif":
        from effspec.report.sarif import sarif_log

        return (json.dumps(sarif_log(results, doc_base), indent=2) + "\n").encode("utf-8")
    if fmt == "md":
        from effspec.report.markdown import render_markdown

        return "\n".join(render_markdown(r) for r in results).encode("utf-8")
    if fmt == "tex":
        from effspec.report.latex import render_latex

        seen: set[str] = set()
        return "\n".join(render_latex(r, seen) for r in results).encode("utf-8")
    if fmt in ("html", "pdf"):
        from effspec.report.html import combine_html, render_html
        from effspec.report.sections import build

        extra = ""
        if fmt == "pdf":
            from effspec.report.pdf import print_css

            extra = print_css(paper)
        reports = [build(r, charts=True, doc_base=doc_base) for r in results]
        html = combine_html([(report.title, report.file, render_html(report, extra)) for report in reports])
        if fmt == "html":
            return html.encode("utf-8")
        from effspec.report.pdf import render_pdf_html

        return render_pdf_html(html)
    raise ValueError(f"unknown report format {fmt!r}; use one of " + ", ".join(FORMATS))
