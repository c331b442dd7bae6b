"""effspec: compile and audit `.eff` training-efficiency specs.

The pipeline, one stage per module, data flowing forward only::

    parse (syntax) -> build_ir (build) -> evaluate (evaluate) -> audit (audit)
      -> configure (config: pragmas, pyproject) -> render (output, report)

``load(path)`` runs it all and returns a :class:`Result`; the CLI is a thin
shell over the same functions.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field

from effspec.diagnostics import Diagnostic, Span, cap, sort_key
from effspec.version import __version__

__all__ = ["Result", "load", "check_text", "Diagnostic", "Span", "__version__"]


@dataclass
class Result:
    file: str
    source: str | None
    spec: object | None = None  # ir.Spec
    evaluation: object | None = None  # evaluate.Evaluation
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Findings beyond the per-file cap, by severity (``diagnostics.cap``): not
    # in ``diagnostics``, which ends with one EFF030 info line counting them.
    omitted: dict[str, int] = field(default_factory=dict)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics) or bool(self.omitted.get("error"))


def check_text(text: str, file: str = "<string>", folder: str | None = None) -> Result:
    """Run the whole pipeline on spec text.  ``folder`` anchors `file "…"` paths."""
    result = Result(file, text)
    # The parse tree and IR are many small objects that live until the end of
    # the check: the cyclic collector would rescan them again and again as
    # they grow (per-run cost rose 35 % from 100 to 1,600 runs).  Nothing here
    # makes reference cycles worth collecting mid-check.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        _check(result, text, file, folder)
    finally:
        if gc_was_enabled:
            gc.enable()
    result.diagnostics, result.omitted = cap(result.diagnostics)  # bounded output, whatever the spec
    return result


def _check(result: Result, text: str, file: str, folder: str | None) -> Result:
    from effspec.engine.evaluate import evaluate
    from effspec.front.build import build_ir
    from effspec.front.config import configure
    from effspec.front.syntax import parse
    from effspec.rules.audit import audit

    tree, diags = parse(text)
    if tree is not None:
        spec, build_diags = build_ir(tree, text, file, folder)
        diags += build_diags
        if spec is not None and not any(d.severity == "error" for d in build_diags):
            result.spec = spec
            result.evaluation = evaluate(spec)
            diags += result.evaluation.diagnostics
            diags += audit(spec, result.evaluation, text)
    result.diagnostics = sorted(configure(diags, text, folder), key=sort_key)
    return result


def load(path: str | os.PathLike) -> Result:
    """Read, parse, check, evaluate and audit one `.eff` file.

    Raises OSError when the file cannot be read and UnicodeDecodeError when it
    is not UTF-8 (the CLI turns both into exit status 2).
    """
    from effspec.front.files import read_regular_file
    from effspec.front.limits import LIMITS

    path = os.fspath(path)
    # The user named this file, so a symlink to it is followed; a FIFO or
    # device is refused rather than waited on.
    raw = read_regular_file(path, LIMITS.max_spec_bytes, follow_symlinks=True)
    if len(raw) > LIMITS.max_spec_bytes:
        r = Result(path, None)
        r.diagnostics = [Diagnostic("EFF030", "error", Span(1, 1, 1, 1),
                                    f"the spec is larger than {LIMITS.max_spec_bytes:,} bytes", "split it into several files")]
        return r
    text = raw.decode("utf-8")
    return check_text(text, path, os.path.dirname(os.path.abspath(path)))
