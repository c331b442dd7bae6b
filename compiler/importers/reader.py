"""Reading a training log: streamed, line by line, with bounded memory.

A log is hostile input like a spec: it may be huge (a 1 GB stdout capture), not
UTF-8, full of terminal colour codes, cut in the middle of a line, or not a
regular file at all.  The reader yields ``LogLine(number, text)`` with colour
codes removed and carriage-return updates (progress bars) split into their own
segments, and records an EFF801 warning for each line it had to repair.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from effspec.diagnostics import Diagnostic, Span, sanitize
from effspec.front.files import in_pseudo_filesystem

MAX_LINE_BYTES = 1 << 20  # a longer line is cut here (and reported)
HEAD_LINES = 20_000  # what `auto` detection and `detect()` see
HEAD_BYTES = 8 << 20
MAX_WARNINGS = 1_000  # kept; more are counted
DATE_LINES = 100_000  # the first dated line is looked for this far (a log's start-up is dated, or none of it is)
# A timestamp on a log line (` [2024-03-30 12:00:01] iteration …`, `[2021-06-10 20:47:51,724] [INFO]`,
# `… datetime: 2021-05-26 03:20:36`): the first one bounds the framework's checkout date from above.
_DATED = re.compile(r"(?:^|[\[\s])(20\d\d-[01]\d-[0-3]\d)[ T][0-2]\d:[0-5]\d")
# `date`'s own form (`Job End: Thu Jul 31 09:48:56 UTC 2025`, as job scripts print it): day, month, time, zone, year.
_DATE_CMD = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +([0-3]?\d) "
                       r"[0-2]\d:[0-5]\d:[0-5]\d (?:[A-Z]{2,5} )?(20\d\d)\b")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based physical line (lines split at \n)
    text: str


def display_name(path: str) -> str:
    """The log's basename, safe to quote in a spec and to print (hostile names are tamed)."""
    name = sanitize(os.path.basename(path) or path)
    name = re.sub(r"[\"\\\n\r]", "_", name)
    return name[:120] or "log"


def open_log(path: str) -> BinaryIO:
    """A binary file object for a regular file; never blocks on a FIFO or device.

    A log named through a symlink is read where the link leads (as a spec named
    on the command line is), except into a system pseudo-filesystem (/proc,
    /sys, /dev, /run), which is never read."""
    if in_pseudo_filesystem(os.path.realpath(path)):
        raise OSError(0, "lies in a system pseudo-filesystem (devices, /proc and /sys are never read)", path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a directory", path)
        if not stat.S_ISREG(mode):
            raise OSError(0, "not a regular file (FIFOs, devices and sockets are not read)", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def clean(text: str) -> str:
    """Colour codes out, trailing whitespace out."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.rstrip()


@dataclass
class LogReader:
    """Iterate a log's lines; collect EFF801 warnings about them."""

    path: str
    name: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    dropped_warnings: int = 0
    progress: bool = False
    lines_read: int = 0
    first_date: tuple[str, int] | None = None  # (YYYY-MM-DD, line) of the first dated line

    def __post_init__(self) -> None:
        self.name = self.name or display_name(self.path)

    def warn(self, line: int, message: str, help: str = "", column: int = 1, excerpt: str = "") -> None:
        if len(self.diagnostics) >= MAX_WARNINGS:
            self.dropped_warnings += 1
            return
        notes = (f"the line begins: {sanitize(excerpt[:120])}",) if excerpt else ()
        self.diagnostics.append(Diagnostic("EFF801", "warning", Span(line, column, line, column + 1), message, help,
                                           file=self.name, notes=notes))

    def head(self) -> list[str]:
        """The first lines (cleaned), for `detect()`."""
        out: list[str] = []
        size = 0
        for item in self._lines(warn=False):
            out.append(item.text)
            size += len(item.text)
            if len(out) >= HEAD_LINES or size >= HEAD_BYTES:
                break
        return out

    def __iter__(self) -> Iterator[LogLine]:
        return self._lines(warn=True)

    def _lines(self, warn: bool) -> Iterator[LogLine]:
        with open_log(self.path) as fh:
            total = os.fstat(fh.fileno()).st_size
            bar = _Progress(total, self.name) if warn and self.progress else None
            number = 0
            while True:
                raw = fh.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                number += 1
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    if warn:
                        self.warn(number, f"line longer than {MAX_LINE_BYTES:,} bytes: read up to there, the rest skipped")
                    while raw and not raw.endswith(b"\n"):  # skip to the end of this physical line
                        raw = fh.readline(MAX_LINE_BYTES + 1)
                    raw = b""
                text = self._decode(raw, number, warn)
                if bar is not None and (number == 1 or number % 4096 == 0):
                    bar.update(fh.tell())
                for segment in text.split("\r"):
                    segment = clean(segment)
                    if segment:
                        if warn and self.first_date is None and number <= DATE_LINES:
                            self._date(number, segment)
                        yield LogLine(number, segment)
            self.lines_read = number
            if bar is not None:
                bar.done()

    def _date(self, number: int, text: str) -> None:
        """Remember the first timestamp (looked for near the start of a line, or after `datetime:`)."""
        at = text.find("datetime:")
        m = _DATED.search(text[:80]) or (_DATED.search(text, at, at + 40) if at >= 0 else None)
        if m:
            self.first_date = (m.group(1), number)
            return
        d = _DATE_CMD.search(text[:120])
        if d and 1 <= int(d.group(2)) <= 31:
            self.first_date = (f"{d.group(3)}-{_MONTHS.index(d.group(1)) + 1:02d}-{int(d.group(2)):02d}", number)

    def _decode(self, raw: bytes, number: int, warn: bool) -> str:
        raw = raw.rstrip(b"\n")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", errors="replace")
            if warn:
                column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
                self.warn(number, f"bytes that are not UTF-8 (0x{raw[exc.start]:02x}); read with U+FFFD in their place",
                          "a value that touches them is not read", column)
        if "\x00" in text:
            text = text.replace("\x00", "")
            if warn:
                self.warn(number, "NUL bytes in the line; read without them")
        return text


class _Progress:
    """A one-line progress bar on standard error (only on a terminal)."""

    def __init__(self, total: int, name: str):
        self.total, self.name, self.last = max(total, 1), name, -1

    def update(self, done: int) -> None:
        pct = min(100, int(100 * done / self.total))
        if pct != self.last:
            self.last = pct
            sys.stderr.write(f"\rreading {self.name}: {pct:3d} %")
            sys.stderr.flush()

    def done(self) -> None:
        sys.stderr.write(f"\rreading {self.name}: 100 %\n")
        sys.stderr.flush()
