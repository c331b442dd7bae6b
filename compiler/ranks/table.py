"""The per-rank table: one row per rank and step, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("rank", "node", "step", "compute", "comm", "stall")
TIME_COLUMNS = ("compute", "comm", "stall")
MAX_NODE_NAME = 128


@dataclass(frozen=True)
class RankTable:
    """The CSV's rows as arrays (numpy), one entry per row."""

    rank: object  # int64
    node: object  # int64 index into node_names
    node_names: tuple[str, ...]
    step: object  # int64
    compute: object  # float64 seconds
    comm: object
    stall: object

    @property
    def rows(self) -> int:
        return int(len(self.rank))

