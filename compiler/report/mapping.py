"""Result objects seen as plain mappings, for tables and charts alike."""

from __future__ import annotations

import dataclasses
from typing import Any


def as_mapping(obj: object) -> dict[str, Any] | None:
    """A dict, a dataclass's fields, or ``to_json()``'s dict; None for anything else."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    to_json = getattr(obj, "to_json", None)
    if callable(to_json):
        data = to_json()
        return data if isinstance(data, dict) else None
    return None
