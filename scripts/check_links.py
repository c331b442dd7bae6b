"""Check every internal link of a built documentation site: the file it names exists, and so does its anchor.

    python scripts/check_links.py out/site      # after `mkdocs build` (make docs runs both)

External links (with a scheme: https:, mailto:) are not followed: the check needs no network.  Prints each
broken link as `page: href (why)` and exits 1 if there is one.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

MAX_PAGE_BYTES = 8 << 20  # a generated page larger than this is itself a fault


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (tag, name) in (("a", "href"), ("link", "href"), ("img", "src"), ("script", "src")):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_bytes()[:MAX_PAGE_BYTES].decode("utf-8", errors="replace"))
    page.close()
    return page


def broken_links(site: Path) -> list[str]:
    """`page: href (why)` for each internal link of the site under ``site`` that leads nowhere."""
    site = site.resolve()
    pages = {p: _parse(p) for p in sorted(site.rglob("*.html"))}
    out = []
    for path, page in pages.items():
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                continue
            if not parts.path:
                target = path
            elif parts.path.startswith("/"):  # from the site's root (the 404 page's links)
                target = (site / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {href}"
            if not target.is_relative_to(site):
                out.append(f"{where} (outside the site)")
            elif not target.is_file():
                out.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    out.append(f"{where} (no anchor #{parts.fragment})")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python scripts/check_links.py SITE_FOLDER", file=sys.stderr)
        return 2
    broken = broken_links(Path(argv[0]))
    for line in broken:
        print(line)
    print(f"{len(broken)} broken internal link(s)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
