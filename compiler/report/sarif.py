"""SARIF 2.1.0 output for code scanning (GitHub and other SARIF consumers).

One SARIF run holds every checked file.  Regions use our spans as they are:
1-based lines and columns counted in Unicode code points (Python string
indexes), end column exclusive, which is SARIF's own convention; the run says
so with ``columnKind = unicodeCodePoints``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from effspec.report.rulepages import effective_base, known_page
from effspec.version import __version__, project_url

if TYPE_CHECKING:
    from effspec import Result
    from effspec.diagnostics import Diagnostic, Fix
    from effspec.front.config import Suppression
    from effspec.report.rulepages import RulePage

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _full_description(code: str, title: str) -> str:
    """The first paragraph of the rule's page (its docstring), else the table title."""
    try:
        from effspec.rules import rule_for

        rule = rule_for(code)
    except Exception:  # a broken rule module must not break the log of the others
        rule = None
    doc = (rule.__class__.__doc__ or "") if rule is not None else ""
    if rule is None:  # a front-end or importer code: its page's first section
        from effspec.rules.pages import FRONT_END, IMPORTER

        doc = (FRONT_END.get(code) or IMPORTER.get(code) or ("",))[0]
    text = " ".join(line.strip() for line in doc.strip().split("\n\n", 1)[0].splitlines()).strip()
    # Rule pages start with a "What it does" heading; take what follows it.
    for head in ("## What it does", "What it does"):
        if text.startswith(head):
            text = text[len(head):].lstrip(" :#")
    return text or title[:1].upper() + title[1:] + "."


# The base-independent rule table as the result cache stored it for this version (effspec.cli.cache
# sets it when every file of a `check --format sarif` was a hit), so that a warm log loads no rule module.
STORED_RULES: list[dict[str, Any]] | None = None


def plain_descriptors() -> list[dict[str, Any]]:
    """Every code in the table, in code order (so ruleIndex is stable across logs), without the
    links, which depend on the documentation base."""
    if STORED_RULES is not None:
        return STORED_RULES
    from effspec.rules import code_table

    return [{
        "id": code,
        "name": "".join(w.capitalize() for w in "".join(c if c.isalnum() else " " for c in title).split()),
        "shortDescription": {"text": title},
        "fullDescription": {"text": _full_description(code, title)},
        "defaultConfiguration": {"level": LEVELS.get(severity, "warning")},
    } for code, (title, severity) in code_table().items()]


def rule_descriptors(doc_base: str | None = None) -> list[dict[str, Any]]:
    """The rule table with its links: ``helpUri`` only under a documentation base (an http(s)
    URL); ``help`` always says `effspec explain CODE`."""
    out = []
    for rule in plain_descriptors():
        page = known_page(rule["id"], doc_base)
        head = {k: rule[k] for k in ("id", "name", "shortDescription", "fullDescription")}
        out.append({**head, **({"helpUri": page.url} if page.url else {}), "help": _help(rule, page),
                    "defaultConfiguration": rule["defaultConfiguration"]})
    return out


def _help(rule: dict[str, Any], page: RulePage) -> dict[str, Any]:
    """The rule's help for code scanning: what it reports, and where its page is (an example and the fix):
    under the documentation base when one is set, always `effspec explain CODE` (no guessed URL)."""
    code, title, what = rule["id"], rule["shortDescription"]["text"], rule["fullDescription"]["text"]
    link = f"[Example and fix]({page.url}), or " if page.url else "Example and fix: "
    return {"text": f"{code}: {what} Example and fix: {page.help_text}",
            "markdown": f"**{code}: {title}.** {what}\n\n{link}`effspec explain {code}` (shipped as `{page.shipped}`)."}


def artifact_uri(path: str) -> str:
    """The file as a URI reference that no consumer can read as anything but a file.

    Under the working directory: ``./`` and the relative path, every segment
    percent-encoded (UTF-8, and the raw bytes of an undecodable name), so a
    folder called ``javascript:alert(1)`` is ``./javascript%3Aalert%281%29/…``,
    never a URI with a scheme; the location says ``uriBaseId: %SRCROOT%``.
    Elsewhere: an encoded ``file://`` URI of the absolute path."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute)
    except ValueError:  # another drive on Windows
        rel = None
    if rel is not None and rel != os.curdir and rel.split(os.sep, 1)[0] != os.pardir:
        return "./" + "/".join(quote(os.fsencode(part), safe="") for part in rel.split(os.sep))
    if os.sep == "/":
        return "file://" + quote(os.fsencode(absolute), safe="/")
    from pathlib import Path

    return Path(absolute).as_uri()  # file:///C:/…, the drive's colon kept


def _location(uri: str) -> dict[str, Any]:
    """An artifactLocation: relative references name the source root they are relative to."""
    return {"uri": uri, "uriBaseId": SRCROOT} if uri.startswith("./") else {"uri": uri}


def _result(diag: Diagnostic, uri: str, index: dict[str, int]) -> dict[str, Any]:
    message = diag.message + (f" Help: {diag.help}" if diag.help else "")
    if diag.file:  # a position in another file (the project's pyproject.toml)
        artifact = _location(artifact_uri(diag.file))
    else:
        artifact = {**_location(uri), "index": index["artifact"]}
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": artifact}}
    s = diag.span
    if s is not None:
        end_line = max(s.end_line, s.line)
        end_column = s.end_column if (end_line > s.line or s.end_column > s.column) else s.column + 1
        location["physicalLocation"]["region"] = {"startLine": s.line, "startColumn": s.column,
                                                  "endLine": end_line, "endColumn": end_column}
    else:  # about the whole file (an internal error, a configuration that cannot be read): its first character
        location["physicalLocation"]["region"] = {"startLine": 1, "startColumn": 1}
    out: dict[str, Any] = {
        "ruleId": diag.code,
        "level": LEVELS.get(diag.severity, "warning"),
        "message": {"text": message},
        "locations": [location],
    }
    if diag.code in index:
        out["ruleIndex"] = index[diag.code]
    return out


def _vetted_fixes(result: Result, source: str) -> dict[int, list[Any]]:
    """The fixes of each finding (by id), vetted as `check --fix` vets them (effspec.rules.fixes.vet): the text
    after them is checked again, from the spec's folder; a fix that brings a new error on its edit is left out."""
    import os

    import effspec
    from effspec.rules.fixes import claim_units, fixes_for, source_reader, vet

    spec = getattr(result, "spec", None)
    under, unit = source_reader(source), claim_units(spec)
    if not any(fixes_for(d, under, unit) for d in result.diagnostics if d.span is not None):
        return {}
    folder = os.path.dirname(os.path.abspath(result.file))

    def recheck(text: str) -> list[Diagnostic]:
        return effspec.check_text(text, result.file, folder).diagnostics

    out: dict[int, list[Any]] = {}
    for offer in vet(result.diagnostics, source, recheck, spec, baseline=recheck(source)):
        out.setdefault(id(offer.diag), []).append(offer.fix)
    return out


def _fixes(fixes: Iterable[Fix], artifact: dict[str, Any]) -> list[dict[str, Any]]:
    """SARIF ``fix`` objects: each edit as a replacement of its region (1-based, end column exclusive,
    as the results' regions); whether `effspec check --fix` applies it alone is the property
    ``effspec/safe`` (an unsafe one needs ``--unsafe-fixes``)."""
    return [{"description": {"text": f.title},
             "artifactChanges": [{"artifactLocation": artifact, "replacements": [{
                 "deletedRegion": {"startLine": f.span.line, "startColumn": f.span.column,
                                   "endLine": f.span.end_line, "endColumn": f.span.end_column},
                 "insertedContent": {"text": f.new_text}}]}],
             "properties": {"effspec/safe": f.safe}} for f in fixes]


def _suppressed_result(s: Suppression, uri: str, index: dict[str, int]) -> dict[str, Any]:
    """A finding a pragma or the configuration dropped: a result at its own level with a SARIF
    ``suppressions`` entry (kind inSource for a pragma, located at it; external for the
    configuration file), so consumers list it as suppressed rather than never seeing it."""
    out = _result(s.diagnostic, uri, index)
    suppression: dict[str, Any] = {"kind": s.kind, "status": "accepted", "justification": f"{s.effect} by {s.by}"}
    if s.kind == "inSource" and s.line is not None:
        suppression["location"] = {"physicalLocation": {"artifactLocation": {"uri": uri, "index": index["artifact"]},
                                                        "region": {"startLine": s.line, "startColumn": s.column or 1}}}
    out["suppressions"] = [suppression]
    return out


def _lowered(out: dict[str, Any], s: Suppression | None) -> dict[str, Any]:
    """A finding whose severity a pragma or the configuration lowered stays a visible result at
    its new level; its message and properties say from what level, and by what."""
    if s is not None:
        out["message"]["text"] += f" (severity lowered from {s.diagnostic.severity} by {s.by})"
        out["properties"] = {"effspec/severityLowered": {"from": LEVELS.get(s.diagnostic.severity, "warning"),
                                                          "to": out["level"], "by": s.by, "kind": s.kind}}
    return out


def _configuration_properties(result: Result) -> dict[str, Any]:
    """The artifact's configuration file, and the pragmas not applied (and what turned them off), if any."""
    props: dict[str, Any] = {}
    name = getattr(getattr(result, "settings", None), "name", None)
    if name:
        props["effspec/configuration"] = name
    unapplied = getattr(result, "pragmas_not_applied", ())
    if unapplied:
        props["effspec/pragmasNotApplied"] = {"by": getattr(result, "pragmas_off_by", ""),
                                              "pragmas": [{"line": p.line, "column": p.column, "pragma": p.written()}
                                                          for p in unapplied]}
    more = getattr(result, "suppressed_omitted", 0)
    if more:
        props["effspec/suppressedNotListed"] = more  # beyond the per-file cap: counted, not listed
    return {"properties": props} if props else {}


def _fingerprints(out: list[dict[str, Any]], results_of_file: list[Any], lines: list[str]) -> None:
    """``partialFingerprints`` for code scanning, so that an alert is the same alert after lines
    above it move: the code, the file, the flagged line's text (whitespace-trimmed; for a finding
    in the configuration file, the message) and the how-manieth such finding it is."""
    seen: dict[tuple[str, str, str], int] = {}
    for result, diag in zip(out, results_of_file, strict=True):
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        s = diag.span
        if getattr(diag, "file", "") or s is None or not 1 <= s.line <= len(lines):
            anchor = diag.message
        else:
            anchor = " ".join(lines[s.line - 1].split())
        key = (diag.code, uri, anchor)
        seen[key] = seen.get(key, 0) + 1
        digest = hashlib.sha256("\0".join((*key, str(seen[key]))).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        result["partialFingerprints"] = {"effspecFindingHash/v1": digest}


def sarif_file(result: Result, rule_index: dict[str, int] | None = None) -> dict[str, Any]:
    """One checked file's part of a log: its artifact and its results, JSON data only.

    Its results name the artifact by index 0; :func:`sarif_log` numbers them as
    it joins the files.  (The result cache stores this part per file.)"""
    if rule_index is None:
        from effspec.rules import code_table

        rule_index = {code: i for i, code in enumerate(code_table())}
    uri = artifact_uri(result.file)
    artifact = {"location": _location(uri), "roles": ["analysisTarget"], "sourceLanguage": "eff",
                **_configuration_properties(result)}
    index = {**rule_index, "artifact": 0}
    suppressed = getattr(result, "suppressed", ())
    lowered = {(s.diagnostic.code, s.diagnostic.span, s.diagnostic.message): s for s in suppressed if s.lowered}
    hidden = [s for s in suppressed if not s.lowered]
    results = [_lowered(_result(d, uri, index), lowered.get((d.code, d.span, d.message))) for d in result.diagnostics]
    source = getattr(result, "source", None)
    if isinstance(source, str):  # the edits `check --fix` and the editor's quick fixes make, for other tools
        by_diag = _vetted_fixes(result, source)
        for out, d in zip(results, result.diagnostics, strict=True):
            fixes = by_diag.get(id(d), []) if d.span is not None and not getattr(d, "file", "") else []
            if fixes:
                out["fixes"] = _fixes(fixes, {**_location(uri), "index": index["artifact"]})
    results += [_suppressed_result(s, uri, index) for s in hidden]
    from effspec.diagnostics import source_lines

    _fingerprints(results, [*result.diagnostics, *(s.diagnostic for s in hidden)], source_lines(getattr(result, "source", None)))
    base = getattr(getattr(result, "settings", None), "doc_base", None)
    return {"artifact": artifact, "results": results, **({"doc_base": str(base)} if base else {})}


def _numbered(part: dict[str, Any], artifact: int) -> list[dict[str, Any]]:
    """The part's results, naming its artifact by its index in the log."""
    def number(location: dict[str, Any]) -> None:
        place = location["physicalLocation"]["artifactLocation"]
        if "index" in place:  # the spec's; a finding in the configuration file names that file by its URI only
            place["index"] = artifact

    for res in part["results"]:
        for loc in res["locations"]:
            number(loc)
        for sup in res.get("suppressions", ()):
            if "location" in sup:
                number(sup["location"])
        for fix in res.get("fixes", ()):
            for change in fix["artifactChanges"]:
                change["artifactLocation"]["index"] = artifact
    results: list[dict[str, Any]] = part["results"]
    return results


def _driver(rules: list[dict[str, Any]]) -> dict[str, Any]:
    """The tool's descriptor; ``informationUri`` only where the package metadata declares a home page."""
    driver: dict[str, Any] = {"name": "effspec", "version": __version__, "semanticVersion": __version__}
    home = project_url("homepage") or project_url("source")
    if home:
        driver["informationUri"] = home
    driver["rules"] = rules
    return driver


def sarif_log(results: Iterable[Any], doc_base: str | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log of several checked files: ``effspec.Result`` objects, or their
    :func:`sarif_file` parts (as the result cache gives them back); rule pages under
    ``doc_base``, else the first configuration's ``doc_base``, else none (see report.rulepages)."""
    results = list(results)
    rules = rule_descriptors(effective_base(doc_base, results))
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    artifacts: list[dict[str, Any]] = []
    sarif_results: list[dict[str, Any]] = []
    for result in results:
        part = result if isinstance(result, dict) else sarif_file(result, rule_index)
        sarif_results += _numbered(part, len(artifacts))
        artifacts.append(part["artifact"])
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": _driver(rules)},
            "artifacts": artifacts,
            "results": sarif_results,
            "columnKind": "unicodeCodePoints",
        }],
    }
