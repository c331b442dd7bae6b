"""The per-rank table: one row per rank and step, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("rank", "node", "step", "compute", "comm", "stall")
TIME_COLUMNS = ("compute", "comm", "stall")
# Optional columns (written by `effspec traces`); read when the header names them.
OPTIONAL_COLUMNS = ("step_time", "comm_exposed", "idle", "other")
MAX_NODE_NAME = 128
MAX_COMMENT_LINES = 100_000  # `# …` lines before the header (one per trace file, and a few)
MAX_COMMENT_CHARS = 4096


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
    step_time: object = None  # the optional columns, when present
    comm_exposed: object = None
    idle: object = None
    other: object = None
    provenance: tuple[str, ...] = ()  # the `# …` lines before the header, without "# "
    first_row: int = 2  # the file line of the first row (after the comments and the header)

    @property
    def rows(self) -> int:
        return int(len(self.rank))

