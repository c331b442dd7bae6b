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

from effspec.diagnostics import Diagnostic, Span, sort_key
from effspec.version import __version__

__all__ = ["Result", "load", "check_text", "Diagnostic", "Span", "__version__"]


@dataclass
class Result:
    file: str
    source: str | None
    spec: object | None = None  # ir.Spec
    evaluation: object | None = None  # evaluate.Evaluation
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Findings a pragma or the project configuration dropped or lowered
    # (effspec.front.config.Suppression): every output lists them.
    suppressed: list = field(default_factory=list)
    settings: object | None = None  # effspec.front.config.Settings: what applied, and from which file
    pragmas_not_applied: tuple = ()  # pragmas found while inline configuration was off

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


def check_text(text: str, file: str = "<string>", folder: str | None = None, *, inline_config: bool | None = None) -> Result:
    """Run the whole pipeline on spec text.  ``folder`` anchors `file "…"` paths
    and finds the project's configuration; ``inline_config=False`` ignores the
    spec's pragmas (None: as the configuration says)."""
    result = Result(file, text)
    # The parse tree and IR are many small objects that live until the end of
    # the check: the cyclic collector would rescan them again and again as
    # they grow (per-run cost rose 35 % from 100 to 1,600 runs).  Nothing here
    # makes reference cycles worth collecting mid-check.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(result, text, file, folder, inline_config)
    finally:
        if gc_was_enabled:
            gc.enable()


def _check(result: Result, text: str, file: str, folder: str | None, inline_config: bool | None = None) -> Result:
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
    configured = configure(diags, text, folder, inline_config)
    result.diagnostics = sorted(configured.diagnostics, key=sort_key)
    result.suppressed = configured.suppressed
    result.settings = configured.settings
    result.pragmas_not_applied = configured.pragmas_not_applied
    return result


def load(path: str | os.PathLike, *, inline_config: bool | None = None) -> Result:
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
    return check_text(text, path, os.path.dirname(os.path.abspath(path)), inline_config=inline_config)
