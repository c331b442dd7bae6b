"""Section 6, the findings: each finding with its place, message, the lines around it, notes,
help and its rule's page; one rule's findings on several runs as one block; then the findings
pragmas or the configuration dropped or lowered, and by what."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.diagnostics import ELLIPSIS, EXCERPT_COLUMNS, Diagnostic, Span, excerpt_window
from effspec.report.rulepages import rule_page
from effspec.report.words import clean
from effspec.rules import code_table

if TYPE_CHECKING:
    from effspec.front.config import Suppression

@dataclass(frozen=True)
class ExcerptLine:
    number: int
    text: str
    target: bool


@dataclass(frozen=True)
class FindingView:
    code: str
    severity: str
    title: str
    line: int | None
    column: int | None
    message: str
    help: str
    label: str
    notes: tuple[str, ...]
    excerpt: tuple[ExcerptLine, ...]
    rule_url: str  # the rule's page under the configured documentation base; "" without one
    rule_page: str = ""  # the page shipped with the package (effspec/spec/rules/EFFnnn.md)
    explain: str = ""  # `effspec explain EFFnnn`, which prints it


@dataclass(frozen=True)
class FindingGroup:
    """One rule's findings, set as one block: the same finding on three quoted runs reads once,
    with each run's own place, message, lines and notes.

    ``members`` pairs each finding with its place in the findings (its ``#finding-N``
    anchor, which the "assumed" badges link to).  ``help`` is the help every member
    shares, printed once; a member whose help differs prints its own."""

    code: str
    severity: str
    title: str
    members: tuple[tuple[int, FindingView], ...]
    help: str
    rule_url: str
    label: str  # the caret label every member shares, printed once; "" when they differ
    rule_page: str
    explain: str
    notes: tuple[str, ...] = ()  # the notes every member has, word for word: printed once, not with each

    def own_notes(self, finding: FindingView) -> tuple[str, ...]:
        """A member's notes but those every member shares (:attr:`notes`)."""
        return tuple(n for n in finding.notes if n not in self.notes)


def group_findings(findings: tuple[FindingView, ...]) -> tuple[FindingGroup, ...]:
    """The findings grouped by rule and severity, in the order each group first occurs; nothing dropped."""
    by_rule: dict[tuple[str, str], list[tuple[int, FindingView]]] = {}
    for n, f in enumerate(findings, 1):
        by_rule.setdefault((f.code, f.severity), []).append((n, f))
    groups = []
    for (code, severity), members in by_rule.items():
        first = members[0][1]
        helps, labels = {f.help for _, f in members}, {f.label for _, f in members}
        shared = tuple(n for n in first.notes if len(members) > 1 and all(n in f.notes for _, f in members))
        groups.append(FindingGroup(code, severity, first.title, tuple(members), first.help if len(helps) == 1 else "",
                                   first.rule_url, first.label if len(labels) == 1 and len(members) > 1 else "",
                                   first.rule_page, first.explain, shared))
    return tuple(groups)


@dataclass(frozen=True)
class SuppressedView:
    """A finding a pragma or the configuration dropped or lowered, and what did it."""

    code: str
    severity: str  # as the rule reported it
    title: str
    line: int | None
    column: int | None
    message: str
    effect: str  # "ignored", "lowered to warning"
    by: str  # the pragma and its line, or the configuration key and file


def _excerpt(lines: list[str], span: Span | None) -> tuple[ExcerptLine, ...]:
    """The finding's lines and one either side; a long line is cut to the
    columns around the caret (``excerpt_window``), the cuts marked with "…"."""
    if span is None or not (1 <= span.line <= len(lines)):
        return ()
    last = min(max(span.end_line, span.line), span.line + 4, len(lines))
    first = max(1, span.line - 1)
    start = excerpt_window(len(lines[span.line - 1]), span.column)[0]  # the same columns on every line
    stop = start + EXCERPT_COLUMNS

    def shown(text: str) -> str:
        if start == 0 and len(text) <= stop:
            return text
        return (ELLIPSIS if start > 0 else "") + text[start:stop] + (ELLIPSIS if len(text) > stop else "")

    return tuple(ExcerptLine(n, clean(shown(lines[n - 1]).replace("\t", "    ")), span.line <= n <= last)
                 for n in range(first, min(len(lines), last + 1) + 1) if n <= len(lines))


def finding_view(d: Diagnostic, lines: list[str], doc_base: str | None = None) -> FindingView:
    s = d.span if not d.file else None  # in another file (the configuration): no spec line to link
    message = d.message + (f" (at {d.file}:{d.span.line}:{d.span.column})" if s is None and d.span else "")
    # Only codes from our own table get a page: never a link built from other text.
    page = rule_page(d.code, doc_base)
    return FindingView(d.code, d.severity, code_table().get(d.code, ("", ""))[0], s.line if s else None,
                       s.column if s else None, clean(message), clean(d.help), clean(d.label),
                       tuple(clean(n) for n in d.notes), _excerpt(lines, s),
                       page.url if page else "", page.shipped if page else "", page.explain if page else "")


def suppressed_view(s: Suppression) -> SuppressedView:
    d = s.diagnostic
    return SuppressedView(d.code, d.severity, code_table().get(d.code, ("", ""))[0], d.span.line if d.span else None,
                          d.span.column if d.span else None, clean(d.message), clean(s.effect), clean(s.by))


@dataclass(frozen=True)
class Member:
    """A finding of a group, with the caret label, notes and help it prints itself (the group prints the shared ones)."""

    number: int  # its place in the findings: its ``#finding-N`` anchor
    finding: FindingView
    label: str
    notes: tuple[str, ...]
    help: str


@dataclass(frozen=True)
class GroupView:
    group: FindingGroup
    members: tuple[Member, ...]

    @property
    def single(self) -> Member | None:
        """The group's one finding, set as a finding alone; None for a group of several."""
        return self.members[0] if len(self.members) == 1 else None


NOT_APPLIED_SHOWN = 50  # pragmas not applied listed by name; the rest counted


@dataclass(frozen=True)
class FindingsView:
    findings: tuple[FindingView, ...]
    groups: tuple[GroupView, ...]
    suppressed: tuple[SuppressedView, ...]
    suppressed_omitted: int  # suppressed findings beyond the per-file cap, not in ``suppressed``
    config: str  # the configuration file that applied, relative to the spec; "" for none
    not_applied: tuple[str, ...]  # pragmas in the spec that were not applied (inline configuration off)
    off_by: str  # what turned inline configuration off: `--no-inline-config`, or the configuration key

    @property
    def not_applied_plural(self) -> str:
        return "s" if len(self.not_applied) != 1 else ""

    @property
    def not_applied_shown(self) -> tuple[str, ...]:
        return self.not_applied[:NOT_APPLIED_SHOWN]

    @property
    def not_applied_more(self) -> int:
        return max(0, len(self.not_applied) - NOT_APPLIED_SHOWN)


def group_view(group: FindingGroup) -> GroupView:
    return GroupView(group, tuple(Member(n, f, f.label if not group.label else "", group.own_notes(f),
                                         "" if group.help else f.help) for n, f in group.members))


def build(findings: tuple[FindingView, ...], suppressed: tuple[SuppressedView, ...], suppressed_omitted: int,
          config: str, not_applied: tuple[str, ...], off_by: str) -> FindingsView:
    return FindingsView(findings, tuple(group_view(g) for g in group_findings(findings)), suppressed,
                        suppressed_omitted, config, not_applied, off_by)
