"""The neutral record an importer returns: what a log says, line by line.

An importer reads one framework's log and fills an :class:`ImportedRun`; the
shared writer (``writer.py``) turns it into `.eff` text and CSV files.  Nothing
here is eff syntax yet, except that every literal is validated on the way in,
so text taken from a log can never reach the spec as anything but a number, a
name from a fixed vocabulary, or an escaped string.
"""

from __future__ import annotations

import io
import math
import re
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import IO

from effspec.front import lexicon

_UNIT = re.compile(r"[A-Za-z%][A-Za-z0-9%/*^-]{0,40}")
# A claim's expression: literals, units, references and operators; no quotes,
# braces, comments or line breaks.
_EXPR = re.compile(r"[0-9A-Za-z_ .,/*%^()+-]{1,200}")


@cache
def _terminal(name: str) -> re.Pattern[str]:
    """The grammar's NUMBER or NAME (effspec.front.lexicon), compiled."""
    return re.compile(lexicon.terminal(name))


def number(text: str) -> str:
    """``text`` if it is a plain decimal literal the grammar reads, else ValueError."""
    text = text.replace(",", "")  # thousands separators: "9,966"
    if not _terminal("NUMBER").fullmatch(text):
        raise ValueError(f"not a number literal: {text[:40]!r}")
    return text


class ValueOutOfRange(ValueError):
    """A number in the log that no run can have (a step past 2^63, say): the log's fault, at its line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


INT64 = 2**63


@dataclass(frozen=True)
class Source:
    """Where a value comes from: ``kind`` is a provenance kind of the language
    (`log`, `assumed`, `paper`); ``citation`` is ``FILE:LINE`` for a log."""

    kind: str
    citation: str


@dataclass(frozen=True)
class Field:
    """One ``key = value`` of a block.  ``value`` is None for a `TODO`."""

    key: str
    value: str | None
    source: Source | None = None
    comment: str = ""

    @staticmethod
    def number(key: str, literal: str, unit: str = "", source: Source | None = None, comment: str = "") -> Field:
        text = number(literal)
        if unit:
            if not _UNIT.fullmatch(unit):
                raise ValueError(f"not a unit: {unit!r}")
            text += f" {unit}"
        return Field(key, text, source, comment)

    @staticmethod
    def name(key: str, word: str, source: Source | None = None, comment: str = "") -> Field:
        if not _terminal("NAME").fullmatch(word) or word == "TODO":
            raise ValueError(f"not a name: {word!r}")
        return Field(key, word, source, comment)

    @staticmethod
    def string(key: str, text: str, source: Source | None = None, comment: str = "") -> Field:
        return Field(key, quote(text), source, comment)

    @staticmethod
    def todo(key: str, comment: str) -> Field:
        return Field(key, None, None, comment)


def quote(text: str) -> str:
    """An eff string literal: one line, quotes and backslashes escaped, control characters dropped."""
    from effspec.diagnostics import sanitize

    clean = sanitize(text.replace("\n", " ").replace("\r", " "))[:300]
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Claim:
    """``claim NAME = EXPR from …``: a figure the log prints, for effspec to check."""

    name: str
    expr: str
    source: Source
    comment: str = ""

    def __post_init__(self) -> None:
        if not _terminal("NAME").fullmatch(self.name) or not _EXPR.fullmatch(self.expr):
            raise ValueError(f"not a claim: {self.name!r} = {self.expr!r}")


@dataclass(frozen=True)
class Step:
    """One step-time sample: the log line it is on, the time as printed, the
    framework's own figures printed beside it, and flags (warm-up, skipped,
    nan, restart) for the CSV."""

    step: int
    line: int
    time: str | None  # the literal as printed, in the run's step_unit; None when the log prints no time
    figures: dict[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()

    def seconds(self, unit: str) -> float | None:
        if self.time is None:
            return None
        return float(self.time) * {"ms": 1e-3, "s": 1.0, "us": 1e-6}[unit]


@dataclass(frozen=True)
class RankRow:
    rank: int
    node: str
    step: int
    compute: float
    comm: float
    stall: float


SPOOL_BYTES = 8 << 20  # rows stay in memory up to this size, then go to a temporary file


class _Spool:
    """Rows of text appended once and read back in order: in memory while small, then on disk."""

    def __init__(self) -> None:
        self._file: IO[str] | None = None
        self._count = 0

    def _write(self, row: str) -> None:
        if self._file is None:
            # Lives as long as the run record (it is read back when the CSV is written); closed when collected.
            self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._file.write(row + "\n")
        self._count += 1

    def _rows(self) -> Iterator[str]:
        if self._file is None:
            return
        self._file.flush()
        self._file.seek(0)
        for row in self._file:
            yield row.rstrip("\n")
        self._file.seek(0, io.SEEK_END)

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0


class StepLog(_Spool):
    """The step samples of a run, in log order.

    A 1 GB log holds millions of samples: each is kept as three numbers in
    memory (step, line, time) and its printed figures in a spooled file, so
    memory grows by about 24 bytes per sample, not by a Python object.
    ``warmup`` leading samples are read back with the flag `warmup`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.numbers, self.lines, self.times = array("q"), array("q"), array("d")
        self.figure_names: dict[str, None] = {}
        self.flag_counts: Counter[str] = Counter()
        self.warmup = 0
        self._last: Step | None = None

    def append(self, step: Step) -> None:
        """One sample; a step number at or below the previous one is flagged `restart` (the run resumed from a checkpoint)."""
        if not -INT64 <= step.step < INT64:
            raise ValueOutOfRange(step.line, f"step {step.step} is out of range (a step number is below 2^63)")
        if self.numbers and step.step <= self.numbers[-1] and "restart" not in step.flags:
            step = Step(step.step, step.line, step.time, step.figures, (*step.flags, "restart"))
        self.numbers.append(step.step)
        self.lines.append(step.line)
        self.times.append(float(step.time) if step.time is not None else math.nan)
        for name in step.figures:
            self.figure_names.setdefault(name)
        self.flag_counts.update(step.flags)
        self._write("\t".join([step.time or "", " ".join(step.flags)] + [f"{k}={v}" for k, v in step.figures.items()]))
        self._last = step

    def seconds(self, unit: str) -> list[float]:
        factor = {"ms": 1e-3, "s": 1.0, "us": 1e-6}[unit]
        return [t * factor for t in self.times]

    def __iter__(self) -> Iterator[Step]:
        for i, row in enumerate(self._rows()):
            time, flags, *figures = row.split("\t")
            flag_list = tuple(f for f in flags.split(" ") if f) + (("warmup",) if i < self.warmup else ())
            yield Step(self.numbers[i], self.lines[i], time or None, dict(f.split("=", 1) for f in figures), flag_list)

    def __getitem__(self, index: int) -> Step:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index == len(self) - 1 and index >= self.warmup and self._last is not None:
            return self._last  # the last sample, asked for while reading (O(1))
        for i, step in enumerate(self):
            if i == index:
                return step
        raise IndexError(index)  # pragma: no cover - the loop always finds it


class RankLog(_Spool):
    """Per-rank rows of a run, spooled like the steps."""

    def append(self, row: RankRow) -> None:
        self._write(f"{row.rank}\t{row.node}\t{row.step}\t{row.compute!r}\t{row.comm!r}\t{row.stall!r}")

    def __iter__(self) -> Iterator[RankRow]:
        for row in self._rows():
            rank, node, step, compute, comm, stall = row.split("\t")
            yield RankRow(int(rank), node, int(step), float(compute), float(comm), float(stall))


@dataclass(frozen=True)
class Convention:
    """How the framework counts model FLOPs, at one version.

    ``preset`` is written as ``convention { preset = … }`` when set.  Until the
    framework presets exist in the language it is None and the knobs are
    written out instead, with ``corresponds_to`` named in a comment.
    """

    corresponds_to: str
    knobs: dict[str, str]
    label: str  # short: the framework and version range ("Megatron-LM 2025-03-06 and later")
    reference: str  # the upstream file and commit whose formula the knobs reproduce
    explanation: str  # one sentence: what the formula counts
    preset: str | None = None


@dataclass
class ImportedRun:
    """Everything one log (or one run inside it) says, with its provenance."""

    importer: str  # the format name
    framework: str  # "Megatron-LM"
    log: str  # the log's display name (a safe basename)
    run_id: str = "run"
    blocks: dict[str, list[Field]] = field(default_factory=dict)
    steps: StepLog = field(default_factory=StepLog)
    step_unit: str = "s"
    step_figures: tuple[str, ...] = ()  # columns of Step.figures, in CSV order
    step_note: str = ""  # what one sample is
    claims: list[Claim] = field(default_factory=list)
    ranks: RankLog = field(default_factory=RankLog)
    ranks_source: Source | None = None
    notes: list[str] = field(default_factory=list)  # comment lines inside the run
    version: tuple[str, Source] | None = None  # the framework version, when the log prints it
    convention: Convention | None = None  # filled by the driver from the version
    version_origin: str = ""  # "log", "flag" or "assumed" (filled by the driver)
    version_text: str = ""
    version_why: str = ""  # which evidence chose the version, for the spec's comment (filled by the driver)
    dated: tuple[str, int] | None = None  # the first date the log's lines carry (YYYY-MM-DD, line), if any

    def put(self, block: str, fld: Field) -> None:
        """Set ``block.key`` (a later value for the same key replaces the earlier one)."""
        fields = self.blocks.setdefault(block, [])
        for i, old in enumerate(fields):
            if old.key == fld.key:
                fields[i] = fld
                return
        fields.append(fld)

    def get(self, block: str, key: str) -> Field | None:
        return next((f for f in self.blocks.get(block, ()) if f.key == key), None)

    def cite(self, line: int | str, detail: str = "") -> Source:
        """``from log "FILE:LINE"`` for this run's log."""
        return Source("log", f"{self.log}:{line}" + (f" ({detail})" if detail else ""))
