"""Property tests: any text ends in a result with coded diagnostics.

Three sources of input (the first two from tests/fuzz_inputs.py), deterministic
(``derandomize=True``) so that CI sees the same inputs every run, and sized to
stay well under a minute on two cores:

* programs generated from the grammar itself (``hypothesis.extra.lark.from_lark``),
  with every terminal padded by spaces, since ``from_lark`` joins tokens with
  no separator and ``runx`` is not ``run x``;
* the shipped examples, mutated: cut, duplicated, spliced, extreme numbers,
  stray brackets, control characters;
* raw random text.

Every input goes through the whole pipeline (parse, build, evaluate, audit)
and both machine outputs (text and strict JSON).  Any other exception is a
finding: it is counted, and the test fails with the input that caused it.
The tally is printed by ``tests/conftest.py`` as ``fuzz: N inputs, 0 uncaught
exceptions``.  A finding becomes a file in ``tests/regressions/``.
"""

from __future__ import annotations

import json
import os
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from fuzz_inputs import GRAMMAR, GRAMMAR_ERROR, fuzz, mutated  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from effspec import check_text  # noqa: E402
from effspec.front import keys as K  # noqa: E402
from effspec.report.text import result_json  # noqa: E402
from effspec.report.text import text as text_output  # noqa: E402


def run_pipeline(text: str, tally) -> None:
    """The whole pipeline and both outputs; count the input and any escape."""
    tally.inputs += 1
    try:
        result = check_text(text, "fuzz.eff")
        text_output(result)
        json.dumps(result_json(result), allow_nan=False)
    except BaseException:
        tally.uncaught += 1
        raise
    for d in result.diagnostics:
        assert re.fullmatch(r"EFF\d{3}", d.code), d
        assert d.span is None or (d.span.line >= 1 and d.span.column >= 1), d


# ----------------------------------------------------------------------------
# From the grammar

@fuzz(800)
@given(data=st.data())
def test_programs_from_the_grammar(data, fuzz_tally):
    text = data.draw(GRAMMAR, label="program")
    run_pipeline(text, fuzz_tally)


def test_grammar_strategy_builds():
    assert GRAMMAR is not None, GRAMMAR_ERROR


# ----------------------------------------------------------------------------
# Mutated examples

@fuzz(1000)
@given(text=mutated())
def test_mutated_examples(text, fuzz_tally):
    run_pipeline(text, fuzz_tally)


# ----------------------------------------------------------------------------
# Raw text


@fuzz(250)
@given(text=st.one_of(st.text(max_size=200), st.text(alphabet="eff1 run{}=()[]#\"\\.-+*/,%0123456789abcsT\n", max_size=200)
                      .map(lambda s: "eff 1\n" + s)))
def test_random_text(text, fuzz_tally):
    run_pipeline(text, fuzz_tally)


# ----------------------------------------------------------------------------
# Bounded cost (issue 19): each input's output and CPU time have a bound that
# is linear in the input.  Before the caps, 4,000 duplicate keys on one line
# printed 289 MB in 46 s, and a 123 KB per-rank table with a distinct rank and
# step on every row took 86 s and 2.1 GB.  CPU time (process_time), not wall
# clock, so a loaded machine does not make the bound flaky; the bounds are
# generous (the inputs take well under a second each) yet far below the
# quadratic costs they guard against.

from effspec.diagnostics import MAX_DIAGNOSTICS  # noqa: E402
from effspec.ranks.stats import MAX_GRID_FACTOR, MAX_GRID_SLACK  # noqa: E402


def _cpu_bound(input_bytes: int) -> float:
    """Seconds of CPU one input may take: 3 s, and 20 µs more per input byte."""
    return 3.0 + 20e-6 * input_bytes


def _output_bound(input_bytes: int) -> int:
    """Bytes of text or JSON one input may print: a constant (at most 201
    findings, each clipped) plus twice the input."""
    return 1_500_000 + 2 * input_bytes


_ITEM_VALUES = ["1", "4096 token/sequence", "2 sequence", '"x"', "1e400", "-1", "true", "((1", "1 s", "palm", "[1, 2]"]


@st.composite
def many_findings_on_one_line(draw):
    """One block holding a short pattern of assignments repeated hundreds or
    thousands of times: duplicate keys, unknown keys, bad values; mostly on one
    line (so every finding echoes the same long line), sometimes one a line."""
    block = draw(st.sampled_from(["work", "model", "timing", "parallelism", "convention"]))
    keys = sorted(K.BLOCKS[block]) + ["no_such_key", "x" * 300]
    pattern = draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(_ITEM_VALUES)), min_size=1, max_size=4))
    repeats = draw(st.integers(1, 3_000))
    sep = draw(st.sampled_from([" ", " ", " ", "\n  "]))
    items = sep.join(f"{k} = {v}" for k, v in pattern)
    return f"eff 1\nrun a {{ {block} {{ " + sep.join([items] * repeats) + " } }\n"


@fuzz(40)
@given(text=many_findings_on_one_line())
def test_many_findings_on_one_line_cost_linear_output_and_time(text, fuzz_tally):
    import time

    size = len(text.encode())
    start = time.process_time()
    run_pipeline(text, fuzz_tally)
    result = check_text(text, "fuzz.eff")
    shown = text_output(result).encode()
    document = json.dumps(result_json(result), allow_nan=False).encode()
    spent = time.process_time() - start
    assert len(result.diagnostics) <= MAX_DIAGNOSTICS + 1
    assert len(shown) <= _output_bound(size) and len(document) <= _output_bound(size), (size, len(shown), len(document))
    assert spent <= 2 * _cpu_bound(size), (size, spent)  # two checks of the input


@st.composite
def sparse_rank_grids(draw):
    """A per-rank table's (rank, step) pairs: distinct on every row (the issue's
    reproduction), scattered over a large range, or a dense grid; rows from a
    drawn seed, so a large table costs hypothesis one integer, not its rows."""
    import random

    rows = draw(st.integers(1, 4_000))
    shape = draw(st.sampled_from(["diagonal", "scattered", "dense", "dense_with_holes"]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if shape == "diagonal":
        pairs = [(i, i) for i in range(rows)]
    elif shape == "scattered":
        span = draw(st.sampled_from([10, 1_000, 10**6, 2**31 - 1]))
        pairs = list(dict.fromkeys((rng.randrange(span), rng.randrange(span)) for _ in range(rows)))
    else:
        ranks = draw(st.integers(1, 64))
        pairs = [(i % ranks, i // ranks) for i in range(rows)]
        if shape == "dense_with_holes":
            pairs = [p for p in pairs if rng.random() < 0.7] or pairs[:1]
    return pairs


@fuzz(40)
@given(pairs=sparse_rank_grids())
def test_sparse_rank_grids_cost_linear_memory_and_time(pairs, fuzz_tally):
    """The grid bound refuses exactly the tables whose grid exceeds 4 cells a
    row plus 65,536; the rest load, and no table's memory follows its grid."""
    import tempfile
    import time
    import tracemalloc

    spec = 'eff 1\nrun a {\n  ranks { samples = file "ranks.csv" }\n}\n'
    csv_text = "rank,node,step,compute,comm,stall\n" + "".join(
        f"{r},n{r // 8},{s},1.{(r * 7 + s) % 10},0.1,0\n" for r, s in pairs)
    cells = len({r for r, _ in pairs}) * len({s for _, s in pairs})
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "ranks.csv"), "w") as fh:
            fh.write(csv_text)
        fuzz_tally.inputs += 1
        tracemalloc.start()
        start = time.process_time()
        try:
            result = check_text(spec, "fuzz.eff", folder=folder)
            out = text_output(result).encode()
        except BaseException:
            fuzz_tally.uncaught += 1
            raise
        finally:
            spent = time.process_time() - start
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    refused = [d for d in result.diagnostics if d.code == "EFF030" and "cells for" in d.message]
    assert bool(refused) == (cells > MAX_GRID_FACTOR * len(pairs) + MAX_GRID_SLACK), (cells, len(pairs), result.diagnostics)
    # Memory: the CSV's bytes a few times, and at most the allowed grid
    # (4 cells a row + 65,536) in a dozen float matrices; never the refused grid.
    allowed_cells = MAX_GRID_FACTOR * len(pairs) + MAX_GRID_SLACK
    assert peak <= 50 * 2**20 + 20 * len(csv_text) + 12 * 8 * allowed_cells, (peak, len(pairs), cells)
    assert len(out) <= _output_bound(len(csv_text))
    assert spent <= _cpu_bound(len(csv_text)) + 5.0, (spent, len(pairs))  # + tracemalloc's own overhead
