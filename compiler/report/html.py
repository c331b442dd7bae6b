"""HTML rendering: Jinja2 over the bundled templates, autoescaped, strict."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import jinja2
    from markupsafe import Markup

    from effspec.report.sections import ReportView

TEMPLATE_PACKAGE = "effspec.templates"


def read_asset(name: str) -> bytes:
    """A bundled asset (template, stylesheet, font) by its path inside ``effspec.templates``.

    Only plain relative paths inside the package are served: no absolute
    paths, no ``..``, so a name can never reach outside the bundle.
    """
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in name:
        raise FileNotFoundError(name)
    node = resources.files(TEMPLATE_PACKAGE)
    for part in parts:
        node = node.joinpath(part)
    if not node.is_file():
        raise FileNotFoundError(name)
    return node.read_bytes()


def environment() -> jinja2.Environment:
    """The Jinja2 environment: autoescape on for every template (``select_autoescape``
    would not match ``*.html.j2``), undefined names are errors."""
    import jinja2

    def load(name: str) -> tuple[str, None, Callable[[], bool]] | None:
        try:
            text = read_asset(name).decode("utf-8")
        except FileNotFoundError:
            return None
        return text, None, lambda: True

    env = jinja2.Environment(loader=jinja2.FunctionLoader(load), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    env.filters["code_spans"] = code_spans
    env.filters["breakable"] = breakable
    return env


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> Markup:
    """A finding's text as markup: escaped first, whole, then each `…` pair made a <code> span.
    The backticks and what they hold are already escaped text when the span is made, so a
    hostile string stays inert (``<`` inside a span is ``&lt;``); an unpaired backtick stays
    a backtick."""
    from markupsafe import Markup, escape

    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", str(escape(text))))


# After a separator inside an identifier: a letter on one side (``llama3_405b_8k`` breaks after
# ``405b_`` and ``8k_``), never between digits (``1.5``, ``1_000``).
_WRAP_POINT = re.compile(r"(?<=[A-Za-z])([._/])(?=[A-Za-z0-9])|(?<=[0-9])([._/])(?=[A-Za-z])")
_LONG_RUN = re.compile(r"[^\s\0]{25,}")
_RUN_PIECE = 16


def breakable(text: object) -> Markup:
    """Text (plain, which is escaped, or markup already safe) with a line-break opportunity
    (``<wbr>``) after each ``.``, ``_`` or ``/`` inside an identifier, and every 16 characters
    of a longer unbroken run, for narrow cells set with ``overflow-wrap: normal``:
    ``work.padded_tokens`` wraps as ``work.`` / ``padded_tokens``, where WeasyPrint's
    emergency wrapping broke it as ``w`` / ``ork.padded_tokens``.  Tags are left as they are;
    text is unescaped, marked, and escaped again, so no entity is split."""
    from markupsafe import Markup, escape

    out = []
    for part in re.split(r"(<[^>]*>)", str(text if isinstance(text, Markup) else escape(text))):
        if part.startswith("<"):
            out.append(part)
            continue
        plain = _WRAP_POINT.sub(lambda m: m[0] + "\0", Markup(part).unescape().replace("\0", ""))
        plain = _LONG_RUN.sub(lambda m: "\0".join(m[0][i:i + _RUN_PIECE] for i in range(0, len(m[0]), _RUN_PIECE)), plain)
        out.append(str(escape(plain)).replace("\0", "<wbr>"))
    return Markup("".join(out))


@dataclass(frozen=True)
class AddedHTML:
    """An added section's body, rendered from its own template (autoescaped, like every template)."""

    id: str
    number: int
    title: str
    body: Markup


def render_html(report: ReportView, extra_css: str = "") -> str:
    """The report page.  ``extra_css`` is ours only (fonts, page size), never spec text."""
    from markupsafe import Markup

    from effspec.version import __version__

    env = environment()
    added = [AddedHTML(a.section.id, a.number, a.section.title, Markup(env.from_string(a.section.html).render(view=a.view)))
             for a in report.sections.added if a.section.html]
    css = read_asset("report.css").decode("utf-8") + extra_css
    # The stylesheet is a bundled file, not spec input; inside <style> entities
    # are not decoded, so it must go in unescaped.
    return str(env.get_template("report.html.j2").render(r=report, css=Markup(css), version=__version__, added=added))


_ANCHORS = re.compile(r'(\sid="|href="#|xlink:href="#|url\(#)')


def prefixed(body: str, prefix: str) -> str:
    """Every id, and every reference to one, in one spec's report body, with ``prefix``.

    Spec text is autoescaped (``"`` is ``&#34;``), so these attribute openings
    are ours (the template's and the charts'), never a spec's."""
    return _ANCHORS.sub(lambda m: m.group(1) + prefix, body)


def combine_html(pages: list[tuple[str, str, str]]) -> str:
    """One HTML document of several specs' report pages ((title, file, page) each, escaped as rendered).

    The first page's head (stylesheet) is kept; each page's body becomes an
    ``<article>`` whose ids are prefixed ``s1-``, ``s2-``…, so the document
    has unique ids and its own contents list links to each spec's summary."""
    from markupsafe import escape

    head = pages[0][2].split("<body>", 1)[0]
    head = re.sub(r"<title>.*?</title>", f"<title>effspec audit of {len(pages)} specs</title>", head, count=1, flags=re.S)
    css = ('<style>section[id$="-findings"], section[id$="-source"] { page-break-before: always; break-before: page; }\n'
           "article.spec + article.spec { page-break-before: always; break-before: page; }</style>\n</head>")
    head = head.replace("</head>", css, 1)
    items = "".join(f'<li><a href="#s{i}-summary">{escape(title)}</a> <code>{escape(file)}</code></li>'
                    for i, (title, file, _page) in enumerate(pages, 1))
    out = [head, "<body>\n<header class=\"cover\">\n",
           f'<h1 class="doc-title">effspec audit of {len(pages)} specs</h1>\n',
           f'<nav class="toc"><h2 class="toc-title">Specs</h2><ol>{items}</ol></nav>\n</header>\n']
    for i, (_title, _file, page) in enumerate(pages, 1):
        body = page.split("<body>", 1)[1].rsplit("</body>", 1)[0]
        out.append(f'<article class="spec" id="s{i}">{prefixed(body, f"s{i}-")}</article>\n')
    out.append("</body>\n</html>\n")
    return "".join(out)
