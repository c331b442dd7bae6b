"""PyTorch profiler (Kineto) traces: Chrome-trace JSON, plain or gzip (effspec.ranks.traces.parse)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from effspec.ranks.traces.formats import TraceFormat
from effspec.ranks.traces.parse import Source, read_trace


class Reader(TraceFormat):
    name = "kineto"
    summary = "PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip"
    suffixes = (".json", ".json.gz")

    def read(self, path: str, whole_limit: int, max_bytes: int, beneath: bool, allow_hardlinks: bool,
             exact: bool) -> tuple[dict[str, Any], Iterable[Any], Source]:
        return read_trace(path, whole_limit, max_bytes, beneath, allow_hardlinks, exact=exact)
