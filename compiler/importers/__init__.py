"""`effspec import`: training logs to checked specs, one module per format.

A format is one file, ``compiler/importers/<format>.py``, defining a class
``Importer`` (a :class:`~effspec.importers.base.LogFormat`) whose ``name`` is
the module's name.  It is found by discovery, like the audit rules: nothing
else lists the formats, so adding a file adds a format to `effspec import`,
to its help and to `auto` detection.

The modules that are not formats (``base``, ``common``, ``reader``, ``record``,
``writer``) define no ``Importer``.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache

from effspec.diagnostics import Diagnostic
from effspec.importers.base import LogFormat
from effspec.importers.reader import LogReader, display_name
from effspec.importers.record import ImportedRun, ValueOutOfRange
from effspec.importers.writer import run_id

__all__ = ["ImportFailure", "ImportResult", "LogFormat", "all_importers", "detect", "import_logs"]


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


class ImportFailure(Exception):
    """The import could not be made (the CLI exits 2 with this message, after the log warnings that explain it)."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


@cache
def all_importers() -> dict[str, LogFormat]:
    """Every format, by name, sorted: each module of this package that defines ``Importer``."""
    found: dict[str, LogFormat] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "Importer", None)
        if not (isinstance(cls, type) and issubclass(cls, LogFormat)):
            continue
        if cls.name != info.name:
            raise ImportFailure(f"{module.__name__}: Importer.name is {cls.name!r}, but the module is {info.name!r}")
        found[info.name] = cls()
    return found


def detect(head: list[str]) -> list[tuple[float, str]]:
    """(score, format) of every format that recognises these lines, best first."""
    scores = []
    for name, importer in all_importers().items():
        score = float(importer.detect(head))
        if score > 0:
            scores.append((score, name))
    return sorted(scores, key=lambda s: (-s[0], s[1]))


@dataclass
class ImportResult:
    runs: list[ImportedRun]
    formats: dict[str, str] = field(default_factory=dict)  # log path -> format used
    diagnostics: list[Diagnostic] = field(default_factory=list)
    dropped_warnings: int = 0


MAX_CONFIG_BYTES = 1 << 20


def import_logs(fmt: str, paths: list[str], framework_version: str | None = None, progress: bool = False,
                config: str | None = None) -> ImportResult:
    """Read each log with ``fmt`` (or the detected format for `auto`); one or more runs per log.

    ``config``: the run's config file, read by formats that take one (``LogFormat.config``)."""
    importers = all_importers()
    if fmt != "auto" and fmt not in importers:
        raise ImportFailure(f"unknown format `{fmt}`; formats: " + ", ".join(importers) + ", auto")
    result = ImportResult([])
    taken: set[str] = set()
    for path in paths:
        reader = LogReader(path, progress=progress)
        name = fmt if fmt != "auto" else _detected(reader)
        importer = importers[name]
        try:
            runs = importer.parse(path, reader)
        except ValueOutOfRange as exc:  # the log's fault: named at its line, not called a bug in effspec
            raise ImportFailure(f"{display_name(path)}:{exc.line}: {exc}; nothing was written",
                                result.diagnostics + reader.diagnostics) from None
        if not runs:
            raise ImportFailure(f"{display_name(path)}: no {importer.framework} training line found (format `{name}`)"
                                + _what_it_reads(importer), result.diagnostics + reader.diagnostics)
        if config is not None:
            result.diagnostics += _read_config(importer, runs, config)
        for run in runs:
            run.run_id = run_id(run.run_id if run.run_id != "run" else run.log, taken)
            _resolve_convention(importer, run, framework_version)
        result.runs += runs
        result.formats[path] = name
        result.diagnostics += reader.diagnostics
        result.dropped_warnings += reader.dropped_warnings
    return result


def _read_config(importer: LogFormat, runs: list[ImportedRun], path: str) -> list[Diagnostic]:
    """The config file, bounded and decoded, handed to the format for each run; its unreadable lines are EFF801."""
    from effspec.importers.reader import open_log

    if not importer.config:
        raise ImportFailure(f"format `{importer.name}` reads no config file (--config); formats that do: "
                            + (", ".join(n for n, i in all_importers().items() if i.config) or "none"))
    with open_log(path) as fh:
        data = fh.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ImportFailure(f"{display_name(path)}: a config file over {MAX_CONFIG_BYTES:,} bytes; not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailure(f"{display_name(path)}: not UTF-8 text (byte {exc.start}); not read") from None
    reader = LogReader(path)
    for run in runs:
        importer.read_config(run, reader, text)
    return reader.diagnostics


def _what_it_reads(importer: LogFormat) -> str:
    return f"; it reads: {importer.summary}" if importer.summary else ""


def _detected(reader: LogReader) -> str:
    scores = detect(reader.head())
    if not scores:
        raise ImportFailure(f"{reader.name}: no line of a known training log in its first lines; formats tried: "
                            + ", ".join(all_importers()) + " (name the format instead of `auto` if the log is one of them)")
    return scores[0][1]


def _resolve_convention(importer: LogFormat, run: ImportedRun, flag: str | None) -> None:
    """The version: printed in the log, else --framework-version, else assumed; then the convention."""
    if run.version is not None:
        run.version_origin, run.version_text = "log", run.version[0]
    elif flag:
        run.version_origin, run.version_text = "flag", flag
    else:
        run.version_origin, run.version_text = "assumed", ""
    try:
        run.convention = importer.convention(run.version_text or None, run)
    except ValueError as exc:
        raise ImportFailure(f"{importer.name}: {exc}" + (f"; --framework-version takes {importer.versions}"
                                                         if importer.versions else "")) from None
