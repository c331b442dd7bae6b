"""The layer kinds of a hybrid stack beside attention and the FFNs: one module a kind, found by discovery.

A layer kind is one file, ``compiler/front/mixers/<kind>.py``, defining a class ``Kind`` (a
:class:`Mixer`) whose ``name`` is the module's name: the block written inside `model` (`mamba2 { … }`),
its keys, its `pattern` letter and `layer_types` names, its `effspec explain` page, and how one layer of it
is counted per token (multiply-adds, as the framework that publishes the models counts them) and weighed
(parameters).  Nothing else lists the kinds: the key tables (effspec.front.keys), the stack forms
(effspec.front.layers), the checks (effspec.front.build), the FLOP and parameter counts
(effspec.engine.flops), `effspec explain` and the language reference all read :func:`all_mixers`.

The kinds live in the front end, as the presets do, so that the language's key table can read them; the
engine counts with them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Any

from effspec.front.keyspec import Key

if TYPE_CHECKING:
    from effspec.front.ir import Block

Term = tuple[str, str, float]  # (term name, formula, multiply-adds per token of one layer)


class Mixer:
    """One kind of mixer layer: its block, its names in the three stack forms, its count."""

    name: str = ""  # the block's name in `model`, the module's name, and its name in `layer_types`
    order: int = 100  # where it is listed (the tables, the letters, the help); then by name
    letter: str | None = None  # its `pattern` (hybrid_override_pattern) letter; None: it has none
    shown: str = ""  # its letter in a displayed stack (default: `letter`)
    aliases: tuple[str, ...] = ()  # other `layer_types` names of it
    linear: bool = False  # `linear_attention` in `layer_types` may mean this kind (the model's one linear mixer)
    symbol: str = ""  # its layer count in formulas: L_mamba
    model: str = ""  # a model that has it, named in help: "`mamba2 { … }` (Nemotron-H)"
    keys: tuple[Key, ...] = ()  # the block's keys, in the order the reference lists them
    required: tuple[str, ...] = ()  # the keys the block must have
    defaults: dict[str, str] = {}  # what a key means when it is not written, for the reference's tables
    page: str = ""  # `effspec explain NAME`

    def sizes(self, block: Block, d_model: int) -> Any:
        """The block's sizes with their defaults applied (a frozen dataclass), or None when incomplete."""
        raise NotImplementedError

    def macs(self, d: int, sizes: Any) -> list[Term]:
        """Multiply-adds per token of one layer, term by term (each term's name unique to the kind)."""
        raise NotImplementedError

    def params(self, d: int, sizes: Any) -> float:
        """The weights of one layer."""
        raise NotImplementedError


@cache
def all_mixers() -> dict[str, Mixer]:
    """Every layer kind, by name, in (order, name) order: each module of this package that defines ``Kind``."""
    found: list[Mixer] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "Kind", None)
        if not (isinstance(cls, type) and issubclass(cls, Mixer)):
            continue
        if cls.name != info.name:
            raise TypeError(f"{module.__name__}: Kind.name is {cls.name!r}, but the module is {info.name!r}")
        found.append(cls())
    return {m.name: m for m in sorted(found, key=lambda m: (m.order, m.name))}
