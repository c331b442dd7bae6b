"""Issue 19, bounded cost: a hostile spec or CSV cannot make output, memory or time grow without bound.

Nothing here asserts a duration.  Sizes and counts are asserted exactly or
against a linear bound; wall clock appears only as a generous subprocess
timeout, so a slow machine cannot make a test flaky.  Peak memory is measured
in a child process with ``resource.getrusage`` (``ru_maxrss``), which is
deterministic enough for bounds with a wide margin.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest
from conftest import cli as run_effspec
from conftest import effspec_process

from effspec import check_text
from effspec.diagnostics import EXCERPT_COLUMNS, MAX_DIAGNOSTICS, MAX_MESSAGE_CHARS, Diagnostic, Span, cap, render_text
from effspec.report import render
from effspec.report.text import result_json
from effspec.report.text import text as text_output

EFFSPEC = os.path.join(sysconfig.get_path("scripts"), "effspec")
TIMEOUT = 600  # seconds: a bound against hangs, never a performance assertion


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The command in this process (conftest.cli), bytes out; with --timeout, the installed command in a process
    of its own: a render abandoned at the bound runs on in a daemon thread until its process exits."""
    if any(a.startswith("--timeout") for a in args):
        return effspec_process(*args, cwd=cwd, text=False, timeout=TIMEOUT)
    return run_effspec(*args, cwd=cwd, text=False)


def duplicate_keys(n: int, one_line: bool) -> str:
    """``seq_len`` set ``n`` times in one block: n - 1 EFF003 "set twice" errors."""
    sep = " " if one_line else "\n  "
    return "eff 1\nrun a { work {" + sep + sep.join(f"seq_len = {i} token/sequence" for i in range(1, n + 1)) + " } }\n"


# ----------------------------------------------------------------------------
# 1. Diagnostics: capped per file, excerpts windowed, output linear in the input


@pytest.fixture(scope="module")
def duplicates():
    """{(n, one_line): (input bytes, text bytes, json bytes, html bytes, result)} for 1k, 4k and 16k keys."""
    out = {}
    for one_line in (True, False):
        for n in (1_000, 4_000, 16_000):
            spec = duplicate_keys(n, one_line)
            result = check_text(spec, "dup.eff")
            out[n, one_line] = (len(spec.encode()), len(text_output(result).encode()),
                                len(json.dumps(result_json(result), indent=2).encode()), len(render(result, "html")), result)
    return out


@pytest.mark.parametrize("one_line", [True, False], ids=["one line", "many lines"])
def test_output_grows_at_most_linearly_with_duplicate_keys(duplicates, one_line):
    for fmt in (1, 2, 3):  # text, json, html
        small, large = duplicates[1_000, one_line][fmt], duplicates[16_000, one_line][fmt]
        assert large / small < 20, (fmt, small, large)  # 16× the input: linear would be 16, quadratic 256
        assert duplicates[4_000, one_line][fmt] <= large
    spec_bytes = duplicates[16_000, one_line][0]
    text_bytes, json_bytes, html_bytes = duplicates[16_000, one_line][1:4]
    # Findings are capped, so text and JSON do not grow with them at all; the
    # HTML holds the source once (with ~70 bytes of markup per line), so it
    # grows with the input, once.
    assert text_bytes < 200_000 and json_bytes < 200_000
    assert html_bytes < 4 * spec_bytes + 500_000 and html_bytes < 3_000_000


@pytest.mark.parametrize("one_line", [True, False], ids=["one line", "many lines"])
def test_findings_are_capped_errors_first_and_the_rest_counted(duplicates, one_line):
    result = duplicates[16_000, one_line][4]
    shown = result.diagnostics
    assert len(shown) == MAX_DIAGNOSTICS + 1 == 201
    assert [d.code for d in shown[:-1]] == ["EFF003"] * 200
    # Source order: the first 200 duplicates (the 2nd to the 201st `seq_len`).
    lines = [d.span.line for d in shown[:-1]]
    assert lines == ([2] * 200 if one_line else list(range(4, 204)))
    note = shown[-1]
    assert (note.code, note.severity, note.span) == ("EFF030", "info", None)
    assert note.message == "and 15,799 more findings not shown (15,799 errors)"
    assert result.omitted == {"error": 15_799}
    assert result.has_errors
    document = result_json(result)
    assert document["omitted"] == {"total": 15_799, "error": 15_799}
    assert len(document["diagnostics"]) == 201
    out = text_output(result)
    assert out.endswith("dup.eff: 15999 errors, 1 info")  # the totals stay honest
    assert "info[EFF030]: and 15,799 more findings not shown (15,799 errors)" in out
    html = render(result, "html").decode()
    assert "and 15,799 more findings not shown (15,799 errors)" in html
    assert '<span class="sev sev-error">15999 errors</span>' in html


def test_the_cap_keeps_errors_ahead_of_warnings_and_infos():
    # 300 infos, 300 warnings, then 3 errors at the end of the file.
    diags = ([Diagnostic("EFF605", "info", Span(n, 1, n, 2), "i") for n in range(1, 301)]
             + [Diagnostic("EFF504", "warning", Span(n, 1, n, 2), "w") for n in range(301, 601)]
             + [Diagnostic("EFF601", "error", Span(n, 1, n, 2), "e") for n in range(601, 604)])
    kept, omitted = cap(diags)
    assert omitted == {"warning": 103, "info": 300}
    assert [(d.severity, d.span.line) for d in kept[:-1]] == (
        [("warning", n) for n in range(301, 498)] + [("error", n) for n in range(601, 604)])
    assert kept[-1].message == "and 403 more findings not shown (103 warnings, 300 infos)"
    assert cap(diags[:200]) == (diags[:200], {})


def test_no_cap_below_the_limit():
    result = check_text(duplicate_keys(200, one_line=True), "dup.eff")
    assert [d.code for d in result.diagnostics] == ["EFF003"] * 199 and result.omitted == {}
    assert "omitted" not in result_json(result)


def test_excerpt_is_a_window_around_the_caret():
    line = "".join(f"{i:03d}," for i in range(100))  # 400 characters, `k,` at 4k
    d = Diagnostic("EFF003", "error", Span(1, 201, 1, 204), "m", label="here")
    out = render_text(d, line, "w.eff").split("\n")
    # The caret at column 201: the window starts 40 columns before it and is 120 wide.
    assert out[3] == "1 | …" + line[160:280] + "…"
    assert out[4] == "  | " + " " * 41 + "^^^ here"
    assert line[200:203] == "050"
    # Near the start and the end of the line only one side is cut.
    first = render_text(Diagnostic("EFF003", "error", Span(1, 5, 1, 6), "m"), line, "w.eff").split("\n")
    assert first[3] == "1 | " + line[:120] + "…" and first[4] == "  | " + " " * 4 + "^"
    last = render_text(Diagnostic("EFF003", "error", Span(1, 400, 1, 401), "m"), line, "w.eff").split("\n")
    assert last[3] == "1 | …" + line[-120:] and last[4] == "  | " + " " * (1 + 119) + "^"
    # A line that fits is shown whole, as before.
    short = render_text(Diagnostic("EFF003", "error", Span(1, 5, 1, 6), "m"), line[:EXCERPT_COLUMNS], "w.eff").split("\n")
    assert short[3] == "1 | " + line[:120]


def test_wide_characters_keep_the_caret_under_its_token():
    line = "名" * 200 + " bad " + "x" * 200
    d = Diagnostic("EFF003", "error", Span(1, 202, 1, 205), "m")
    out = render_text(d, line, "w.eff").split("\n")
    start = 201 - 40
    assert out[3] == "1 | …" + line[start:start + 120] + "…"
    # "…" is one column, each of the 39 ideographs before ` bad` two.
    assert out[4] == "  | " + " " * (1 + 2 * 39 + 1) + "^^^"


def test_report_excerpt_is_windowed_too():
    result = check_text(duplicate_keys(4_000, one_line=True), "dup.eff")
    from effspec.report.sections import build

    report = build(result)
    lengths = {len(x.text) for f in report.findings for x in f.excerpt}
    assert max(lengths) == EXCERPT_COLUMNS + 2  # 120 columns and a "…" on each side
    assert all(x.text.startswith("…") for x in report.findings[5].excerpt)


def test_long_messages_are_clipped():
    name = "k" * 50_000
    result = check_text(f"eff 1\nrun a {{ work {{ {name} = 1 token }} }}\n", "long.eff")
    (d,) = [d for d in result.diagnostics if d.code == "EFF002"]
    assert len(d.message) == MAX_MESSAGE_CHARS and d.message.endswith("…")
    assert len(text_output(result)) < 5_000


def test_cli_four_thousand_duplicates_on_one_line(tmp_path):
    """The reproduction: 4,000 duplicate keys on one line printed 289 MB; 10,000 made a 1.2 GB HTML file."""
    spec = tmp_path / "dup.eff"
    spec.write_text(duplicate_keys(4_000, one_line=True))
    for fmt in ("text", "json", "sarif"):
        done = run_cli("check", "--format", fmt, str(spec))
        assert done.returncode == 1, done.stderr
        # SARIF also carries a fixed rule table with each rule's help (~46 kB) and a fingerprint per
        # result (~100 bytes x 201 results, the per-file cap): 220 kB, against 289 MB before the cap.
        assert len(done.stdout) < (250_000 if fmt == "sarif" else 200_000), (fmt, len(done.stdout))
    (document,) = json.loads(run_cli("check", "--format", "json", str(spec)).stdout)
    assert document["omitted"] == {"total": 3_799, "error": 3_799}
    big = tmp_path / "dup10k.eff"
    big.write_text(duplicate_keys(10_000, one_line=True))
    out = tmp_path / "dup.html"
    out.write_bytes(b"good report")
    done = run_cli("report", str(big), "-o", str(out))
    # Duplicate keys are front-end errors (EFF003): the spec does not compile, so
    # `report` prints the capped findings and leaves OUT as it was.
    assert done.returncode == 1, done.stderr
    assert out.read_bytes() == b"good report"
    assert len(done.stderr) < 200_000
    assert render(check_text(big.read_text(), "dup10k.eff"), "html").__len__() < big.stat().st_size + 500_000


# ----------------------------------------------------------------------------
# 2. Per-rank tables and step-time CSVs: memory bounded by the file, not by the grid


def _memory_bench():
    """benchmarks/memory_bench.py, whose generators and peak() the tests share."""
    import importlib.util

    path = os.path.join(ROOT, "benchmarks", "memory_bench.py")
    spec = importlib.util.spec_from_file_location("memory_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = _memory_bench()
MB = 1024 * 1024


def test_sparse_rank_grid_is_refused_before_a_matrix_is_allocated(tmp_path):
    """123 KB, a distinct rank and step on every row: 86 s and 2.1 GB before the grid bound."""
    rows = 5_470
    with open(tmp_path / "ranks.csv", "w") as fh:
        fh.write("rank,node,step,compute,comm,stall\n")
        fh.writelines(f"{i},n{i // 8},{i},1,0.1,0\n" for i in range(rows))
    assert 120_000 < (tmp_path / "ranks.csv").stat().st_size < 130_000
    (tmp_path / "s.eff").write_text('eff 1\nrun a {\n  ranks { samples = file "ranks.csv" }\n}\n')
    rss, _wall, _cpu, status, out = BENCH.peak([EFFSPEC, "check", "--format", "json", str(tmp_path / "s.eff")], TIMEOUT)
    assert status == 1, out
    (d,) = [d for d in json.loads(out)[0]["diagnostics"] if d["code"] == "EFF030"]
    assert (d["line"], d["column"], d["severity"]) == (3, 21, "error")
    assert d["message"] == ("`ranks.csv`: 5,470 ranks × 5,470 steps is a grid of 29,920,900 cells for 5,470 rows; "
                            "the limit is 4 cells per row")
    assert rss < 500, rss  # MB; a dense grid of this table is 29.9 M cells × 8 bytes × several matrices


def test_a_step_time_csv_with_an_emoji_is_read_in_memory_near_its_size(tmp_path):
    """One emoji made the decoded text 4 bytes a character, held twice: a 245 MB file took 2.1 GB."""
    rows = BENCH.write_steps_csv(str(tmp_path / "steps.csv"), 20 * 10**6)
    (tmp_path / "steps.eff").write_text(BENCH.STEPS_SPEC)
    size = (tmp_path / "steps.csv").stat().st_size
    rss, _wall, _cpu, status, out = BENCH.peak([EFFSPEC, "check", "--format", "json", str(tmp_path / "steps.eff")], TIMEOUT)
    assert status == 0, out[-2000:]
    stats = json.loads(out)[0]["runs"]["big"]["step_statistics"]
    assert stats["rows"] == rows == 344_827 and stats["count"] == rows
    assert stats["min"] == 1.0 and stats["max"] == 1.00999
    # 212 MB before (10.9 × the file); now the bytes once, read twice as they are joined, and the floats.
    assert rss * MB < 4 * size + 100 * MB, (rss, size)


def test_a_quoted_rank_csv_is_read_in_memory_near_its_size(tmp_path):
    """Quoted cells take the csv-module path; a 135 MB file took 2.2 GB there."""
    rows = BENCH.write_quoted_ranks_csv(str(tmp_path / "ranks.csv"), 20 * 10**6)
    (tmp_path / "ranks.eff").write_text(BENCH.RANKS_SPEC)
    size = (tmp_path / "ranks.csv").stat().st_size
    rss, _wall, _cpu, status, out = BENCH.peak([EFFSPEC, "check", "--format", "json", str(tmp_path / "ranks.eff")], TIMEOUT)
    assert status == 0, out[-2000:]
    diagnosis = json.loads(out)[0]["runs"]["big"]["diagnosis"]
    assert diagnosis["rows"] == rows == 1024 * 355 and diagnosis["ranks_count"] == 1024 and diagnosis["steps_count"] == 355
    # 363 MB before (19 × the file).
    assert rss * MB < 4 * size + 100 * MB, (rss, size)


def test_slow_path_reads_the_same_table_as_the_fast_path(tmp_path):
    """Quoting every cell changes the path, not the numbers; chunking keeps row order across chunks."""
    from effspec.ranks import loader

    plain = tmp_path / "plain.csv"
    quoted = tmp_path / "quoted.csv"
    BENCH.write_quoted_ranks_csv(str(quoted), 3 * 10**6, ranks=64)  # 52,000+ rows: several chunks of cells
    plain.write_bytes(quoted.read_bytes().replace(b'"', b""))
    a = loader.load_rank_table(str(plain), "plain.csv", None, [])
    b = loader.load_rank_table(str(quoted), "quoted.csv", None, [])
    assert a.rows == b.rows > loader._SLOW_CHUNK_CELLS // 6
    for name in ("rank", "node", "step", "compute", "comm", "stall"):
        assert (getattr(a, name) == getattr(b, name)).all(), name
    assert a.node_names == b.node_names


def _step_csv_spec(tmp_path, data: bytes, column: str = "t"):
    from effspec import load

    (tmp_path / "steps.csv").write_bytes(data)
    (tmp_path / "a.eff").write_text(f'eff 1\nrun a {{\n  timing {{ step_time = file "steps.csv" column "{column}" }}\n}}\n')
    result = load(tmp_path / "a.eff")
    return [d for d in result.diagnostics if d.code < "EFF100"]


def test_csv_positions_are_counted_in_characters_without_decoding_the_file(tmp_path):
    # Line 3: `é` is two bytes, one column; the bad byte follows it at column 3.
    (d,) = _step_csv_spec(tmp_path, b"t\n1\n\xc3\xa9\xff\n")
    assert d.message == "`steps.csv` line 3, column 2: not valid UTF-8 (byte 0xff)"
    # A byte-order mark is not a column of line 1 (it used to shift the column by its three bytes).
    (d,) = _step_csv_spec(tmp_path, b"\xef\xbb\xbfab\xff\n1\n")
    assert d.message == "`steps.csv` line 1, column 3: not valid UTF-8 (byte 0xff)"
    (d,) = _step_csv_spec(tmp_path, b"\xef\xbb\xbft\n1\n2\x00\n")
    assert d.message == "`steps.csv` line 3, column 2: a NUL byte: not a CSV file"
    # A bad byte beyond the first megabyte chunk, after a character split across the chunk boundary.
    head = b"t\n" + b"1\n" * ((1 << 20) // 2 - 2) + b"1"
    data = head + "é".encode() + b"\n1\n\xfe\n"
    assert len(head) == (1 << 20) - 1  # `é` straddles the chunk boundary
    (d,) = _step_csv_spec(tmp_path, data)
    assert d.message == f"`steps.csv` line {(1 << 19) + 2}, column 1: not valid UTF-8 (byte 0xfe)"


def test_a_csv_line_longer_than_any_row_is_refused_before_it_is_decoded(tmp_path):
    from effspec.front.files import MAX_CSV_LINE_CHARS

    (d,) = _step_csv_spec(tmp_path, b"t\n1\n" + b"9" * (MAX_CSV_LINE_CHARS + 10) + b"\n")
    assert (d.code, d.message) == ("EFF030", f"`steps.csv` row 3 is longer than {MAX_CSV_LINE_CHARS:,} characters")


def test_step_csv_values_are_unchanged_by_streaming(tmp_path):
    from effspec import load

    (tmp_path / "steps.csv").write_bytes(b'\xef\xbb\xbfstep,t\r\n1,"1.5"\r\n2,2e0\n\n3, 0.25 \n')
    (tmp_path / "a.eff").write_text('eff 1\nrun a {\n  timing { step_time = file "steps.csv" column "t" }\n}\n')
    samples = load(tmp_path / "a.eff").spec.runs[0].block("timing").value("step_time")
    assert samples.values == (1.5, 2.0, 0.25) and isinstance(samples.values, tuple)


# ----------------------------------------------------------------------------
# 4. Argument validation and short help lines


def test_missing_step_column_lists_a_few_short_header_names(tmp_path):
    header = ",".join(f"col{i}" for i in range(60)) + "," + "h" * 5000
    (d,) = _step_csv_spec(tmp_path, (header + "\n" + ",".join("1" * 61) + "\n").encode(), column="x" * 300)
    assert d.code == "EFF020"
    assert d.message == "`steps.csv` has no column `" + "x" * 199 + "…`"
    assert d.help == "columns: " + ", ".join(f"`col{i}`" for i in range(8)) + " and 53 more"


def test_missing_rank_columns_list_a_few_short_header_names(tmp_path):
    """A header of a million names used to be echoed whole in the help."""
    from effspec.ranks.loader import load_rank_table

    names = ["rank", "y" * 1000] + [f"c{i}" for i in range(1_000_000)]
    (tmp_path / "ranks.csv").write_text(",".join(names) + "\n")
    diags = []
    assert load_rank_table(str(tmp_path / "ranks.csv"), "ranks.csv", None, diags) is None
    (d,) = diags
    assert d.message == "`ranks.csv` has no columns `node`, `step`, `compute`, `comm`, `stall`"
    assert d.help == ("the header must name rank, node, step, compute, comm, stall; found: `rank`, `" + "y" * 39 + "…`, "
                      + ", ".join(f"`c{i}`" for i in range(6)) + " and 999,994 more")  # 1,000,002 names, 8 shown


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "-1", "-0.5", "86401", "ten"])
def test_timeout_must_be_finite_seconds(value, tmp_path, capsys):
    from effspec import cli

    out = tmp_path / "r.json"
    assert cli.main(["report", os.path.join(ROOT, "examples", "example_c_scaling.eff"), "-o", str(out), f"--timeout={value}"]) == 2
    err = capsys.readouterr().err
    assert "argument --timeout: expected " in err and repr(value) in err
    assert not out.exists()


def test_timeout_zero_means_no_bound(tmp_path):
    from effspec import cli

    out = tmp_path / "r.json"
    assert cli.main(["report", os.path.join(ROOT, "examples", "example_c_scaling.eff"), "-o", str(out), "--timeout", "0"]) == 0
    assert json.loads(out.read_text())["file"].endswith("example_c_scaling.eff")


# ----------------------------------------------------------------------------
# 3. Reports: a wall-clock bound for every format, and charts only where they say something


@pytest.fixture(scope="module")
def large_spec(tmp_path_factory):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from gen import generate_spec
    finally:
        sys.path.pop(0)
    path = tmp_path_factory.mktemp("large") / "runs100.eff"
    path.write_text(generate_spec(100, seed=0))
    return path


@pytest.mark.parametrize("suffix, name", [(".html", "HTML"), (".md", "Markdown"), (".json", "JSON")])
def test_every_format_has_a_wall_clock_bound(large_spec, tmp_path, suffix, name):
    """A render that outlives --timeout is abandoned: exit 2, and an existing output is left as it was."""
    out = tmp_path / f"report{suffix}"
    out.write_bytes(b"old report")
    done = run_cli("report", str(large_spec), "-o", str(out), "--timeout", "0.001")
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().strip() == (
        f"effspec: {out}: {name} rendering took longer than 0.001 s and was abandoned; "
        "the old output, if any, is unchanged (raise the bound with --timeout)")
    assert out.read_bytes() == b"old report" and sorted(os.listdir(tmp_path)) == [out.name]


def test_charts_only_where_they_say_something():
    from effspec.engine.stats import step_statistics
    from effspec.report import chart_style, charts, step_charts

    few = (1.0, 1.1, 1.0, 1.2) * 4 + (1.0, 1.05, 1.0)  # 19 samples
    assert chart_style.MIN_HISTOGRAM_SAMPLES == 20
    assert step_charts.step_time_chart(list(few), step_statistics(few, 0), "a") is None
    many = few + (1.3,)
    assert step_charts.step_time_chart(list(many), step_statistics(many, 0), "b").startswith("<svg")
    same = (1.0,) * 50  # no spread: nothing to draw
    assert step_charts.step_time_chart(list(same), step_statistics(same, 0), "c") is None
    assert step_charts.step_time_chart([1.0], step_statistics((1.0,), 0), "d") is None  # one sample

    class Row:
        def __init__(self, category, share):
            self.category, self.share = category, share

    class Breakdown:
        rows = [Row("model_compute", 1.0), Row("bubble", 0.0)]

    assert charts.breakdown_chart(Breakdown(), "e") is None  # one segment says what the table says
    Breakdown.rows = [Row("model_compute", 0.7), Row("bubble", 0.3)]
    assert charts.breakdown_chart(Breakdown(), "f").startswith("<svg")


def test_the_chart_style_is_built_once():
    from effspec.report import chart_style

    chart_style._style.cache_clear()
    for salt in ("a", "b", "c"):
        with chart_style._styled(salt):
            pass
    assert chart_style._style.cache_info().misses == 1 and chart_style._style.cache_info().hits == 2
    assert chart_style._style()["svg.fonttype"] == "path"


def test_per_run_report_size_is_small(large_spec):
    """100 generated runs (10 samples each after warm-up): no histogram per run; charts for breakdowns and scaling only."""
    from effspec import load

    html = render(load(large_spec), "html")
    # 25 breakdowns (every fourth run) and 25 scaling curves; before: 100 more histograms, 7.2 MB.
    assert html.count(b"<svg") == 50
    assert len(html) < 5_000_000


# ----------------------------------------------------------------------------
# 5. Through the installed CLI: the reproductions, each a regression test

BYTES_PER_INPUT_BYTE = 4  # any format, stdout, stderr and OUT together; before the caps, 4,000 keys on one line printed 2,430 bytes per input byte


@pytest.mark.parametrize("n", [4_000, 10_000])
@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_cli_duplicate_keys_on_one_line_output_is_linear(n, fmt, tmp_path):
    """4,000 duplicate keys on one line printed 289 MB; 10,000 made a 1.2 GB HTML file."""
    spec = tmp_path / "dup.eff"
    spec.write_text(duplicate_keys(n, one_line=True))
    size = spec.stat().st_size
    assert size == sum(len(f"seq_len = {i} token/sequence") + 1 for i in range(1, n + 1)) + len("eff 1\nrun a { work {") + len(" } }\n")
    if fmt == "html":  # the report command: the spec does not compile, so only the capped findings, on stderr
        out = tmp_path / "dup.html"
        done = run_cli("report", str(spec), "-o", str(out))
        assert not out.exists()
        produced = len(done.stdout) + len(done.stderr)
        # The HTML renderer itself, on the same result (what `report` wrote before it refused non-compiling specs).
        html = render(check_text(spec.read_text(), "dup.eff"), "html")
        assert len(html) < BYTES_PER_INPUT_BYTE * size, (len(html), size)
    else:
        done = run_cli("check", "--format", fmt, str(spec))
        produced = len(done.stdout) + len(done.stderr)
    assert done.returncode == 1, done.stderr[-2000:]
    assert b"Traceback" not in done.stderr
    assert produced < BYTES_PER_INPUT_BYTE * size, (produced, size)
    assert produced < 100_000, produced  # findings are capped: what is printed does not grow with them at all


def test_cli_html_of_many_findings_on_one_line_grows_linearly(tmp_path):
    """Audit findings (not front-end errors, so `report` writes the HTML): n empty runs on one line
    make n EFF101 warnings and n EFF605 infos, all on line 2 (the summary counts the EFF030 note
    as one more info).  Four times the runs make at most 4.4 times the HTML, the same stderr,
    and the findings shown stay at 200 and the note."""
    sizes = {}
    for n in (500, 2_000):
        spec = tmp_path / f"runs{n}.eff"
        spec.write_text("eff 1\n" + " ".join(f"run r{i} {{ }}" for i in range(n)) + "\n")
        out = tmp_path / f"runs{n}.html"
        done = run_cli("report", str(spec), "-o", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        err = done.stderr.decode()
        assert f"runs{n}.eff: {n} warnings, {n + 1} infos" in err
        assert err.count("warning[EFF101]") + err.count("info[EFF605]") == 200
        assert f"info[EFF030]: and {2 * n - 200:,} more findings not shown ({n - 200:,} warnings, {n:,} infos)" in err
        sizes[n] = (out.stat().st_size, len(done.stderr))
    assert sizes[2_000][0] < 4.4 * sizes[500][0], sizes
    assert sizes[2_000][1] < 1.1 * sizes[500][1], sizes  # stderr: the capped findings and the summary


def test_cli_rank_grid_bound_on_the_reproduction(tmp_path):
    """The issue's reproduction through the CLI, in every check format: a distinct rank and step on
    every row is refused as EFF030 at the `samples` value (line 3, column 21), with exit status 1."""
    rows = 5_470
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n"
                                        + "".join(f"{i},n{i // 8},{i},1,0.1,0\n" for i in range(rows)))
    (tmp_path / "s.eff").write_text('eff 1\nrun a {\n  ranks { samples = file "ranks.csv" }\n}\n')
    # 5,470 ranks × 5,470 steps = 29,920,900 cells > 4 × 5,470 + 65,536 = 87,416.
    message = ("`ranks.csv`: 5,470 ranks × 5,470 steps is a grid of 29,920,900 cells for 5,470 rows; "
               "the limit is 4 cells per row")
    text = run_cli("check", str(tmp_path / "s.eff"))
    assert text.returncode == 1 and b"Traceback" not in text.stderr
    assert f"error[EFF030]: {message}" in text.stdout.decode()
    assert "s.eff:3:21" in text.stdout.decode()
    sarif = run_cli("check", "--format", "sarif", str(tmp_path / "s.eff"))
    assert sarif.returncode == 1
    (found,) = [r for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == "EFF030"]
    assert found["message"]["text"].startswith(message)
    # As many rows on a grid that fits (8 ranks × 684 steps = 5,472 cells) load.
    (tmp_path / "ok.csv").write_text("rank,node,step,compute,comm,stall\n"
                                     + "".join(f"{i % 8},n0,{i // 8},1,0.1,0\n" for i in range(rows)))
    (tmp_path / "ok.eff").write_text('eff 1\nrun a {\n  ranks { samples = file "ok.csv" }\n}\n')
    ok = run_cli("check", "--format", "json", str(tmp_path / "ok.eff"))
    assert not [d for d in json.loads(ok.stdout)[0]["diagnostics"] if d["code"] == "EFF030"], ok.stdout[-2000:]


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "-1"])
def test_cli_timeout_argument_errors(value, tmp_path):
    """Through the installed CLI: exit 2, argparse's usage and one clear line, no traceback, no output file."""
    out = tmp_path / "r.html"
    done = run_cli("report", os.path.join(ROOT, "examples", "example_c_scaling.eff"), "-o", str(out), f"--timeout={value}")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("usage: effspec report")
    assert err.rstrip().endswith(f"error: argument --timeout: expected seconds from 0 (no bound) to 86,400, got {value!r}")
    assert "Traceback" not in err and done.stdout == b"" and not out.exists()


def test_cli_html_timeout_leaves_no_partial_file(large_spec, tmp_path):
    """No earlier output: an abandoned HTML render leaves nothing behind (no OUT, no temporary file)."""
    out = tmp_path / "report.html"
    done = run_cli("report", str(large_spec), "-o", str(out), "--timeout", "0.001")
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().strip() == (
        f"effspec: {out}: HTML rendering took longer than 0.001 s and was abandoned; "
        "the old output, if any, is unchanged (raise the bound with --timeout)")
    assert os.listdir(tmp_path) == []


def test_cli_a_million_column_header_gives_short_help(tmp_path):
    """A per-rank CSV whose header names 1,000,000 columns: the help lists 8 and counts the rest."""
    (tmp_path / "ranks.csv").write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n")
    (tmp_path / "s.eff").write_text('eff 1\nrun a {\n  ranks { samples = file "ranks.csv" }\n}\n')
    done = run_cli("check", str(tmp_path / "s.eff"))
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "error[EFF020]: `ranks.csv` has no columns `rank`, `node`, `step`, `compute`, `comm`, `stall`" in out
    assert ("help: the header must name rank, node, step, compute, comm, stall; found: "
            + ", ".join(f"`c{i}`" for i in range(8)) + " and 999,992 more") in out
    assert len(done.stdout) < 3_000, len(done.stdout)
    # A step-time CSV that wide is refused by its column limit before any name is listed.
    (tmp_path / "t.eff").write_text('eff 1\nrun a {\n  timing { step_time = file "ranks.csv" column "t" }\n}\n')
    done = run_cli("check", str(tmp_path / "t.eff"))
    assert done.returncode == 1 and "`ranks.csv` has 1000000 columns; the limit is 64" in done.stdout.decode()
    assert len(done.stdout) < 3_000, len(done.stdout)


# ----------------------------------------------------------------------------
# 6. Long unbroken strings in reports: a 20,000-character title took 12.7 s in the PDF


def _long_strings_spec(n: int = 20_000) -> str:
    """Example A with an n-character title, source and citation, and an n-character comment line."""
    text = (pathlib.Path(ROOT, "examples", "example_a_measured.eff").read_text()
            .replace('"2.35B model, 64 x H100 SXM, BF16, 4K context"', '"' + "x" * n + '"')
            .replace('"internal run 2026-10-14, job 8812"', '"' + "z" * n + '"')
            .replace('"Table 2"', '"' + "y" * n + '"')
            .replace("# A 64-GPU run", "# " + "w" * n + "\n# A 64-GPU run"))
    assert text.count("x" * n) == text.count("z" * n) == text.count("w" * n) == 1 and text.count("y" * n) == 2
    return text


def _runs(html: str, letter: str) -> list[int]:
    import re

    return sorted((len(m) for m in re.findall(f"{letter}+", html)), reverse=True)


def test_long_strings_are_elided_outside_the_source_section():
    from effspec.report.sections import build
    from effspec.report.sections.source import BREAK_EVERY
    from effspec.report.words import MAX_SHOWN_CHARS, MAX_TITLE_CHARS

    result = check_text(_long_strings_spec(), "long.eff", folder=os.path.join(ROOT, "examples"))
    report = build(result)
    assert report.title == "x" * 200 + "… (20,000 characters)" and MAX_TITLE_CHARS == 200
    assert report.runs[0].title == report.title
    assert report.runs[0].source == "z" * 1000 + "… (20,000 characters)" and MAX_SHOWN_CHARS == 1000
    html = render(result, "html").decode()
    # Outside the Source section no run is longer than its cut; in it, a break opportunity every 16 characters.
    assert BREAK_EVERY == 16
    assert _runs(html, "x")[:4] == [200, 200, 200, 16] and html.count("x" * 200 + "… (20,000 characters)") == 3
    assert _runs(html, "z")[0] == 1000 and _runs(html, "y")[0] == 1000 and _runs(html, "w")[0] == 16
    # Nothing is lost from the Source section: the lines read whole once the break opportunities go.
    source = html[html.index('<section id="source"'):].replace("<wbr>", "")
    for letter in "xyzw":
        assert letter * 20_000 in source
    assert len(html) < len(render(check_text(_long_strings_spec(10), "long.eff", folder=os.path.join(ROOT, "examples")),
                                  "html")) + 2 * 100_000  # grows with the 100,000 characters added, once


@pytest.mark.skipif(not shutil.which("pdftotext"), reason="needs pdftotext (poppler-utils; make sysdeps)")
def test_cli_pdf_with_long_strings_is_bounded(tmp_path):
    """Through the CLI: the PDF of 100,000 more characters in five long strings has a
    bounded size and page count, and shows the cut title with its full length."""
    sizes = {}
    for n in (10, 20_000):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / "llm3b_64_steps.csv").write_bytes(pathlib.Path(ROOT, "examples", "llm3b_64_steps.csv").read_bytes())
        (folder / "long.eff").write_text(_long_strings_spec(n))
        done = run_cli("report", str(folder / "long.eff"), "-o", str(folder / "long.pdf"))
        assert done.returncode == 1, done.stderr[-2000:]  # example A's two EFF601 findings
        text = subprocess.run(["pdftotext", str(folder / "long.pdf"), "-"], capture_output=True, timeout=TIMEOUT).stdout.decode()
        sizes[n] = ((folder / "long.pdf").stat().st_size, text.count("\f"))
    assert "x" * 60 in text and "(20,000 characters)" in text
    (short_bytes, short_pages), (long_bytes, long_pages) = sizes[10], sizes[20_000]
    # The Source section holds the 100,000 characters once (about 100 monospace characters a row right of the
    # gutter, 74 rows a page: 14 pages), plus a page of slack; the short report has no forced break to absorb it.
    assert long_pages <= short_pages + 15, sizes
    assert long_bytes < short_bytes + 10 * 100_000, sizes


def test_rank_grid_bound_at_its_edge(tmp_path):
    """63 ranks × 1,115 steps = 70,245 cells.  An L-shaped table (rank 0 at every step, step 0 at
    every rank) has 63 + 1,115 - 1 = 1,177 rows: 4 × 1,177 + 65,536 = 70,244 < 70,245, refused.
    One more row (an inner cell) allows 70,248 cells, and the same grid loads."""
    rows = [(0, s) for s in range(1115)] + [(r, 0) for r in range(1, 63)]
    assert len(rows) == 1177
    spec = 'eff 1\nrun a {\n  ranks { samples = file "ranks.csv" }\n}\n'
    for extra, refused in (([], True), ([(1, 1)], False)):
        (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n"
                                            + "".join(f"{r},n{r // 8},{s},1,0.1,0\n" for r, s in rows + extra))
        result = check_text(spec, "s.eff", folder=str(tmp_path))
        found = [d.message for d in result.diagnostics if d.code == "EFF030"]
        if refused:
            assert found == ["`ranks.csv`: 63 ranks × 1,115 steps is a grid of 70,245 cells for 1,177 rows; "
                             "the limit is 4 cells per row"]
        else:
            assert found == [] and result.evaluation.runs["a"].diagnosis is not None


def test_long_run_and_scaling_ids_are_elided_in_reports():
    """Example C with 20,000-character run and scaling ids: headings and tables cut them at 200
    characters, messages and input names at 1,000, chart labels at 40; the report stays small."""
    import re

    n = 20_000
    text = (pathlib.Path(ROOT, "examples", "example_c_scaling.eff").read_text()
            .replace("base_8", "b" * n).replace("scaled_64", "s" * n).replace("dp_strong", "d" * n))
    result = check_text(text, "ids.eff", folder=os.path.join(ROOT, "examples"))
    assert result.evaluation is not None and len(result.evaluation.scalings) == 1
    html = render(result, "html").decode()
    page = html[:html.index('<section id="source"')]
    for letter in "bsd":
        assert _runs(page, letter)[0] <= 1000, letter
        # Headings and scaling tables: the 200-character cut.
        assert re.search(f"<h3>{letter}{{200}}… \\(20,000 characters\\)", page), letter
    assert "b" * 39 + "…" in page and "b" * 40 + "<" not in page  # the chart's direct label, as text in an SVG comment
    assert len(html) < 600_000, len(html)  # 128 KB with the short ids; 3.2 MB when the chart drew each id whole
    md = render(result, "md").decode()
    assert max(_runs(md, "b")[0], _runs(md, "s")[0], _runs(md, "d")[0]) <= 1000
