"""EFF406: the per-rank diagnosis, with its p-value and effect size."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.ranks.significance import P_FLOOR, p_text
from effspec.rules import AuditContext, Rule

NAMED = ("straggler", "imbalance", "single_device")


def _p_text(p: float, evidence: dict) -> str:
    """As the diagnosis writes it: ``p < bound`` at the floor of the exact tail (P_FLOOR, times the straggler
    tests' Bonferroni count for a straggler's corrected p: the evidence's ``p_is_bound``)."""
    return f"p < {p:.1e}" if evidence.get("p_is_bound") is True or p <= P_FLOOR else p_text(p)


def _effect(evidence: dict) -> str:
    effect = evidence.get("effect_size")
    if not isinstance(effect, dict) or not isinstance(effect.get("value"), (int, float)):
        return ""
    value = float(effect["value"])
    measure = str(effect.get("measure", "effect"))
    shown = f"{value:.1%}" if measure == "MFU" else f"{value:+.1%}" if "excess" in measure else f"{value:.2f}"
    return f"effect size: {measure} = {shown}"


class EFF406(Rule):
    """Per-rank diagnosis.

    ## What it does
    Reports the cause family the run's per-rank timing (`ranks { samples =
    … }`) was diagnosed with (`straggler`, `imbalance` or `single_device`),
    the ranks and nodes it names, and the evidence: the p-value of the test
    against step-to-step noise and the effect size.  When the ranks are
    uneven enough to be imbalance but step-to-step noise explains it, it says
    "balanced within noise", with the p-value and about how many steps would
    detect the spread.  An informational finding: the diagnosis is evidence,
    so that text and SARIF show it beside the JSON and the reports.

    ## Why is this bad?
    It is not a fault of the spec: it says where the time of an MFU collapse
    went.  A family is named only when its evidence is significant at the
    run's `alpha` (1 % by default, spec/language.md section 13), so a
    noisy but balanced run is not accused of a straggler or imbalance.

    ## Example
    ```eff
    eff 1

    run sharded {
      ranks { samples = file "ranks.csv" }
    }
    ```

    ## Use instead
    ```eff
    eff 1

    # effspec: file-ignore[EFF406]
    run sharded {
      ranks { samples = file "ranks.csv" }
    }
    ```
    """

    code = "EFF406"
    title = "per-rank diagnosis"
    severity = "info"
    name = "rank-diagnosis"
    nodes = ("run.ranks.samples",)

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            diagnosis = result.diagnosis if result is not None else None
            block = run.block("ranks")
            entry = block.get("samples") if block is not None else None
            if diagnosis is None or entry is None:
                continue
            evidence = diagnosis.evidence
            if diagnosis.family in NAMED:
                p = evidence.get("p_value")
                named = ", ".join(str(r) for r in diagnosis.ranks[:10]) + (", …" if len(diagnosis.ranks) > 10 else "")
                where = (f"rank{'s' if len(diagnosis.ranks) != 1 else ''} {named}"
                         f" on {', '.join(diagnosis.nodes[:10])}{', …' if len(diagnosis.nodes) > 10 else ''}"
                         if diagnosis.family == "straggler" else f"{len(diagnosis.ranks):,} ranks named")
                test = (_p_text(float(p), evidence) if isinstance(p, (int, float)) and not isinstance(p, bool)
                        else "no test against noise: MFU is an input")
                parts = [where, test, _effect(evidence)]
                message = (f"run `{run.id}`: the per-rank timing is diagnosed `{diagnosis.family}` ("
                           + "; ".join(x for x in parts if x) + ")")
            elif diagnosis.reason.startswith("balanced within noise"):
                message = f"run `{run.id}`: the per-rank timing is {diagnosis.reason.split(':', 1)[0]}"
            else:
                continue
            yield self.diag(
                entry.value_span, message,
                "the JSON `diagnosis` and the report's per-rank section hold the evidence; `ranks { alpha = … }` "
                "sets the false-positive rate",
                label=f"`{diagnosis.family}`", notes=(diagnosis.reason,))
