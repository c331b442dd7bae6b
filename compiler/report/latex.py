r"""LaTeX macros, so the numbers in a paper come straight from the audited spec.

Macro names (documented again in the header of every .tex file):
``\eff`` + run id + metric, each camel-cased, letters only.  An id is split at
underscores and at every letter/digit boundary; each word is capitalised; each
digit is spelled out as a capitalised English word.  ``llm3b_64`` + ``mfu`` gives
``\effLlmThreeBSixFourMfu``.  Scalings: ``\eff`` + scaling id + run id + metric.
A name that collides with an earlier one is skipped (with a comment), never
renamed silently.  ``\effClaimsTable`` (``\effClaimsTable<Run>`` per run) is a
tabular of the claims.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from effspec.diagnostics import printable
from effspec.display import sig
from effspec.report.words import value_text

if TYPE_CHECKING:
    from effspec import Result
    from effspec.engine.results import Evaluation, Metric, RunResult
    from effspec.engine.scaling import ScalingResult

DIGITS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")
_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """Spec text safe inside a LaTeX argument: specials escaped, controls dropped."""
    text = "".join(c for c in str(text) if c >= " " or c == "\t").replace("\t", " ")
    return "".join(_TEX_SPECIALS.get(c, c) for c in text)


def camel(identifier: str) -> str:
    """``llm3b_64`` -> ``LlmThreeBSixFour``: letters only, deterministic."""
    out = []
    for part in re.findall(r"[A-Za-z]+|[0-9]", identifier):
        out.append(DIGITS[int(part)] if part.isdigit() else part[:1].upper() + part[1:])
    return "".join(out)


def tex_value(value: float, unit: str, name: str = "") -> str:
    """A figure in text-mode LaTeX: ``47.12\\%``, ``1,850,479\\,token/s``."""
    if unit == "" and name != "speedup":
        return sig(value * 100) + r"\%"
    text = value_text(value, unit, name)
    return tex_escape(text).replace(" ", r"\,").replace("×", r"$\times$")


def suppression_comments(result: Result, most: int = 50) -> list[str]:
    """LaTeX comment lines: the findings pragmas or the configuration dropped or lowered, by what,
    and the pragmas not applied (with what turned inline configuration off)."""
    out: list[str] = []
    suppressed = getattr(result, "suppressed", ())
    total = len(suppressed) + getattr(result, "suppressed_omitted", 0)
    out.append(f"% Suppressed findings (dropped or lowered by pragmas or configuration): {total or 'none'}")
    for s in suppressed[:most]:
        d = s.diagnostic
        where = f" at {d.span.line}:{d.span.column}" if d.span else ""
        out.append(f"%   {d.code} {d.severity}{where}, {tex_escape(s.effect)} by {tex_escape(s.by[:200])}")
    if total > most:
        out.append(f"%   and {total - most} more (see the JSON report)")
    unapplied = getattr(result, "pragmas_not_applied", ())
    if unapplied:
        off_by = tex_escape(getattr(result, "pragmas_off_by", "") or "configuration")
        out.append(f"% Pragmas not applied (inline configuration is off: {off_by}): {len(unapplied)}")
        out += [f"%   {tex_escape(p.written())}" for p in unapplied[:most]]
        if len(unapplied) > most:
            out.append(f"%   and {len(unapplied) - most} more (see the JSON report)")
    return out


def _metric_macros(rid: str, rr: RunResult) -> list[tuple[str, str, str]]:
    """(name, body, what) of each figure's macro, and of its interval where it is not exact."""
    out = []
    for mname, metric in rr.metrics.items():
        out.append((f"eff{camel(rid)}{camel(mname)}", tex_value(metric.value, metric.unit, mname), f"{rid}.{mname}"))
        out += [(f"eff{camel(rid)}{camel(mname)}Interval", bounds, f"{rid}.{mname}, interval by interval arithmetic")
                for bounds in _interval(metric, mname)]
    return out


def _interval(metric: Metric, name: str) -> list[str]:
    """``[46.44\\,\\%, 50.86\\,\\%]``: a figure's interval as macro text; none for an exact figure."""
    fi = metric.interval
    if fi is None or fi.method != "interval arithmetic":
        return []
    return [f"[{tex_value(fi.lo, metric.unit, name)}, {tex_value(fi.hi, metric.unit, name)}]"]


class _Macros:
    """The .tex lines, each name defined once (``seen`` is shared across specs joined in one file)."""

    def __init__(self, out: list[str], seen: set[str]) -> None:
        self.out, self.seen = out, seen

    def define(self, name: str, body: str, what: str) -> None:
        if name in self.seen:
            self.out.append(f"% skipped {tex_escape(what)}: the name \\{name} is already defined above")
            return
        self.seen.add(name)
        self.out.append(f"\\newcommand{{\\{name}}}{{{body}}}% {tex_escape(what)}")


def render_latex(result: Result, seen: set[str] | None = None) -> str:
    """The spec's figures as LaTeX macros; ``seen`` (names already defined, updated) joins several specs in one file."""
    ev = cast("Evaluation | None", result.evaluation)
    out = [
        "% effspec: figures from the audited spec " + tex_escape(printable(result.file)),
        "% Macro names: \\eff + run id + metric, camel-cased, letters only. Ids are split at",
        "% underscores and letter/digit boundaries, words capitalised, each digit spelled out",
        "% (llm3b_64 + mfu -> \\effLlmThreeBSixFourMfu). Scalings: \\eff + scaling id + run id",
        "% + metric. Colliding names are skipped with a comment. \\effClaimsTable<Run> is a",
        "% tabular of a run's (or a scaling's) claims; \\effClaimsTable holds them all.",
        "% Ratios are in percent (47.12\\%); other figures carry their unit.",
    ]
    out += suppression_comments(result)
    out.append("")
    macros = _Macros(out, set() if seen is None else seen)
    if ev is None:
        out.append("% the spec did not compile: no figures")
        return "\n".join(out) + "\n"
    all_rows = []
    for rid, rr in ev.runs.items():
        all_rows += _run_macros(macros, rid, rr)
    for sid, sr in ev.scalings.items():
        all_rows += _scaling_macros(macros, sid, sr)
    macros.define("effClaimsTable", _tabular(all_rows), "claims of every run and scaling")
    from effspec.report.claim_summary import claim_lines

    for lead in claim_lines(result):  # page 1's sentence, for a paper's text: \\effVerdict<Run>
        macros.define(f"effVerdict{camel(lead.owner)}", _ticks(lead.sentence), f"verdict of {lead.owner}")
    _added_macros(macros, result)
    return "\n".join(out) + "\n"


def _run_macros(macros: _Macros, rid: str, rr: RunResult) -> list[str]:
    """A run's figures, implied figures and claims table; the table's rows, headed by the run."""
    for macro in _metric_macros(rid, rr):
        macros.define(*macro)
    for mname, metric in rr.implied.items():
        if mname not in rr.metrics:
            macros.define(f"eff{camel(rid)}{camel(mname)}Implied", tex_value(metric.value, metric.unit, metric.name),
                          f"{rid}.{mname}, implied by {metric.basis}")
    rows = []
    for cr in rr.claims.values():
        claimed = tex_value(cr.claimed, cr.unit) if cr.claimed is not None else "--"
        recon = tex_value(cr.reconstructed, cr.unit) if cr.reconstructed is not None else "--"
        status = "agrees with a claim" if cr.status == "consistent" and cr.basis.startswith("claim") else cr.status
        rows.append(f"\\texttt{{{tex_escape(cr.claim.written)}}} & {claimed} & {recon} & {status} \\\\")
    macros.define(f"effClaimsTable{camel(rid)}", _tabular(rows), f"claims of {rid}")
    return [f"\\multicolumn{{4}}{{l}}{{\\textbf{{{tex_escape(rid)}}}}} \\\\"] + rows


def _scaling_macros(macros: _Macros, sid: str, sr: ScalingResult) -> list[str]:
    """A scaling's figures of each run and its claims table; the table's rows (none without claims)."""
    for run in sr.runs:
        for mname, metric in run.metrics.items():
            macros.define(f"eff{camel(sid)}{camel(run.run_id)}{camel(mname)}",
                          tex_value(metric.value, metric.unit, mname), f"{sid}: {run.run_id}.{mname}")
    rows = []
    for key, cr in sr.claims.items():
        name = "speedup" if cr.claim.name.endswith("speedup") else ""
        claimed = tex_value(cr.claimed, cr.unit, name) if cr.claimed is not None else "--"
        recon = tex_value(cr.reconstructed, cr.unit, name) if cr.reconstructed is not None else "--"
        rows.append(f"\\texttt{{{tex_escape(key)}}} & {claimed} & {recon} & {cr.status} \\\\")
    if not rows:
        return []
    macros.define(f"effClaimsTable{camel(sid)}", _tabular(rows), f"claims of scaling {sid}")
    return [f"\\multicolumn{{4}}{{l}}{{\\textbf{{scaling {tex_escape(sid)}}}}} \\\\"] + rows


def _added_macros(macros: _Macros, result: Result) -> None:
    """The macros of the sections added by modules of effspec.report.sections that give some."""
    from effspec.report.sections import added_in

    for section, view in added_in(result, "latex"):
        for name, body, what in cast("Any", section.latex)(view):
            if re.fullmatch(r"[A-Za-z]+", name):
                macros.define(name, body, what)
            else:
                macros.out.append(f"% skipped {tex_escape(what)}: a macro name is letters only, not {tex_escape(name)}")


def _ticks(text: str) -> str:
    """A sentence with `…` spans as \\texttt, the rest escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all plain
        return tex_escape(text)
    return "".join(f"\\texttt{{{tex_escape(p)}}}" if i % 2 else tex_escape(p) for i, p in enumerate(parts))


def _tabular(rows: list[str]) -> str:
    head = "\\begin{tabular}{lrrl}\\hline claim & claimed & reconstructed & status \\\\\\hline"
    return "%\n" + head + "\n" + "\n".join(rows) + "\n\\hline\\end{tabular}"
