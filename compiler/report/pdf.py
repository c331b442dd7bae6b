"""PDF rendering with WeasyPrint: the HTML report under print CSS.

Safety: the document is rendered from a string, with no base URL, through a
URL fetcher that serves only bundled assets under the ``effspec-asset:``
scheme and stops the render on any other URL (no network, no local file).
Determinism: no dates in the document or its metadata, ``SOURCE_DATE_EPOCH``
set before fonts are subset, a fixed PDF identifier.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from effspec.report.sections import ReportView

ASSET_SCHEME = "effspec-asset:"
FONTS = (
    ("EffSans", "normal", "fonts/DejaVuSans.ttf"),
    ("EffSans", "bold", "fonts/DejaVuSans-Bold.ttf"),
    ("EffMono", "normal", "fonts/DejaVuSansMono.ttf"),
    # Bold monospace is not bundled: map it to the regular mono face rather
    # than let fontconfig pick a system font.
    ("EffMono", "bold", "fonts/DejaVuSansMono.ttf"),
)
PAGE_SIZES = {"a4": "A4", "letter": "letter"}


def _fetcher_class() -> type[Any]:
    from weasyprint.urls import FatalURLFetchingError, URLFetcher, URLFetcherResponse

    from effspec.report.html import read_asset

    class BundledOnlyFetcher(URLFetcher):  # type: ignore[misc]  # WeasyPrint ships no type hints
        """Deny by default: only ``effspec-asset:<path>`` inside the package is served.

        A refusal raises WeasyPrint's FatalURLFetchingError, which it lets
        through, so the render fails instead of silently dropping the resource.
        """

        def __init__(self) -> None:
            super().__init__(timeout=1, allowed_protocols=(), allow_redirects=False, fail_on_errors=True)

        def fetch(self, url: object, headers: object = None) -> Any:  # noqa: D401 - WeasyPrint's signature
            if not isinstance(url, str) or not url.startswith(ASSET_SCHEME):
                raise FatalURLFetchingError(f"effspec reports load no external resources: refused {url!r}")
            name = url[len(ASSET_SCHEME):]
            try:
                body = read_asset(name)
            except (FileNotFoundError, OSError):
                raise FatalURLFetchingError(f"no bundled asset {name!r}") from None
            mime = "text/css" if name.endswith(".css") else "font/ttf" if name.endswith(".ttf") else "application/octet-stream"
            return URLFetcherResponse(url, body, {"Content-Type": mime})

        def open(self, url: object, data: object = None, timeout: object = None) -> Any:  # urllib entry points, the same gate
            return self.fetch(getattr(url, "full_url", url))

    return BundledOnlyFetcher


def url_fetcher() -> Any:
    """A new deny-by-default fetcher (also used by the tests)."""
    return _fetcher_class()()


def print_css(paper: str) -> str:
    """Our own print additions: bundled fonts and the page size (never spec text)."""
    size = PAGE_SIZES[paper]
    faces = "".join(
        f'@font-face {{ font-family: "{family}"; font-weight: {weight}; font-style: normal; '
        f'src: url("{ASSET_SCHEME}{path}"); }}\n' for family, weight, path in FONTS)
    return f"\n{faces}@page {{ size: {size}; }}\n"


def layout_pdf(report: ReportView, paper: str = "a4") -> tuple[Any, str]:
    """The laid-out WeasyPrint document and the HTML it came from (the tests read its pages and boxes)."""
    if paper not in PAGE_SIZES:
        raise ValueError(f"unknown paper size {paper!r}; use a4 or letter")
    from effspec.report.html import render_html

    html = render_html(report, print_css(paper))
    return layout_html(html), html


def render_pdf(report: ReportView, paper: str = "a4") -> bytes:
    """The report as PDF bytes, byte-identical for identical input on one machine."""
    return write_pdf(*layout_pdf(report, paper))


_NOTICE = {"given": False}
SLOW_SUBSET_NOTICE = ("effspec: note: libharfbuzz-subset (HarfBuzz 4.1 or newer) not found; WeasyPrint subsets the PDF's "
                      "fonts with fontTools instead, which is slower (Debian/Ubuntu: apt install libharfbuzz-subset0; "
                      "macOS: brew install harfbuzz)")


def fast_font_subsetting() -> bool:
    """Whether WeasyPrint will subset fonts with HarfBuzz: its own test (`harfbuzz_subset` loaded, HarfBuzz ≥ 4.1)."""
    from weasyprint.text import ffi

    subset = getattr(ffi, "harfbuzz_subset", None)
    try:
        return bool(subset) and bool(ffi.harfbuzz.hb_version_atleast(4, 1, 0))
    except Exception:  # another WeasyPrint: say nothing rather than guess
        return True


def _notice_slow_subsetting() -> None:
    """One line on stderr, once per process, when PDFs will be slow for want of libharfbuzz-subset."""
    if _NOTICE["given"] or fast_font_subsetting():
        return
    _NOTICE["given"] = True
    import sys

    print(SLOW_SUBSET_NOTICE, file=sys.stderr)


def layout_html(html: str) -> Any:
    """The laid-out WeasyPrint document of a report page already rendered with :func:`print_css`."""
    # fontTools stamps subset fonts with the current time unless this is set.
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    from weasyprint import HTML
    from weasyprint.text.fonts import FontConfiguration

    _notice_slow_subsetting()
    return HTML(string=html, base_url=None, url_fetcher=url_fetcher()).render(font_config=FontConfiguration())


def write_pdf(document: Any, html: str) -> bytes:
    """PDF bytes of a laid-out document; a fixed identifier from the content keeps the trailer /ID stable."""
    ident = hashlib.sha256(html.encode("utf-8")).hexdigest()[:32].encode("ascii")
    return bytes(document.write_pdf(pdf_identifier=ident))


def render_pdf_html(html: str) -> bytes:
    """The PDF of a report page already rendered with :func:`print_css` (one spec's, or several specs' combined)."""
    return write_pdf(layout_html(html), html)
