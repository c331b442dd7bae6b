"""The per-rank table: one row per rank and step, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported when a table is loaded
    import numpy as np
    from numpy.typing import NDArray

COLUMNS = ("rank", "node", "step", "compute", "comm", "stall")
TIME_COLUMNS = ("compute", "comm", "stall")
# Optional columns (written by `effspec traces`); read when the header names them.
# The idle split and the kernel types (issue 32), seconds: kept as the table's breakdown and shown in the report.
BREAKDOWN_COLUMNS = ("idle_host_wait", "idle_kernel_wait", "idle_other", "gemm", "attention", "memory",
                     "elementwise_other")
OPTIONAL_COLUMNS = ("step_time", "comm_exposed", "idle", "other", *BREAKDOWN_COLUMNS)
MAX_NODE_NAME = 128
MAX_COMMENT_LINES = 100_000  # `# …` lines before the header (one per trace file, and a few)
MAX_COMMENT_CHARS = 4096


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
    step_time: NDArray[np.float64] | None = None  # the optional columns, when present
    comm_exposed: NDArray[np.float64] | None = None
    idle: NDArray[np.float64] | None = None
    other: NDArray[np.float64] | None = None
    breakdown: tuple[tuple[str, NDArray[np.float64]], ...] = ()  # (column, values) of BREAKDOWN_COLUMNS present
    provenance: tuple[str, ...] = ()  # the `# …` lines before the header, without "# "
    provenance_checks: tuple[str, ...] = ()  # per line: verified | differs | declared | "" (ranks/provenance.py)
    first_row: int = 2  # the file line of the first row (after the comments and the header)

    @property
    def rows(self) -> int:
        return int(len(self.rank))

