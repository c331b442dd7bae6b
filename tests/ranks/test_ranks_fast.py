"""The per-rank loader's pyarrow fast path against the numpy loader: tested both ways.

Every per-rank CSV in examples/, tests/fixtures/ and tests/regressions/, and
hypothesis-generated tables (well-formed and malformed), are loaded with the
fast path and with ``EFFSPEC_NO_FAST_CSV=1``; the tables must be identical
(same dtypes, the same bytes, so -0.0 and 0.0 differ) and so must the
diagnostics (code, severity, message, help, span).  The fast path must also
really be taken on well-formed files, not only fall back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import effspec
from effspec.diagnostics import Span
from effspec.ranks import fast_csv, loader
from effspec.ranks.table import COLUMNS
from effspec.report.text import result_json

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("rank", "node", "step", "compute", "comm", "stall", "step_time", "comm_exposed", "idle", "other")
SPAN = Span(3, 21, 3, 38)

try:
    import pyarrow  # noqa: F401
    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False
needs_pyarrow = pytest.mark.skipif(not HAVE_PYARROW, reason="pyarrow is not installed (the `fast` extra): "
                                   "the fast path cannot be compared with the numpy loader")


def _is_rank_csv(path: Path) -> bool:
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if not ln.startswith("#")]
    names = {c.strip() for c in lines[0].split(",")} if lines else set()
    return set(COLUMNS) <= names


RANK_CSVS = sorted(p.relative_to(ROOT).as_posix() for folder in ("examples", "tests/fixtures", "tests/regressions")
                   for p in (ROOT / folder).rglob("*.csv") if _is_rank_csv(p))


class Spy:
    """Counts the tables the fast path returned (not the fallbacks)."""

    def __init__(self, monkeypatch):
        self.tables = 0
        real = loader._load_fast

        def spy(*args):
            table = real(*args)
            self.tables += table is not None
            return table

        monkeypatch.setattr(loader, "_load_fast", spy)


def load(path: str, fast: bool):
    old = os.environ.pop(fast_csv.ENV_SWITCH, None)
    try:
        if not fast:
            os.environ[fast_csv.ENV_SWITCH] = "1"
        diags: list = []
        table = loader.load_rank_table(path, os.path.basename(path), SPAN, diags)
        return table, diags
    finally:
        os.environ.pop(fast_csv.ENV_SWITCH, None)
        if old is not None:
            os.environ[fast_csv.ENV_SWITCH] = old


def assert_same(a, b) -> None:
    (ta, da), (tb, db) = a, b
    assert da == db
    assert (ta is None) == (tb is None)
    if ta is None:
        return
    for name in FIELDS:
        x, y = getattr(ta, name), getattr(tb, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert x.tobytes() == y.tobytes(), name  # bit for bit: -0.0 is not 0.0
    assert (ta.node_names, ta.provenance, ta.first_row) == (tb.node_names, tb.provenance, tb.first_row)


def test_the_corpus_has_the_known_rank_csvs():
    assert {"examples/straggler_ranks.csv", "tests/regressions/zero_ranks.csv"} <= set(RANK_CSVS)


@needs_pyarrow
@pytest.mark.parametrize("rel", RANK_CSVS)
def test_every_rank_csv_loads_the_same_both_ways(rel, monkeypatch):
    spy = Spy(monkeypatch)
    fast = load(str(ROOT / rel), fast=True)
    slow = load(str(ROOT / rel), fast=False)
    assert_same(fast, slow)
    # A file the numpy loader accepts was read by pyarrow, not by the fallback.
    assert spy.tables == (fast[0] is not None)


@needs_pyarrow
def test_the_straggler_example_checks_byte_identically_both_ways(monkeypatch):
    outputs = []
    for switch in ("0", "1"):
        monkeypatch.setenv(fast_csv.ENV_SWITCH, switch)
        result = effspec.load(ROOT / "examples" / "straggler_ranks.eff")
        outputs.append(result_json(result))
    assert outputs[0] == outputs[1]
    assert outputs[0]["runs"]["llama7b_64"]["diagnosis"]["ranks"] == [37]


def test_the_switch_turns_the_fast_path_off(monkeypatch):
    for value, on in (("", True), ("0", True), ("1", False), ("yes", False)):
        monkeypatch.setenv(fast_csv.ENV_SWITCH, value)
        assert fast_csv.enabled() is on


def test_the_switch_keeps_pyarrow_unimported(tmp_path):
    (tmp_path / "r.csv").write_text("rank,node,step,compute,comm,stall\n0,n0,0,1.0,0.1,0\n")
    code = ("import sys; from effspec.ranks import loader\n"
            f"t = loader.load_rank_table({str(tmp_path / 'r.csv')!r}, 'r.csv', None, [])\n"
            "print(t.rows, 'pyarrow' in sys.modules)")
    env = dict(os.environ, EFFSPEC_NO_FAST_CSV="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["1", "False"], out.stderr


@needs_pyarrow
def test_the_fast_path_reads_hand_checked_values(tmp_path, monkeypatch):
    spy = Spy(monkeypatch)
    path = tmp_path / "r.csv"
    path.write_text("# from two traces\nstall,node,rank,step,compute,comm,comm_exposed\n"
                    "0.5,b,1,0,1.25,0.125,0.0625\n"
                    "0,a,0,0,2,1e-3,-0\n"
                    "0.1,b,1,1,0.1234567890123456789,0.1,0.1\n")
    table, diags = load(str(path), fast=True)
    assert spy.tables == 1 and diags == []
    assert table.rank.tolist() == [1, 0, 1] and table.step.tolist() == [0, 0, 1]
    assert table.node_names == ("a", "b") and table.node.tolist() == [1, 0, 1]
    assert table.compute.tolist() == [1.25, 2.0, float("0.1234567890123456789")]
    assert table.comm.tolist() == [0.125, 0.001, 0.1]
    assert table.comm_exposed.tolist() == [0.0625, 0.0, 0.1]
    assert np.signbit(table.comm_exposed[1])  # `-0` is read as -0.0 by float() too
    assert table.provenance == ("from two traces",) and table.first_row == 3


@needs_pyarrow
@pytest.mark.parametrize("body, words", [
    ("0,n0,0,abc,0.1,0", "row 2, column `compute`: `abc` is not a number"),
    ("0,n0,0,1.0,-0.2,0", "row 2, column `comm`: `-0.2` is not a finite time"),
    ("0.5,n0,0,1.0,0.2,0", "row 2, column `rank`: `0.5` is not a whole number"),
    ("0,n0,0,1.0,0.2", "row 2: 5 cells, the header names 6"),
    ("0,n0,0,1,0,0\n0,n1,1,1,0,0", "row 3: rank 0 is on node `n1`, but on `n0` in row 2"),
    ("0,,0,1,0,0", "row 2, column `node`: empty"),
    ("0,n0,0,0,0,0", "row 2: `compute` + `comm` + `stall` is 0 s"),
    ("0,n0,0,inf,0,0", "row 2, column `compute`: `inf` is not a finite time"),
    ("0,n0,0,1e400,0,0", "row 2, column `compute`: `1e400` is not a finite time"),
    ("0,n0,0,1,0,0\n\n1,n0,0,1,0,0", None),  # a blank line: the csv module's path, accepted
    ('0,"n0",0,1,0,0', None),
    ("0,n0,0, 1 ,0,0", None),
    ("0,n0,0,1_0,0,0", None),  # float() reads 10
])
def test_malformed_rows_give_the_numpy_loaders_diagnostic(tmp_path, body, words):
    path = tmp_path / "r.csv"
    path.write_text("rank,node,step,compute,comm,stall\n" + body + "\n")
    fast, slow = load(str(path), fast=True), load(str(path), fast=False)
    assert_same(fast, slow)
    if words is None:
        assert fast[0] is not None
    else:
        assert len(fast[1]) == 1 and words in fast[1][0].message and fast[1][0].span == SPAN


# -- hypothesis: generated tables, mostly well-formed, some broken ----------------------------------

WELL_FORMED_NUMBERS = st.one_of(
    st.integers(0, 10**6).map(str),
    st.floats(0, 1e4, allow_nan=False).map(repr),
    st.floats(0, 1e4, allow_nan=False).map(lambda x: f"{x:.6f}"),
    st.floats(0, 1e4, allow_nan=False).map(lambda x: f"{x:.20f}"),  # more digits than a double holds
    st.decimals(0, 10**4, allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(["0", "-0", "0.0", ".5", "5.", "1e-3", "1E+2", "2.5e-300", "1e-330", "00012.50", "+3"]),
)
ODD_CELLS = st.sampled_from(["", " ", "abc", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1", "1_0", " 2 ",
                             "0x10", "1e", "e5", "--1", "1..2", "１", "1.5\t", '"1"', "0.5", "1,5", "∞"])
NODE_NAMES = st.one_of(st.sampled_from(["n0", "n1", "node07", "gpu-a", "é", "n 2"]),
                       st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=',"\r\n'),
                               min_size=0, max_size=6))


@st.composite
def rank_csvs(draw) -> bytes:
    extra = draw(st.lists(st.sampled_from(["step_time", "comm_exposed", "idle", "other", "note"]), unique=True, max_size=3))
    header = draw(st.permutations(["rank", "node", "step", "compute", "comm", "stall", *extra]))
    broken = draw(st.integers(0, 3)) == 0  # a quarter of the tables may have odd cells
    nodes = draw(st.lists(NODE_NAMES, min_size=1, max_size=4))
    lines = []
    for i in range(draw(st.integers(1, 12))):
        rank = draw(st.integers(0, 5))
        cells = {"rank": str(rank), "node": nodes[rank % len(nodes)], "step": str(i // 6), "note": "x"}
        for name in header:
            if name not in cells:
                cells[name] = draw(WELL_FORMED_NUMBERS)
        if broken and draw(st.booleans()):
            cells[draw(st.sampled_from(header))] = draw(st.one_of(ODD_CELLS, NODE_NAMES))
        lines.append(",".join(cells[name] for name in header))
    if broken and draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "1,2", "0,n0,0,1,1,1,1,1,1", '"a"'])))
    comments = draw(st.lists(st.sampled_from(["# a trace", "#", "# é"]), max_size=2))
    end = draw(st.sampled_from(["\n", "", "\r\n"])) if broken else "\n"
    text = "\n".join([*comments, ",".join(header), *lines]) + end
    if broken and draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8")


@needs_pyarrow
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(rank_csvs())
def test_generated_tables_load_the_same_both_ways(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ranks.csv")
        with open(path, "wb") as fh:
            fh.write(data)
        assert_same(load(path, fast=True), load(path, fast=False))


@needs_pyarrow
def test_generated_well_formed_tables_take_the_fast_path(monkeypatch):
    """Not only fallbacks: most well-formed generated tables are read by pyarrow."""
    spy = Spy(monkeypatch)
    taken = accepted = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ranks.csv")
        rng = np.random.default_rng(17)
        for _ in range(50):
            rows = int(rng.integers(1, 200))
            rank = rng.integers(0, 16, rows)
            lines = [f"{r},n{r // 4},{s},{float(c)!r},{m:.9f},{z:.3e}" for r, s, c, m, z in
                     zip(rank, rng.integers(0, 10, rows), rng.random(rows) + 0.1, rng.random(rows), rng.random(rows),
                         strict=True)]
            with open(path, "w") as fh:
                fh.write("rank,node,step,compute,comm,stall\n" + "\n".join(lines) + "\n")
            before = spy.tables
            table, diags = load(path, fast=True)
            accepted += table is not None
            taken += spy.tables - before
            assert_same((table, diags), load(path, fast=False))
    assert accepted == 50 and taken == 50


NUMBER_TEXTS = st.one_of(
    st.floats(min_value=0, allow_nan=False, allow_infinity=False).map(repr),  # subnormals to 1.7e308
    st.floats(min_value=0, allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.17e}"),
    st.text(alphabet="0123456789.-+eE_ ", min_size=1, max_size=30),  # mostly not numbers: the fallback's cases
    st.from_regex(r"\A[0-9]{1,40}(\.[0-9]{0,40})?([eE][-+]?[0-9]{1,3})?\Z"),
)


@needs_pyarrow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(NUMBER_TEXTS, min_size=1, max_size=20))
def test_generated_number_cells_read_as_float_reads_them(cells):
    """pyarrow's parser gives float()'s double, or the file falls back and the numpy loader reads it."""
    text = "rank,node,step,compute,comm,stall\n" + "".join(f"{i},n,0,1,{c},0\n" for i, c in enumerate(cells))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ranks.csv")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        fast = load(path, fast=True)
        assert_same(fast, load(path, fast=False))
    if fast[0] is not None:
        assert fast[0].comm.tolist() == [float(c) for c in cells]


@needs_pyarrow
@pytest.mark.parametrize("segment", [1, 40, 97, 1 << 20])
def test_segment_boundaries_do_not_change_the_table(tmp_path, monkeypatch, segment):
    """pyarrow reads the body a segment at a time, cut after a line end: any cut gives the same table."""
    rng = np.random.default_rng(segment)
    rows = [f"{r},node{r % 3},{s},{rng.random() + 0.01!r},{rng.random():.4f},0" for s in range(7) for r in range(5)]
    path = tmp_path / "r.csv"
    for end in ("\n", ""):  # with and without a final line end
        path.write_text("rank,node,step,compute,comm,stall\n" + "\n".join(rows) + end)
        monkeypatch.setattr(fast_csv, "SEGMENT_BYTES", segment)
        spy = Spy(monkeypatch)
        fast = load(str(path), fast=True)
        assert spy.tables == 1 and fast[0].rows == 35
        assert_same(fast, load(str(path), fast=False))


@needs_pyarrow
def test_the_fast_path_reads_the_loaders_bytes_and_opens_nothing(tmp_path, monkeypatch):
    """pyarrow is handed a buffer of the bytes read beneath the folder (front/files.py), never a
    path: it opens no file, so a symlink or a swap cannot redirect it."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    given_to_pyarrow = []
    real = pacsv.read_csv

    def read_csv(source, *args, **kwargs):
        given_to_pyarrow.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pacsv, "read_csv", read_csv)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(path) or real_open(path, *a, **k))
    path = tmp_path / "r.csv"
    path.write_text("rank,node,step,compute,comm,stall\n0,n0,0,1.0,0.1,0\n")
    spy = Spy(monkeypatch)
    table, diags = load(str(path), fast=True)
    assert spy.tables == 1 and table.rows == 1 and diags == []
    assert given_to_pyarrow and all(isinstance(s, pa.Buffer) for s in given_to_pyarrow)
    fast_opens = list(opened)
    opened.clear()
    load(str(path), fast=False)
    assert fast_opens and fast_opens == opened  # the same opens, component by component beneath the folder


@pytest.mark.slow  # 2,000 loads in a fresh process: ~15 s
@needs_pyarrow
def test_loads_under_tracemalloc_do_not_crash(tmp_path):
    """Handed a Python buffer, pyarrow's worker threads dropped it after the read, taking the GIL
    from a foreign thread, which raced with tracemalloc.stop() on CPython 3.11: a segfault within
    2,000 loads, 3 times out of 3 (tests/security/test_fuzz.py's rank-grid fuzz met it). The reader now gets
    a copy in pyarrow's own memory. A fresh process, so that a crash fails this test only."""
    code = f"""
import os, tracemalloc
from effspec.ranks import loader
path = os.path.join({str(tmp_path)!r}, "ranks.csv")
for i in range(2000):
    with open(path, "w") as fh:
        fh.write("rank,node,step,compute,comm,stall\\n" + "".join(f"{{r}},n{{r // 8}},{{i}},1.5,0.1,0\\n" for r in range(1 + i % 64)))
    tracemalloc.start()
    table = loader.load_rank_table(path, "ranks.csv", None, [])
    tracemalloc.stop()
    assert table is not None and table.rows == 1 + i % 64
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, EFFSPEC_NO_FAST_CSV="0"))
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr[-2000:]


@pytest.mark.slow  # `effspec traces` in a subprocess
@needs_pyarrow
@pytest.mark.parametrize("traces", [["tests/fixtures/traces/cpu/straggler/traces"],
                                    ["tests/fixtures/traces/hta", "--partial"]])  # 2 of 128 ranks
def test_tables_written_by_effspec_traces_load_the_same_both_ways(traces, tmp_path, monkeypatch):
    """`effspec traces` writes provenance comments and the optional columns (step_time, comm_exposed, idle, other)."""
    out = tmp_path / "ranks.csv"
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "effspec"), "traces", str(ROOT / traces[0]),
                           *traces[1:], "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = [ln for ln in out.read_text().splitlines() if not ln.startswith("#")][0].split(",")
    assert {"step_time", "comm_exposed", "idle", "other"} <= set(header)
    spy = Spy(monkeypatch)
    fast = load(str(out), fast=True)
    assert spy.tables == 1 and fast[0] is not None and fast[0].comm_exposed is not None and fast[0].provenance
    assert_same(fast, load(str(out), fast=False))
