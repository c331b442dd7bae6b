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
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field

from effspec.diagnostics import Diagnostic, Span, cap, sort_key
from effspec.version import __version__

__all__ = ["Result", "load", "check_text", "Diagnostic", "Span", "__version__"]


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


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
    pragmas_off_by: str = ""  # what turned inline configuration off (--no-inline-config, or the configuration)
    suppressed_omitted: int = 0  # suppression records beyond the per-file cap (not in ``suppressed``)
    # Findings beyond the per-file cap, by severity (``diagnostics.cap``): not
    # in ``diagnostics``, which ends with one EFF030 info line counting them.
    omitted: dict[str, int] = field(default_factory=dict)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics) or bool(self.omitted.get("error"))

    def _repr_html_(self) -> str:
        """Jupyter shows the report's summary and findings inline, from the report's own templates
        and with its escaping (:mod:`effspec.report.notebook`).

        The report stage sits above this API, so it is imported by name when a notebook asks for
        it, never when effspec is imported: no import-time dependency runs upward.
        """
        import importlib

        return str(importlib.import_module("effspec.report.notebook").render_notebook(self))


def check_text(text: str, file: str = "<string>", folder: str | None = None, *, allow_hardlinks: bool = False,
               inline_config: bool | None = None, isolated: bool = False,
               parse: Callable[[str], tuple[object, list[Diagnostic]]] | None = None,
               memo: MutableMapping | None = None) -> Result:
    """Run the whole pipeline on spec text.  ``folder`` anchors `file "…"` paths
    and finds the project's configuration; ``inline_config=False`` ignores the
    spec's pragmas (None: as the configuration says); ``isolated`` applies no
    configuration file and no pragma.

    The folder is resolved once, here: every `file` is then opened beneath
    that canonical folder (see :mod:`effspec.front.files`).  A `file` that is
    a hard link is refused unless ``allow_hardlinks``.  Lone surrogates (text
    that is not Unicode) are EFF001; the Result's source shows U+FFFD for them.

    ``parse`` stands in for :func:`effspec.front.syntax.parse` and must return
    the same tree and diagnostics, and ``memo`` is a dict the IR builder keeps
    each run's IR in, by its exact lines: the language server passes both
    (:mod:`effspec.lsp.incremental`) so that an edit re-parses and rebuilds
    only the run it touches.  The Result is the same.
    """
    return _check_text(text, file, None if folder is None else os.path.realpath(folder), allow_hardlinks, inline_config,
                       isolated, parse, memo)


def _check_text(text: str, file: str, folder: str | None, allow_hardlinks: bool,
                inline_config: bool | None = None, isolated: bool = False, parse=None, memo=None) -> Result:
    """check_text with ``folder`` already canonical (resolved once, by the caller)."""
    from effspec.front.files import ALLOW_HARDLINKS, FILES, CheckFiles
    from effspec.front.syntax import encodable

    result = Result(file, encodable(text))
    # The parse tree and IR are many small objects that live until the end of
    # the check: the cyclic collector would rescan them again and again as
    # they grow (per-run cost rose 35 % from 100 to 1,600 runs).  Nothing here
    # makes reference cycles worth collecting mid-check.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    token = ALLOW_HARDLINKS.set(allow_hardlinks)
    files = FILES.set(CheckFiles())  # each file this check uses is read once (effspec.front.files)
    try:
        _check(result, text, file, folder, inline_config, isolated, parse, memo)
    finally:
        FILES.reset(files)
        ALLOW_HARDLINKS.reset(token)
        if gc_was_enabled:
            gc.enable()
    result.diagnostics, result.omitted = cap(result.diagnostics)  # bounded output, whatever the spec
    from effspec.front.config import cap_suppressed

    result.suppressed, result.suppressed_omitted = cap_suppressed(result.suppressed)
    return result


def _check(result: Result, text: str, file: str, folder: str | None, inline_config: bool | None = None,
           isolated: bool = False, parse=None, memo=None) -> Result:
    from effspec.engine.evaluate import evaluate
    from effspec.front.build import build_ir
    from effspec.front.config import configure
    from effspec.front.syntax import parse as parse_text
    from effspec.rules.audit import audit

    tree, diags = (parse or parse_text)(text)  # EFF001 for each lone surrogate, and then no tree
    text = result.source if result.source is not None else text  # surrogates shown as U+FFFD
    if tree is not None:
        spec, build_diags = build_ir(tree, text, file, folder, memo)
        diags += build_diags
        if spec is not None and not any(d.severity == "error" for d in build_diags):
            result.spec = spec
            try:
                evaluation = evaluate(spec)
            except ArithmeticError as exc:  # a division no formula foresaw: EFF702, never an internal error
                from effspec.engine.finite import arithmetic_error

                diags.append(arithmetic_error(spec, exc))  # and, as for a front-end error, no figure is computed
            else:
                stopped = [d for d in evaluation.diagnostics if _front_end_error(d)]
                if stopped:  # an unknown accelerator, an unreadable `file`: a front-end error, and no figure is computed
                    diags += stopped
                else:
                    result.evaluation = evaluation
                    diags += evaluation.diagnostics
                    diags += audit(spec, evaluation, text)
    from effspec.rules import code_table

    configured = configure(diags, text, folder, inline_config, isolated, known_codes=code_table())
    result.diagnostics = sorted(configured.diagnostics, key=sort_key)
    result.suppressed = configured.suppressed
    result.settings = configured.settings
    result.pragmas_not_applied = configured.pragmas_not_applied
    result.pragmas_off_by = configured.pragmas_off_by
    return result


def _front_end_error(d: Diagnostic) -> bool:
    """A front-end error (EFF001-EFF099) found while evaluating: the spec is not evaluated further
    (spec/language.md, "Codes"), so the error is not buried under findings computed from a broken spec."""
    return d.severity == "error" and d.code < "EFF100"


def load(path: str | os.PathLike, *, root: str | os.PathLike | None = None, allow_hardlinks: bool = False,
         inline_config: bool | None = None, isolated: bool = False) -> Result:
    """Read, parse, check, evaluate and audit one `.eff` file.

    The spec, and each file it reads, is read once: what is checked is what
    was read.  A spec named by the caller may be a symlink, followed unless
    it leads into a system pseudo-filesystem (/proc, /sys, /dev, /run), or,
    when ``isolated``, out of the folder it is named in (then the Result has
    one EFF020 error that names the link and its target, and nothing of the
    target is read).  A spec found in a folder (``root``, as `effspec check
    FOLDER` does) is read under the rules of a `file` reference: inside
    ``root``, symlinks included, and a single name unless
    ``allow_hardlinks``, which also allows `file` references that are hard
    links.  A spec that is not UTF-8 is an EFF001 error at its first bad byte.

    Raises OSError when the file cannot be read (:class:`effspec.front.files.Refused`
    when it is refused, its message saying why; the CLI makes it exit status 2).
    """
    from effspec.front.files import Refused, read_spec
    from effspec.front.limits import LIMITS

    path = os.fspath(path)
    contained = isolated and root is None
    try:
        raw, folder = read_spec(path, LIMITS.max_spec_bytes, None if root is None else os.fspath(root), allow_hardlinks,
                                contained=contained)
    except Refused as exc:
        if not (contained and exc.reason == "outside"):
            raise
        return _refused(path, exc)
    # not resolved again: read_spec read it from there
    return _check_source(raw, path, folder, allow_hardlinks=allow_hardlinks, inline_config=inline_config, isolated=isolated)


def _check_source(raw: bytes, path: str, folder: str, *, allow_hardlinks: bool = False,
                  inline_config: bool | None = None, isolated: bool = False) -> Result:
    """The check of a spec's bytes, read from ``path`` in the canonical ``folder`` (load, and
    `effspec check`, whose result cache has read them): EFF030 when they are over the limit,
    EFF001 at the first byte that is not UTF-8."""
    from effspec.front.limits import LIMITS

    if len(raw) > LIMITS.max_spec_bytes:
        r = Result(path, None)
        r.diagnostics = [Diagnostic("EFF030", "error", Span(1, 1, 1, 1),
                                    f"the spec is larger than {LIMITS.max_spec_bytes:,} bytes", "split it into several files")]
        return r
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _not_utf8(raw, path)
    return _check_text(text, path, folder, allow_hardlinks, inline_config, isolated)


def _not_utf8(raw: bytes, path: str) -> Result:
    """A spec that is not UTF-8: one EFF001 error at its first bad byte (line, and column in the
    characters before it); its text is shown with U+FFFD for the bytes that are not UTF-8."""
    from effspec.front.files import first_invalid_utf8, utf8_position

    bad = first_invalid_utf8(raw)
    offset = bad if bad is not None else 0
    line, column = utf8_position(raw, offset)
    r = Result(path, raw.decode("utf-8", "replace"))
    r.diagnostics = [Diagnostic("EFF001", "error", Span(line, column, line, column + 1),
                                f"not UTF-8 text: byte 0x{raw[offset]:02x} at line {line}, column {column}",
                                "save the spec as UTF-8 (a spec is UTF-8 text)")]
    return r


def _refused(path: str, exc: OSError) -> Result:
    """A named spec not read under --isolated: one EFF020 error that names the symlink and its target."""
    from effspec.diagnostics import sanitize

    r = Result(path, None)
    r.diagnostics = [Diagnostic("EFF020", "error", None, f"{sanitize(path)} {sanitize(exc.strerror or str(exc))}",
                                "with --isolated a spec is read only from the folder that names it: check the file "
                                "it points to by its own name if you trust it")]
    return r
