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
            if run.dated is None:
                run.dated = reader.first_date
            result.diagnostics += _resolve_convention(importer, run, framework_version, reader.name)
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


OLDEST = "0001-01-01"  # a date before every boundary: the oldest form of a framework's formula
AMBIGUOUS_DAYS = 183  # a log dated this soon after a preset's boundary may come from a checkout before it


def _resolve_convention(importer: LogFormat, run: ImportedRun, flag: str | None, log: str) -> list[Diagnostic]:
    """The version, from the evidence in this order: a version string printed in the log; argument names
    that exist only in some versions (``LogFormat.version_evidence``); the dates on the log's lines against
    each preset's boundary commit date (``Preset.since``); --framework-version; else assumed.  A date only
    bounds the checkout from above, so a --framework-version the dates allow refines them.  Returns the info
    diagnostics (EFF806) that say where the evidence leaves another preset possible."""
    diags: list[Diagnostic] = []
    try:
        family = _family(importer, run)
        evidence = importer.version_evidence(run) if run.version is None else None
        if run.version is not None:
            run.version_origin, run.version_text = "log", run.version[0]
            run.version_why = f"the framework version ({run.version[0]}) is printed in the log"
        elif evidence is not None:
            run.version, run.version_origin, run.version_text, run.version_why = (
                (evidence[0], evidence[1]), "log", evidence[0], evidence[2])
        elif family and run.dated is not None:
            diags += _by_date(importer, run, flag, family, log)
        elif flag:
            run.version_origin, run.version_text = "flag", flag
        else:
            run.version_origin, run.version_text = "assumed", ""
        run.convention = importer.convention(run.version_text or None, run)
    except ValueError as exc:
        raise ImportFailure(f"{importer.name}: {exc}" + (f"; --framework-version takes {importer.versions}"
                                                         if importer.versions else "")) from None
    return diags


def _family(importer: LogFormat, run: ImportedRun) -> tuple:
    """The framework's version presets (newest first), found from the preset its default convention names."""
    from effspec.front.presets import by_name, family

    default = importer.convention(None, run)
    preset = by_name(default.corresponds_to) if default is not None else None
    return family(preset.framework) if preset is not None and preset.framework else ()


def _by_date(importer: LogFormat, run: ImportedRun, flag: str | None, presets: tuple, log: str) -> list[Diagnostic]:
    """Choose by the log's first date; a --framework-version at or before that date refines it."""
    from effspec.diagnostics import Span
    from effspec.front.presets import by_name

    assert run.dated is not None
    date, line = run.dated
    chosen = next((p for p in presets if p.since <= date), presets[-1])
    span = Span(line, 1, line, 2)
    if flag:
        conv = importer.convention(flag, run)
        named = by_name(conv.corresponds_to) if conv is not None else None
        if named is not None and named.since <= date:
            run.version_origin, run.version_text = "flag", flag
            run.version_why = (f"--framework-version {flag} ({named.name}), which the log's first date ({date}, line "
                               f"{line}) allows")
            return []
        if named is not None:
            run.version, run.version_origin, run.version_text = (date, run.cite(line)), "log", chosen.since or OLDEST
            run.version_why = f"the log's first date ({date}, line {line}) is before {named.name}'s boundary ({named.since})"
            return [Diagnostic("EFF806", "info", span, f"--framework-version {flag} selects `{named.name}` (from "
                               f"{named.since}), but the log is dated {date}: `{chosen.name}` is used",
                               "pass the version of the checkout that ran (a date at or before the log's)", file=log)]
    # the convention is asked for the chosen preset's own boundary (the oldest form: a date before any), so that a
    # format whose module keeps a coarser boundary (a month) cannot disagree with the preset table
    run.version, run.version_origin, run.version_text = (date, run.cite(line)), "log", chosen.since or OLDEST
    since = f"since {chosen.since}, {chosen.since_commit}" if chosen.since else "the oldest form read"
    run.version_why = f"the log's first date is {date} (line {line}): `{chosen.name}` ({since}) was in force then"
    older = presets[presets.index(chosen) + 1] if presets.index(chosen) + 1 < len(presets) else None
    if older is not None and chosen.since and _days(chosen.since, date) < AMBIGUOUS_DAYS:
        return [Diagnostic(
            "EFF806", "info", span, f"the log is dated {date}, {_days(chosen.since, date)} day(s) after `{chosen.name}`'s "
            f"boundary ({chosen.since}, {chosen.since_commit}): a checkout from before it would count as `{older.name}`",
            f"`{chosen.name}` is written; if the checkout is older, pass --framework-version with its date", file=log)]
    return []


def _days(start: str, end: str) -> int:
    from datetime import date

    return (date.fromisoformat(end) - date.fromisoformat(start)).days
