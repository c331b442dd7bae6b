"""Property tests: any text ends in a result with coded diagnostics.

Three sources of input, deterministic (``derandomize=True``) so that CI sees
the same inputs every run, and sized to stay well under a minute on two cores:

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
import pathlib
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark  # noqa: E402

from effspec import check_text  # noqa: E402
from effspec.front import keys as K  # noqa: E402
from effspec.front.syntax import grammar_text  # noqa: E402
from effspec.report.text import result_json  # noqa: E402
from effspec.report.text import text as text_output

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples")
SEEDS = [pathlib.Path(EXAMPLES, f).read_text(encoding="utf-8")
         for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".eff")]

def fuzz(max_examples: int) -> settings:
    """Deterministic, no deadline (a loaded CI box is slow), no example database."""
    return settings(max_examples=max_examples, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


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

_KEY_NAMES = sorted({k for table in K.BLOCKS.values() for k in table} | set(K.BLOCKS) | set(K.RUN_BLOCKS))
_WORDS = sorted(set(_KEY_NAMES) | {"palm", "megatron", "causal", "full", "bf16", "catalog", "swiglu", "gelu",
                                   "dense_transformer", "custom", "true", "false", "median", "strong", "weak",
                                   "mfu", "hfu", "throughput", "paper", "measured", "log", "base", "a", "b"})


def _pad(strategy):
    return strategy.map(lambda s: f" {s} ")


def _grammar_strategy():
    from lark import Lark

    lark = Lark(grammar_text(), parser="lalr", lexer="contextual")
    literal = {t.name: _pad(st.just(t.pattern.value)) for t in lark.terminals if type(t.pattern).__name__ == "PatternStr"}
    explicit = dict(literal)
    explicit.update(
        NAME=_pad(st.one_of(st.sampled_from(_WORDS), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True))
                  .filter(lambda s: s not in ("run", "eff", "scaling", "claim", "from", "file", "column"))),
        NUMBER=_pad(st.one_of(st.sampled_from(["0", "1", "8", "16_384", "4.01", "989.4", "2.0e6", "405e9", "1e400",
                                               "1e-400", "0.0", "9" * 400, ".5", "1_e5"[:1]]),
                              st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))),
        UNIT=_pad(st.sampled_from(["s", "ms", "%", "TFLOP/s", "token/s", "token/sequence", "sequence", "device",
                                   "step", "param", "FLOP", "FLOP/token", "day", "W", "s^-1", "s^4*s^4", "s^9",
                                   "TFLOP/s/device"])),
        STRING=_pad(st.one_of(st.sampled_from(['"steps.csv"', '"Table 2"', '"H100-SXM5-80GB"', '"A100-SXM4-40GB"',
                                               '"../x.csv"', '"/etc/passwd"', '""', '"\\"q\\""']),
                              st.from_regex(r'"[a-z0-9 ._<>&]{0,12}"', fullmatch=True))),
        COMMENT=st.just(" # c\n"),
    )
    # Pin the version in the header (the random-text test covers bad headers):
    # otherwise nearly every program stops at EFF003 before the builder runs.
    return from_lark(lark, explicit=explicit).map(lambda t: re.sub(r"^\s*eff\s+\S+", "eff 1", t, count=1))


@fuzz(800)
@given(data=st.data())
def test_programs_from_the_grammar(data, fuzz_tally):
    text = data.draw(_GRAMMAR, label="program")
    run_pipeline(text, fuzz_tally)


try:
    _GRAMMAR = _grammar_strategy()
except Exception as exc:  # pragma: no cover - a grammar the generator cannot read is itself a failure
    _GRAMMAR = None
    _GRAMMAR_ERROR = exc


def test_grammar_strategy_builds():
    assert _GRAMMAR is not None, _GRAMMAR_ERROR


# ----------------------------------------------------------------------------
# Mutated examples

_NASTY = ["1e400", "-1", "0", "nan", "inf", "1e-400", "9" * 330, "((((", "))))", "[", "]", "{", "}", "\"", "\\",
          "\x00", "\u202e", "\x1b[31m", "#", "=", "claim", "run", "file \"../../etc/passwd\" column \"x\"",
          "- - - - 1", "1 / 0", "s^9", "/", "*", "\n", ",", "...", "é", "\ufeff", "1_", "_1", "1e", "1e+"]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 40)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "splice", "number"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(_NASTY)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.one_of(st.sampled_from(_NASTY), st.text(max_size=8))) + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] * draw(st.integers(1, 3)) + text[j:]
        elif op == "splice":
            other = draw(st.sampled_from(SEEDS))
            k = draw(st.integers(0, len(other)))
            text = text[:i] + other[k:k + (j - i) + 20] + text[j:]
        else:
            numbers = list(re.finditer(r"\b[0-9][0-9_.eE+-]*", text))
            if numbers:
                m = draw(st.sampled_from(numbers))
                value = draw(st.sampled_from(["1e400", "0", "-0", "1e-300", "1e30", "1e31", "3", "0.0001", "9" * 20]))
                text = text[:m.start()] + value + text[m.end():]
    return text


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
