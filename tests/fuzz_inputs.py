"""The suite's fuzz inputs, shared by the fuzzers of every stage (security, fmt, the IR's JSON).

Deterministic, like the tests that draw from them:

* ``GRAMMAR``: programs generated from the grammar itself (``hypothesis.extra.lark.from_lark``),
  with every terminal padded by spaces, since ``from_lark`` joins tokens with no separator
  and ``runx`` is not ``run x``; the header is pinned to ``eff 1``;
* ``mutated()``: the shipped examples cut, duplicated, spliced, given extreme numbers,
  stray brackets and control characters;
* ``fuzz(n)``: the settings every fuzzer runs under.
"""

from __future__ import annotations

import os
import pathlib
import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark

from effspec.front import keys as K
from effspec.front.syntax import grammar_text

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SEEDS = [pathlib.Path(EXAMPLES, f).read_text(encoding="utf-8")
         for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".eff")]

def fuzz(max_examples: int) -> settings:
    """Deterministic, no deadline (a loaded CI box is slow), no example database."""
    return settings(max_examples=max_examples, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


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


GRAMMAR_ERROR: Exception | None = None
try:
    GRAMMAR = _grammar_strategy()
except Exception as exc:  # pragma: no cover - a grammar the generator cannot read is itself a failure
    GRAMMAR = None
    GRAMMAR_ERROR = exc


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
