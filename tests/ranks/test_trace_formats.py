"""The trace formats of `effspec traces` (effspec.ranks.traces.formats): each is found by discovery, names
its files, and turns a bad file into a coded error.

Every test runs over every format discovered, so a new format (CONTRIBUTING.md, "Add a trace format") is
held to them with nothing listed here.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import cli

from effspec.ranks.traces import formats, run
from effspec.ranks.traces.parse import MAX_TRACE_BYTES, WHOLE_LIMIT, TraceError

FORMATS = sorted(formats.all_formats())


def test_kineto_is_a_format_and_the_default():
    assert "kineto" in FORMATS and formats.DEFAULT == "kineto"
    assert formats.all_formats()["kineto"].suffixes == (".json", ".json.gz")
    # a file named on the command line with no format's suffix is read as Kineto JSON, as before formats
    assert formats.format_for("trace.txt").name == "kineto"
    assert formats.format_for("dir/rank-1.pt.trace.json.gz").name == "kineto"


@pytest.mark.parametrize("name", FORMATS)
def test_a_format_names_its_module_and_its_files(name: str):
    fmt = formats.all_formats()[name]
    assert fmt.name == name and fmt.summary and fmt.suffixes
    assert all(s.startswith(".") and not s.endswith(".csv") for s in fmt.suffixes), fmt.suffixes  # a .csv is a table (--diff)
    for suffix in fmt.suffixes:
        assert formats.format_for(f"rank-0{suffix}").name == name


def test_no_two_formats_claim_a_file_name():
    claimed = [s for f in formats.all_formats().values() for s in f.suffixes]
    assert len(claimed) == len(set(claimed)), claimed
    assert formats.suffixes() == tuple(claimed)


@pytest.mark.parametrize("name", FORMATS)
def test_help_lists_the_format(name: str):
    fmt = formats.all_formats()[name]
    helped = cli("traces", "--help")
    assert helped.returncode == 0
    assert f"  {name:<10}{' '.join(fmt.suffixes):<22}{fmt.summary}\n" in helped.stdout


@pytest.mark.parametrize("name", FORMATS)
def test_a_folder_of_the_format_is_read(tmp_path: Path, name: str):
    fmt = formats.all_formats()[name]
    for k, suffix in enumerate(fmt.suffixes):
        (tmp_path / f"rank-{k}{suffix}").write_text("", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    items, problems = run.discover([str(tmp_path)])
    assert problems == []
    assert [Path(i.shown).name for i in items] == sorted(f"rank-{k}{s}" for k, s in enumerate(fmt.suffixes))


BAD = {"empty": b"", "binary": b"\xff\xfe\x00garbage\x80", "text": b"hello\nworld\n",
       "gzip of garbage": gzip.compress(b"\x00\x01\x02 not a trace"), "cut gzip": gzip.compress(b"x" * 1000)[:20]}


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("what", sorted(BAD))
def test_a_bad_file_is_a_coded_error(tmp_path: Path, name: str, what: str):
    fmt = formats.all_formats()[name]
    path = tmp_path / f"bad{fmt.suffixes[0]}"
    path.write_bytes(BAD[what])
    with pytest.raises(TraceError) as caught:
        top, events, _ = fmt.read(str(path), WHOLE_LIMIT, MAX_TRACE_BYTES, False, False, False)
        list(events)
        raise TraceError("none", "read without an error")
    assert caught.value.code in ("EFF003", "EFF030"), (caught.value.code, caught.value.message)


# ---------------------------------------------------------------------------- each format's fixture
# tests/fixtures/traces/formats/<format>/: traces of that format and `expected.csv`, the table `effspec traces`
# writes from them (its comment lines left out: they hold the files' hashes).  kineto's rank0.json holds two
# steps (the derivation is in expected.csv's terms, µs):
#   step 1: launches at 100 (GEMM, 500 µs) and 600 (NCCL all-reduce, 300 µs): the window runs from the first
#     kernel's start, 100, to the last end, 900: step_time 800, compute 500, comm 300, all exposed, no idle;
#   step 2: the window runs on from 900 to the memcpy's end, 1980: step_time 1080; GEMM 1100-1600 (compute 500),
#     all-reduce 1500-1900 (comm 400, 100 under the GEMM: exposed 300), memcpy 1950-1980 (other 30, memory 30),
#     idle 900-1100 and 1900-1950 = 250, each before a launch (idle_host_wait 250); stall = idle + other = 280.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "formats"


def test_every_format_has_a_fixture():
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == FORMATS


@pytest.mark.parametrize("name", FORMATS)
def test_the_fixture_reduces_to_its_expected_table(tmp_path: Path, name: str):
    folder = FIXTURES / name
    traces = sorted(p.name for p in folder.iterdir() if p.name.endswith(formats.all_formats()[name].suffixes))
    assert traces, f"{folder}: no trace of the format"
    done = cli("traces", str(folder), "-o", str(tmp_path / "ranks.csv"))
    assert done.returncode == 0, done.stderr
    table = [ln for ln in (tmp_path / "ranks.csv").read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert table == (folder / "expected.csv").read_text(encoding="utf-8").splitlines()
    assert f"{len(traces)} trace" in done.stderr
