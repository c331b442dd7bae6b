"""`check --select/--ignore/--extend-select/--extend-ignore` and `--fail-on`: which findings remain, and the exit status.

A code is kept when its most specific matching `--select`/`--extend-select`
prefix is longer than its most specific matching `--ignore`/`--extend-ignore`
prefix (ruff's rule; on a tie `--ignore` wins).  With no `--select`, every
code is selected.  Front-end errors EFF001–EFF099 are never dropped.  A
finding dropped here is recorded as suppressed "by --ignore …" like one a
configuration `ignore` drops, so every output still lists it.
"""

from __future__ import annotations

import argparse
import re

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_CODE = re.compile(r"EFF[0-9]{0,3}")


def code_list(text: str) -> list[str]:
    """A comma-separated list of codes or prefixes (`EFF2`, `EFF601`); anything else is an argument error."""
    out = [c.strip().upper() for c in text.split(",") if c.strip()]
    for c in out:
        if not _CODE.fullmatch(c):
            shown = repr(c[:40])
            raise argparse.ArgumentTypeError(f"expected a code or a code prefix such as EFF601 or EFF2, got {shown}")
    return out


def _flat(values: list[list[str]] | None) -> list[str]:
    return [c for group in values or () for c in group]


class Selection:
    def __init__(self, select=None, ignore=None, extend_select=None, extend_ignore=None) -> None:
        chosen = _flat(select) if select else ["EFF"]
        self.select = chosen + _flat(extend_select)
        self.ignore = _flat(ignore) + _flat(extend_ignore)
        self.active = bool(select or ignore or extend_select or extend_ignore)

    def unknown(self) -> list[str]:
        """The prefixes that match no code (a typo selects or ignores nothing, silently, otherwise)."""
        from effspec.rules import code_table

        known = list(code_table())
        return [p for p in dict.fromkeys(self.select + self.ignore) if not any(c.startswith(p) for c in known)]

    @staticmethod
    def _best(code: str, prefixes: list[str]) -> tuple[int, str]:
        return max(((len(p), p) for p in prefixes if code.startswith(p)), default=(-1, ""))

    def dropped_by(self, code: str) -> str | None:
        """What drops ``code`` ("--ignore EFF2", "not in --select EFF6"), or None when it is kept."""
        if code < "EFF100":
            return None
        sel, ign = self._best(code, self.select), self._best(code, self.ignore)
        if sel[0] > ign[0]:
            return None
        if ign[0] >= 0:
            return f"--ignore {ign[1]}"
        return f"--select (not in {','.join(self.select)})"


def apply(result, selection: Selection) -> None:
    """Move each finding ``selection`` drops into ``result.suppressed``, recorded by the flag that dropped it."""
    if not selection.active:
        return
    from effspec.diagnostics import sort_key
    from effspec.front.config import Suppression

    kept, suppressed = [], list(result.suppressed)
    for d in result.diagnostics:
        by = selection.dropped_by(d.code)
        if by is None:
            kept.append(d)
        else:
            suppressed.append(Suppression(d, by, "external", "ignored"))
    result.diagnostics = kept
    result.suppressed = sorted(suppressed, key=lambda s: (sort_key(s.diagnostic), s.by))


def fails(severities: set[str], fail_on: str) -> bool:
    """A finding at or above ``fail_on`` remains."""
    return any(SEVERITY_RANK.get(s, 0) <= SEVERITY_RANK[fail_on] for s in severities)
