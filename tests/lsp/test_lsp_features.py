"""The editor features at every position of every example: no exception, and sane answers.

In process (the subprocess tests in test_lsp.py cover the wire); needs lsprotocol.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lsprotocol", reason="the language server needs the `lsp` extra")

from lsprotocol import types as T  # noqa: E402

from effspec.lsp import features as F  # noqa: E402
from effspec.lsp.analysis import analyze  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_position_answers_without_error(example):
    text = example.read_text(encoding="utf-8")
    a = analyze(example.as_uri(), text)
    assert a.crash is None
    for line, content in enumerate(text.split("\n")):
        for col in range(0, len(content) + 1, 5):
            pos = T.Position(line=line, character=col)
            F.hover(a, pos)
            F.completion(a, pos)
            F.definition(a, pos)
    rng = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=10**6, character=0))
    F.code_actions(a, rng)
    F.document_symbols(a)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_claim_has_a_hover_and_every_checked_claim_a_hint(example):
    text = example.read_text(encoding="utf-8")
    a = analyze(example.as_uri(), text)
    views = F.claim_views(a)
    rng = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=10**6, character=0))
    hints = F.inlay_hints(a, rng, F.Settings())
    checked = [v for v in views if v.result is not None and v.result.reconstructed is not None]
    assert len(hints) == len(checked)
    for view in views:
        span = view.claim.name_span
        hover = F.hover(a, T.Position(line=span.line - 1, character=span.column - 1))
        assert hover is not None and f"claim `{view.claim.key}`" in hover.contents.value
        if view.result is not None and view.result.reconstructed is not None and view.metric is not None:
            assert view.metric.substituted in hover.contents.value


def test_every_key_of_the_table_has_reference_documentation():
    from effspec.front import keys as K

    missing = [(block, key) for block, table in K.BLOCKS.items() for key in table
               if (block, key) not in F.reference_tables()]
    assert missing == []


def test_broken_and_empty_texts_answer_without_error():
    for text in ("", "eff", "eff 1\nrun", "eff 1\nrun a {", "eff 1\nrun a { model { kind = ", '"', "}}}}", "eff 1\nscaling s { runs = [a, "):
        a = analyze("untitled:Untitled-1", text)
        lines = text.split("\n")
        pos = T.Position(line=len(lines) - 1, character=len(lines[-1]))
        F.hover(a, pos)
        F.completion(a, pos)
        F.definition(a, pos)
        F.document_symbols(a)
        F.diagnostics(a)


def test_a_written_peak_is_shown_beside_the_catalog_row():
    example = ROOT / "examples" / "example_b_vendor_claim.eff"
    text = example.read_text(encoding="utf-8")
    a = analyze(example.as_uri(), text)
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if line.strip().startswith("peak "))
    value = F.hover(a, T.Position(line=n, character=lines[n].index("peak") + 1)).contents.value
    # the vendor's 624 TFLOP/s is the A100's 2:4-sparse figure; the dense BF16 datasheet row is 312
    assert "written: **624 TFLOP/s** (paper: footnote 3)" in value
    assert "**catalog row** `A100-SXM4` · bf16 · dense" in value and "**312 TFLOP/s**" in value


def test_completion_inside_a_lora_block_offers_its_keys_and_targets():
    text = ("eff 1\nrun r {\n  model {\n    kind = dense_transformer\n    \n    lora {\n      \n"
            "      targets = [\n    }\n  }\n}\n")
    a = analyze("file:///lora.eff", text)
    labels = {i.label for i in F.completion(a, T.Position(line=4, character=4)).items}  # in `model`
    assert {"layers", "lora"} <= labels
    labels = {i.label for i in F.completion(a, T.Position(line=6, character=6)).items}  # in `lora`
    assert labels == {"rank", "targets"}
    labels = {i.label for i in F.completion(a, T.Position(line=7, character=17)).items}  # after `targets = [`
    assert labels == {"q", "k", "v", "o", "gate", "up", "down"}


def test_hybrid_mixer_blocks_have_hover_and_completion():
    example = ROOT / "examples" / "nemotron_h_56b.eff"
    text = example.read_text(encoding="utf-8")
    a = analyze(example.as_uri(), text)
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if line.strip().startswith("state_size"))
    value = F.hover(a, T.Position(line=n, character=lines[n].index("state_size") + 1)).contents.value
    assert "SSM state size per head" in value                  # the mamba2 table's row, not model's
    m = next(i for i, line in enumerate(lines) if line.strip().startswith("mamba2 {"))
    block = F.hover(a, T.Position(line=m, character=lines[m].index("mamba2") + 1)).contents.value
    assert "**`mamba2 { … }`** block" in block and "required: `state_size`" in block
    k = next(i for i, line in enumerate(lines) if line.strip().startswith("pattern"))
    blank = "\n".join(lines[:k + 1] + ["    "] + lines[k + 1:])     # an empty line inside `model`, after a string
    b = analyze(example.as_uri(), blank)
    labels = [item.label for item in F.completion(b, T.Position(line=k + 1, character=4)).items]
    assert "mamba2" in labels and "gated_deltanet" in labels and "pattern" in labels
