"""Severity overrides and suppressions: pragmas in comments, and the project's pyproject.toml.

- ``# effspec: ignore[EFF203]`` in a comment drops that code's findings on the
  comment's line (``# effspec: ignore`` drops all of them).
- ``# effspec: file-ignore[EFF504]`` in any comment drops the code in the whole file.
- ``# effspec: severity[EFF503]=error`` in any comment sets the code's severity in the file.
- ``[tool.effspec]`` in the project's pyproject.toml: ``ignore = ["EFF504"]``,
  ``severity = { EFF503 = "error" }`` and ``inline_config = false`` (pragmas
  are not honoured: for specs written by someone else).

Pragmas count only in real comments.  Comment positions come from the
grammar's own STRING and COMMENT terminals, so ``"… # effspec: file-ignore[…]"``
inside a string is text, exactly as the parser reads it.

The project's configuration is searched from the spec's folder upwards and the
search stops at the project root: the first pyproject.toml with a
``[tool.effspec]`` table applies, and a folder holding ``.git`` ends the search,
so a file in a parent folder outside the project (a shared ``/tmp``, a home
folder) never applies.  A configuration file is read only within size and
nesting limits (EFF030), must be valid TOML with known keys (EFF031), and is
refused when anyone may write it, or when someone else put it in a folder
anyone may write (EFF031).

Nothing is dropped silently: each finding a pragma or the configuration removes,
and each finding whose severity they lower, comes back as a :class:`Suppression`,
and every output lists them.

Front-end errors (EFF001-EFF099) cannot be switched off or downgraded: a spec
that does not parse or type-check has no meaning to audit.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from functools import cache

from effspec.diagnostics import MAX_DIAGNOSTICS, SEVERITIES, Diagnostic, Span, _clipped, sort_key
from effspec.front.limits import LIMITS

# A pragma as written, however wrong: `# effspec:`, a verb, an optional [codes] (maybe unclosed), an optional =value.
_PRAGMA = re.compile(r"#\s*effspec:[ \t]*(?P<verb>[A-Za-z_-]*)(?P<codes>\[[^\]\n#]*\]?)?(?:[ \t]*=[ \t]*(?P<value>[A-Za-z_0-9]*))?")
_CODE = re.compile(r"EFF[0-9]+")  # code-shaped; whether such a code exists is EFF033's question
VERBS = ("ignore", "file-ignore", "severity")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}  # error 0, warning 1, info 2: a larger rank is lower
CONFIG_FILE = "pyproject.toml"


@dataclass(frozen=True)
class Key:
    """One key of ``[tool.effspec]``: its name, why a value is wrong (None when it is right), an example."""

    name: str
    problem: Callable[[object], str | None]  # "is not a list of codes": the message after the key's name
    example: str  # 'ignore = ["EFF504"]': the help says "write" it


def _kind(test: Callable[[object], bool], wrong: str) -> Callable[[object], str | None]:
    return lambda value: None if test(value) else wrong


# The one table of configuration keys: `_settings_from` checks names and values
# against it, an unknown key gets the closest of these as a suggestion, and the
# rule page of EFF031 lists them.  A new key is a row here (its check may be any
# function returning why a value is wrong) and a field of Settings.
KEYS: dict[str, Key] = {k.name: k for k in (
    Key("ignore", _kind(lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v), "is not a list of codes"),
        'ignore = ["EFF504"]'),
    Key("severity", _kind(lambda v: isinstance(v, dict) and all(isinstance(x, str) and x in SEVERITIES for x in v.values()),
                          "is not a table of codes to error, warning or info"), 'severity = { EFF503 = "error" }'),
    Key("inline_config", _kind(lambda v: isinstance(v, bool), "is not true or false"), "inline_config = false"),
    Key("doc_base", lambda v: doc_base_error(v), 'doc_base = "https://docs.example.org/rules/"'),
)}


def closest(word: str, choices: Collection[str]) -> str | None:
    """The choice nearest ``word`` (difflib's ratio of at least 0.6), or None."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def _protected(code: str) -> bool:
    return code < "EFF100"


# ----------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Settings:
    """The project settings that apply to a spec, and where they come from."""

    path: str | None = None  # the pyproject.toml they were read from; None when none applies
    name: str | None = None  # the same, relative to the spec's folder (what outputs show); None when it sets nothing
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    inline_config: bool = True
    root: str | None = None  # the folder whose `.git` ended the search, when one did
    # Where reports link rule pages: an http(s) URL (`{code}` in it is replaced, else `/EFFnnn.md` is
    # appended); None: the page shipped with the package and `effspec explain CODE`.
    doc_base: str | None = None
    problems: tuple[Diagnostic, ...] = ()  # EFF030/EFF031: the configuration file was not applied
    locations: tuple[tuple[str, int, int, int], ...] = ()  # (code, line, column, length) of each code it names

    def to_json(self) -> dict[str, object]:
        return {"config": self.path, "config_relative": self.name, "ignore": list(self.ignore), "severity": dict(self.severity),
                "inline_config": self.inline_config, "project_root": self.root, "doc_base": self.doc_base,
                "problems": [d.to_json() for d in self.problems]}


@dataclass(frozen=True)
class Suppression:
    """A finding that a pragma or the configuration dropped or lowered."""

    diagnostic: Diagnostic  # as the rule reported it, with its own severity
    by: str  # what did it, in words: "`# effspec: file-ignore[EFF202]` at line 4"
    kind: str  # SARIF's suppression kinds: "inSource" (a pragma) or "external" (the configuration file)
    effect: str  # "ignored", or "lowered to warning"
    line: int | None = None  # the pragma's line
    column: int | None = None  # the pragma's column
    config: str | None = None  # the configuration file, relative to the spec's folder

    @property
    def lowered(self) -> bool:
        return self.effect != "ignored"

    def to_json(self) -> dict[str, object]:
        out = self.diagnostic.to_json()
        out.update({"by": self.by, "kind": self.kind, "effect": self.effect,
                    "pragma_line": self.line, "config_file": self.config})
        return out


@dataclass(frozen=True)
class Pragma:
    line: int
    column: int
    kind: str  # ignore, file-ignore, severity
    codes: tuple[str, ...] | None  # None: every code (a bare `ignore`)
    value: str = ""  # the severity of a `severity` pragma
    length: int = 0  # its length as written, for a diagnostic's span

    def written(self) -> str:
        """The pragma in canonical form (only codes and keywords: nothing else from the spec)."""
        codes = f"[{','.join(self.codes)}]" if self.codes is not None else ""
        value = f"={self.value}" if self.kind == "severity" else ""
        return f"`# effspec: {self.kind}{codes}{value}` at line {self.line}"


@dataclass(frozen=True)
class Configured:
    """What :func:`configure` returns."""

    diagnostics: list[Diagnostic]
    suppressed: list[Suppression]
    settings: Settings
    pragmas_not_applied: tuple[Pragma, ...] = ()  # pragmas found while inline configuration is off
    pragmas_off_by: str = ""  # what turned inline configuration off: the CLI flag or the configuration key; "" when on


# ----------------------------------------------------------------------------
# Pragmas, in comments only


@cache
def _comment_scanner() -> re.Pattern[str]:
    """STRING or COMMENT, from the grammar's own terminal definitions.

    In text that lexes, no other terminal can hold `"` or `#`, so the leftmost
    match of either is where the lexer starts its next string or comment; a
    `#` inside a string is therefore never taken for a comment.  (Text that
    does not lex yields only front-end errors, which no pragma can touch.)
    """
    from effspec.front.syntax import parser

    grammar = parser()
    string = grammar.get_terminal("STRING").pattern.to_regexp()
    comment = grammar.get_terminal("COMMENT").pattern.to_regexp()
    return re.compile(f"(?P<string>{string})|(?P<comment>{comment})")


def comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every comment, as the parser's lexer delimits them."""
    out = []
    line, line_start, counted = 1, 0, 0
    for m in _comment_scanner().finditer(text):
        if m.lastgroup != "comment":
            continue
        line += text.count("\n", counted, m.start())
        counted = m.start()
        line_start = text.rfind("\n", 0, m.start()) + 1
        out.append((line, m.start() - line_start + 1, m.group()))
    return out


def pragmas(text: str) -> list[Pragma]:
    """Every well-formed pragma written in a comment of ``text``, in order."""
    return scan_pragmas(text)[0]


def scan_pragmas(text: str) -> tuple[list[Pragma], list[Diagnostic]]:
    """The pragmas in the comments of ``text``, and an EFF032 warning at each one that is not
    understood (an unknown verb, a code list that is not codes, a missing or unknown severity);
    such a pragma is not applied."""
    if "effspec:" not in text:
        return [], []
    out: list[Pragma] = []
    problems: list[Diagnostic] = []
    for line, column, comment in comments(text):
        for m in _PRAGMA.finditer(comment):
            at = column + m.start()
            span = Span(line, at, line, at + len(m.group()))
            why, help_ = _pragma_problem(m)
            if why:
                problems.append(Diagnostic("EFF032", "warning", span, f"pragma `{m.group()[:80]}` is not applied: {why}",
                                           help_, label="not applied"))
                continue
            codes = m.group("codes")
            code_list = tuple(sorted({c.strip() for c in codes[1:-1].split(",") if c.strip()})) if codes else None
            out.append(Pragma(line, at, m.group("verb"), code_list, m.group("value") or "", len(m.group())))
    return out, problems


_PRAGMA_FORMS = "`# effspec: ignore[CODES]`, `# effspec: file-ignore[CODES]` or `# effspec: severity[CODES]=error|warning|info`"


def _pragma_problem(m: re.Match[str]) -> tuple[str, str]:
    """Why a pragma as written cannot apply, and the help; ("", "") when it can."""
    verb, codes, value = m.group("verb"), m.group("codes"), m.group("value")
    if verb not in VERBS:
        near = closest(verb, VERBS)
        what = f"`{verb[:40]}` is not a pragma" if verb else "no pragma follows `effspec:`"
        return what, (f"did you mean `{near}`? " if near else "") + "write " + _PRAGMA_FORMS
    if codes is not None and not codes.endswith("]"):
        return "the code list is not closed with `]`", "write " + _PRAGMA_FORMS
    listed = [c.strip() for c in codes[1:-1].split(",")] if codes else []
    bad = next((c for c in listed if not _CODE.fullmatch(c)), None)
    if bad is not None:
        shown = f"`{bad[:40]}` is not a code" if bad else "an empty code in the list"
        hint = f"write `{bad.upper()}`; " if _CODE.fullmatch(bad.upper()) else ""
        return shown, hint + "codes are written EFF and three digits, separated by commas: `ignore[EFF202,EFF601]`"
    if verb != "ignore" and not codes:
        return f"`{verb}` needs the codes it applies to", "write " + _PRAGMA_FORMS
    if verb == "severity" and value not in SEVERITIES:
        near = closest(value or "", SEVERITIES)
        what = f"`{value[:40]}` is not a severity" if value else "no severity after the codes"
        return what, (f"did you mean `{near}`? " if near else "") + "write `=error`, `=warning` or `=info`"
    if verb != "severity" and value is not None:
        return f"`{verb}` takes no `=` value", "write " + _PRAGMA_FORMS
    return "", ""


def unknown_codes(pragmas_: list[Pragma], known: Collection[str]) -> list[Diagnostic]:
    """EFF033 at each pragma that names a code no rule has, and EFF032 for front-end codes, which no pragma drops."""
    out = []
    for p in pragmas_:
        span = Span(p.line, p.column, p.line, p.column + max(1, p.length))
        for code in p.codes or ():
            if code not in known:
                near = closest(code, known)
                out.append(Diagnostic("EFF033", "warning", span, f"unknown code `{code}` in {p.written()}",
                                      (f"did you mean `{near}`? " if near else "") + "`effspec explain --list` lists every code",
                                      label="no such code"))
            elif _protected(code):
                out.append(Diagnostic("EFF032", "warning", span, f"{p.written()} names {code}, a front-end error, "
                                      "which no pragma or setting drops or lowers", "fix what the error says instead",
                                      label="not applied"))
    return out


# ----------------------------------------------------------------------------
# The project's pyproject.toml


def _problem(code: str, path: str, message: str, help_: str, at: tuple[int, int, int] | None = None) -> Diagnostic:
    """A configuration problem; ``at`` is (line, column, length) in the configuration file, which the diagnostic names."""
    span = Span(at[0], at[1], at[0], at[1] + max(1, at[2])) if at else None
    return Diagnostic(code, "error", span, f"configuration {path}: {message}; none of its settings apply", help_,
                      file=path if at else "")


_HEADER = re.compile(r"^[ \t]*\[\[?([^\]\n#]*)\]", re.M)


def _effspec_tables(text: str) -> list[tuple[int, int]]:
    """The character ranges of the `[tool.effspec]` table and its sub-tables (`[tool.effspec.severity]`)."""
    heads = list(_HEADER.finditer(text))
    out = []
    for i, m in enumerate(heads):
        name = re.sub(r"[\s\"']", "", m.group(1))
        if name == "tool.effspec" or name.startswith("tool.effspec."):
            out.append((m.start(), heads[i + 1].start() if i + 1 < len(heads) else len(text)))
    return out


def where(text: str, word: str, key: bool = False) -> tuple[int, int, int]:
    """(line, column, length) of ``word`` in a configuration file: a key (at a line's start, before
    `=` or `.`) or a code (a whole word), first in the [tool.effspec] tables, else anywhere; else 1:1."""
    w = re.escape(word)
    pattern = re.compile(rf"^[ \t]*(?:[\w.\"' \t-]*\.[ \t]*)?[\"']?({w})[\"']?[ \t]*[=.]"  # `key =`, `a.key =`
                         rf"|^[ \t]*\[[^\]\n]*\.[ \t]*[\"']?({w})[\"']?[ \t]*\]" if key  # `[tool.effspec.key]`
                         else rf"(?<![A-Za-z0-9_-])({w})(?![A-Za-z0-9_-])", re.M)
    for start, end in [*_effspec_tables(text), (0, len(text))]:
        m = pattern.search(text, start, end)
        if m:
            at = m.start(m.lastindex or 1)
            line_start = text.rfind("\n", 0, at) + 1
            return text.count("\n", 0, at) + 1, at - line_start + 1, len(word)
    return 1, 1, 1


def _toml_error_at(message: str, text: str) -> tuple[int, int, int]:
    """Where tomllib says the TOML is wrong: `(at line L, column C)`, or the end of the document."""
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if m:
        return int(m.group(1)), int(m.group(2)), 1
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1, 1


# Strings and comments (so that their brackets and dots do not count), dotted
# chains (keys; floats and dates are chains of two), bare words, and brackets.
# Escapes are unambiguous and repetitions possessive, and an unterminated
# string runs to the end of its line (or of the file), so every match attempt
# consumes what it looked at: the scan is linear in the file.
_BASIC = r'"(?:[^"\\\n]|\\.)*+"'
_LITERAL = r"'[^'\n]*+'"
_PART = rf"(?:[A-Za-z0-9_-]++|{_BASIC}|{_LITERAL})"
_TOML_SCAN = re.compile(
    r'"""(?:[^\\]|\\[\s\S])*?(?:"""|\\?\Z)'
    r"|'''[\s\S]*?(?:'''|\Z)"
    rf"|(?P<chain>{_PART}(?:[ \t]*+\.[ \t]*+{_PART})+)"
    r"|[A-Za-z0-9_-]++"
    r'|"(?:[^"\\\n]|\\.)*+\\?(?:"|(?=\n)|\Z)'
    r"|'[^'\n]*+(?:'|(?=\n)|\Z)"
    r"|#[^\n]*+|(?P<open>[\[{])|(?P<close>[\]}])")
_PARTS = re.compile(_PART)


def _too_deep(text: str) -> str | None:
    """Why ``text`` nests beyond the limit (brackets, or parts of a dotted key), before any parsing.

    tomllib recurses once per nested array or inline table (100,000 brackets
    are a RecursionError), and its cost grows with the square of a dotted
    key's length; both are bounded here.
    """
    limit = LIMITS.max_config_depth
    depth = 0
    for m in _TOML_SCAN.finditer(text):
        if m.lastgroup == "open":
            depth += 1
            if depth > limit:
                return f"brackets nest more than {limit} levels deep (line {text.count(chr(10), 0, m.start()) + 1})"
        elif m.lastgroup == "close":
            depth = max(0, depth - 1)
        elif m.lastgroup == "chain" and m.group().count(".") >= limit:  # cheap first test, then count parts outside quotes
            parts = len(_PARTS.findall(m.group()))
            if parts > limit:
                return f"a dotted key has more than {limit} parts (line {text.count(chr(10), 0, m.start()) + 1})"
    return None


def _read_bounded(path: str) -> tuple[bytes | None, str, str]:
    """The bytes of the configuration file, or None, a code and why it is refused.

    Opened non-blocking and checked with fstat: a FIFO or device is refused
    rather than waited on, and the size is checked before anything is read, so
    a huge (or sparse) file costs nothing; at most the limit is ever read.
    """
    limit = LIMITS.max_config_bytes
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, "EFF031", f"cannot be opened ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "EFF031", "is not a regular file"
        refused = _untrusted(path, st)
        if refused:
            return None, "EFF031", refused
        if st.st_size > limit:
            return None, "EFF030", f"is {st.st_size:,} bytes; the limit is {limit:,}"
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew after fstat
            return None, "EFF030", f"is more than {limit:,} bytes"
        return data, "", ""
    except OSError as exc:
        return None, "EFF031", f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)


def _untrusted(path: str, st: os.stat_result) -> str:
    """Why a configuration file cannot be trusted, or ''.

    Anyone may write it; or someone else (not us, not root) owns it and it
    lies in a folder anyone may write, such as /tmp: there anybody can plant
    one above a spec that is not in a project.
    """
    if st.st_mode & stat.S_IWOTH:
        return "is writable by every user"
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None or st.st_uid in (uid, 0):
        return ""
    try:
        folder_mode = os.stat(os.path.dirname(path)).st_mode
    except OSError:
        return ""
    if folder_mode & stat.S_IWOTH:
        return f"belongs to another user (uid {st.st_uid}) and lies in a folder every user may write"
    return ""


def _settings_from(tool: object, path: str, text: str = "") -> tuple[Settings | None, Diagnostic | None]:
    """Settings from a [tool.effspec] table (None when the file has none), or EFF031 at the key that is wrong."""
    if tool is None:
        return None, None
    if not isinstance(tool, dict):
        return None, _problem("EFF031", path, "`tool.effspec` is not a table", "write `[tool.effspec]` as a table",
                              where(text, "effspec", key=True))
    unknown = sorted(k for k in tool if k not in KEYS)
    if unknown:
        near = closest(unknown[0], KEYS)
        return None, _problem("EFF031", path, f"unknown key `{str(unknown[0])[:60]}` in [tool.effspec]",
                              (f"did you mean `{near}`? " if near else "") + "the keys are " + ", ".join(f"`{k}`" for k in KEYS),
                              where(text, unknown[0], key=True))
    for name, key in KEYS.items():
        why = key.problem(tool[name]) if name in tool else None
        if why is not None:
            return None, _problem("EFF031", path, f"`{name}` {why}", f"write `{key.example}`", where(text, name, key=True))
    ignore: list[str] = tool.get("ignore", [])
    severity: dict[str, str] = tool.get("severity", {})
    codes = sorted(set(ignore) | set(severity))
    return Settings(path=path, ignore=tuple(sorted(set(ignore))), severity=tuple(sorted(severity.items())),
                    inline_config=tool.get("inline_config", True), doc_base=tool.get("doc_base"),
                    locations=tuple((c, *where(text, c)) for c in codes)), None


MAX_DOC_BASE = 500


def doc_base_error(value: object) -> str | None:
    """Why ``value`` cannot be the documentation base reports link rule pages to (None: it can).
    Only an http or https URL with a host, printable and without quotes, spaces or angle
    brackets: a report's link must never run script (`javascript:`) or read a local file."""
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        return "is not a string"
    if len(value) > MAX_DOC_BASE or not value.isprintable() or any(c in value for c in " \"'<>`\\"):
        return f"is not a URL (at most {MAX_DOC_BASE} printable characters, no spaces, quotes or angle brackets)"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "is not an http or https URL with a host"
    return None


def read_config(path: str) -> tuple[Settings | None, Diagnostic | None]:
    """The settings in one pyproject.toml: (settings or None when it has no [tool.effspec], problem or None)."""
    data, code, why = _read_bounded(path)
    if data is None:
        help_ = (f"keep it under {LIMITS.max_config_bytes:,} bytes" if code == "EFF030"
                 else "make it a regular file that only you (or root) can write")
        return None, _problem(code, path, why, help_)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, _problem("EFF031", path, f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8")
    deep = _too_deep(text)
    if deep:
        return None, _problem("EFF030", path, deep, "nest arrays, inline tables and dotted keys a few levels at most")
    import tomllib

    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        return None, _problem("EFF031", path, f"is not valid TOML ({str(exc)[:200]})", "fix the TOML syntax",
                              _toml_error_at(str(exc), text))
    tool = document.get("tool")
    return _settings_from(tool.get("effspec") if isinstance(tool, dict) else None, path, text)


@cache
def project_settings(folder: str | None) -> Settings:
    """The settings for specs in ``folder``: from the spec's folder up to the project root.

    The first pyproject.toml with a [tool.effspec] table applies; a folder with
    `.git` is the project root and ends the search (after its own
    pyproject.toml), so configuration above the project never applies.  A
    configuration file that cannot be read safely ends the search too, with
    its problem (EFF030/EFF031) and no settings.
    """
    if folder is None:
        return Settings()
    here = os.path.abspath(folder)
    while True:
        candidate = os.path.join(here, CONFIG_FILE)
        if os.path.lexists(candidate):
            settings, problem = read_config(candidate)
            if problem is not None:
                return Settings(path=None, problems=(problem,))
            if settings is not None:
                # Outputs name the file only when it changes something: an empty
                # [tool.effspec] marks the project root and nothing else.
                changes = settings.ignore or settings.severity or not settings.inline_config or settings.doc_base
                return replace(settings, name=os.path.relpath(candidate, os.path.abspath(folder)) if changes else None)
        if os.path.lexists(os.path.join(here, ".git")):
            return Settings(root=here)
        parent = os.path.dirname(here)
        if parent == here:
            return Settings()
        here = parent


# ----------------------------------------------------------------------------
# Applying them


def _lower_note(severity: str, by: str, original: str) -> str:
    return f"severity lowered from {original} to {severity} by {by}"


_FileIgnores = dict[str, tuple[str, str, Pragma | None]]  # code: (by, kind, pragma)
_Severities = dict[str, tuple[str, str, str, Pragma | None]]  # code: (severity, by, kind, pragma)


def _overrides(settings: Settings, applied: list[Pragma]) -> tuple[_FileIgnores, _Severities, dict[int, list[Pragma]]]:
    """Who ignores each code in the file, who sets its severity (the file's pragmas win
    over the configuration), and the line pragmas by line."""
    config_name = settings.name
    file_ignored: _FileIgnores = {}
    severity: _Severities = {}
    for code in settings.ignore:
        file_ignored[code] = (f"`ignore` in [tool.effspec] of {config_name}", "external", None)
    for code, value in settings.severity:
        severity[code] = (value, f"`severity` in [tool.effspec] of {config_name}", "external", None)
    line_ignored: dict[int, list[Pragma]] = {}
    for p in applied:
        if p.kind == "ignore":
            line_ignored.setdefault(p.line, []).append(p)
        elif p.kind == "file-ignore":
            for c in p.codes or ():
                file_ignored[c] = (p.written(), "inSource", p)
        else:
            for c in p.codes or ():
                severity[c] = (p.value, p.written(), "inSource", p)
    return file_ignored, severity, line_ignored


def _unknown_in_settings(settings: Settings, known: Collection[str]) -> list[Diagnostic]:
    """EFF033 at each code the configuration names that no rule has (it matches nothing; the rest applies)."""
    out = []
    for code, line, column, length in settings.locations:
        if code not in known and settings.path:
            near = closest(code, known)
            out.append(Diagnostic("EFF033", "warning", Span(line, column, line, column + length),
                                  f"configuration {settings.path}: unknown code `{code[:40]}` in [tool.effspec]; "
                                  "it matches no finding",
                                  (f"did you mean `{near}`? " if near else "") + "`effspec explain --list` lists every code",
                                  file=settings.path))
    return out


def configure(diags: list[Diagnostic], text: str, folder: str | None, inline_config: bool | None = None,
              isolated: bool = False, known_codes: Collection[str] | None = None) -> Configured:
    """Apply the project settings and the spec's pragmas to ``diags``.

    ``inline_config`` False ignores the pragmas (None: as the settings say);
    ``isolated`` ignores the configuration files and the pragmas (`--isolated`).
    Returns the diagnostics to show (the configuration's own problems
    included) and a record of every finding that was dropped or lowered.
    A pragma that is not understood is an EFF032 warning at it (when pragmas
    are applied); with ``known_codes`` (the code table, which the front end
    does not know), a code the configuration or a pragma names that is not in
    it is an EFF033 warning.
    """
    settings = Settings() if isolated else project_settings(folder)
    if isolated:
        inline_config = False
    config_name = settings.name
    inline = settings.inline_config if inline_config is None else inline_config
    # Pragmas are looked for only in text that lexed (no EFF001/EFF030): there
    # the comment scan is linear, and otherwise no rule finding exists to touch.
    lexed = not any(d.code in ("EFF001", "EFF030") for d in diags)
    found, bad_pragmas = scan_pragmas(text) if lexed else ([], [])
    file_ignored, severity, line_ignored = _overrides(settings, found if inline else [])
    own = list(settings.problems) + (_unknown_in_settings(settings, known_codes) if known_codes else [])
    if inline:
        own += bad_pragmas + (unknown_codes(found, known_codes) if known_codes else [])

    def record(d: Diagnostic, by: str, kind: str, effect: str, pragma: Pragma | None) -> Suppression:
        return Suppression(d, by, kind, effect, pragma.line if pragma else None, pragma.column if pragma else None,
                           config_name if kind == "external" else None)

    out, suppressed = own, []
    for d in diags:
        if _protected(d.code):
            out.append(d)
            continue
        line_pragma = next((p for p in line_ignored.get(d.span.line if d.span else -1, ())
                            if p.codes is None or d.code in p.codes), None)
        if line_pragma is not None:
            suppressed.append(record(d, line_pragma.written(), "inSource", "ignored", line_pragma))
            continue
        if d.code in file_ignored:
            by, kind, pragma = file_ignored[d.code]
            suppressed.append(record(d, by, kind, "ignored", pragma))
            continue
        if d.code in severity:
            value, by, kind, pragma = severity[d.code]
            if _RANK.get(value, 0) > _RANK.get(d.severity, 0):  # lowered: shown, with a note, and recorded
                shown = replace(d, severity=value, notes=d.notes + (_lower_note(value, by, d.severity),))
                suppressed.append(record(d, by, kind, f"lowered to {value}", pragma))
                d = shown
            else:
                d = replace(d, severity=value)
        out.append(d)
    suppressed.sort(key=lambda s: (sort_key(s.diagnostic), s.by))
    off_by = "" if inline else ("--isolated" if isolated else "--no-inline-config" if inline_config is False
                                else f"`inline_config = false` in [tool.effspec] of {config_name}")
    return Configured(out, suppressed, settings, () if inline else tuple(found), off_by)


def cap_suppressed(suppressed: list[Suppression], limit: int = MAX_DIAGNOSTICS) -> tuple[list[Suppression], int]:
    """At most ``limit`` suppression records of one file (the first, in finding order), each
    finding's texts clipped as shown findings are; and how many more there were.

    Outputs list every record they get, so this keeps them bounded as ``cap`` keeps the findings.
    """
    kept = [replace(s, diagnostic=_clipped(s.diagnostic)) for s in suppressed[:limit]]
    return kept, max(0, len(suppressed) - limit)
