"""A key of the language: its kind, unit, range and doc (effspec.front.keys holds the tables of them;
a layer kind, effspec.front.mixers, declares its block's keys with these too)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict, Unpack


@dataclass(frozen=True)
class Key:
    name: str
    kind: str  # quantity | integer | enum | string | bool | samples | peak | run | runs | file | pattern | names
    unit: str = ""  # canonical unit of a quantity ("" = dimensionless)
    alt_units: tuple[str, ...] = ()  # other accepted dimensions (breakdown: share or seconds)
    choices: tuple[str, ...] = ()
    minimum: float = 0.0  # inclusive
    maximum: float | None = None  # inclusive, in the canonical unit
    positive: bool = False  # strictly greater than zero
    shares: bool = False  # an enum that also takes a share (ratio or %) in [minimum, maximum]
    whole: bool = False  # a quantity that counts whole things (devices, steps): 5e-324 device is no count
    doc: str = ""


class _Range(TypedDict, total=False):
    """The range a quantity or integer key may take (Key's fields of that name)."""

    minimum: float
    maximum: float | None
    positive: bool
    whole: bool


def q(name: str, unit: str, doc: str = "", **kw: Unpack[_Range]) -> Key:
    return Key(name, "quantity", unit=unit, doc=doc, **kw)


def i(name: str, doc: str = "", **kw: Unpack[_Range]) -> Key:
    return Key(name, "integer", doc=doc, **kw)


def e(name: str, choices: Iterable[str], doc: str = "") -> Key:
    return Key(name, "enum", choices=tuple(choices), doc=doc)
