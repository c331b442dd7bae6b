"""Quick fixes: the table is effspec.rules.fixes, shared with `effspec check --fix`.

The language server offers every fix of a finding, safe or not, as a code
action; this module keeps the names it has always imported.
"""

from __future__ import annotations

from effspec.diagnostics import Fix
from effspec.rules.fixes import fixes_for

__all__ = ["Fix", "fixes_for"]
