"""The documentation site (mkdocs.yml: spec/ and the rule pages) builds, and its internal links hold.

1. scripts/check_links.py finds a planted missing file, a missing anchor and a link out of the site,
   and passes good links and external ones (which it never follows).
2. `mkdocs build --strict` (broken Markdown links and anchors are errors there) makes one page per
   spec/*.md and spec/rules/*.md, and the link check passes on what it built; skips without mkdocs
   (the dev dependency group has it).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_links", ROOT / "scripts" / "check_links.py")
check_links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_links)


def test_the_link_checker_finds_planted_faults(tmp_path):
    site = tmp_path / "site"
    (site / "rules").mkdir(parents=True)
    (site / "index.html").write_text(
        '<a href="rules/a.html#what">ok</a> <a href="rules/a.html#gone">anchor</a> <a href="missing.html">file</a>'
        '<a href="../outside.html">out</a> <a href="https://example.org/x.html">external</a> <a href="#top">self</a>'
        '<h1 id="top">t</h1> <img src="/img/logo.png">', encoding="utf-8")
    (site / "rules" / "a.html").write_text('<h2 id="what">w</h2> <a href="../index.html#top">back</a>', encoding="utf-8")
    assert check_links.broken_links(site) == [
        "index.html: rules/a.html#gone (no anchor #gone)",
        "index.html: missing.html (no such file)",
        "index.html: ../outside.html (outside the site)",
        "index.html: /img/logo.png (no such file)",
    ]


@pytest.mark.slow
def test_the_site_builds_and_its_links_hold(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev dependency group (make test installs it)")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.relative_to(ROOT / "spec").with_suffix(".html").as_posix() for p in (ROOT / "spec").rglob("*.md")}
    pages = {"rules/index.html" if p == "rules/README.html" else p for p in pages}  # README.md is its folder's index
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert pages <= built, sorted(pages - built)
    assert "rules/EFF202.html" in built and "language.html" in built
    assert check_links.broken_links(site) == []
