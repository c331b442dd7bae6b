"""What a format module defines: one ``Importer`` class, subclassing ``LogFormat``."""

from __future__ import annotations

from effspec.importers.reader import LogReader
from effspec.importers.record import Convention, ImportedRun, Source


class LogFormat:
    """One framework's log format.

    ``name`` is the FORMAT argument of `effspec import` and must equal the
    module's name.  ``detect`` scores the first lines of a log (0: not this
    format, 1: certainly this format) for `auto`.  ``parse`` reads the whole
    log, streamed, and returns one record per run it holds; it reports lines it
    cannot read with ``lines.warn(...)`` (EFF801) and goes on.  ``convention``
    maps a framework version (None: the version was not given) to how the
    framework counts FLOPs at that version (``run`` for formats whose formula
    also depends on a setting, such as BLOOM's checkpointing factor), or None
    for a log that prints no FLOP figure; it is the one place to change when
    the language gains framework presets.
    """

    name: str = ""
    framework: str = ""
    summary: str = ""  # one line for `effspec import --help`
    versions: str = ""  # what --framework-version accepts, for the help and the error
    config: str = ""  # what --config takes (empty: the format reads no config file)

    def detect(self, lines: list[str]) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse(self, path: str, lines: LogReader) -> list[ImportedRun]:  # pragma: no cover - abstract
        raise NotImplementedError

    def convention(self, version: str | None, run: ImportedRun) -> Convention | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def version_evidence(self, run: ImportedRun) -> tuple[str, Source, str] | None:
        """Evidence of the version from what the log shows other than a version string or dates: argument
        names that exist only in some versions.  (a date ``convention`` takes, where it was cited, why), or None."""
        return None

    def read_config(self, run: ImportedRun, config: LogReader, text: str) -> None:  # pragma: no cover - optional
        """Fill in what the run's config file (``--config``) says and the log did not; ``config.warn`` reports
        what cannot be read (EFF801, at the config's FILE:LINE)."""
        raise NotImplementedError
