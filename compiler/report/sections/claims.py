"""Section 5, the claims against their reconstructions.

Runs set as one table on page 1 (consecutive claims-only runs with the same
headline figures) have their claims set as one table here too, the claims of
each run under its name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.report.sections.views import ClaimView, claim_views

if TYPE_CHECKING:
    from effspec.engine.results import RunResult
    from effspec.report.sections.run import RunView

__all__ = ["ClaimView", "ClaimsBlock", "ClaimsView", "build", "claims"]


def claims(rr: RunResult) -> tuple[ClaimView, ...]:
    return claim_views(rr.claims.values())


@dataclass(frozen=True)
class ClaimsBlock:
    runs: tuple[RunView, ...]

    @property
    def is_table(self) -> bool:
        return len(self.runs) > 1


@dataclass(frozen=True)
class ClaimsView:
    blocks: tuple[ClaimsBlock, ...]


def build(runs: tuple[RunView, ...], groups: tuple[tuple[int, ...], ...]) -> ClaimsView:
    """``groups``: page 1's blocks, as 0-based run places."""
    return ClaimsView(tuple(ClaimsBlock(tuple(runs[n] for n in g)) for g in groups))
