"""Quick fixes: the table is effspec.rules.fixes, shared with `effspec check --fix`.

``fixes_for`` gives a finding's candidate edits; the server offers only the
vetted ones (``Analysis.offers``, effspec.rules.fixes.vet: the text after the
fix is checked again), safe or not, as code actions, and marks preferred only
those proven safe.  This module keeps the names it has always exported.
"""

from __future__ import annotations

from effspec.diagnostics import Fix
from effspec.rules.fixes import fixes_for, vet

__all__ = ["Fix", "fixes_for", "vet"]
