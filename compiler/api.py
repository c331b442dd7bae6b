"""The Python entry points for a run that is not a `.eff` file: the IR as JSON (spec/ir-json.md).

A training callback, a job database or a notebook hands effspec the IR
(``spec/eff-ir.schema.json``) and gets the same :class:`effspec.Result` that
`effspec check` prints::

    from effspec.api import check_ir
    result = check_ir(doc, folder="runs/")   # doc: a dict, as json.load reads one
    result.has_errors, [d.code for d in result.diagnostics]

The document is validated against the schema (jsonschema), then checked as the
`.eff` it is the IR of: every rule of the language applies, `file` references
resolve inside ``folder`` (and are refused outside it), and the document must
say the same as its texts compile to.  A problem is a coded diagnostic whose
position is in the JSON text (for :func:`check_ir`, the text
``json.dumps(doc, indent=2)`` writes: the Result's ``source``); no invalid
document reaches the engine.  Findings of a valid document are the `.eff`'s:
the same codes, messages and figures, lines cited in messages and figures
being the document's spans (the lines of the `.eff` it was exported from),
and each finding placed on the JSON member that carries its span.
"""

from __future__ import annotations

import gc
import json
import math
import os
from dataclasses import replace
from typing import Any

from effspec import Result
from effspec.diagnostics import Diagnostic, Span, cap, sort_key

__all__ = ["check_ir", "check_ir_text", "load_ir", "export_ir", "Result"]


def __dir__() -> list[str]:
    return sorted(__all__)


def check_ir(doc: Any, file: str = "<ir>", folder: str | None = None, *, allow_hardlinks: bool = False,
             isolated: bool = False) -> Result:
    """Check a JSON IR document given as Python data (dicts, lists, str, int, float, bool, None).

    Positions are in ``json.dumps(doc, indent=2)``; a value JSON cannot hold (NaN, a tuple, a set, an
    object) is an error at its pointer, never an exception."""
    bad = _not_json(doc)
    if bad is not None:
        pointer, what = bad
        code = "EFF011" if what.startswith("a non-finite") else "EFF030" if what.startswith("nested") else "EFF003"
        result = Result(file, None)
        result.diagnostics = [Diagnostic(code, "error", None, f"`{pointer or '/'}` is {what}, which JSON cannot hold",
                                         "give the document as json.load returns one: dicts, lists, strings, "
                                         "finite numbers, booleans and None")]
        return result
    return check_ir_text(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False), file, folder,
                         allow_hardlinks=allow_hardlinks, isolated=isolated)


def _not_json(doc: Any) -> tuple[str, str] | None:
    """(pointer, what it is) of the first value JSON cannot hold, or None."""
    from effspec.front.ir_json import MAX_DEPTH, pointer_part

    stack: list[tuple[str, Any, int]] = [("", doc, 0)]
    while stack:
        pointer, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return pointer, f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return pointer, f"an object with the key {k!r:.40}, not a string"
                stack.append((f"{pointer}/{pointer_part(k)}", v, depth + 1))
        elif isinstance(value, list):
            stack += [(f"{pointer}/{i}", v, depth + 1) for i, v in enumerate(value)]
        elif isinstance(value, float) and not math.isfinite(value):
            return pointer, f"a non-finite number ({value})"
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            return pointer, f"a {type(value).__name__}"
    return None


def check_ir_text(text: str, file: str = "<ir>", folder: str | None = None, *, allow_hardlinks: bool = False,
                  isolated: bool = False) -> Result:
    """Check the JSON text of an IR document; ``folder`` anchors its `file` references and finds the
    project's configuration (pragmas are comments of a `.eff` and a JSON IR has none)."""
    return _check_ir_text(text, file, None if folder is None else os.path.realpath(folder), allow_hardlinks, isolated)


def load_ir(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
            allow_hardlinks: bool = False, inline_config: bool | None = None, isolated: bool = False) -> Result:
    """Read and check a JSON IR file, under :func:`effspec.load`'s rules for reading a spec (and its size limit).

    A file named ``*.eff.json``, or a ``.json`` file whose first member is `"$schema"` naming
    eff-ir.schema.json, is IR; any other is checked as `.eff` text, as :func:`effspec.load` checks it
    (``inline_config`` applies to that text only: a JSON IR has no pragmas)."""
    from effspec.front.files import read_spec
    from effspec.front.limits import LIMITS

    path = os.fspath(path)
    raw, folder = read_spec(path, LIMITS.max_spec_bytes, None if root is None else os.fspath(root), allow_hardlinks)
    return _check_ir_source(raw, path, folder, allow_hardlinks=allow_hardlinks, inline_config=inline_config,
                           isolated=isolated)


def _check_ir_source(raw: bytes, path: str, folder: str, *, allow_hardlinks: bool = False,
                    inline_config: bool | None = None, isolated: bool = False) -> Result:
    """The check of a `.json` file's bytes, read from ``path`` in the canonical ``folder`` (:func:`load_ir`, and
    `effspec check`, whose result cache has read them): IR when its name or its `"$schema"` says so, else `.eff`
    text as :func:`effspec.load` checks it; EFF030 over the size limit, EFF001 at the first byte that is not UTF-8."""
    from effspec import _check_source, _not_utf8
    from effspec.front.ir_json import declares_ir, is_ir_name
    from effspec.front.limits import LIMITS

    if len(raw) > LIMITS.max_spec_bytes:
        r = Result(path, None)
        r.diagnostics = [Diagnostic("EFF030", "error", Span(1, 1, 1, 1),
                                    f"the document is larger than {LIMITS.max_spec_bytes:,} bytes", "split it into several files")]
        return r
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _not_utf8(raw, path)
    if not (is_ir_name(path) or declares_ir(text)):
        return _check_source(raw, path, folder, allow_hardlinks=allow_hardlinks, inline_config=inline_config,
                             isolated=isolated)
    return _check_ir_text(text, path, folder, allow_hardlinks, isolated)


def export_ir(result: Result) -> str:
    """The JSON text of a checked spec's IR (what `effspec export` writes); ValueError when it did not compile."""
    from effspec.front import ir
    from effspec.front.ir_json import export

    if not isinstance(result.spec, ir.Spec) or any(d.severity == "error" and d.code < "EFF100" for d in result.diagnostics):
        raise ValueError(f"{result.file} does not compile (EFF0xx errors): there is no IR to export")
    return export(result.spec)


def _check_ir_text(text: str, file: str, folder: str | None, allow_hardlinks: bool, isolated: bool) -> Result:
    from effspec.front.config import cap_suppressed
    from effspec.front.files import ALLOW_HARDLINKS
    from effspec.front.syntax import encodable

    result = Result(file, encodable(text))
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as effspec.check_text: the IR is many small objects that live to the end
    token = ALLOW_HARDLINKS.set(allow_hardlinks)
    try:
        _check(result, text, file, folder, isolated)
    finally:
        ALLOW_HARDLINKS.reset(token)
        if gc_was_enabled:
            gc.enable()
    result.diagnostics, result.omitted = cap(result.diagnostics)
    result.suppressed, result.suppressed_omitted = cap_suppressed(result.suppressed)
    return result


def _front(text: str, file: str, folder: str | None) -> tuple[Any, Any, Any, list[Diagnostic]]:
    """(the positions, the document, the checked IR or None, diagnostics positioned in the JSON text): every step
    before the engine."""
    from effspec.front import ir_json as J
    from effspec.front.build import build_ir
    from effspec.front.limits import LIMITS
    from effspec.front.syntax import parse

    positions = J.Positions(text)
    if len(text.encode("utf-8", "surrogatepass")) > LIMITS.max_spec_bytes:
        return positions, None, None, [Diagnostic("EFF030", "error", Span(1, 1, 1, 1),
                                            f"the document is larger than {LIMITS.max_spec_bytes:,} bytes",
                                            "split it into several files")]
    try:
        doc = J.decode(text, positions)
    except J.Problem as problem:
        return positions, None, None, [problem.diagnostic(positions)]
    problems = J.validate(doc, positions)
    if problems:
        return positions, doc, None, problems
    items = len(doc["runs"]) + len(doc["scalings"])
    if items > LIMITS.max_runs:
        return positions, doc, None, [Diagnostic("EFF030", "error", positions.of("/runs"),
                                            f"the document declares {items:,} runs and scalings; the limit is {LIMITS.max_runs:,}",
                                            "split it into several files")]
    broken = J.line_breaks(doc)
    if broken:
        return positions, doc, None, [Diagnostic("EFF003", "error", positions.of(p), f"`{p}` holds a line break",
                                                 "no `.eff` string or value holds one: write it on one line")
                                      for p in broken[:50]]
    generated = J.to_eff(doc)
    tree, diags = parse(generated.text)
    spec = None
    if tree is not None and not diags:
        spec, diags = build_ir(tree, generated.text, file, folder)
    if spec is None or any(d.severity == "error" for d in diags):
        return positions, doc, None, [replace(d, span=positions.of(generated.pointer(d.span)) if d.span else None) for d in diags]
    from effspec.front.ir import to_json

    compiled = to_json(spec)
    wrong = [J.mismatch(p, a, b, positions) for p, a, b in J.differences(doc, compiled)][:50]
    if wrong:
        return positions, doc, None, wrong
    checked = replace(J.with_spans(spec, doc), file=doc["file"])
    return positions, doc, checked, []


def _check(result: Result, text: str, file: str, folder: str | None, isolated: bool) -> None:
    from effspec import _front_end_error
    from effspec.engine.evaluate import evaluate
    from effspec.front import ir_json as J
    from effspec.front.config import configure
    from effspec.rules import code_table
    from effspec.rules.audit import audit

    positions, doc, spec, diags = _front(text, file, folder)
    if spec is not None:
        result.spec = spec
        evaluation = evaluate(spec)
        stopped = [d for d in evaluation.diagnostics if _front_end_error(d)]
        if stopped:
            diags = stopped
        else:
            result.evaluation = evaluation
            diags = list(evaluation.diagnostics) + audit(spec, evaluation, "")  # no `.eff` lines for a rule to read
    # A JSON IR has no comments, so no pragmas: the configuration applies, inline configuration does not.
    configured = configure(diags, "", folder, False, isolated, known_codes=code_table())
    ordered = sorted(configured.diagnostics, key=sort_key)  # by the spans the IR carries, as for its `.eff`
    suppressed = configured.suppressed
    if spec is not None:  # the findings are at spans of the document: each goes to the member that carries it
        place = J.Placer(doc, positions)
        ordered = [place(d) for d in ordered]
        suppressed = [replace(s, diagnostic=place(s.diagnostic)) for s in suppressed]
    result.diagnostics = ordered
    result.suppressed = suppressed
    result.settings = configured.settings
