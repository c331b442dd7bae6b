"""The package version and the addresses its metadata declares, in one place below every stage."""

from __future__ import annotations

from functools import cache

__version__ = "0.1.0"

# PEP 753's well-known labels, normalized (lower case, letters and digits only), and their aliases.
_ALIASES = {
    "homepage": ("homepage",),
    "source": ("source", "repository", "sourcecode", "github"),
    "issues": ("issues", "bugtracker", "issuetracker", "bugs", "tracker", "bugreports"),
    "documentation": ("documentation", "docs"),
}


def _normalized(label: str) -> str:
    return "".join(c for c in label.lower() if c.isalnum())


@cache
def project_urls() -> dict[str, str]:
    """The installed distribution's ``Project-URL`` entries (pyproject's ``[project.urls]``), by normalized label.

    Empty when none are declared or effspec runs from a tree with no metadata: the tool prints only an
    address the project has declared, never one made up.
    """
    from importlib import metadata

    try:
        entries = metadata.metadata("effspec").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return {}
    urls: dict[str, str] = {}
    for entry in entries:
        label, _, url = str(entry).partition(",")
        url = url.strip()
        if url.startswith(("https://", "http://")):
            urls.setdefault(_normalized(label), url)
    return urls


def project_url(kind: str) -> str | None:
    """The declared address of ``kind`` (``homepage``, ``source``, ``issues``, ``documentation``), or None."""
    urls = project_urls()
    return next((urls[a] for a in _ALIASES.get(kind, (kind,)) if a in urls), None)


def report_a_bug() -> str:
    """How to report a bug in effspec: where the metadata says (its `Issues` URL), else with no address."""
    url = project_url("issues")
    return f"Please report it with the spec that triggers it: {url}" if url else \
        "Please report it to effspec's maintainers with the spec that triggers it"
