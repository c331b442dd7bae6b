"""The shared writer: imported runs to `.eff` text and the CSVs it reads.

Every format module fills the same record (``record.ImportedRun``); this module
alone knows eff syntax.  Log-derived text reaches the output only as validated
number literals, names, escaped strings and sanitized one-line comments.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from effspec.diagnostics import sanitize
from effspec.front.presets import by_name
from effspec.importers.record import Field, ImportedRun, Source, quote
from effspec.version import __version__

BLOCK_ORDER = ("model", "convention", "work", "parallelism", "hardware", "timing", "ranks", "calendar", "target")
STEPS_CSV = "{steps_csv}"
RANKS_CSV = "{ranks_csv}"


NEUTRAL_COLON = "\u2236"  # RATIO: what the colon of a copied `effspec:` is written as in a comment
_PRAGMA_WORD = re.compile(r"(effspec\s*):", re.I)


def comment(text: str) -> str:
    """One comment line's text, neutralised: no line breaks (so nothing copied can end the comment
    and write a key, a `from` or a `}`), no control or bidi characters, and no `effspec:` in any
    case or spacing -- its colon is written as U+2236.  A pragma needs `# effspec:` (see
    effspec.front.config), so no pragma can be formed by a log, a TOML or a file name, whether the
    text carries its own `#` or follows the writer's `# `."""
    one_line = sanitize(re.sub(r"[\r\n\u2028\u2029\x0b\x0c\x85]+", " ", text)).strip()
    return _PRAGMA_WORD.sub(r"\1" + NEUTRAL_COLON, one_line)[:400]


def safe_stem(name: str) -> str:
    """A file-name stem made only of safe characters (it is quoted in the spec)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._") or "import"
    return stem[:80]


def run_id(name: str, taken: set[str]) -> str:
    """An identifier for a run, from a log name; unique among ``taken``."""
    stem = re.sub(r"\.(log|txt|out|jsonl|json)$", "", name, flags=re.I)
    ident = re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_")[:60] or "run"
    if ident[0].isdigit():
        ident = "run_" + ident
    candidate, n = ident, 2
    while candidate in taken:
        candidate, n = f"{ident}_{n}", n + 1
    taken.add(candidate)
    return candidate


def output_files(out: str, runs: list[ImportedRun]) -> dict[str, str]:
    """`{steps_csv}`/`{ranks_csv}` of each run -> the CSV names beside OUT (basenames)."""
    stem = safe_stem(os.path.splitext(os.path.basename(out))[0])
    names: dict[str, str] = {}
    for run in runs:
        prefix = stem if len(runs) == 1 else f"{stem}_{run.run_id}"
        if run.steps:
            names[f"{run.run_id}:steps"] = f"{prefix}_steps.csv"
        if run.ranks:
            names[f"{run.run_id}:ranks"] = f"{prefix}_ranks.csv"
    return names


@dataclass(frozen=True)
class Output:
    """One file to write: its content streamed in chunks, and its first rows (for checking OUT before it is written)."""

    path: str
    chunks: Callable[[], Iterable[bytes]]
    head: Callable[[], bytes]


def _csv_output(path: str, run: ImportedRun, rows: Callable[[ImportedRun], Iterator[list[Any]]]) -> Output:
    """A CSV of one run: all its rows streamed, or its first four (the header and three rows)."""
    return Output(path, lambda: _csv(rows(run)), lambda: b"".join(_csv(itertools.islice(rows(run), 4))))


def render(out: str, runs: list[ImportedRun], command: str,
           layout: Callable[[str], str] | None = None) -> list[Output]:
    """Every file to write: the CSVs, then OUT itself (its text passed through ``layout`` when given: the CLI
    gives `effspec fmt`'s, effspec.cli.import_.fmt_layout, which this layer may not import)."""
    folder = os.path.dirname(os.path.abspath(out))
    names = output_files(out, runs)
    files: list[Output] = []
    for run in runs:
        for kind, rows in (("steps", _steps_rows), ("ranks", _ranks_rows)):
            if f"{run.run_id}:{kind}" in names:
                files.append(_csv_output(os.path.join(folder, names[f"{run.run_id}:{kind}"]), run, rows))
    eff = eff_text(runs, names, command)
    text = (layout(eff) if layout else eff).encode("utf-8")
    files.append(Output(out, lambda: (text,), lambda: text))
    return files


def _csv(rows: Iterable[list]) -> Iterator[bytes]:
    """CSV rows as UTF-8 byte chunks of about 1 MB."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow(row)
        if buf.tell() > 1 << 20:
            yield buf.getvalue().encode("utf-8")
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue().encode("utf-8")


def eff_text(runs: list[ImportedRun], names: dict[str, str], command: str) -> str:
    logs = ", ".join(dict.fromkeys(r.log for r in runs))
    out = ["eff 1", "",
           f"# Imported by `{comment(command)}` (effspec {__version__}) from {comment(logs)}.",
           "# Every value the log gives carries its line: `from log \"FILE:LINE\"`.  The framework's",
           "# own figures (its TFLOP/s, MFU, tokens/s) are claims for effspec to re-derive; step",
           "# times and batch sizes are inputs.  A `TODO` marks what the log does not say:",
           "# `effspec check` reports each one (EFF040) until it is filled in with its source.", ""]
    for run in runs:
        out += _run(run, names)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _run(run: ImportedRun, names: dict[str, str]) -> list[str]:
    lines = [f"run {run.run_id} {{",
             f"  title  = {quote(f'{run.framework} run imported from {run.log}')}",
             f"  source = {quote(f'{run.log} ({run.framework} log), read by effspec import {run.importer}')}"]
    flagged = {f: run.steps.flag_counts[f] for f in ("skipped", "nan", "restart")}
    said = [f"{n} line(s) flagged {f}" for f, n in flagged.items() if n]
    notes = [*run.notes, "In the steps CSV: " + ", ".join(said) + " (column `flags`); they stay in the samples."] if said else run.notes
    lines += [f"  # {comment(n)}" for n in notes]
    subst = {STEPS_CSV: names.get(f"{run.run_id}:steps", ""), RANKS_CSV: names.get(f"{run.run_id}:ranks", "")}
    for block in BLOCK_ORDER:
        if block == "convention":
            lines += _convention(run)
            continue
        fields = run.blocks.get(block)
        if not fields:
            continue
        lines.append("")
        lines.append(f"  {block} {{")
        inner = [f for f in fields if "." in f.key]  # `mamba2.state_size`: a key of a block inside this one
        fields = [f for f in fields if "." not in f.key]
        width = max(len(f.key) for f in fields)
        values = [_value(f, subst) for f in fields]
        vwidth = min(max((len(v) for v, f in zip(values, fields, strict=False) if f.source), default=0), 36)
        lines += [_field(f, v, width, vwidth) for f, v in zip(fields, values, strict=False)]
        for sub in dict.fromkeys(f.key.split(".", 1)[0] for f in inner):
            own = [Field(f.key.split(".", 1)[1], f.value, f.source, f.comment) for f in inner if f.key.startswith(sub + ".")]
            lines.append(f"    {sub} {{")
            w = max(len(f.key) for f in own)
            vals = [_value(f, subst) for f in own]
            vw = min(max((len(v) for v in vals), default=0), 36)
            lines += ["  " + _field(f, v, w, vw) for f, v in zip(own, vals, strict=False)]
            lines.append("    }")
        lines.append("  }")
    if run.claims:
        lines.append("")
        lines.append("  # The log's own figures, checked against effspec's reconstruction.")
        width = max(len(c.name) for c in run.claims)
        for c in run.claims:
            text = f"  claim {c.name:<{width}} = {c.expr}  {_from(c.source)}"
            lines.append(text + (f"  # {comment(c.comment)}" if c.comment else ""))
    lines.append("}")
    return lines


def _from(source: Source | None) -> str:
    return f"from {source.kind} {quote(source.citation)}" if source else ""


def _value(f: Field, subst: dict[str, str]) -> str:
    if f.value is None:
        return "TODO"
    value = f.value
    for placeholder, name in subst.items():
        value = value.replace(placeholder, name)
    return value


def _field(f: Field, value: str, width: int, vwidth: int) -> str:
    text = f"    {f.key:<{width}} = {value}"
    if f.source:
        text = f"{text:<{8 + width + vwidth}}  {_from(f.source)}"
    return text + (f"  # {comment(f.comment)}" if f.comment else "")


def _convention(run: ImportedRun) -> list[str]:
    conv = run.convention
    if conv is None:
        return []
    if run.version_origin == "log":
        source = run.version[1] if run.version else Source("log", run.log)
        said = run.version_why or f"the framework version ({run.version_text}) is printed in the log"
    elif run.version_origin == "flag":
        source = Source("paper", f"{conv.label} (--framework-version {run.version_text})")
        said = run.version_why or f"the framework version ({run.version_text}) was given with --framework-version"
    else:
        source = Source("assumed", f"{conv.label}: the log does not print the version")
        said = "the log does not print the framework version: assumed, pass --framework-version to set it"
    lines = ["", f"  # {comment(conv.explanation)}.", f"  # Reproduces {comment(conv.reference)};", f"  # {comment(said)}."]
    preset = conv.preset or (conv.corresponds_to if by_name(conv.corresponds_to) else None)
    if preset:  # the language has the framework's preset (effspec.front.presets): `effspec explain PRESET`
        lines += ["  convention {", f"    preset = {preset}  {_from(source)}", "  }"]
        return lines
    lines.append(f"  # The language has no preset `{comment(conv.corresponds_to)}` for this formula: its knobs, written out:")
    lines.append("  convention {")
    width = max(len(k) for k in conv.knobs)
    vwidth = max(len(v) for v in conv.knobs.values())
    lines += [f"    {k:<{width}} = {v:<{vwidth}}  {_from(source)}" for k, v in conv.knobs.items()]
    lines.append("  }")
    return lines


def _steps_rows(run: ImportedRun) -> Iterator[list]:
    """The steps CSV: step, log line, the time as printed, the framework's figures as printed, flags."""
    has_time = any(t == t for t in run.steps.times)  # not all NaN
    time_col = [f"step_time_{run.step_unit}"] if has_time else []
    figures = [k for k in run.step_figures if k in run.steps.figure_names]
    yield ["step", "line", *time_col, *figures, "flags"]
    for s in run.steps:
        yield [s.step, s.line, *([s.time] if has_time else []), *(s.figures.get(k, "") for k in figures), " ".join(s.flags)]


def _ranks_rows(run: ImportedRun) -> Iterator[list]:
    yield ["rank", "node", "step", "compute", "comm", "stall"]
    for r in run.ranks:
        yield [r.rank, r.node, r.step, _sec(r.compute), _sec(r.comm), _sec(r.stall)]


def steps_csv(run: ImportedRun) -> bytes:
    return b"".join(_csv(_steps_rows(run)))


def ranks_csv(run: ImportedRun) -> bytes:
    return b"".join(_csv(_ranks_rows(run)))


def _sec(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if x else "0"
