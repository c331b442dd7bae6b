"""`effspec traces` on traces as people capture them (issue 32): the rank from the file name, every missing
piece named at once, no `ProfilerStep` (one window, or `--window LABEL`), every device the profiler records.

Hand-made traces; the derivations are in the comments.  The real public traces are tests/test_traces_real.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_traces import _cpu_events, _expect_error, read_table, run_traces


def _doc(path: Path, events: list, info: object = None) -> Path:
    doc: dict = {"schemaVersion": 1, "traceEvents": events}
    if info is not None:
        doc["distributedInfo"] = info
    path.write_text(json.dumps(doc))
    return path


# ---------------------------------------------------------------------------- the rank from the file name


@pytest.mark.parametrize("name, rank", [("rank-3.json", 3), ("rank3_trace.json", 3), ("job_rank_12.pt.trace.json", 12),
                                        ("profile_trace_RANK_0.json", 0), ("rank-0.Apr_03_18_51_38.1102.pt.trace.json", 0)])
def test_rank_from_name_reads_the_rank_when_the_field_is_absent(tmp_path, name, rank):
    trace = _doc(tmp_path / name, _cpu_events(), {"backend": "nccl"})
    out = tmp_path / "r.csv"
    status, err = run_traces(trace, "-o", out, "--rank-from", "name", "--partial")
    assert status == 0, err
    assert f"rank {rank} read from the file name" in err
    assert {r["rank"] for r in read_table(out)[1]} == {str(rank)}


def test_without_rank_from_name_a_file_name_is_never_read(tmp_path):
    # No distributedInfo at all: a single process, rank 0, whatever the name says.
    trace = _doc(tmp_path / "rank-5.json", _cpu_events())
    out = tmp_path / "r.csv"
    assert run_traces(trace, "-o", out)[0] == 0
    assert {r["rank"] for r in read_table(out)[1]} == {"0"}
    # A world size without a rank is refused, and the help names --rank-from name.
    trace = _doc(tmp_path / "rank-5.json", _cpu_events(), {"world_size": 8})
    err = _expect_error(tmp_path, [trace], "EFF003", "no `distributedInfo.rank`")
    assert "--rank-from name" in err


@pytest.mark.parametrize("name, why", [("trace.json", "its file name holds no rank"),
                                       ("frank3.json", "its file name holds no rank"),
                                       ("rank-1_rank-2.json", "its file name holds 2 ranks (1, 2)")])
def test_a_name_without_one_rank_is_refused(tmp_path, name, why):
    trace = _doc(tmp_path / name, _cpu_events(), {"world_size": 4})
    _expect_error(tmp_path, [trace, "--rank-from", "name"], "EFF003", f"no `distributedInfo.rank`: the trace does "
                  f"not say which rank wrote it, and {why}")


def test_a_name_that_contradicts_the_field_is_refused(tmp_path):
    trace = _doc(tmp_path / "rank-2.json", _cpu_events(), {"rank": 1, "world_size": 4})
    _expect_error(tmp_path, [trace, "--rank-from", "name", "--partial"], "EFF003",
                  "the file name says rank 2, `distributedInfo.rank` says 1")


def test_a_refusal_names_every_missing_piece(tmp_path):
    # No rank (a world of 4 without one) and no steps (no ProfilerStep, no device activity): one error, both pieces.
    events = [e for e in _cpu_events() if not e["name"].startswith("ProfilerStep")]
    trace = _doc(tmp_path / "t.json", events, {"world_size": 4})
    err = _expect_error(tmp_path, [trace], "EFF003", "no `distributedInfo.rank`: the trace does not say which rank "
                        "wrote it; and no `ProfilerStep#N` span: the trace has no steps to split, and no device "
                        "activity to read as one window")
    assert "--rank-from name" in err and "prof.step()" in err
