"""Audit rules: one class per file, grouped by family, found by discovery.

A rule declares its ``code``, a short ``name``, the ``title`` and default
``severity`` the code table shows, and the IR ``nodes`` it looks at: adding a
rule is adding one file.  Its docstring is its page:
the sections What it does / Why is this bad? / Example / Use instead, which
``effspec explain`` prints and ``spec/rules/`` is generated from.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING

from effspec.codes import CODES
from effspec.diagnostics import SEVERITIES, Diagnostic, Fix, Span

if TYPE_CHECKING:  # annotations only: listing the rules (explain, pages) does not load the engine
    from effspec.engine.results import Evaluation
    from effspec.front.ir import Spec

__all__ = ["FAMILIES", "PAGE_SECTIONS", "AuditContext", "Rule", "all_rules", "code_table", "rule_for", "run_rules"]


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


def _families() -> tuple[str, ...]:
    """The subpackages holding rule files (``EFFnnn.py``), in the order of their first code: a new
    family is a new folder, found as its rules are."""
    firsts = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            folders = [os.path.join(path, info.name) for path in __path__]
            codes = sorted(m.name for m in pkgutil.iter_modules(folders) if re.fullmatch(r"EFF\d{3}", m.name))
            if codes:
                firsts[info.name] = codes[0]
    return tuple(sorted(firsts, key=lambda family: firsts[family]))


FAMILIES = _families()  # numerator (1xx), denominator (2xx), scaling, time, sampling, claims, numerics (7xx)
PAGE_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")


@dataclass
class AuditContext:
    """What a rule sees: the checked IR and its evaluation."""

    spec: Spec
    evaluation: Evaluation
    source: str

    @cached_property
    def lines(self) -> list[str]:
        """``source`` split at ``\\n`` (as the parser counts lines), once per audit, not once per finding."""
        return self.source.split("\n")


class Rule:
    code: str = ""
    name: str = ""
    title: str = ""  # the code table's short title
    severity: str = "warning"  # the default; pragmas and configuration may change it
    nodes: tuple[str, ...] = ()

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        raise NotImplementedError

    def diag(self, span: Span | None, message: str, help: str = "", label: str = "",
             notes: tuple[str, ...] = (), fixes: tuple[Fix, ...] = ()) -> Diagnostic:
        return Diagnostic(self.code, self.severity, span, message, help, label, notes=notes, fixes=fixes)


@cache
def all_rules() -> tuple[Rule, ...]:
    """Every rule, in code order (modules imported once per process)."""
    rules = []
    for family in FAMILIES:
        package = importlib.import_module(f"{__name__}.{family}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            cls = getattr(module, info.name, None)
            if isinstance(cls, type) and issubclass(cls, Rule):
                rules.append(cls())
    return tuple(sorted(rules, key=lambda r: r.code))


def rule_for(code: str) -> Rule | None:
    return next((r for r in all_rules() if r.code == code), None)


def run_rules(ctx: AuditContext) -> Iterator[Diagnostic]:
    for rule in all_rules():
        yield from rule.check(ctx)


@cache
def code_table() -> dict[str, tuple[str, str]]:
    """Every code, front end's and rules', in code order: code -> (title, default severity)."""
    table = dict(CODES)
    for rule in all_rules():
        if rule.code in table or rule.severity not in SEVERITIES or not rule.title:
            raise ValueError(f"rule {rule.code}: a code is used once, with a title and a severity in {SEVERITIES}")
        table[rule.code] = (rule.title, rule.severity)
    return dict(sorted(table.items()))
