"""Where a report sends its reader for a rule's documentation.

By default, the page shipped with the package (``spec/rules/EFFnnn.md``, installed
as ``effspec/spec/rules/EFFnnn.md``) and ``effspec explain CODE``, which prints the
same page: nothing on the network, and no address that might not exist.  A
documentation base (``--doc-base URL`` on `check` and `report`, or ``doc_base``
in ``[tool.effspec]``) makes the reports link there: ``{code}`` in the base is
replaced by the code, else ``/EFFnnn.md`` is appended, as the pages are laid out
in ``spec/rules/``.  The base is an http(s) URL (``front.config.doc_base_error``);
a link is made only for a code of the rules' own table, never from other text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SHIPPED = "effspec/spec/rules/{code}.md"


@dataclass(frozen=True)
class RulePage:
    code: str
    url: str  # "" without a documentation base
    shipped: str  # the page inside the installed package
    explain: str  # the command that prints it

    @property
    def help_text(self) -> str:
        """For SARIF's `help`: where the page is, in words."""
        where = f"the rule's page: {self.url}; " if self.url else ""
        return f"{where}run `{self.explain}` to print it (shipped with effspec as {self.shipped})."


def rule_url(code: str, base: str | None) -> str:
    if not base:
        return ""
    return base.replace("{code}", code) if "{code}" in base else base.rstrip("/") + f"/{code}.md"


def known_page(code: str, base: str | None = None) -> RulePage:
    """The documentation of ``code``, a code the caller took from the rules' table."""
    return RulePage(code, rule_url(code, base), SHIPPED.format(code=code), f"effspec explain {code}")


def rule_page(code: str, base: str | None = None) -> RulePage | None:
    """The documentation of ``code``, or None for a code outside the rules' table."""
    from effspec.rules import code_table  # here: a warm cached `check` loads no rule module

    return known_page(code, base) if code in code_table() else None


def effective_base(flag: str | None, results: Iterable[object] = ()) -> str | None:
    """The documentation base: the command line's, else the first configuration that sets one."""
    if flag:
        return flag
    for result in results:  # Result objects, or SARIF parts (dicts) from the result cache
        base = result.get("doc_base") if isinstance(result, dict) else getattr(getattr(result, "settings", None), "doc_base", None)
        if base:
            return str(base)
    return None
