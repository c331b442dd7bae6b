"""The per-rank table: one row per rank and step, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported when a table is loaded
    import numpy as np
    from numpy.typing import NDArray

COLUMNS = ("rank", "node", "step", "compute", "comm", "stall")
TIME_COLUMNS = ("compute", "comm", "stall")
MAX_NODE_NAME = 128


@dataclass(frozen=True)
class RankTable:
    """The CSV's rows as arrays (numpy), one entry per row."""

    rank: NDArray[np.int64]
    node: NDArray[np.int64]  # index into node_names
    node_names: tuple[str, ...]
    step: NDArray[np.int64]
    compute: NDArray[np.float64]  # seconds
    comm: NDArray[np.float64]
    stall: NDArray[np.float64]

    @property
    def rows(self) -> int:
        return int(len(self.rank))

