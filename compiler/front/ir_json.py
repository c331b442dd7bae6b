"""The IR's JSON form as an input: decoded with positions, validated, and turned back into `.eff` text.

A JSON IR document (``spec/eff-ir.schema.json``; the format is described in
``spec/ir-json.md``) goes through four steps, each stopping at the first
problem with coded diagnostics whose positions are in the JSON text:

1. :func:`decode`: strict JSON (no NaN or Infinity, no duplicate member, no
   lone surrogate), with the size, nesting and count limits applied while it
   is read, and the position of every value and member name kept by its JSON
   pointer;
2. :func:`validate`: the schema, with jsonschema (imported here, lazily);
3. :func:`to_eff`: the `.eff` text the document is the IR of, each statement
   put on the line and column its span names where the lines allow, so that a
   message that cites a line ("the first is on line 12") cites the original's;
   the caller checks that text as any `.eff` is checked (so every rule of the
   language applies, and `file` references resolve inside the JSON file's
   folder, through :mod:`effspec.front.files`);
4. :func:`differences`: the IR that text compiles to must be the document,
   spans aside, value for value; :func:`with_spans` then gives it the
   document's spans, so that figures cite the lines the document carries.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from effspec.diagnostics import Diagnostic, Span
from effspec.front import ir
from effspec.front.limits import LIMITS

SCHEMA_FILE = "eff-ir.schema.json"
SCHEMA_ID = "https://effspec.invalid/spec/eff-ir/1/eff-ir.schema.json"
FORMAT_VERSION = 1
SUFFIX = ".eff.json"
# Objects nest 9 deep in an entry's samples; each expression level adds one.
MAX_DEPTH = LIMITS.max_expression_depth + 16


def is_ir_name(path: str) -> bool:
    """A file name the folder forms of `check` and `report` read as a JSON IR."""
    return path.endswith(SUFFIX)


def declares_ir(text: str) -> bool:
    """A `.json` file named on the command line is read as IR when its top-level object's first member
    is `"$schema"` naming eff-ir.schema.json (the way `effspec export` writes it, and editors expect)."""
    m = re.match(r'\s*\{\s*"\$schema"\s*:\s*"([^"\\]{0,300})"', text)
    return m is not None and m.group(1).endswith(SCHEMA_FILE)


def schema() -> dict[str, Any]:
    """The schema shipped in the package (``effspec.spec``)."""
    import os

    import effspec.spec as spec_package

    try:
        with open(os.path.join(os.path.dirname(spec_package.__file__ or ""), SCHEMA_FILE), encoding="utf-8") as fh:
            loaded: dict[str, Any] = json.load(fh)
            return loaded
    except OSError:  # installed as a zip
        from importlib import resources

        loaded = json.loads((resources.files("effspec.spec") / SCHEMA_FILE).read_text(encoding="utf-8"))
        return loaded


# ----------------------------------------------------------------------------
# 1. Decoding with positions


class Positions:
    """Offsets of every value (and member name) by JSON pointer, and offsets as lines and columns."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[str, tuple[int, int]] = {}
        self.names: dict[str, tuple[int, int]] = {}
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return i + 1, offset - self._starts[i] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.at(start)
        end_line, end_column = self.at(max(end, start + 1))
        return Span(line, column, end_line, end_column)

    def of(self, pointer: str, name: bool = False) -> Span:
        """The span of the value at ``pointer`` (of its member name with ``name``), or of its nearest ancestor."""
        while True:
            found = (self.names if name else self.values).get(pointer)
            if found is not None:
                return self.span(*found)
            if not pointer:
                return Span(1, 1, 1, 1)
            pointer, name = pointer.rsplit("/", 1)[0], False


class Problem(Exception):
    """A decoding problem: a code, a message and help, at an offset of the text."""

    def __init__(self, code: str, offset: int, message: str, help_: str = "", end: int | None = None) -> None:
        super().__init__(message)
        self.code, self.offset, self.message, self.help, self.end = code, offset, message, help_, end

    def diagnostic(self, positions: Positions) -> Diagnostic:
        return Diagnostic(self.code, "error", positions.span(self.offset, self.end or self.offset + 1), self.message, self.help)


_WS_RE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, pos: int = 0) -> int:
    """The offset after the whitespace at ``pos`` (the pattern matches the empty string too)."""
    m = _WS_RE.match(text, pos)
    assert m is not None
    return m.end()
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - the C string scanner, not in the stubs
_SURROGATE = re.compile("[\ud800-\udfff]")


def pointer_part(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


@dataclass
class _Open:
    container: dict[str, Any] | list[Any]
    pointer: str
    start: int
    key: str = ""


def _string(text: str, pos: int) -> tuple[str, int]:
    try:
        value, end = _scanstring(text, pos + 1, True)
    except json.JSONDecodeError as exc:
        raise Problem("EFF001", exc.pos, f"not JSON: {exc.msg}", "a JSON IR file is strict JSON (RFC 8259)") from None
    bad = _SURROGATE.search(value)
    if bad:
        raise Problem("EFF001", pos, f"the string holds \\u{ord(bad.group()):04x}, a lone surrogate, not a character",
                      "write the character itself, or its surrogate pair", end)
    return value, end


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    if text.startswith('"', pos):
        return _string(text, pos)
    m = _NUMBER.match(text, pos)
    if m and m.end() > pos:
        if m.group(1) is None and m.group(2) is None:
            return int(m.group()), m.end()
        value = float(m.group())
        if not math.isfinite(value):
            raise Problem("EFF011", pos, f"`{m.group()[:40]}` is beyond the range of a double", "write a finite number",
                          m.end())
        return value, m.end()
    for word, literal in _LITERALS.items():
        if text.startswith(word, pos):
            return literal, pos + len(word)
    shown = text[pos:pos + 12].split("\n", 1)[0]
    what = "the end of the file" if pos >= len(text) else f"`{shown}`"
    hint = " (NaN and Infinity are not JSON)" if shown.startswith(("NaN", "Infinity", "-Infinity")) else ""
    raise Problem("EFF001", pos, f"not JSON: expected a value, found {what}{hint}", "a JSON IR file is strict JSON (RFC 8259)")


def _member_name(text: str, pos: int, frame: _Open, positions: Positions) -> tuple[str, int]:
    """The name of the next member of an object (and the offset after its `:`)."""
    if not text.startswith('"', pos):
        raise Problem("EFF001", pos, "not JSON: expected a member name in double quotes", "")
    name, end = _string(text, pos)
    assert isinstance(frame.container, dict)
    if name in frame.container:
        where = f"{frame.pointer}/{pointer_part(name)}"
        raise Problem("EFF003", pos, f"`{where}` is given twice", "a member appears once in an object; keep one", end)
    positions.names[f"{frame.pointer}/{pointer_part(name)}"] = (pos, end)
    after = _skip(text, end)
    if not text.startswith(":", after):
        raise Problem("EFF001", after, "not JSON: expected `:` after the member name", "")
    frame.key = name
    return name, _skip(text, after + 1)


def _count(frame: _Open, pos: int) -> None:
    if len(frame.container) >= LIMITS.max_list_length:
        what = "members" if isinstance(frame.container, dict) else "items"
        raise Problem("EFF030", pos, f"`{frame.pointer or '/'}` has more than {LIMITS.max_list_length:,} {what}",
                      "put long sample series in a CSV file beside the document")


def decode(text: str, positions: Positions) -> Any:
    """The JSON value of ``text``, its positions recorded in ``positions``; raises :class:`Problem`.

    Iterative (no recursion, whatever the nesting): an object or array nested
    deeper than MAX_DEPTH, or holding more than ``max_list_length`` members or
    items, is refused as it is read."""
    stack: list[_Open] = []
    pointer, pos = "", _skip(text)
    while True:
        start = pos
        if text.startswith(("{", "["), pos):
            if len(stack) >= MAX_DEPTH:
                raise Problem("EFF030", pos, f"the document nests more than {MAX_DEPTH} levels deep",
                              f"expressions nest at most {LIMITS.max_expression_depth} levels")
            frame = _Open({} if text[pos] == "{" else [], pointer, pos)
            stack.append(frame)
            pos = _skip(text, pos + 1)
            close = "}" if isinstance(frame.container, dict) else "]"
            if not text.startswith(close, pos):
                if isinstance(frame.container, dict):
                    name, pos = _member_name(text, pos, frame, positions)
                    pointer = f"{frame.pointer}/{pointer_part(name)}"
                else:
                    pointer = f"{frame.pointer}/0"
                continue
            stack.pop()
            value: Any = frame.container
            pos += 1
        else:
            value, pos = _scalar(text, pos)
        positions.values[pointer] = (start, pos)
        while stack:  # the value is a member or item of the innermost open container
            frame = stack[-1]
            if isinstance(frame.container, dict):
                frame.container[frame.key] = value
            else:
                frame.container.append(value)
            pos = _skip(text, pos)
            close = "}" if isinstance(frame.container, dict) else "]"
            if text.startswith(",", pos):
                pos = _skip(text, pos + 1)
                _count(frame, pos)
                if isinstance(frame.container, dict):
                    name, pos = _member_name(text, pos, frame, positions)
                    pointer = f"{frame.pointer}/{pointer_part(name)}"
                else:
                    pointer = f"{frame.pointer}/{len(frame.container)}"
                break
            if not text.startswith(close, pos):
                raise Problem("EFF001", pos, f"not JSON: expected `,` or `{close}`", "")
            stack.pop()
            positions.values[frame.pointer] = (frame.start, pos + 1)
            value, pos = frame.container, pos + 1
        else:
            end = _skip(text, pos)
            if end != len(text):
                raise Problem("EFF001", end, "not JSON: more text after the document", "a file holds one JSON IR document")
            return value


# ----------------------------------------------------------------------------
# 2. The schema


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, (dict, list)) else (
        "an object" if isinstance(value, dict) else f"an array of {len(value)}")
    return text if len(text) <= 60 else text[:59] + "…"


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _schema_problem(error: Any, positions: Positions) -> Diagnostic:
    """One jsonschema error as a coded diagnostic: the pointer in the message, the position of what is wrong."""
    pointer = "".join(f"/{pointer_part(str(p))}" for p in error.absolute_path)
    where = f"`{pointer or '/'}`"
    kind, value = error.validator, error.instance
    span = positions.of(pointer)
    if kind == "additionalProperties":
        members = set(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in members)
        name = f"{pointer}/{pointer_part(extra[0])}" if extra else pointer
        return Diagnostic("EFF002", "error", positions.of(name, name=True),
                          f"unknown member `{extra[0] if extra else '?'}` in {where}",
                          "valid members: " + ", ".join(f"`{k}`" for k in sorted(members)))
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return Diagnostic("EFF003", "error", span, f"{where} is missing " + ", ".join(f"`{k}`" for k in missing),
                          "every member the schema lists is required (write null where it allows null)")
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minItems", "maxItems"):
        return Diagnostic("EFF011", "error", span, f"{where} is out of range: {error.message}", "")
    if kind == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return Diagnostic("EFF003", "error", span, f"{where} must be of type {want}, found {_type_name(value)} {_shown(value)}",
                          "")
    if kind in ("enum", "const"):
        allowed = error.validator_value if kind == "enum" else [error.validator_value]
        return Diagnostic("EFF003", "error", span, f"{where} is {_shown(value)}, not one of the values allowed",
                          "allowed: " + ", ".join(_shown(a) for a in allowed))
    if kind == "pattern":
        return Diagnostic("EFF003", "error", span, f"{where} is {_shown(value)}, which does not match `{error.validator_value}`", "")
    return Diagnostic("EFF003", "error", span, f"{where} is not valid: {error.message[:300]}", "")


def _one_of(error: Any, positions: Positions) -> Diagnostic:
    """A value no branch of a `oneOf` accepts: an expression node whose `node` is none of the tags (every branch
    fails there), else the problem of the branch it comes closest to (the one whose `node` tag it has)."""
    tags = [e.validator_value for e in error.context if e.validator == "const" and list(e.relative_path) == ["node"]]
    branches = {e.relative_schema_path[0] for e in error.context}
    if tags and len(tags) == len(branches):
        pointer = "".join(f"/{pointer_part(str(p))}" for p in error.absolute_path) + "/node"
        return Diagnostic("EFF003", "error", positions.of(pointer),
                          f"`{pointer}` is {_shown(error.instance.get('node'))}, not one of the values allowed",
                          "allowed: " + ", ".join(_shown(t) for t in tags))
    tagged = {e.relative_schema_path[0] for e in error.context if e.validator == "const" and list(e.relative_path) == ["node"]}
    closest = [e for e in error.context if e.relative_schema_path[0] not in tagged]
    best = closest[0] if closest else error.context[0]
    return _one_of(best, positions) if best.validator == "oneOf" and best.context else _schema_problem(best, positions)


def validate(doc: Any, positions: Positions, limit: int = 50) -> list[Diagnostic]:
    """Every schema violation (at most ``limit``), in document order; jsonschema is imported here."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema())
    out = []
    for error in validator.iter_errors(doc):
        out.append(_one_of(error, positions) if error.validator == "oneOf" and error.context else
                   _schema_problem(error, positions))
        if len(out) >= limit:
            break
    return sorted(dict.fromkeys(out), key=lambda d: (d.span or Span(0, 0, 0, 0), d.code))


# ----------------------------------------------------------------------------
# 3. The `.eff` text a document is the IR of


@dataclass
class Piece:
    """A stretch of the generated text and the document member it was written from."""

    line: int
    column: int
    end_column: int
    pointer: str


@dataclass
class Generated:
    text: str
    pieces: list[Piece] = field(default_factory=list)
    _starts: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def pointer(self, span: Span) -> str:
        """The member of the document a position of the generated text was written from (the last piece that
        starts at or before it: pieces are written in text order)."""
        if len(self._starts) != len(self.pieces):
            self._starts = [(p.line, p.column) for p in self.pieces]
        i = bisect.bisect_right(self._starts, (span.line, span.column)) - 1
        return self.pieces[i].pointer if i >= 0 else ""


class _Writer:
    """Text put at the lines and columns the spans name, where the text so far leaves room."""

    def __init__(self) -> None:
        self.lines: list[str] = [""]
        self.pieces: list[Piece] = []
        self.fresh_line = False  # the last piece holds a `#`: nothing more may share its line

    def write(self, text: str, pointer: str, at: Any = None) -> None:
        line = self.lines[-1]
        # JSON Schema's "integer" admits 1.0: a span read from a document is made whole here
        where = (int(at["line"]), int(at["column"])) if isinstance(at, dict) else None
        if where is not None and where[0] > len(self.lines) and not self.fresh_line:
            self.lines += [""] * (where[0] - len(self.lines))
            line = ""
        elif self.fresh_line:
            self.lines.append("")
            line = ""
        if where is not None and where[0] == len(self.lines) and where[1] - 1 >= len(line) + (1 if line else 0):
            line += " " * (where[1] - 1 - len(line))
        elif line and not line.endswith(" "):
            line += " "
        self.pieces.append(Piece(len(self.lines), len(line) + 1, len(line) + 1 + len(text), pointer))
        self.lines[-1] = line + text
        self.fresh_line = "#" in text or "\n" in text

    def end_of(self, span: Any) -> dict[str, int] | None:
        """Where a closing brace goes: the last column of a span."""
        if not isinstance(span, dict):
            return None
        return {"line": int(span["end_line"]), "column": max(1, int(span["end_column"]) - 1)}


def _eff_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _provenance(w: _Writer, prov: dict[str, Any], pointer: str) -> None:
    if prov["kind"] != "declared" or prov["citation"] is not None:
        w.write(f"from {prov['kind']} {_eff_string(prov['citation'] or '')}", f"{pointer}/provenance")


def _entries(w: _Writer, entries: list[dict[str, Any]], pointer: str) -> None:
    for i, e in enumerate(entries):
        p = f"{pointer}/{i}"
        w.write(e["key"], f"{p}/key", e["span"])
        w.write("=", f"{p}/key")
        w.write(e["text"], f"{p}/text", e["value_span"])
        if e.get("plus_minus") is not None:
            w.write(f"± {e['plus_minus']['text']}", f"{p}/plus_minus/text", e["plus_minus"]["span"])
        _provenance(w, e["provenance"], p)


def _claim(w: _Writer, c: dict[str, Any], p: str) -> None:
    w.write("claim", p, c["span"])
    w.write(c["written"] + (f"[{c['point']}]" if c["point"] is not None else ""), f"{p}/written", c["name_span"])
    w.write("=", p)
    w.write(c["text"], f"{p}/text", c["value_span"])
    _provenance(w, c["provenance"], p)


def _by_line(item: tuple[str, dict[str, Any]]) -> tuple[int, int]:
    span = item[1]["span"]
    return span["line"], span["column"]


def _block(w: _Writer, block: dict[str, Any], q: str) -> None:
    w.write(block["name"], f"{q}/name", block["span"])
    w.write("{", q)
    _entries(w, block["entries"], f"{q}/entries")
    for i, inner in enumerate(block.get("blocks", ())):  # `model`'s mixer blocks, after its keys
        _block(w, inner, f"{q}/blocks/{i}")
    w.write("}", q, w.end_of(block["span"]))


def _run(w: _Writer, run: dict[str, Any], p: str) -> None:
    w.write("run", p, run["span"])
    w.write(run["id"], f"{p}/id", run["name_span"])
    w.write("{", p)
    for key in ("title", "source"):
        if run[key] is not None:
            w.write(f"{key} = {_eff_string(run[key])}", f"{p}/{key}")
    import heapq

    blocks = [(f"{p}/blocks/{i}", b) for i, b in enumerate(run["blocks"])]
    claims = [(f"{p}/claims/{i}", c) for i, c in enumerate(run["claims"])]
    for q, item in heapq.merge(blocks, claims, key=_by_line):  # each in its own order, interleaved as written
        if "entries" in item:
            _block(w, item, q)
        else:
            _claim(w, item, q)
    w.write("}", p, w.end_of(run["span"]))


def line_breaks(doc: Any) -> list[str]:
    """The pointers of the strings that hold a line break, which no `.eff` value (nor a value's text) can."""
    out, stack = [], [("", doc)]
    while stack:
        p, value = stack.pop()
        if isinstance(value, str) and ("\n" in value or "\r" in value):
            out.append(p)
        elif isinstance(value, dict):
            stack += [(f"{p}/{pointer_part(k)}", v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{p}/{i}", v) for i, v in enumerate(value)]
    return sorted(out)


def to_eff(doc: dict[str, Any]) -> Generated:
    """The `.eff` text of a schema-valid document, and where each piece of it came from."""
    w = _Writer()
    w.write(f"eff {doc['version']}", "/version")
    for i, run in enumerate(doc["runs"]):
        _run(w, run, f"/runs/{i}")
    for i, s in enumerate(doc["scalings"]):
        p = f"/scalings/{i}"
        w.write("scaling", p, s["span"])
        w.write(s["id"], f"{p}/id", s["name_span"])
        w.write("{", p)
        _entries(w, s["entries"], f"{p}/entries")
        for j, c in enumerate(s["claims"]):
            _claim(w, c, f"{p}/claims/{j}")
        w.write("}", p, w.end_of(s["span"]))
    return Generated("\n".join(w.lines) + "\n", w.pieces)


# ----------------------------------------------------------------------------
# 4. The document against the IR its text compiles to

SPAN_FIELDS = ("span", "name_span", "value_span")
NOT_COMPARED = {"", "/$schema", "/file"}  # the spec's name: the document's own (the file it was exported from)
REL_TOL = 1e-12


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, numbers) or not isinstance(b, numbers):
        return False
    return a == b or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


def differences(doc: Any, built: Any, pointer: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(pointer, the document's value, the compiled one) wherever they differ, spans aside, in document order."""
    stack = [(pointer, doc, built)]
    while stack:
        p, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            keys = [k for k in a if k not in SPAN_FIELDS and f"{p}/{k}" not in NOT_COMPARED]
            missing = [k for k in b if k not in a and k not in SPAN_FIELDS and f"{p}/{k}" not in NOT_COMPARED]
            stack += [(f"{p}/{pointer_part(k)}", a[k], b.get(k)) for k in reversed(keys)]
            if missing:
                yield p, a, b
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            stack += [(f"{p}/{i}", x, y) for i, (x, y) in reversed(list(enumerate(zip(a, b, strict=True))))]
        elif isinstance(a, (int, float)) and not isinstance(a, bool) and _same_number(a, b):
            continue
        elif type(a) is not type(b) or a != b:
            yield p, a, b


def mismatch(pointer: str, ours: Any, theirs: Any, positions: Positions) -> Diagnostic:
    """EFF003 at a member the document states otherwise than its text compiles to."""
    what = pointer.rsplit("/", 1)[-1]
    if what in ("value", "unit", "kind", "name", "node", "op", "path", "samples", "origin", "file", "column") or "/expr" in pointer:
        help_ = ("an entry's `value`, `unit` and `kind` (a claim's `name` and `expr`) are what its `text` compiles to; "
                 "write the two alike (`effspec export` writes both from one `.eff`)")
    else:
        help_ = "the document must be the IR of the `.eff` its texts make up; `effspec export` writes one"
    return Diagnostic("EFF003", "error", positions.of(pointer),
                      f"`{pointer or '/'}` is {_shown(ours)}, but what its text compiles to has {_shown(theirs)}", help_)


def with_spans(node: Any, doc: Any) -> Any:
    """``node`` (an IR dataclass built from the document's text) with the spans the document gives it."""
    if isinstance(node, tuple) and isinstance(doc, list):
        return tuple(with_spans(n, d) for n, d in zip(node, doc, strict=True))
    if not is_dataclass(node) or isinstance(node, type) or not isinstance(doc, dict):
        return node
    changes: dict[str, Any] = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if f.name in SPAN_FIELDS and isinstance(value, Span) and f.name in doc:
            s = doc[f.name]
            changes[f.name] = Span(s["line"], s["column"], s["end_line"], s["end_column"])
        elif isinstance(doc.get(f.name), (list, dict)) and (isinstance(value, tuple) or is_dataclass(value)):
            changes[f.name] = with_spans(value, doc[f.name])
    return replace(node, **changes) if changes else node


# Where a finding at a span of the document goes: the member of the object that carries the span.
_SPAN_TARGET = {"Entry": {"span": "key", "value_span": "value"}, "Block": {"span": "name"},
                "Run": {"span": "id", "name_span": "id"}, "Scaling": {"span": "id", "name_span": "id"},
                "Claim": {"span": "", "name_span": "written", "value_span": "expr"}}


def span_pointers(doc: dict[str, Any]) -> dict[Span, str]:
    """Each span the document carries -> the pointer of the member a finding at it is shown on (the first, in
    document order, when two objects carry the same span)."""
    out: dict[Span, str] = {}
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        p, obj = stack.pop()
        if isinstance(obj, list):
            stack += [(f"{p}/{i}", x) for i, x in reversed(list(enumerate(obj)))]
            continue
        if not isinstance(obj, dict):
            continue
        kind = ("Entry" if "key" in obj else "Block" if "entries" in obj and "name" in obj else
                "Claim" if "written" in obj else "Run" if "blocks" in obj else "Scaling" if "baseline" in obj else "")
        for name in SPAN_FIELDS:
            s = obj.get(name)
            if isinstance(s, dict) and {"line", "column", "end_line", "end_column"} <= set(s):
                target = _SPAN_TARGET.get(kind, {}).get(name, "")
                out.setdefault(Span(s["line"], s["column"], s["end_line"], s["end_column"]), f"{p}/{target}" if target else p)
        stack += [(f"{p}/{pointer_part(k)}", v) for k, v in reversed(list(obj.items()))
                  if k not in SPAN_FIELDS and isinstance(v, (dict, list))]
    return out


class Placer:
    """Moves a finding at a span of the document to the position, in the JSON text, of the member that carries the
    span (or, for a span computed from several, of the nearest one before it that holds it)."""

    LOOK_BACK = 256  # spans looked at before a computed span, at most: a finding never costs a walk of the document

    def __init__(self, doc: dict[str, Any], positions: Positions) -> None:
        self.pointers = span_pointers(doc)
        self.positions = positions
        self.by_start = sorted(self.pointers, key=lambda s: (s.line, s.column, -s.end_line, -s.end_column))
        self._keys = [(s.line, s.column) for s in self.by_start]

    def pointer(self, span: Span) -> str | None:
        found = self.pointers.get(span)
        if found is not None:
            return found
        i = bisect.bisect_right(self._keys, (span.line, span.column)) - 1
        end = (span.end_line, span.end_column)
        for s in reversed(self.by_start[max(0, i - self.LOOK_BACK + 1):i + 1]):
            if end <= (s.end_line, s.end_column):
                return self.pointers[s]
        return None

    def __call__(self, d: Diagnostic) -> Diagnostic:
        if d.span is None or d.file:
            return d
        pointer = self.pointer(d.span)
        return replace(d, span=None if pointer is None else self.positions.of(pointer))


def export(spec: ir.Spec) -> str:
    """The JSON text of a checked spec's IR, as `effspec export` writes it: `$schema` first, strict JSON."""
    body = ir.to_json(spec)
    assert isinstance(body, dict)
    return json.dumps({"$schema": SCHEMA_ID, **body}, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
