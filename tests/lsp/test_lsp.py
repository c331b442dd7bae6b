"""`effspec lsp` driven over stdio with real JSON-RPC, as an editor drives it.

Each test talks to the server in a subprocess (tests/lsp_client.py frames the
messages).  Figures asserted are derived by hand in the comments of SMALL;
diagnostics are compared with `effspec check --format json` run as a separate
process.  No timing is asserted (benchmarks/lsp_latency.py measures latency).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra (pygls)")
pytest.importorskip("lsprotocol", reason="the language server needs the `lsp` extra (lsprotocol)")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lsp_client import Client, uri_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))

# MFU by hand: 1.2e10 FLOP/token x (2048 x 256 = 524,288 tokens) = 6.291456e15 FLOP per step;
# the peak: 16 devices x 312 TFLOP/s (A100 SXM4 BF16 dense, datasheet) = 4.992e15 FLOP/s;
# MFU = 6.291456e15 / (10 s x 4.992e15) = 0.1260308 = 12.60 %.  Tolerance: half the last
# written digit (0.05 %) + 1 % of 12.6 % (0.126 %) = 0.176 %.
# Throughput: 524,288 token / 10 s = 52,428.8 token/s (the claim, 48,000, is off: a mismatch).
# Strong scaling: speedup 10 / 5.5 = 1.818; efficiency = 1.818 / (32 / 16) = 0.90909 = 90.91 %.
SMALL = """eff 1

run small {
  title = "hand-checked"
  model { kind = custom  flops_per_token = 1.2e10 FLOP/token }
  convention { preset = megatron }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 16 device  dtype = bf16  peak = catalog }
  timing { step_time = [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10] s  warmup = 0 step  boundary = "step end, synchronized" }
  claim mfu = 12.6 %
  claim throughput = 48000 token/s
}

run big {
  title = "twice the devices"
  model { kind = custom  flops_per_token = 1.2e10 FLOP/token }
  convention { preset = megatron }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 32 device  dtype = bf16  peak = catalog }
  timing { step_time = [5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5, 5.5] s  warmup = 0 step  boundary = "step end, synchronized" }
}

scaling double {
  kind = strong
  baseline = small
  runs = [big]
  claim efficiency = 90.9 %
}
"""
MFU = 1.2e10 * 2048 * 256 / (10 * 16 * 312e12)
LINES = SMALL.split("\n")


def at(needle: str, occurrence: int = 0, offset: int = 0) -> dict:
    """The LSP position of the ``occurrence``-th ``needle`` in SMALL (+ ``offset`` characters)."""
    seen = 0
    for n, line in enumerate(LINES):
        col = line.find(needle)
        while col >= 0:
            if seen == occurrence:
                return {"line": n, "character": col + offset}
            seen += 1
            col = line.find(needle, col + 1)
    raise AssertionError(needle)


def server(*args: str) -> Client:
    return Client([sys.executable, "-m", "effspec", "lsp", *args], cwd=ROOT)


@pytest.fixture(scope="module")
def lsp(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lsp")
    client = server()
    caps = client.initialize(folder)
    client.caps = caps["capabilities"]
    client.folder = folder
    yield client
    client.close()


@pytest.fixture(scope="module")
def small(lsp):
    path = lsp.folder / "small.eff"
    path.write_text(SMALL, encoding="utf-8")
    uri = uri_of(path)
    lsp.open(uri, SMALL)
    lsp.small_diags = lsp.diagnostics(uri)
    return uri


def cli_json(path: Path) -> dict:
    proc = cli("check", str(path), "--format", "json", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    (doc,) = json.loads(proc.stdout)  # an array of file objects, even for one file
    return doc


def apply(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (ASCII text: UTF-16 columns are string indexes), last first."""
    lines = text.split("\n")

    def offset(pos):
        return sum(len(x) + 1 for x in lines[: pos["line"]]) + pos["character"]

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[: offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]):]
    return text


def hover_text(lsp, uri, position) -> str:
    result = lsp.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})
    assert result is not None, position
    return result["contents"]["value"]


# ----------------------------------------------------------------------------


def test_initialize_advertises_the_features(lsp):
    caps = lsp.caps
    for feature in ("hoverProvider", "completionProvider", "inlayHintProvider", "codeActionProvider",
                    "documentSymbolProvider", "definitionProvider", "documentFormattingProvider"):
        assert caps.get(feature), feature
    assert caps["textDocumentSync"]["openClose"] is True


def test_formatting_is_effspec_fmt(lsp):
    """textDocument/formatting returns `effspec fmt`'s layout; nothing for a text with syntax errors."""
    from effspec.fmt import format_text

    uri = uri_of(lsp.folder / "messy.eff")
    messy = "eff 1\nrun a { timing { step_time = 1 s   warmup = 0 step } # kept\n  claim mfu=40 % }\n"
    lsp.open(uri, messy)
    edits = lsp.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                    "options": {"tabSize": 2, "insertSpaces": True}})
    assert apply(messy, edits) == format_text(messy).text
    assert "# kept" in apply(messy, edits)
    broken = uri_of(lsp.folder / "broken.eff")
    lsp.open(broken, "eff 1\nrun a { timing { step_time = = 1 s } }\n")
    assert not lsp.request("textDocument/formatting", {"textDocument": {"uri": broken},
                                                       "options": {"tabSize": 2, "insertSpaces": True}})


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_published_diagnostics_equal_the_cli(lsp, example):
    uri = uri_of(example)
    lsp.open(uri, example.read_text(encoding="utf-8"))
    published = lsp.diagnostics(uri)
    expected = cli_json(example)["diagnostics"]
    assert [d["data"] for d in published] == expected
    for d, e in zip(published, expected, strict=True):
        assert d["code"] == e["code"]
        assert d["severity"] == {"error": 1, "warning": 2, "info": 3}[e["severity"]]
        # the examples are ASCII: UTF-16 columns are code points; LSP is 0-based
        assert d["range"] == {"start": {"line": e["line"] - 1, "character": e["column"] - 1},
                              "end": {"line": e["end_line"] - 1, "character": e["end_column"] - 1}}
        assert d["message"].startswith(e["message"])
        assert "codeDescription" not in d  # no documentation base configured: no link (never a guessed URL)
        assert [r["message"] for r in d.get("relatedInformation") or []] == e.get("notes", [])
    lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_diagnostics_of_the_small_spec_equal_the_cli(lsp, small):
    path = lsp.folder / "small.eff"
    assert [d["data"] for d in lsp.small_diags] == cli_json(path)["diagnostics"]
    assert [d["code"] for d in lsp.small_diags] == ["EFF601", "EFF304", "EFF304"]  # the throughput claim is off


def test_hover_on_a_claim_shows_value_status_formula_and_tolerance(lsp, small):
    text = hover_text(lsp, small, at("claim mfu", offset=7))
    value = float(re.search(r"reconstructed: \*\*([0-9.]+) %\*\*", text).group(1))
    assert value == pytest.approx(MFU * 100, abs=0.005)  # 12.60, to the four digits shown
    assert "✓ consistent" in text
    assert "mfu = model_flops_per_step / (step_time × aggregate_peak)" in text
    # the formula with the hand-derived numbers: 6.291456e15 FLOP, 10 s, 16 x 312 TFLOP/s = 4.992 PFLOP/s
    assert "6.291 PFLOP / (10 s × 4.992 PFLOP/s) = 12.6 %" in text
    assert "claimed: 12.6 % ± 0.176 %" in text


def test_hover_on_a_mismatched_claim_and_a_scaling_claim(lsp, small):
    text = hover_text(lsp, small, at("claim throughput", offset=8))
    assert "reconstructed: **52,429 token/s** ✗ mismatch" in text  # 524,288 token / 10 s
    text = hover_text(lsp, small, at("claim efficiency", offset=8))
    value = float(re.search(r"reconstructed: \*\*([0-9.]+) %\*\*", text).group(1))
    assert value == pytest.approx(100 * (10 / 5.5) / (32 / 16), abs=0.005)  # 90.91 %
    assert "✓ consistent" in text


def test_hover_on_a_key_shows_its_reference_entry(lsp, small):
    text = hover_text(lsp, small, at("seq_len", offset=2))
    assert "**`seq_len`** in `work`" in text and "`token/sequence`" in text and "> 0, ≤ 1e9" in text
    text = hover_text(lsp, small, at("warmup", offset=1))
    assert "unit: `step`" in text and "default (when not written): 0, assumed" in text
    text = hover_text(lsp, small, at("count", offset=1))
    assert "required" in text  # hardware needs accelerator and count


def test_hover_on_peak_catalog_shows_the_row_and_its_citation(lsp, small):
    from effspec.engine import catalog

    text = hover_text(lsp, small, at("catalog", offset=2))
    row = catalog.lookup("A100-SXM4-80GB", "bf16", "dense")
    assert "`A100-SXM4` · bf16 · dense" in text
    assert "**312 TFLOP/s**" in text  # the A100 datasheet's dense BF16 Tensor Core peak
    assert "× 16 active devices = 4.992 PFLOP/s" in text
    assert f"source: {row.citation}" in text


def test_inlay_hints_after_each_claim(lsp, small):
    hints = lsp.request("textDocument/inlayHint", {"textDocument": {"uri": small}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": len(LINES), "character": 0}}})
    assert [h["label"] for h in hints] == ["≈ 12.6 % ✓", "≈ 52,429 token/s ✗", "≈ 90.91 % ✓"]
    assert [h["position"] for h in hints] == [
        {"line": n, "character": len(LINES[n])} for n in (at("claim mfu")["line"], at("claim throughput")["line"],
                                                            at("claim efficiency")["line"])]


def test_inlay_hints_are_configurable(tmp_path):
    client = server()
    try:
        client.initialize(tmp_path, {"inlayHints": {"enabled": True, "status": False}})
        uri = uri_of(tmp_path / "s.eff")
        client.open(uri, SMALL)
        client.diagnostics(uri)
        rng = {"start": {"line": 0, "character": 0}, "end": {"line": len(LINES), "character": 0}}
        labels = [h["label"] for h in client.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": rng})]
        assert labels == ["≈ 12.6 %", "≈ 52,429 token/s", "≈ 90.91 %"]
        client.notify("workspace/didChangeConfiguration", {"settings": {"effspec": {"inlayHints": False}}})
        assert client.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": rng}) == []
    finally:
        client.close()


# ----------------------------------------------------------------------------
# Completion: one document with a cursor in every block


COMPLETION_DOC = """eff 1

run a {
  model {  }
  convention {  }
  work {  }
  parallelism {  }
  hardware {  }
  timing {  }
  breakdown {  }
  ranks {  }
  calendar {  }
  target {  }
  
}

run b { title = "b" }

scaling s {
  
}
"""


def complete(lsp, uri, text, line, character) -> list[str]:
    result = lsp.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    items = result["items"] if isinstance(result, dict) else result
    return [i["label"] for i in items]


def test_completion_offers_the_keys_valid_in_each_block(lsp):
    from effspec.front import keys as K

    uri = uri_of(lsp.folder / "complete.eff")
    lsp.open(uri, COMPLETION_DOC)
    lsp.diagnostics(uri)
    lines = COMPLETION_DOC.split("\n")
    for block in K.RUN_BLOCKS:
        n = next(i for i, ln in enumerate(lines) if ln.strip().startswith(block + " {"))
        labels = complete(lsp, uri, COMPLETION_DOC, n, lines[n].index("{") + 2)
        assert labels == list(K.BLOCKS[block]) + (list(K.MODEL_BLOCKS) if block == "model" else []), block
    run_level = complete(lsp, uri, COMPLETION_DOC, 13, 2)  # the empty line inside run a
    assert run_level[0] == "claim" and set(K.RUN_BLOCKS) <= set(run_level) and {"title", "source"} <= set(run_level)
    scaling_level = complete(lsp, uri, COMPLETION_DOC, 19, 2)
    assert scaling_level == ["claim", "kind", "baseline", "runs", "per_device"]
    assert complete(lsp, uri, COMPLETION_DOC, 16, 0) == ["run", "scaling"]  # between runs


def test_completion_of_values_units_accelerators_run_ids_and_claims(lsp):
    text = COMPLETION_DOC.replace("model {  }", "model { ffn =  }").replace(
        "work {  }", "work { seq_len = 2048  }").replace(
        "hardware {  }", 'hardware { accelerator =  peak =  }').replace("timing {  }", "timing { step_time = 4  }").replace(
        "scaling s {\n  \n}", "scaling s {\n  baseline =  runs = [a,  ]\n}").replace(
        "  target {  }\n  \n", "  target {  }\n  claim \n")
    uri = uri_of(lsp.folder / "values.eff")
    lsp.open(uri, text)
    lsp.diagnostics(uri)
    lines = text.split("\n")

    def after(needle, line_start):
        n = next(i for i, ln in enumerate(lines) if ln.strip().startswith(line_start))
        return n, lines[n].index(needle) + len(needle)

    assert complete(lsp, uri, text, *after("ffn = ", "model")) == ["gelu", "relu", "swiglu", "geglu"]
    units = complete(lsp, uri, text, *after("seq_len = 2048 ", "work"))
    assert units[0] == "token/sequence" and "ktoken/sequence" in units and "s" not in units and "FLOP/s" not in units
    accelerators = complete(lsp, uri, text, *after("accelerator = ", "hardware"))
    assert '"H100-SXM5"' in accelerators and '"A100-SXM4"' in accelerators
    assert complete(lsp, uri, text, *after("peak = ", "hardware")) == ["catalog"]
    assert complete(lsp, uri, text, *after("baseline = ", "baseline")) == ["a", "b"]
    assert complete(lsp, uri, text, *after("[a, ", "baseline")) == ["a", "b"]
    claims = complete(lsp, uri, text, *after("claim ", "claim"))
    assert "mfu" in claims and "throughput" in claims and "breakdown.exposed_comm" in claims
    n, col = after("step_time = 4 ", "timing")
    step_units = complete(lsp, uri, text, n, col)
    assert step_units[0] == "s" and {"ms", "min", "h", "day"} <= set(step_units) and "token" not in step_units


# ----------------------------------------------------------------------------
# Code actions and changes


def code_actions(lsp, uri, diag) -> list[dict]:
    return lsp.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diag["range"],
                                                   "context": {"diagnostics": [diag]}})


@pytest.mark.parametrize("good, bad, code, title, fixed", [
    # a unit spelling: EFF001's help names the unit
    ("seq_len = 2048 token/sequence", "seq_len = 2048 tokens/sequence", "EFF001", "Write `token`", None),
    # an enum value: EFF003's help says "did you mean"
    ("warmup = 0 step  boundary", "warmup = 0 step  statistic = medain  boundary", "EFF003", "Change `medain` to `median`",
     "warmup = 0 step  statistic = median  boundary"),
    # a bare MFU claim above 1: EFF604 (above 100 %), fixed by writing `%`
    ("claim mfu = 12.6 %", "claim mfu = 12.6", "EFF604", "Write `12.6 %`", None),
])
def test_a_code_action_applied_clears_its_diagnostic(lsp, small, good, bad, code, title, fixed):
    uri = uri_of(lsp.folder / f"fix_{code}.eff")
    text = SMALL.replace(good, bad, 1)
    lsp.open(uri, text)
    target = next(d for d in lsp.diagnostics(uri) if d["code"] == code)
    actions = code_actions(lsp, uri, target)
    chosen = [a for a in actions if a["title"].startswith(title)]
    assert chosen, actions
    assert len(chosen) == 1 and chosen[0]["kind"] == "quickfix" and code in [d["code"] for d in chosen[0]["diagnostics"]]
    new_text = apply(text, chosen[0]["edit"]["changes"][uri])
    assert new_text == (SMALL if fixed is None else SMALL.replace(good, fixed, 1))
    lsp.change(uri, new_text, 2)
    after = lsp.diagnostics(uri, version=2)
    assert code not in [d["code"] for d in after]
    if fixed is None:
        assert [d["data"] for d in after] == [d["data"] for d in lsp.small_diags]  # back to SMALL's findings


def test_no_code_action_where_no_replacement_is_known(lsp, small):
    target = next(d for d in lsp.small_diags if d["code"] == "EFF601")  # a mismatched rate: no edit can know the truth
    assert code_actions(lsp, small, target) == []


def test_did_change_with_a_syntax_error_then_the_fix(lsp, small):
    uri = uri_of(lsp.folder / "edit.eff")
    lsp.open(uri, SMALL)
    first = lsp.diagnostics(uri)
    broken = SMALL.replace("count = 16 device", "count = = 16 device")
    lsp.change(uri, broken, 2)
    diags = lsp.diagnostics(uri, version=2)
    assert [d["code"] for d in diags] == ["EFF001"]
    pos = at("count = 16", offset=8)
    assert diags[0]["range"]["start"] == pos
    assert lsp.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}}) == []
    lsp.change(uri, SMALL, 3)
    assert lsp.diagnostics(uri, version=3) == first


def test_changes_are_debounced_to_the_last(tmp_path):
    client = server("--debounce-ms", "2000")  # generous: five notifications are sent well within it
    try:
        client.initialize(tmp_path)
        uri = uri_of(tmp_path / "d.eff")
        client.open(uri, SMALL)
        client.diagnostics(uri, version=1)
        for version in range(2, 7):
            client.change(uri, SMALL.replace("claim mfu = 12.6 %", f"claim mfu = 1{version} %"), version)
        client.diagnostics(uri, version=6)
        earlier = [n for n in client.notifications if n.get("method") == "textDocument/publishDiagnostics"]
        assert earlier == []  # versions 2-5 were never checked: each change cancelled the one before
        # an edit undone before the pause: the text of version 6 again, published under version 8
        client.change(uri, SMALL.replace("count = 16 device", "count = = 16 device"), 7)
        client.change(uri, SMALL.replace("claim mfu = 12.6 %", "claim mfu = 16 %"), 8)
        assert [d["code"] for d in client.diagnostics(uri, version=8)] == ["EFF601", "EFF601", "EFF304", "EFF304"]
    finally:
        client.close()


CRASHING_SERVER = """
import sys
import effspec
from effspec.lsp import server

real = effspec.check_text
def check_text(text, *args, **kwargs):
    if "CRASHME" in text:
        raise ZeroDivisionError("planted")
    return real(text, *args, **kwargs)
effspec.check_text = check_text
sys.exit(server.main())
"""


def test_a_crash_in_one_document_is_a_diagnostic_and_the_server_keeps_serving(tmp_path):
    client = Client([sys.executable, "-c", CRASHING_SERVER], cwd=ROOT)
    try:
        client.initialize(tmp_path)
        bad, good = uri_of(tmp_path / "bad.eff"), uri_of(tmp_path / "good.eff")
        client.open(bad, SMALL.replace("hand-checked", "CRASHME"))
        diags = client.diagnostics(bad)
        assert [d["code"] for d in diags] == ["EFF000"]
        assert "ZeroDivisionError: planted" in diags[0]["message"]
        assert client.request("textDocument/hover", {"textDocument": {"uri": bad}, "position": at("claim mfu", offset=7)}) is None
        client.open(good, SMALL)
        assert [d["code"] for d in client.diagnostics(good)] == ["EFF601", "EFF304", "EFF304"]
        assert "12.6 %" in hover_text(client, good, at("claim mfu", offset=7))
        assert client.proc.poll() is None
    finally:
        client.close()


def test_document_symbols_and_go_to_definition(lsp, small):
    symbols = lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": small}})
    assert [(s["name"], s["detail"]) for s in symbols] == [("small", "run"), ("big", "run"), ("double", "scaling")]
    assert [c["name"] for c in symbols[0]["children"]] == ["model", "convention", "work", "hardware", "timing",
                                                           "claim mfu", "claim throughput"]
    assert [c["name"] for c in symbols[2]["children"]] == ["claim efficiency"]
    for needle in ("baseline = small", "runs = [big]"):
        name = needle.split()[-1].strip("[]")
        location = lsp.request("textDocument/definition", {"textDocument": {"uri": small},
                                                           "position": at(needle, offset=len(needle) - 2)})
        declared = at(f"run {name} {{", offset=4)
        assert location["range"]["start"] == declared and location["uri"] == small


def test_positions_are_utf16_code_units(lsp):
    # Two astral characters (2 UTF-16 units each) before a claim on the same line:
    # the claim's hint and its diagnostic move right by 2 units per character.
    line = '  title = "🚀🚀"  claim throughput = 48000 token/s'
    text = SMALL.replace("  claim throughput = 48000 token/s\n", "", 1).replace('  title = "hand-checked"', line, 1)
    uri = uri_of(lsp.folder / "astral.eff")
    lsp.open(uri, text)
    diags = lsp.diagnostics(uri)
    n = text.split("\n").index(line)
    mismatch = next(d for d in diags if d["code"] == "EFF601")
    value_at = line.index("48000")  # code points
    assert mismatch["range"]["start"] == {"line": n, "character": value_at + 2}
    assert mismatch["data"]["column"] == value_at + 1  # the CLI's JSON counts code points, 1-based
    hints = lsp.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}})
    throughput = next(h for h in hints if "token/s" in h["label"])
    assert throughput["position"] == {"line": n, "character": len(line) + 2}
    text_hover = hover_text(lsp, uri, {"line": n, "character": line.index("throughput") + 2})
    assert "52,429 token/s" in text_hover


def test_incremental_text_changes_are_applied(lsp):
    # Editors send ranges, not the whole text: break `count = 16 device` with an insertion, then delete it.
    uri = uri_of(lsp.folder / "ranged.eff")
    lsp.open(uri, SMALL)
    first = lsp.diagnostics(uri)
    pos = at("count = 16", offset=8)
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": pos, "end": pos}, "text": "= "}]})
    assert [d["code"] for d in lsp.diagnostics(uri, version=2)] == ["EFF001"]
    end = {"line": pos["line"], "character": pos["character"] + 2}
    lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
        {"range": {"start": pos, "end": end}, "text": ""}]})
    assert lsp.diagnostics(uri, version=3) == first


def test_lsp_without_pygls_is_a_tool_error_not_a_traceback():
    code = "import sys; sys.modules['pygls'] = None; from effspec.cli import main; sys.exit(main(['lsp']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "effspec: `effspec lsp` needs pygls: pip install 'effspec[lsp]'"


def test_the_vscode_extension_starts_effspec_lsp_for_eff_files():
    vscode = ROOT / "editors" / "vscode"
    package = json.loads((vscode / "package.json").read_text(encoding="utf-8"))
    language = package["contributes"]["languages"][0]
    assert language["extensions"] == [".eff"]
    assert (vscode / language["configuration"]).exists()
    grammar = package["contributes"]["grammars"][0]
    assert grammar["scopeName"] == "source.eff" and (vscode / grammar["path"]).exists()
    config = json.loads((vscode / "language-configuration.json").read_text(encoding="utf-8"))
    assert config["comments"]["lineComment"] == "#"  # grammar/eff.lark: COMMENT: /#[^\n]*/
    assert ["{", "}"] in config["brackets"] and ["[", "]"] in config["brackets"]
    # the entry point is extension.js bundled by esbuild (tests/lsp/test_vscode_package.py packages it)
    assert package["main"] == "./dist/extension.js" and package["scripts"]["bundle"].startswith("esbuild extension.js ")
    script = (vscode / "extension.js").read_text(encoding="utf-8")
    assert 'args: ["lsp"]' in script and "vscode-languageclient" in script


def test_completion_of_provenance_kinds_after_from(lsp):
    text = 'eff 1\nrun a {\n  hardware { accelerator = "A100-SXM4-80GB"  count = 8 device from  }\n}\n'
    uri = uri_of(lsp.folder / "provenance.eff")
    lsp.open(uri, text)
    lsp.diagnostics(uri)
    col = text.split("\n")[2].index("from ") + 5
    assert complete(lsp, uri, text, 2, col) == ["measured", "datasheet", "paper", "profiler", "log", "estimate", "assumed"]


def test_completion_of_a_compound_unit_replaces_what_is_typed(lsp):
    text = "eff 1\nrun a {\n  work { seq_len = 2048 token/ }\n}\n"
    uri = uri_of(lsp.folder / "unit.eff")
    lsp.open(uri, text)
    lsp.diagnostics(uri)
    col = text.split("\n")[2].index("token/") + len("token/")
    result = lsp.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 2, "character": col}})
    item = next(i for i in result["items"] if i["label"] == "token/sequence")
    assert item["textEdit"]["range"] == {"start": {"line": 2, "character": col - 6}, "end": {"line": 2, "character": col}}
    assert item["textEdit"]["newText"] == "token/sequence"
    # a new key after a finished value is a key again, not a unit
    text2 = "eff 1\nrun a {\n  timing { step_time = 4 s  war }\n}\n"
    lsp.change(uri, text2, 2)
    col2 = text2.split("\n")[2].index("war") + 3
    labels = [i["label"] for i in lsp.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                                          "position": {"line": 2, "character": col2}})["items"]]
    assert "warmup" in labels and "ms" not in labels


def test_hover_on_a_run_id_shows_its_figures(lsp, small):
    text = hover_text(lsp, small, at("baseline = small", offset=12))
    assert text.startswith("**run `small`**: hand-checked")
    value = float(re.search(r"- mfu = ([0-9.]+) %", text).group(1))
    assert value == pytest.approx(MFU * 100, abs=0.005)
    assert "- step_time = 10 s" in text
