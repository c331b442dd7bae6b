"""The charts' shared style and SVG output, drawn with matplotlib's object API (never pyplot).

Every chart must read in grayscale print: series differ by gray level *and*
hatching, and carry direct labels rather than a colour legend.  Output is
byte-identical across runs: ``svg.hashsalt`` is fixed (per chart, so the hashed
clip-path and hatch ids of two charts in one page never collide), the Date
metadata is dropped, and text is drawn as paths so no font is looked up later.

Labels come from identifiers and fixed category names; matplotlib escapes the
text it writes into SVG, so the result is safe to inline as markup.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from collections.abc import Iterator

    from markupsafe import Markup
    from matplotlib.typing import RcKeyType

# Gray levels, each with its own hatch, so neighbours differ in print.  Dotted
# hatches ('.', 'o') are avoided: matplotlib writes them as huge SVG patterns.
STYLES = (
    ("#3a3a3a", ""), ("#9a9a9a", "////"), ("#d9d9d9", ""), ("#6a6a6a", "||"),
    ("#ffffff", "\\\\\\"), ("#b8b8b8", "xx"), ("#f2f2f2", "--"), ("#ffffff", "++"),
)
INK = "#1a1a1a"
# A label drawn over the data (the median, the stall threshold) sits on a light box, so no line runs through it.
LABEL_BOX = {"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
RC: dict[RcKeyType, Any] = {  # rc_context's own parameter type
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 7.5,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "hatch.linewidth": 0.6,
    "hatch.color": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# Charts are drawn only where they say something: a histogram needs enough
# samples to have a shape (below this the statistics table says it all, and
# each bin would hold a sample or two), a stacked bar at least two segments.
MIN_HISTOGRAM_SAMPLES = 20
MAX_TICKS = 6  # major ticks per axis: each is several artists and a text drawn as paths


@cache
def _style() -> dict[RcKeyType, Any]:
    """The shared chart style, validated by matplotlib once per process and reused by every chart."""
    import matplotlib

    params = matplotlib.RcParams()
    for key, value in RC.items():
        params[key] = value  # validated here, once
    return dict(params)


@contextmanager
def _styled(salt: str) -> Iterator[None]:
    """One rc context per chart: the shared style and the chart's own SVG id salt."""
    import matplotlib

    with matplotlib.rc_context({**_style(), "svg.hashsalt": f"effspec-{salt}"}):
        yield


def svg(fig: Any, salt: str) -> str:
    """The figure as an <svg> element (no XML prolog), deterministic.  Called inside ``_styled(salt)``."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=None)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def new_figure(width: float, height: float) -> tuple[Any, Any]:
    """A figure and its axes in the shared style (called inside ``_styled``), with few ticks."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(MAX_TICKS, steps=[1, 2, 2.5, 5, 10]))  # AutoLocator's nice steps
    return fig, ax


MAX_LABEL_CHARS = 40  # a spec identifier in a chart: each character is a path, and no one reads 20,000 of them


def short_label(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[:MAX_LABEL_CHARS - 1] + "\u2026"


def markup(svg: str) -> Markup:
    from markupsafe import Markup

    return Markup(svg)  # produced by matplotlib from our own labels, escaped by it


_ID = re.compile(r'(\sid=")([^"]+)"')
_REF = re.compile(r'(url\(#|(?:xlink:)?href="#)([^)"]+)')


def scope_ids(svg: str, prefix: str) -> Markup:
    """``svg`` with every id it defines prefixed ``prefix-``, and every reference to one of them
    (``url(#…)``, ``xlink:href="#…"``) rewritten to match.  matplotlib numbers its groups
    (``figure_1``, ``patch_3``) and names its glyphs (``DejaVuSans-31``) the same in every
    chart, so two charts in one page would repeat ids; a chart's index in its document,
    as the prefix, makes them unique and keeps the page deterministic.  ``prefix`` is ours
    (``c1``, ``c2``…), never spec text."""
    defined = {m.group(2) for m in _ID.finditer(svg)}
    text = _ID.sub(lambda m: f'{m.group(1)}{prefix}-{m.group(2)}"', str(svg))
    text = _REF.sub(lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in defined else m.group(2)), text)
    return markup(text)
