"""Hostile input: every limit, path escapes, non-finite numbers, invisible
characters, markup injection, atomic output, internal errors and parallel
checking.  Each test states the exact diagnostic (code, line, column) that a
reviewer would see, derived by hand from the input it builds.
"""

from __future__ import annotations

import dataclasses
import html.parser
import json
import os
import shutil

import pytest
from conftest import cli as run_effspec

import effspec
import effspec.front.build as build_mod
import effspec.front.files as files_mod
import effspec.front.syntax as syntax_mod
import effspec.front.values as values_mod
from effspec import check_text, cli, load
from effspec.front.limits import LIMITS
from effspec.report.text import result_json
from effspec.report.text import text as text_output

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples")

# A complete, error-free run (Example C's baseline).  Line 2 is the `run` line.
RUN = """run base_8 {
  title = "8 GPUs"
  model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
  convention { preset = megatron  recompute = excluded }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  parallelism { dp = 8  micro_batch = 4 sequence }
  hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
  timing { step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s  warmup = 0 step }
}
"""


def codes(result) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics if d.span]


def front_end(result) -> list:
    """Diagnostics of the front end (EFF0xx); audit rules may add warnings to toy runs."""
    return [d for d in result.diagnostics if d.code < "EFF100"]


def only(result, code: str):
    found = [d for d in result.diagnostics if d.code == code]
    assert found, f"no {code} in {[(d.code, d.message) for d in result.diagnostics]}"
    return found[0]


def limits(monkeypatch, **changes) -> None:
    """Lower a limit for one test, in every module that reads it."""
    lowered = dataclasses.replace(LIMITS, **changes)
    for module in (build_mod, files_mod, values_mod, syntax_mod):
        if hasattr(module, "LIMITS"):
            monkeypatch.setattr(module, "LIMITS", lowered)


def spec_with_step_time(tmp_path, csv_text: str | bytes, column: str = "t", unit: str = "") -> effspec.Result:
    (tmp_path / "steps.csv").write_bytes(csv_text.encode() if isinstance(csv_text, str) else csv_text)
    text = f'eff 1\nrun a {{\n  timing {{ step_time = file "steps.csv" column "{column}"{unit} }}\n}}\n'
    (tmp_path / "a.eff").write_text(text)
    return load(tmp_path / "a.eff")


# ----------------------------------------------------------------------------
# Limits


def test_spec_over_ten_mib_is_eff030_from_text_and_from_file(tmp_path):
    limit = 10 * 1024 * 1024
    assert LIMITS.max_spec_bytes == limit
    text = "eff 1\n#" + "x" * (limit - 7) + "\n"  # limit + 1 characters
    assert len(text) == limit + 1
    (d,) = check_text(text).diagnostics
    assert (d.code, d.span.line, d.span.column) == ("EFF030", 1, 1)
    (tmp_path / "big.eff").write_text(text)
    (d,) = load(tmp_path / "big.eff").diagnostics
    assert d.code == "EFF030" and "10,485,760" in d.message


def test_spec_of_exactly_ten_mib_is_accepted():
    text = "eff 1\n#" + "x" * (10 * 1024 * 1024 - 8) + "\n"
    assert len(text) == 10 * 1024 * 1024
    assert front_end(check_text(text)) == []


def test_runs_per_file(monkeypatch):
    limits(monkeypatch, max_runs=3)
    text = "eff 1\n" + "".join(f"run r{i} {{ }}\n" for i in range(4))
    result = check_text(text)
    # Runs start on lines 2..5; the fourth (index 3 = the limit) is reported.
    assert ("EFF030", 5, 1) in codes(result)
    assert "4 runs" in only(result, "EFF030").message


def test_expression_depth_operators(monkeypatch):
    # 5,000 unary minuses: a tree 5,000 deep.  Checked iteratively, never a RecursionError.
    text = "eff 1\nrun a {\n  claim mfu = " + "- " * 5000 + "1\n}\n"
    d = only(check_text(text), "EFF030")
    assert d.span.line == 3 and "nest" in d.message


def test_five_thousand_nested_parentheses_is_a_diagnostic_not_a_recursion_error():
    prefix = "run a { claim mfu = "  # 20 characters; `{` at column 7 is depth 1
    text = "eff 1\n" + prefix + "(" * 5000 + "1" + ")" * 5000 + " }\n"
    (d,) = check_text(text).diagnostics
    # Depth 65 is reached by the 64th parenthesis: column 20 + 64 = 84.
    assert (d.code, d.span.line, d.span.column) == ("EFF030", 2, 84)
    assert "64 levels" in d.message


def test_nesting_at_the_limit_is_accepted():
    # `{` is depth 1, so 63 parentheses reach exactly 64.
    text = "eff 1\nrun a { claim mfu = " + "(" * 63 + "50 %" + ")" * 63 + " }\n"
    assert "EFF030" not in [d.code for d in check_text(text).diagnostics]


def test_brackets_inside_strings_and_comments_do_not_count():
    text = 'eff 1\n# ' + "(" * 500 + '\nrun a { title = "' + "[" * 500 + '" }\n'
    assert front_end(check_text(text)) == []


def test_list_length(monkeypatch):
    limits(monkeypatch, max_list_length=3)
    text = "eff 1\nrun a {\n  timing { step_time = [1, 2, 3, 4] s }\n}\n"
    d = only(check_text(text), "EFF030")
    assert (d.span.line, d.span.column) == (3, 24) and "4 items" in d.message


def test_csv_rows(monkeypatch, tmp_path):
    limits(monkeypatch, max_csv_rows=3)
    result = spec_with_step_time(tmp_path, "t\n1\n2\n3\n4\n")
    d = only(result, "EFF030")
    assert "more than 3 rows" in d.message and (d.span.line, d.span.column) == (3, 24)  # the value, `file` at column 24


def test_csv_columns_in_header(tmp_path):
    header = ",".join(f"c{i}" for i in range(65)) + ",t"  # 66 columns against a limit of 64
    assert LIMITS.max_csv_columns == 64
    d = only(spec_with_step_time(tmp_path, header + "\n" + ",".join(["1"] * 66) + "\n"), "EFF030")
    assert "66 columns" in d.message


def test_csv_columns_in_a_row(tmp_path):
    d = only(spec_with_step_time(tmp_path, "t\n1\n" + ",".join(["1"] * 65) + "\n"), "EFF030")
    assert "row 3 has 65 columns" in d.message


def test_csv_bytes(monkeypatch, tmp_path):
    limits(monkeypatch, max_csv_bytes=10)
    d = only(spec_with_step_time(tmp_path, "t\n1.0\n2.0\n3.0\n"), "EFF030")  # 14 bytes
    assert "14 bytes" in d.message


def test_unit_exponent_written():
    d = only(check_text("eff 1\nrun a { timing { step_time = 1 s^9 } }\n"), "EFF030")
    assert (d.span.line, d.span.column) == (2, 32) and "exponent 9" in d.message


def test_unit_exponent_accumulated():
    # s^4 * s^4 = s^8: each exponent is within 4, the result is not.
    d = only(check_text("eff 1\nrun a { timing { step_time = 1 s^4*s^4 } }\n"), "EFF030")
    assert "power 8" in d.message


def test_unit_terms():
    unit = "FLOP/s/device/token/step/param/sequence"  # 7 words, limit 6
    d = only(check_text(f"eff 1\nrun a {{ hardware {{ peak = 1 {unit} }} }}\n"), "EFF030")
    assert "7 words" in d.message


def test_syntax_error_recovery_is_bounded():
    # 40 broken lines: at most MAX_SYNTAX_ERRORS diagnostics, then it stops.
    text = "eff 1\nrun a {\n" + "  x y z\n" * 40 + "}\n"
    result = check_text(text)
    assert [d.code for d in result.diagnostics] == ["EFF001"] * syntax_mod.MAX_SYNTAX_ERRORS


# ----------------------------------------------------------------------------
# Numbers


@pytest.mark.parametrize("written, why", [("1e400 s", "not a finite"), ("-1 s", "negative"), ("0 s", "greater than zero"),
                                           ("1e300 * 1e300 s", "not a finite"), ("1e31 s", "beyond any plausible")])
def test_inline_step_time_out_of_range(written, why):
    d = only(check_text(f"eff 1\nrun a {{\n  timing {{ step_time = {written} }}\n}}\n"), "EFF011")
    assert d.span.line == 3 and why in d.message


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-inf", "1e400", "-4.0", "0"])
def test_non_finite_or_negative_csv_cell_names_row_and_column(tmp_path, cell):
    result = spec_with_step_time(tmp_path, f"step,t\n1,4.0\n2,{cell}\n")
    d = only(result, "EFF011")
    assert f"row 3, column 2 (`t`): `{cell}`" in d.message


def test_csv_unit_overflow_is_caught(tmp_path):
    # 1e300 ms is finite; 1e300 day is 8.64e304 s, beyond the magnitude limit of 1e30.
    d = only(spec_with_step_time(tmp_path, "t\n1e300\n", unit=" day"), "EFF011")
    assert "row 2" in d.message


def test_csv_not_a_number_names_row_and_column(tmp_path):
    d = only(spec_with_step_time(tmp_path, "t\n4.0\n4.1\nfour\n"), "EFF003")
    assert "row 4, column 1 (`t`): `four` is not a number" in d.message


def test_csv_invalid_utf8_names_line_and_column(tmp_path):
    d = only(spec_with_step_time(tmp_path, b"t\n4.0\n4\xff1\n"), "EFF003")
    # The bad byte follows `4` on the third line: column 2.
    assert "line 3, column 2: not valid UTF-8 (byte 0xff)" in d.message


def test_csv_nul_byte(tmp_path):
    d = only(spec_with_step_time(tmp_path, b"t\n4.0\n\x00\n"), "EFF003")
    assert "line 3, column 1" in d.message


@pytest.mark.parametrize("claim", ["1e400", "1e400 - 1e400", "1 / 0"])
def test_non_finite_claims_are_diagnostics(claim):
    result = check_text(f"eff 1\nrun a {{\n  claim mfu = {claim}\n}}\n")
    d = only(result, "EFF011")
    assert d.span.line == 3
    json.dumps(result_json(result), allow_nan=False)  # no NaN or inf reaches the JSON


# ----------------------------------------------------------------------------
# Files


def _csv_spec(tmp_path, rel: str) -> effspec.Result:
    spec = tmp_path / "spec"
    spec.mkdir(exist_ok=True)
    (spec / "a.eff").write_text(f'eff 1\nrun a {{\n  timing {{ step_time = file "{rel}" column "t" }}\n}}\n')
    return load(spec / "a.eff")


def test_path_traversal_with_dotdot(tmp_path):
    (tmp_path / "secret.csv").write_text("t\n1\n")
    d = only(_csv_spec(tmp_path, "../secret.csv"), "EFF020")
    # The file name token starts after `  timing { step_time = file `: column 29.
    assert (d.span.line, d.span.column) == (3, 29) and "leaves the spec's folder" in d.message


def test_path_traversal_with_an_absolute_path(tmp_path):
    (tmp_path / "secret.csv").write_text("t\n1\n")
    d = only(_csv_spec(tmp_path, str(tmp_path / "secret.csv")), "EFF020")
    assert "not a relative path" in d.message


def test_path_traversal_through_a_symlink(tmp_path):
    (tmp_path / "secret.csv").write_text("t\n1\n")
    (tmp_path / "spec").mkdir()
    os.symlink(tmp_path / "secret.csv", tmp_path / "spec" / "steps.csv")
    os.symlink(tmp_path, tmp_path / "spec" / "up")
    assert "leaves the spec's folder" in only(_csv_spec(tmp_path, "steps.csv"), "EFF020").message
    assert "leaves the spec's folder" in only(_csv_spec(tmp_path, "up/secret.csv"), "EFF020").message


def test_symlink_inside_the_folder_is_followed(tmp_path):
    (tmp_path / "spec" / "data").mkdir(parents=True)
    (tmp_path / "spec" / "data" / "real.csv").write_text("t\n4.0\n")
    os.symlink("data/real.csv", tmp_path / "spec" / "steps.csv")
    result = _csv_spec(tmp_path, "steps.csv")
    assert not any(d.code in ("EFF020", "EFF003") for d in result.diagnostics)


def test_symlink_to_a_device_is_refused(tmp_path):
    (tmp_path / "spec").mkdir()
    os.symlink("/dev/zero", tmp_path / "spec" / "zero.csv")
    assert only(_csv_spec(tmp_path, "zero.csv"), "EFF020")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path):
    (tmp_path / "spec").mkdir()
    os.mkfifo(tmp_path / "spec" / "pipe.csv")  # opening it for reading would block forever
    d = only(_csv_spec(tmp_path, "pipe.csv"), "EFF020")
    assert "not a regular file" in d.message


def test_folder_is_refused(tmp_path):
    (tmp_path / "spec" / "dir.csv").mkdir(parents=True)
    assert "not a regular file" in only(_csv_spec(tmp_path, "dir.csv"), "EFF020").message


def test_proc_is_refused_even_from_the_root(tmp_path):
    # A spec read from `/` would otherwise reach /proc/self/environ inside "its folder".
    result = check_text('eff 1\nrun a { ranks { samples = file "proc/self/environ" } }\n', "x.eff", "/")
    assert "pseudo-filesystem" in only(result, "EFF020").message


def test_file_reference_without_a_folder():
    d = only(check_text('eff 1\nrun a { timing { step_time = file "s.csv" column "t" } }\n'), "EFF020")
    assert "needs the spec to be read from a file" in d.message


# ----------------------------------------------------------------------------
# A large legitimate spec


def test_five_mib_spec_with_a_thousand_runs_is_checked_within_the_limits():
    pad = ("# " + "x" * 78 + "\n") * 62  # 5,022 characters of comment per run
    text = "eff 1\n" + "".join(pad + RUN.replace("run base_8", f"run r{i}") for i in range(1000))
    assert 5 * 1024 * 1024 < len(text) < LIMITS.max_spec_bytes
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code == "EFF001" or d.severity == "error"]  # a refused input (EFF030) is an error
    assert len(result.spec.runs) == 1000
    # Each run is Example C's baseline: the same median step time, 4.01 s.
    assert {r.id for r in result.spec.runs} == {f"r{i}" for i in range(1000)}


# ----------------------------------------------------------------------------
# Invisible characters


@pytest.mark.parametrize("char, name", [("\u202e", "RIGHT-TO-LEFT OVERRIDE"), ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
                                        ("\x1b", "control character"), ("\x07", "control character"),
                                        ("\u2028", "LINE SEPARATOR")])
def test_control_and_bidi_characters_in_strings(char, name):
    text = f'eff 1\nrun a {{\n  title = "abc{char}def"\n}}\n'
    result = check_text(text)
    d = only(result, "EFF001")
    # `  title = "abc` is 14 characters: the character sits at column 15.
    assert (d.span.line, d.span.column) == (3, 15)
    assert f"U+{ord(char):04X}" in d.message and name in d.message and "in a string" in d.message
    shown = text_output(result)
    assert char not in shown and "\x1b" not in shown


def test_bidi_override_in_a_comment():
    d = only(check_text("eff 1\n# note \u202e reversed\n"), "EFF001")
    assert (d.span.line, d.span.column) == (2, 8) and "in a comment" in d.message


def test_form_feed_and_crlf_are_plain_whitespace():
    assert front_end(check_text("eff 1\r\n\f\r\nrun a { }\r\n")) == []


def test_caret_line_matches_the_parser_line_count():
    # \f is whitespace to the parser but a line break to str.splitlines();
    # the echoed line must still be the one the parser means.
    result = check_text("eff 1\n# a \f b\nrun a { x = 1 }\n")
    shown = text_output(result)
    assert "3 | run a { x = 1 }" in shown


def test_byte_order_mark_is_accepted():
    assert front_end(check_text("\ufeffeff 1\nrun a { }\n")) == []


# ----------------------------------------------------------------------------
# Markup in every string field never becomes live in the HTML report


class _Markup(html.parser.HTMLParser):
    """Collect every tag, attribute and style/script body of a document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.raw: list[str] = []  # bodies of <style> and <script>
        self._in_raw = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [f"{k}={v}" for k, v in attrs]
        self._in_raw = tag in ("style", "script")

    def handle_endtag(self, tag):
        self._in_raw = False

    def handle_data(self, data):
        if self._in_raw:
            self.raw.append(data)


def _injection_spec(tmp_path, payload_for) -> str:
    """Example A's shape with a distinct payload in every string field."""
    csv_name = payload_for("file").replace('"', "").replace("/", "")
    (tmp_path / csv_name).write_text("step_seconds\n" + "1.90\n" * 30)
    q = lambda field: payload_for(field).replace("\\", "\\\\").replace('"', '\\"')  # noqa: E731
    return f'''eff 1
run evil {{
  title  = "{q('title')}"
  source = "{q('source')}"
  model {{ kind = custom  flops_per_token = 1.4e10 FLOP/token }}
  convention {{ preset = palm }}
  work {{ seq_len = 4096 token/sequence  global_batch = 512 sequence }}
  hardware {{ accelerator = "{q('accelerator')}"  count = 64 device  dtype = bf16  peak = 989 TFLOP/s from datasheet "{q('citation')}" }}
  timing {{ step_time = file "{csv_name}" column "step_seconds"  warmup = 0 step  boundary = "{q('boundary')}" }}
  target {{ metric = "{q('target')}"  value = 2.1  reached_at = 1000 step }}
  claim mfu = 50 % from paper "{q('claim citation')}"
}}
'''


def test_html_and_css_injection_in_every_string_field(tmp_path):
    try:
        from effspec.report import render
    except ImportError as exc:  # pragma: no cover - the report package lands separately
        pytest.skip(f"effspec.report is not importable yet: {exc}")

    def payload(field: str) -> str:
        tag = field.replace(" ", "_")
        return (f'{tag}"><script>alert("{tag}")</script><img src=x onerror=alert(1)>'
                f"</style><style>body{{background:url(//evil.example/{tag})}}</style>"
                f"<a href=javascript:alert(1)>x</a>")

    text = _injection_spec(tmp_path, payload)
    (tmp_path / "evil.eff").write_text(text)
    result = load(tmp_path / "evil.eff")
    assert not [d for d in result.diagnostics if d.code in ("EFF001", "EFF002", "EFF003", "EFF020")], result.diagnostics
    page = render(result, "html").decode("utf-8")
    doc = _Markup()
    doc.feed(page)
    assert "script" not in doc.tags
    assert "img" not in doc.tags
    assert not [a for a in doc.attrs if "evil.example" in a or "javascript:" in a or "onerror" in a]
    assert not [r for r in doc.raw if "evil.example" in r or "alert(" in r]
    assert "<script" not in page.lower() and "<img" not in page.lower()
    # The text is still there, escaped: a reader sees what the spec said
    # (in the rendered fields and in the source listing, every field).
    for field in ("title", "source", "accelerator", "citation", "boundary", "target", "claim_citation"):
        assert f"&lt;script&gt;alert(&#34;{field}&#34;)" in page or f"&lt;script&gt;alert(&quot;{field}&quot;)" in page \
            or f'&lt;script&gt;alert(\\&#34;{field}\\&#34;)' in page, field
    # the CSV's name, which cannot hold `"` or `/` (a long value carries <wbr> break marks, which are not text)
    assert "&lt;script&gt;alert(file)" in page.replace("<wbr>", "")


# ----------------------------------------------------------------------------
# Output: atomic, clear errors, internal errors


def _example(name: str) -> str:
    return os.path.join(EXAMPLES, name)


def test_report_failing_midway_leaves_the_old_output(tmp_path, monkeypatch, capsys):
    import effspec.report

    out = tmp_path / "report.json"
    out.write_bytes(b"OLD REPORT\n")

    def broken(result, fmt, paper="a4", doc_base=None):
        raise RuntimeError("renderer died halfway")

    monkeypatch.setattr(effspec.report, "render", broken)
    status = cli.main(["report", _example("example_c_scaling.eff"), "-o", str(out)])
    assert status != 0
    assert out.read_bytes() == b"OLD REPORT\n"
    assert sorted(os.listdir(tmp_path)) == ["report.json"]  # no temporary file left behind
    assert "renderer died halfway" in capsys.readouterr().err


def test_write_failing_midway_leaves_the_old_output(tmp_path, monkeypatch):
    from effspec import atomic

    out = tmp_path / "out.md"
    out.write_bytes(b"OLD")

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        atomic.write_atomic(str(out), b"NEW CONTENT")
    assert out.read_bytes() == b"OLD"
    assert os.listdir(tmp_path) == ["out.md"]


def test_write_atomic_replaces_and_keeps_permissions(tmp_path):
    from effspec.atomic import write_atomic

    out = tmp_path / "out.md"
    out.write_bytes(b"OLD")
    os.chmod(out, 0o640)
    write_atomic(str(out), "NEW")
    assert out.read_bytes() == b"NEW" and (os.stat(out).st_mode & 0o777) == 0o640
    assert os.listdir(tmp_path) == ["out.md"]


def test_output_path_that_is_a_directory_exits_2(tmp_path, capsys):
    target = tmp_path / "report.html"
    target.mkdir()
    assert cli.main(["report", _example("example_c_scaling.eff"), "-o", str(target)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_output_in_a_missing_folder_creates_it_and_a_file_in_the_way_exits_2(tmp_path, capsys):
    target = tmp_path / "no" / "such" / "report.json"
    assert cli.main(["report", _example("example_c_scaling.eff"), "-o", str(target)]) == 0  # issue 15: folders created
    assert target.is_file()
    (tmp_path / "file").write_bytes(b"x")
    blocked = tmp_path / "file" / "such" / "report.json"
    assert cli.main(["report", _example("example_c_scaling.eff"), "-o", str(blocked)]) == 2
    assert f"{blocked}: cannot create its folder" in capsys.readouterr().err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_output_in_an_unwritable_folder_exits_2(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o500)
    try:
        assert cli.main(["report", _example("example_c_scaling.eff"), "-o", str(folder / "r.json")]) == 2
        assert "cannot write" in capsys.readouterr().err
    finally:
        os.chmod(folder, 0o700)


def test_internal_error_names_the_input_and_asks_for_a_report(monkeypatch, capsys):
    def crash(path, **options):
        raise RuntimeError("boom")

    monkeypatch.setattr(effspec, "load", crash)
    assert cli.main(["check", "some.eff"]) == 2
    captured = capsys.readouterr()
    assert "internal error while checking some.eff: RuntimeError: boom" in captured.err
    assert "report" in captured.err and "Traceback" not in captured.err + captured.out
    assert "error[EFF099]: internal error while checking some.eff: RuntimeError: boom" in captured.out


def test_debug_shows_the_traceback(monkeypatch):
    def crash(path, **_options):
        raise RuntimeError("boom")

    monkeypatch.setattr(effspec, "load", crash)
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["--debug", "check", "some.eff"])


def test_a_spec_that_is_not_utf8_is_a_coded_error_not_a_traceback(tmp_path, capsys):
    """Issue 26: EFF001 at the first bad byte (line 2, column 1), in the output, rather than exit 2."""
    (tmp_path / "bad.eff").write_bytes(b"eff 1\n\xff\xfe\n")
    assert cli.main(["check", "--no-cache", str(tmp_path / "bad.eff")]) == 1
    captured = capsys.readouterr()
    assert "error[EFF001]: not UTF-8 text: byte 0xff at line 2, column 1" in captured.out and captured.err == ""


# ----------------------------------------------------------------------------
# Many files at once


def test_parallel_check_matches_one_by_one_in_argument_order(tmp_path, capsys):
    names = []
    sources = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".eff"))
    for i in range(10):  # 10 files: above the threshold where the CLI uses a process pool
        src = sources[i % len(sources)]
        name = f"f{9 - i:02d}_{src}"  # argument order differs from name order
        shutil.copy(os.path.join(EXAMPLES, src), tmp_path / name)
        names.append(str(tmp_path / name))
    for f in os.listdir(EXAMPLES):
        if f.endswith(".csv"):
            shutil.copy(os.path.join(EXAMPLES, f), tmp_path / f)
    one_by_one = []
    for n in names:
        cli.main(["check", n, "--format", "json"])
        one_by_one += json.loads(capsys.readouterr().out)  # an array of one file object
    cli.main(["check", *names, "--format", "json", "--jobs", "2"])
    together = json.loads(capsys.readouterr().out)
    assert [doc["file"] for doc in together] == names
    assert together == one_by_one


def test_module_entry_point_catches_bad_arguments():
    proc = run_effspec("check")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_pdf_rendering_has_a_wall_clock_bound(tmp_path, monkeypatch, capsys):
    import threading

    import effspec.report

    out = tmp_path / "report.pdf"
    out.write_bytes(b"%PDF old")
    release = threading.Event()

    def stuck(result, fmt, paper="a4", doc_base=None):
        release.wait()  # a layout that never finishes, until the test lets it go
        return b"%PDF new"

    monkeypatch.setattr(effspec.report, "render", stuck)
    try:
        status = cli.main(["report", _example("example_c_scaling.eff"), "-o", str(out), "--timeout", "0.2"])
    finally:
        release.set()
    assert status == 2
    err = capsys.readouterr().err
    assert "PDF rendering took longer than 0.2 s" in err and "--timeout" in err
    assert out.read_bytes() == b"%PDF old" and os.listdir(tmp_path) == ["report.pdf"]
