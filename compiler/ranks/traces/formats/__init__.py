"""Trace formats: one module a format, found by discovery.

A format is one file, ``compiler/ranks/traces/formats/<format>.py``, defining a
class ``Reader`` (a :class:`TraceFormat`) whose ``name`` is the module's name.
Nothing else lists the formats: the new file alone adds its file names to what
`effspec traces` picks up in a folder, to the files it reads, and to `effspec
traces --help`.

A reader turns one file into what the reduction reads (``reduce._Collector``):
the trace's top-level members (``distributedInfo``, ``host_name``,
``baseTimeNanoseconds``) and its events as Chrome-trace event dicts (``ph``,
``cat``, ``name``, ``ts`` and ``dur`` in µs, ``pid``, ``tid``, ``args``), so
every format is reduced by the same definitions (spec/traces.md).  A file's
format is the one whose suffix its name ends with (the longest such suffix); a
file named on the command line with no format's suffix is read as ``kineto``.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterable
from functools import cache
from typing import Any

from effspec.ranks.traces.parse import Source, TraceError, _chunks

DEFAULT = "kineto"  # the format of a file named on the command line whose name has no format's suffix


class TraceFormat:
    """One profiler's trace files."""

    name: str = ""  # the module's name
    summary: str = ""  # what it reads, one line of `effspec traces --help`
    suffixes: tuple[str, ...] = ()  # the file names it reads (a folder's entries are picked by these)

    def read(self, path: str, whole_limit: int, max_bytes: int, beneath: bool, allow_hardlinks: bool,
             exact: bool) -> tuple[dict[str, Any], Iterable[Any], Source]:
        """``(top, events, source)``: the top-level members, the events (Chrome-trace dicts), and the file's
        identity, complete once the events are exhausted (:func:`read_text` fills it).  ``exact``: the
        reduction asks again for timestamps past 2^43 µs with fractions, as ``decimal.Decimal`` (a format whose
        clock is whole nanoseconds or coarser may ignore it).  Any problem is a :class:`TraceError`."""
        raise NotImplementedError


def read_text(path: str, source: Source, max_bytes: int, beneath: bool = False, allow_hardlinks: bool = False) -> str:
    """The whole file (plain or gzip) as text, read as every trace is (a regular file, a folder's entry opened
    beneath its folder, at most ``max_bytes`` decompressed, hashed into ``source``); TraceError otherwise."""
    data = b"".join(_chunks(path, source, max_bytes, beneath, allow_hardlinks))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TraceError("EFF003", f"not UTF-8 text (byte {exc.start:,})", "the file is not a trace of this format",
                         line, exc.start - data.rfind(b"\n", 0, exc.start)) from None


@cache
def all_formats() -> dict[str, TraceFormat]:
    """Every format, by name, sorted: each module of this package that defines ``Reader``."""
    found: dict[str, TraceFormat] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "Reader", None)
        if not (isinstance(cls, type) and issubclass(cls, TraceFormat)):
            continue
        if cls.name != info.name:
            raise TypeError(f"{module.__name__}: Reader.name is {cls.name!r}, but the module is {info.name!r}")
        found[info.name] = cls()
    return found


def suffixes() -> tuple[str, ...]:
    """Every format's file-name suffixes, in format order."""
    return tuple(s for f in all_formats().values() for s in f.suffixes)


def format_for(path: str) -> TraceFormat:
    """The format of ``path``: the one with the longest suffix its name ends with, else DEFAULT."""
    name = os.path.basename(path)
    matches = [(len(s), f.name) for f in all_formats().values() for s in f.suffixes if name.endswith(s)]
    return all_formats()[max(matches)[1] if matches else DEFAULT]
