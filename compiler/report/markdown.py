"""Markdown for a pull-request comment: headline figures, claims, findings.

Kept under GitHub's comment limit (65,536 characters): the findings list is cut
with a note when it would not fit.  Spec strings are escaped so they cannot
open links, images, HTML, math or break a table, and so that no GFM renderer
turns them into a link or a mention (see :func:`esc`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from effspec.diagnostics import sanitize
from effspec.report.assumptions import named
from effspec.report.sections import build
from effspec.report.sections.summary import HEADLINE

if TYPE_CHECKING:
    from effspec import Result
    from effspec.report.sections import ReportView
    from effspec.report.sections.findings import FindingView
    from effspec.report.sections.summary import HeadlineView
    from effspec.report.sections.views import MetricView

LIMIT = 65_000
# What a spec string must not become, and how each is defused:
# - structure (code, emphasis, links, images, HTML, entities, strikethrough,
#   math, headings, table cells): a backslash before each of  \ ` * _ [ ] < > | ~ & $ #
# - autolinks: a backslash before every `:` (no `https://`, `mailto:`, emoji
#   shortcode), before a `.` that a letter follows (no `www.`, no bare
#   `evil.com` for linkifiers that take one) and before the first `/` of `//`
#   (no protocol-relative `//host`); these are parse-time matches, and an
#   escaped character is not matched;
# - e-mail links, @mentions and issue references (`#12`, `owner/repo#12`):
#   GitHub finds these in the text *after* parsing (cmark-gfm merges the text
#   nodes first, so `user\@evil.example` is still a mailto link), so a backslash
#   is not enough: the `@`, or a `#` before a digit, goes into a code span of
#   its own, which splits the text node and is skipped by every such filter.
_SPECIALS = re.compile(r"(?P<span>(?:@|#(?=\d))+)|[\\`*_\[\]|<>~&$#:]|\.(?=[^\W\d_])|/(?=/)")


def _defuse(m: re.Match[str]) -> str:
    return f"`{m.group()}`" if m.group("span") else "\\" + m.group()


def esc(text: object) -> str:
    """Spec text as inert Markdown: one line, no control or bidi character, no
    structure, no link, no mention."""
    return _SPECIALS.sub(_defuse, " ".join(sanitize(str(text)).split()))


def code(text: object, cell: bool = False) -> str:
    """Spec text as a code span (whose content no renderer links or mentions):
    the fence is one backtick longer than any run inside, and in a table
    ``cell`` a `|` is escaped (GFM splits cells before it parses code)."""
    body = " ".join(sanitize(str(text)).split())
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    if not body:  # a span of spaces alone is shown as it is
        body = " "
    elif body.startswith("`") or body.endswith("`"):  # a space each side, which the span strips
        body = f" {body} "
    if cell:
        body = body.replace("|", "\\|")
    fence = "`" * (longest + 1)
    return f"{fence}{body}{fence}"


def prose(text: object, cell: bool = False) -> str:
    """Finding text as Markdown: its `…` spans become real code spans (see :func:`code`), the rest
    is escaped prose (see :func:`esc`), so GitHub shows `mfu` as code, not as literal backticks."""
    parts = re.split(r"`([^`]*)`", " ".join(sanitize(str(text)).split()))
    return "".join(code(p, cell) if i % 2 else _SPECIALS.sub(_defuse, p) for i, p in enumerate(parts))


def plural(n: int, word: str) -> str:
    """``3 errors``, ``1 warning``, ``2 info`` (info is a mass noun)."""
    return f"{n} {word}{'s' if n != 1 and word != 'info' else ''}"


def _fenced(lines: list[str]) -> list[str]:
    """A fenced text block longer than any backtick run inside, so no line can close it."""
    body = [" ".join(sanitize(x).split()).join(("  ", "")) if x.startswith("  ") else " ".join(sanitize(x).split())
            for x in lines]
    longest = max((len(r) for x in body for r in re.findall(r"`+", x)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *body, fence]


def _derivation(metric: MetricView) -> list[str]:
    lines = [f"{metric.name} = {metric.formula}", f"  = {metric.substituted}"]
    if metric.interval:
        lines.append(f"  interval: {metric.interval_how}")
    return lines


def _headline_cell(h: HeadlineView) -> str:
    value = f"~~{esc(h.value)}~~" if h.finding else esc(h.value)
    if h.interval:
        value += f" {esc(h.interval)}"
    extra = [f"wrong input: {h.finding}" + (f", line {h.finding_line}" if h.finding_line else "")] if h.finding else []
    extra += [x for x in (h.corrected, h.claimed) if x]
    extra += [h.note] if h.note and not h.finding else []
    if h.causes and not h.finding:  # the HTML links these; a comment names them
        extra.append("rests on assumed inputs: " + named([c.text for c in h.causes]))
    return value + (" (" + "; ".join(prose(x, cell=True) for x in extra) + ")" if extra else "")


def _finding_derivation(f: FindingView, report: ReportView) -> list[str]:
    """The derivation a finding at a line is about: a figure that reads that line, or rests on it."""
    if not f.line:
        return []
    for run in report.runs:
        for m in run.metrics:
            if any(i.line == f.line for i in m.inputs):
                return _derivation(m)
        claim = next((c for c in run.claims if c.line == f.line), None)
        resting = [m for m in run.metrics if f"(line {f.line})" in m.basis]
        named = [m for m in run.metrics if claim is not None and m.name == claim.written]
        for m in named + [m for m in resting if m.name == "mfu"] + resting:
            return _derivation(m)
    return []


def render_markdown(result: Result) -> str:
    report = build(result)
    counts = ", ".join(plural(n, s) for s, n in report.counts) + (
        f", {len(report.suppressed) + report.suppressed_omitted:,} suppressed or lowered" if report.suppressed else "")
    out = [f"## effspec audit: {esc(report.title)}", ""]
    out += [f"- {prose(v.sentence)}" for v in report.verdicts] + ([""] if report.verdicts else [])
    out += [f"{code(report.file)}: {counts}", ""]
    for run in report.runs:
        out += [f"### {esc(run.id)}" + (f": {esc(run.title)}" if run.title else ""), ""]
        out.append("| " + " | ".join(esc(h.label) for h in run.headline) + " |")
        out.append("|" + "---:|" * len(run.headline))
        out.append("| " + " | ".join(_headline_cell(h) for h in run.headline) + " |")
        out.append("")
        if run.claims:
            out += ["| claim | claimed | reconstructed | status | basis | line |", "|---|---:|---:|---|---|---:|"]
            for c in run.claims:
                status = f"**{c.status_text}**" if c.status != "consistent" else c.status_text
                out.append(f"| {code(c.written, cell=True)} | {esc(c.claimed)} | {esc(c.reconstructed)} | {status} "
                           f"| {prose(c.basis, cell=True)} | {c.line} |")
            out.append("")
        shown = [m for m in run.metrics if m.name in HEADLINE or m.name in ("model_flops_per_step", "aggregate_peak")]
        if shown:
            out += [f"Derivations of {code(run.id)}:", ""]
            out += _fenced([x for m in shown for x in _derivation(m)])
            out.append("")
    for s in report.scalings:
        out += [f"### scaling {esc(s.id)} ({esc(s.kind)}, baseline {esc(s.baseline)})", "",
                "| run | devices | speedup | efficiency |", "|---|---:|---:|---:|"]
        out += [f"| {esc(r.run_id)} | {r.devices} | {esc(r.speedup)} | {esc(r.efficiency)} |" for r in s.rows]
        out.append("")
        if s.claims:
            out += ["| claim | claimed | reconstructed | status | compared | line |", "|---|---:|---:|---|---|---:|"]
            for c in s.claims:
                status = f"**{c.status_text}**" if c.status != "consistent" else c.status_text
                out.append(f"| {code(c.written, cell=True)} | {esc(c.claimed)} | {esc(c.reconstructed)} | {status} "
                           f"| {prose(c.basis, cell=True)} | {c.line} |")
            out.append("")
    for added in report.sections.added:  # sections added by a module of effspec.report.sections
        if added.section.markdown is not None:
            out += [f"### {esc(added.section.title)}", "", *added.section.markdown(added.view), ""]
    out += ["### Findings", ""]
    if not report.findings:
        out.append("No findings.")
    body = "\n".join(out)
    tail = _suppressed(report)
    lines: list[str] = []
    for i, f in enumerate(report.findings):
        where = f"line {f.line}:{f.column}" if f.line else "file"
        item = [f"- **{f.code}** {f.severity}, {where}: {prose(f.message)}"]
        item += [f"  - {prose(n)}" for n in f.notes]
        derivation = _finding_derivation(f, report)
        if derivation:
            item += ["", *("  " + x for x in _fenced(derivation))]
        if f.help:
            item.append(f"  - help: {prose(f.help)}")
        text = "\n".join(item)
        if len(body) + sum(len(x) + 1 for x in lines) + len(text) + len(tail) + 200 > LIMIT:
            lines.append(f"- … and {len(report.findings) - i} more findings: see the full report.")
            break
        lines.append(text)
    return (body + ("\n" if lines else "") + "\n".join(lines) + "\n\n" + tail
            + "\n\n<sub>Generated by effspec from the audited spec.</sub>\n")


def _suppressed(report: ReportView, most: int = 20) -> str:
    """The findings pragmas or the configuration dropped or lowered, and by what: at most
    ``most``, each message cut to 200 characters, so the section stays under 20,000 characters."""
    out = ["### Suppressed findings", "",
           "Configuration: " + (code(report.config) if report.config else "none") + "."]
    if report.not_applied:
        shown = ", ".join(esc(p) for p in report.not_applied[:most])
        more = f" and {len(report.not_applied) - most} more" if len(report.not_applied) > most else ""
        out += ["", f"Pragmas not applied (inline configuration is off: {esc(report.off_by)}): {shown}{more}."]
    if not report.suppressed:
        return "\n".join(out + ["", "No finding was suppressed."])
    out.append("")
    for s in report.suppressed[:most]:
        where = f"line {s.line}:{s.column}" if s.line else "file"
        message = s.message if len(s.message) <= 200 else s.message[:199] + "…"
        out.append(f"- **{s.code}** {s.severity}, {where}, {esc(s.effect)} by {esc(s.by[:200])}: {esc(message)}")
    total = len(report.suppressed) + report.suppressed_omitted
    if total > most:
        out.append(f"- … and {total - most:,} more: see the JSON or HTML report.")
    return "\n".join(out)
