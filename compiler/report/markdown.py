"""Markdown for a pull-request comment: headline figures, claims, findings.

Kept under GitHub's comment limit (65,536 characters): the findings list is cut
with a note when it would not fit.  Spec strings are escaped so they cannot
open links, images, HTML, math or break a table, and so that no GFM renderer
turns them into a link or a mention (see :func:`esc`).
"""

from __future__ import annotations

import re

from effspec.diagnostics import sanitize
from effspec.report.context import build

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


def _defuse(m: re.Match) -> str:
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


def render_markdown(result) -> str:
    report = build(result)
    out = [f"## effspec audit: {esc(report.title)}", "",
           f"{code(report.file)}: " + ", ".join(f"{n} {s}" for s, n in report.counts)
           + (f", {len(report.suppressed) + report.suppressed_omitted:,} suppressed or lowered" if report.suppressed else ""), ""]
    for run in report.runs:
        out += [f"### {esc(run.id)}" + (f": {esc(run.title)}" if run.title else ""), ""]
        out.append("| " + " | ".join(esc(h.label) for h in run.headline) + " |")
        out.append("|" + "---:|" * len(run.headline))
        out.append("| " + " | ".join(esc(h.value) + (f" ({esc(h.note)})" if h.note else "") for h in run.headline) + " |")
        out.append("")
        if run.claims:
            out += ["| claim | claimed | reconstructed | status | basis | line |", "|---|---:|---:|---|---|---:|"]
            for c in run.claims:
                status = f"**{c.status}**" if c.status != "consistent" else c.status
                out.append(f"| {code(c.written, cell=True)} | {esc(c.claimed)} | {esc(c.reconstructed)} | {status} "
                           f"| {esc(c.basis)} | {c.line} |")
            out.append("")
    for s in report.scalings:
        out += [f"### scaling {esc(s.id)} ({esc(s.kind)}, baseline {esc(s.baseline)})", "",
                "| run | devices | speedup | efficiency |", "|---|---:|---:|---:|"]
        out += [f"| {esc(r.run_id)} | {r.devices} | {esc(r.speedup)} | {esc(r.efficiency)} |" for r in s.rows]
        out.append("")
        if s.claims:
            out += ["| claim | claimed | reconstructed | status | compared | line |", "|---|---:|---:|---|---|---:|"]
            for c in s.claims:
                status = f"**{c.status}**" if c.status != "consistent" else c.status
                out.append(f"| `{esc(c.written)}` | {esc(c.claimed)} | {esc(c.reconstructed)} | {status} | {esc(c.basis)} | {c.line} |")
            out.append("")
    out += ["### Findings", ""]
    if not report.findings:
        out.append("No findings.")
    body = "\n".join(out)
    tail = _suppressed(report)
    lines: list[str] = []
    for i, f in enumerate(report.findings):
        where = f"line {f.line}:{f.column}" if f.line else "file"
        item = f"- **{f.code}** {f.severity}, {where}: {esc(f.message)}" + (f"  \n  help: {esc(f.help)}" if f.help else "")
        if len(body) + sum(len(x) + 1 for x in lines) + len(item) + len(tail) + 200 > LIMIT:
            lines.append(f"- … and {len(report.findings) - i} more findings: see the full report.")
            break
        lines.append(item)
    return (body + ("\n" if lines else "") + "\n".join(lines) + "\n\n" + tail
            + "\n\n<sub>Generated by effspec from the audited spec.</sub>\n")


def _suppressed(report, most: int = 20) -> str:
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
