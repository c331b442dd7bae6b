"""`check --format github` (workflow commands) and `--format junit` (JUnit XML).

Both are per file, so a worker process formats its own file; the CLI joins
them.  Every text from the spec (messages quote it) is sanitised first, then
escaped for the format: GitHub's workflow-command rules (`%`, CR, LF in the
message; also `:` and `,` in properties) and XML's (`&`, `<`, `>`, quotes, and
no character XML 1.0 forbids).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from effspec.diagnostics import printable, sanitize

if TYPE_CHECKING:
    from effspec import Result

_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github(result: Result) -> str:
    """One `::error file=…,line=…,col=…,title=EFF601::message` line per finding (info is a `notice`)."""
    out = []
    for d in result.diagnostics:
        props = [f"file={_property(printable(d.file or result.file))}"]  # d.file: the configuration's position
        if d.span is not None:
            props += [f"line={d.span.line}", f"col={d.span.column}",
                      f"endLine={d.span.end_line}", f"endColumn={d.span.end_column}"]
        props.append(f"title={_property(d.code)}")
        message = sanitize(d.message) + (f"\nhelp: {sanitize(d.help)}" if d.help else "")
        out.append(f"::{_GITHUB_LEVEL.get(d.severity, 'error')} {','.join(props)}::{_data(message)}")
    return "\n".join(out)


# Characters XML 1.0 does not allow, even escaped (controls but tab, LF, CR; surrogates; U+FFFE, U+FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", sanitize(text))


def junit_suite(result: Result) -> str:
    """One <testsuite> for the file: a <testcase> with a <failure> per finding, or one passing testcase."""
    name = printable(result.file)
    cases = []
    for d in result.diagnostics:
        where = f"{d.span.line}:{d.span.column}" if d.span else "-"
        shown = printable(d.file) if d.file else name  # d.file: a position in the configuration, not the spec
        text = f"{d.severity}[{d.code}] {shown}:{where}: {d.message}" + (f"\nhelp: {d.help}" if d.help else "")
        line = f" line=\"{d.span.line}\"" if d.span and not d.file else ""
        cases.append(f"    <testcase name={quoteattr(_xml(f'{d.code} at {where}'))} classname={quoteattr(_xml(name))} "
                     f"file={quoteattr(_xml(name))}{line}>\n"
                     f"      <failure type={quoteattr(d.code)} message={quoteattr(_xml(d.message))}>{escape(_xml(text))}</failure>\n"
                     f"    </testcase>")
    if not cases:
        cases.append(f"    <testcase name=\"no findings\" classname={quoteattr(_xml(name))} file={quoteattr(_xml(name))}/>")
    failures = len(result.diagnostics)
    return (f"  <testsuite name={quoteattr(_xml(name))} tests=\"{max(1, failures)}\" failures=\"{failures}\" errors=\"0\">\n"
            + "\n".join(cases) + "\n  </testsuite>")


def _count(attribute: str, suite: str) -> int:
    """An attribute of the suite's own <testsuite> element (its first line; the last match: the name comes first)."""
    found = re.findall(f' {attribute}="([0-9]+)"', suite.split("\n", 1)[0])
    return int(found[-1]) if found else 0


def junit(suites: list[str]) -> str:
    """The whole document, from each file's <testsuite>."""
    tests = sum(_count("tests", s) for s in suites)
    failures = sum(_count("failures", s) for s in suites)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="effspec" tests="{tests}" failures="{failures}">\n'
            + "".join(s + "\n" for s in suites) + "</testsuites>\n")
