"""Auditable reports of a checked spec: HTML, PDF, JSON, SARIF, Markdown, LaTeX.

``render(result, fmt, paper=...)`` returns the bytes of one report.  Heavy
libraries (Jinja2, matplotlib, WeasyPrint) are imported only inside the
formats that need them, so ``effspec check`` never pays for them.
"""

from __future__ import annotations

import json

__all__ = ["FORMATS", "render"]

FORMATS = ("html", "pdf", "json", "sarif", "md", "tex")


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


def render(result, fmt: str, paper: str = "a4", doc_base: str | None = None) -> bytes:
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
        from effspec.report.context import build

        report = build(result, charts=True, doc_base=doc_base)
        if fmt == "html":
            from effspec.report.html import render_html

            return render_html(report).encode("utf-8")
        from effspec.report.pdf import render_pdf

        return render_pdf(report, paper)
    raise ValueError(f"unknown report format {fmt!r}; use one of " + ", ".join(FORMATS))
