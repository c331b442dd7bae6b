"""One open document, checked: the Result ``effspec check`` would give for it.

The check is :func:`effspec.check_text` with the document's path and folder,
which is what :func:`effspec.load` runs after reading the file, so the
diagnostics are the CLI's.  A check that raises (a bug) does not take the
server down: the Analysis carries the error, shown as a diagnostic.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import effspec
from effspec.diagnostics import Diagnostic, Span
from effspec.version import report_a_bug

INTERNAL_CODE = "EFF000"  # not a rule: the server's own "the check crashed" diagnostic


@dataclass
class Analysis:
    uri: str
    path: str
    text: str
    version: int | None
    result: effspec.Result | None = None
    crash: str | None = None  # "TypeError: …" when the check raised
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)
    folder: str | None = None  # what anchors `file "…"` references: the document's folder
    _offers: list | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.lines = self.text.split("\n")

    def recheck(self, text: str) -> list[Diagnostic]:
        """The findings of ``text`` checked as this document is (a fix's result, for effspec.rules.fixes.vet)."""
        return effspec.check_text(text, self.path, self.folder).diagnostics

    @property
    def offers(self) -> list:
        """The vetted fixes of this document's findings (effspec.rules.fixes.Offer), computed once."""
        if self._offers is None:
            from effspec.rules.fixes import vet

            self._offers = [] if self.result is None or self.crash is not None else \
                vet(self.result.diagnostics, self.text, self.recheck, self.spec)
        return self._offers

    @property
    def diagnostics(self) -> list[Diagnostic]:
        if self.crash is not None:
            return [Diagnostic(INTERNAL_CODE, "error", Span(1, 1, 1, 1),
                               f"effspec crashed while checking this file: {self.crash}",
                               f"this is a bug in effspec {effspec.__version__}. {report_a_bug()}")]
        return self.result.diagnostics if self.result is not None else []

    @property
    def spec(self) -> Any:  # ir.Spec | None (Result types it as object)
        return self.result.spec if self.result is not None else None

    @property
    def evaluation(self) -> Any:  # engine Evaluation | None
        return self.result.evaluation if self.result is not None else None

    def source(self, span: Span) -> str:
        """The text under a 1-based, end-exclusive span."""
        if span.line != span.end_line or not 1 <= span.line <= len(self.lines):
            return ""
        return self.lines[span.line - 1][span.column - 1: span.end_column - 1]


def path_of(uri: str) -> str:
    """A file path for a `file:` URI; other schemes (untitled:) keep the URI as the name."""
    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        parsed = urlparse(uri)
        return unquote(parsed.path)
    return uri


def analyze(uri: str, text: str, version: int | None = None, parser=None) -> Analysis:
    """Check ``text`` as the file ``uri`` names (its folder anchors `file "…"` references).

    ``parser`` (an :class:`effspec.lsp.incremental.IncrementalParser`, one per document) re-parses
    only the runs that changed since its last call; the result is the same."""
    path = path_of(uri)
    folder = os.path.dirname(path) if uri.startswith("file:") and os.path.isdir(os.path.dirname(path) or ".") else None
    analysis = Analysis(uri, path, text, version, folder=folder)
    start = time.perf_counter()
    try:
        # Looked up on the module at call time, so a test can stand in a failing check.
        if parser is None:
            analysis.result = effspec.check_text(text, path, folder)
        else:
            analysis.result = effspec.check_text(text, path, folder, parse=parser.parse, memo=parser.memo)
            parser.memo.prune()
    except Exception as exc:  # a bug in one document must not stop the server
        analysis.crash = f"{type(exc).__name__}: {exc}"
        analysis.result = None
        traceback.print_exc()  # stderr: the editor's server log
    analysis.seconds = time.perf_counter() - start
    return analysis
