"""Stage 4: run every audit rule over the evaluated spec."""

from __future__ import annotations

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, run_rules


def audit(spec, evaluation, source: str) -> list[Diagnostic]:
    """Findings of all rules (severities as the code table sets them)."""
    return list(run_rules(AuditContext(spec, evaluation, source)))
