"""The examples' HTML and PDF reports, rendered once per test session and shared (issue 29).

WeasyPrint is most of a report's time, and several modules read the same
examples' PDFs (tests/report/test_report.py, tests/report/test_report_layout.py, ...).  Each
entry is made once per session and kept in a folder under pytest's basetemp
root, which every xdist worker of the session sees (a worker's basetemp is a
subfolder of it), so a second module, or a second worker, reads the bytes
instead of laying the report out again.

An entry's key is a SHA-256 of everything its bytes depend on: the kind of
entry and its options, the spec's bytes and every file in its folder (the
examples read CSVs beside them), the package's sources (compiler/, grammar/,
templates/) and this file.  Nothing here is trusted across sessions: the
folder is the session's own.

Two workers asking for one entry at once: the first takes the entry's lock
(``fcntl.flock``) and renders, the second waits on the lock and then reads.
An entry is written to a temporary name and renamed into place, so a reader
never sees half of one.  ``many`` renders, in one pass, the entries nobody
else holds, then waits for the rest: two workers that want the same twelve
reports split them instead of queueing.

A test that proves that two renders agree (tests/report/test_report.py's
byte-identical test, tests/report/test_determinism.py) renders for itself; a cached
entry counts as one render at most.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("compiler", "grammar", "templates")

try:  # POSIX; elsewhere two workers may both render an entry, and the rename still keeps it whole
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@functools.cache
def source_digest() -> str:
    """SHA-256 over the package's sources (path and bytes of each file) and this module."""
    digest = hashlib.sha256()
    files = [p for top in SOURCES for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    for path in sorted(files) + [Path(__file__).resolve()]:
        digest.update(str(path.relative_to(ROOT)).encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def folder_digest(folder: Path) -> str:
    """SHA-256 over the files directly in ``folder`` (a spec's own folder: the data it reads)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(path.name.encode("utf-8") + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class RenderCache:
    """Entries of named byte strings in ``folder``, each made once per session by whichever worker asks first."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.made = 0  # entries this process rendered (the rest it read)

    def _made(self, key: str) -> None:
        """Count an entry this process made, and log it in made.log (one line each: pid and key), so a run can
        show that no entry was made twice (benchmarks/suite_times.md)."""
        self.made += 1
        with open(self.folder / "made.log", "a", encoding="ascii") as log:
            log.write(f"{os.getpid()} {key}\n")

    def key(self, kind: str, spec: Path, **options: object) -> str:
        parts = {"kind": kind, "options": options, "spec": spec.name, "spec_bytes": hashlib.sha256(spec.read_bytes()).hexdigest(),
                 "folder": folder_digest(spec.parent), "sources": source_digest()}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()

    def _read(self, key: str) -> dict[str, bytes] | None:
        entry = self.folder / key
        if not entry.is_dir():
            return None
        return {p.name: p.read_bytes() for p in entry.iterdir()}

    def _write(self, key: str, parts: dict[str, bytes]) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.folder))
        for name, data in parts.items():
            (staging / name).write_bytes(data)
        try:
            os.rename(staging, self.folder / key)  # atomic; fails if another process got there first
        except OSError:
            for p in staging.iterdir():
                p.unlink()
            staging.rmdir()

    @contextlib.contextmanager
    def _locked(self, key: str, wait: bool) -> Iterator[bool]:
        if fcntl is None:  # pragma: no cover
            yield True
            return
        with open(self.folder / f"{key}.lock", "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _get(self, key: str, make: Callable[[], dict[str, bytes]], wait: bool) -> dict[str, bytes] | None:
        found = self._read(key)
        if found is not None:
            return found
        with self._locked(key, wait) as held:
            if not held:
                return None
            found = self._read(key)  # made while we waited
            if found is None:
                found = make()
                self._write(key, found)
                self._made(key)
            return found

    def folder_of(self, key: str, fill: Callable[[Path], None]) -> Path:
        """The entry ``key`` as a folder, filled once per session by ``fill(staging folder)`` (a wheel, an
        installed tree), then renamed into place; a second caller waits for the first, then reads it."""
        entry = self.folder / key
        if entry.is_dir():
            return entry
        with self._locked(key, wait=True):
            if not entry.is_dir():
                staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.folder))
                fill(staging)
                os.rename(staging, entry)
                self._made(key)
        return entry

    def get(self, key: str, make: Callable[[], dict[str, bytes]]) -> dict[str, bytes]:
        found = self._get(key, make, wait=True)
        assert found is not None
        return found

    def many(self, wanted: dict[str, tuple[str, Callable[[], dict[str, bytes]]]]) -> dict[str, dict[str, bytes]]:
        """{name: entry} for {name: (key, make)}: first those no other worker is making, then the rest."""
        out = {}
        for name, (key, make) in wanted.items():
            found = self._get(key, make, wait=False)
            if found is not None:
                out[name] = found
        for name, (key, make) in wanted.items():
            if name not in out:
                out[name] = self.get(key, make)
        return {name: out[name] for name in wanted}


def _html(spec: Path, paper: str) -> dict[str, bytes]:
    import effspec
    from effspec.report import render

    return {"html": render(effspec.load(spec), "html", paper=paper)}


def _make(fmt: str, spec: Path, paper: str) -> Callable[[], dict[str, bytes]]:
    return functools.partial(_html if fmt == "html" else _pdf, spec, paper)


def reports(cache: RenderCache, specs: list[Path], fmt: str, paper: str = "a4") -> dict[str, bytes]:
    """{spec file name: ``render(effspec.load(spec), fmt, paper=paper)``} for html or pdf, from the session's cache."""
    assert fmt in ("html", "pdf"), fmt
    wanted = {spec.name: (cache.key(fmt, spec, paper=paper), _make(fmt, spec, paper)) for spec in specs}
    return {name: entry[fmt] for name, entry in cache.many(wanted).items()}


def first_unbreakable_height(page) -> float | None:
    """Height in points, from the top of the content area, of the first block on a WeasyPrint page that could not be split.

    Walking the page's boxes in document order: headings are kept with what
    follows (break-after: avoid), containers (sections, tables, row groups)
    are entered, and the walk ends at the first box the stylesheet keeps whole
    (break-inside: avoid: a derivation, a finding, a chart, a table row).  A
    breakable paragraph or listing first means nothing forced the break: None.
    """
    from weasyprint.formatting_structure import boxes

    root = page._page_box.children[0]
    content_top = root.content_box_y()
    lead: list[float] = []  # top margins above the block (dropped at the top of a page, needed below another block)

    def walk(box) -> float | bool | None:
        for child in getattr(box, "children", []):
            if not isinstance(child, boxes.BlockLevelBox | boxes.TableRowGroupBox | boxes.TableRowBox):
                continue
            margin = child.style["margin_top"]
            lead.append(margin.value if margin.unit == "px" else 0.0)
            if child.style["break_after"] in ("avoid", "avoid-page"):
                continue  # a heading: it moves with the block after it
            if child.style["break_inside"] in ("avoid", "avoid-page"):
                return (child.border_box_y() + child.border_height() - content_top) * 0.75  # CSS px to pt
            if any(isinstance(c, boxes.BlockLevelBox | boxes.TableRowGroupBox | boxes.TableRowBox) for c in getattr(child, "children", [])):
                found = walk(child)
                if found is not None:
                    return found
                continue
            return False  # a breakable block came first
        return None

    found = walk(root)
    return found + max(lead or [0.0]) * 0.75 if isinstance(found, float) else None


def _pdf(spec: Path, paper: str) -> dict[str, bytes]:
    """The PDF ``render(effspec.load(spec), "pdf", paper=paper)`` gives (the same calls), and each page's
    first unbreakable block height, read off the WeasyPrint document it was written from."""
    import effspec
    from effspec.report.pdf import layout_pdf, write_pdf
    from effspec.report.sections import build

    document, html = layout_pdf(build(effspec.load(spec), charts=True, doc_base=None), paper)
    unbreakable = [first_unbreakable_height(page) for page in document.pages]
    return {"pdf": write_pdf(document, html), "unbreakable.json": json.dumps(unbreakable).encode("ascii"),
            "made.json": json.dumps(made_by()).encode("ascii")}


PROBE = "effspec: which hash seed made this"


def made_by() -> dict[str, float]:
    """The hash of :data:`PROBE` in this process (which hash seed rendered an entry: tests/report/test_determinism.py
    renders again under another) and the time the entry was made."""
    import time

    return {"hash": hash(PROBE), "time": time.time()}


def pdf_entries(cache: RenderCache, specs: list[Path], paper: str = "a4") -> dict[str, dict[str, bytes]]:
    """{spec file name: its whole PDF entry (pdf, unbreakable.json, made.json)}, as :func:`laid_out` reads them."""
    wanted = {spec.name: (cache.key("pdf", spec, paper=paper), _make("pdf", spec, paper)) for spec in specs}
    return cache.many(wanted)


def laid_out(cache: RenderCache, specs: list[Path], paper: str = "a4") -> dict[str, tuple[bytes, list[float | None]]]:
    """{spec file name: (its PDF, each page's first unbreakable block height: first_unbreakable_height)}, the entries
    ``reports(cache, specs, "pdf")`` reads (one layout serves both)."""
    wanted = {spec.name: (cache.key("pdf", spec, paper=paper), _make("pdf", spec, paper)) for spec in specs}
    return {name: (entry["pdf"], json.loads(entry["unbreakable.json"])) for name, entry in cache.many(wanted).items()}
