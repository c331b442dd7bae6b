"""effspec fmt: the canonical layout, comments kept, idempotent and meaning-preserving.

The round trip is checked over the whole corpus on disk: every example, every
rule fixture, the regression files, every ```eff block of spec/language.md and
the atheris corpus (tests/fuzz/README.md) when one exists.  For each file that
parses, ``fmt(fmt(x)) == fmt(x)``, the IR before and after is the same (spans
and block order aside, see effspec.fmt.ir_signature), and `effspec check`
reports the same codes at the same severities (so pragmas still act).  A file
that does not parse is refused with its EFF001/EFF030, never a traceback.

The hand-written cases give the expected text in full.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import effspec
from effspec.fmt import FormatterError, format_text, ir_signature

ROOT = Path(__file__).resolve().parents[2]


def _reference_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "spec" / "language.md").read_text(encoding="utf-8")
    return [(f"language.md:{text.count(chr(10), 0, m.start()) + 2}", m.group(1))
            for m in re.finditer(r"^```eff\n(.*?)^```[ \t]*$", text, re.S | re.M)]


def _corpus() -> list[tuple[str, str, Path | None]]:
    files = sorted(ROOT.glob("examples/*.eff")) + sorted((ROOT / "tests" / "fixtures").rglob("*.eff"))
    files += sorted((ROOT / "tests" / "regressions").glob("*.eff"))
    fuzz = ROOT / "corpus"  # the atheris corpus (tests/fuzz/README.md), kept out of git
    if fuzz.is_dir():
        files += sorted(p for p in fuzz.iterdir() if p.is_file())
    out: list[tuple[str, str, Path | None]] = []
    for p in files:
        try:
            out.append((str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"), p.parent))
        except UnicodeDecodeError:  # fuzz inputs need not be text; the CLI refuses them before fmt
            continue
    out += [(name, text, ROOT / "examples") for name, text in _reference_blocks()]
    return out


CORPUS = _corpus()


def test_the_corpus_is_the_whole_corpus():
    names = [name for name, _, _ in CORPUS]
    assert sum(n.startswith("examples/") for n in names) == len(list(ROOT.glob("examples/*.eff"))) >= 8
    assert sum(n.startswith("tests/fixtures/") for n in names) >= 100
    assert sum(n.startswith("language.md") for n in names) >= 10


def _codes(text: str, name: str, folder: Path | None) -> list[tuple[str, str]]:
    result = effspec.check_text(text, name, str(folder) if folder else None)
    return sorted((d.code, d.severity) for d in result.diagnostics)


@pytest.mark.parametrize(("name", "text", "folder"), CORPUS, ids=[c[0] for c in CORPUS])
def test_round_trip(name, text, folder):
    result = format_text(text)
    if result.text is None:
        assert result.diagnostics and all(d.code in ("EFF001", "EFF030") for d in result.diagnostics)
        assert _codes(text, name, folder)[0][0] in ("EFF001", "EFF030")
        return
    assert format_text(result.text).text == result.text, "not idempotent"
    assert ir_signature(result.text) == ir_signature(text)
    # the IR with the files read, and the findings (pragmas included), are the same
    assert ir_signature(result.text, str(folder)) == ir_signature(text, str(folder))
    assert _codes(result.text, name, folder) == _codes(text, name, folder)


def test_every_example_is_already_formatted_or_formats_without_losing_a_comment():
    for path in sorted(ROOT.glob("examples/*.eff")):
        text = path.read_text(encoding="utf-8")
        out = format_text(text).text
        assert out is not None
        comments = re.findall(r"#[^\n]*", re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text))
        kept = re.findall(r"#[^\n]*", re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', out))
        assert sorted(c.rstrip() for c in comments) == sorted(kept), path.name


def test_layout_of_a_one_line_run():
    text = ('eff 1\nrun r { timing { step_time = [1.0,2.0,] s  warmup=0 step } claim mfu = 40 %  '
            'model { kind = custom  flops_per_token = 6*1e9 FLOP/token }  title = "t"  convention { preset = palm } }\n')
    assert format_text(text).text == (
        "eff 1\n"
        "\n"
        "run r {\n"
        '  title = "t"\n'
        "  model {\n"
        "    kind            = custom\n"
        "    flops_per_token = 6 * 1e9 FLOP/token\n"
        "  }\n"
        "  convention { preset = palm }\n"
        "  timing {\n"
        "    step_time = [1.0, 2.0] s\n"
        "    warmup    = 0 step\n"
        "  }\n"
        "  claim mfu = 40 %\n"
        "}\n"
    )


def test_units_are_normalised_as_the_diagnostics_say():
    text = "eff 1\nrun r { hardware { count = 8 GPUs  peak = 989 TFLOPS } work { seq_len = 2048 tokens/sequence  global_batch = 8 sequences } }\n"
    result = format_text(text)
    assert result.text == (
        "eff 1\n"
        "\n"
        "run r {\n"
        "  work {\n"
        "    seq_len      = 2048 token/sequence\n"
        "    global_batch = 8 sequence\n"
        "  }\n"
        "  hardware {\n"
        "    count = 8 device\n"
        "    peak  = 989 TFLOP/s\n"
        "  }\n"
        "}\n"
    )
    assert sorted((w, n) for _, w, n in result.fixes) == [
        ("GPUs", "device"), ("TFLOPS", "TFLOP/s"), ("sequences", "sequence"), ("tokens", "token")]


def test_a_syntax_error_without_a_named_fix_is_reported_at_the_users_position():
    text = "eff 1\nrun r { hardware { count = 8 GPUs } work { seq_len = 1,000 } }\n"
    result = format_text(text)
    assert result.text is None
    d = result.diagnostics[0]
    assert (d.code, d.span.line, d.span.column) == ("EFF001", 2, 30)  # `GPUs`, in the text as given
    assert "unknown unit `GPUs`" in d.message


def test_comments_stay_beside_their_statements():
    text = (
        "# file header\n"
        "eff 1  # version\n"
        "# about r\n"
        "run r {  # opens r\n"
        "  claim mfu = 40 %  # the headline\n"
        "\n"
        "\n"
        "  # the model\n"
        "  model { kind = custom  flops_per_token = 6 FLOP/token }  # one line\n"
        "  work { seq_len = 8  # eight\n"
        "    global_batch = 2 }\n"
        "  timing { step_time = [1 s,  # first\n"
        "     2 s] }\n"
        "  # last words\n"
        "}\n"
        "# the end\n"
    )
    assert format_text(text).text == (
        "# file header\n"
        "eff 1  # version\n"
        "\n"
        "# about r\n"
        "run r {  # opens r\n"
        "  # the model\n"  # first in its run now: the blank line above it goes

        "  model {\n"
        "    kind            = custom\n"
        "    flops_per_token = 6 FLOP/token\n"
        "  }  # one line\n"
        "  work {\n"
        "    seq_len      = 8  # eight\n"
        "    global_batch = 2\n"
        "  }\n"
        "  timing {\n"
        "    # first\n"  # written inside the list: above its statement
        "    step_time = [1 s, 2 s]\n"
        "  }\n"
        "  claim mfu = 40 %  # the headline\n"
        "  # last words\n"
        "}\n"
        "\n"
        "# the end\n"
    )


def test_a_line_pragma_keeps_its_one_line_block_on_one_line():
    text = ('eff 1\nrun r {\n  hardware { accelerator = "H100-SXM5-80GB"   count = 8 device  dtype = bf16  peak = 400 TFLOP/s }'
            '  # effspec: ignore[EFF201]\n}\n')
    out = format_text(text).text
    assert out == ('eff 1\n\nrun r {\n  hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = 400 TFLOP/s }'
                   '  # effspec: ignore[EFF201]\n}\n')
    assert _codes(out, "x.eff", None) == _codes(text, "x.eff", None)


def test_keys_and_claims_align_in_their_own_groups_and_blank_lines_collapse():
    text = ('eff 1\nscaling s {\n  kind = strong\n\n\n\n  baseline = a   # base\n  runs = [b]\n'
            '  claim efficiency = 90 %\n  claim speedup[b] = 7.2\n}\n'
            'run a { title = "a" }\nrun b { title = "b" }\n')
    assert format_text(text).text == (
        "eff 1\n"
        "\n"
        "scaling s {\n"
        "  kind     = strong\n"
        "\n"
        "  baseline = a  # base\n"
        "  runs     = [b]\n"
        "  claim efficiency = 90 %\n"
        "  claim speedup[b] = 7.2\n"
        "}\n"
        "\n"
        "run a {\n"  # a run is never one line
        '  title = "a"\n'
        "}\n"
        "\n"
        "run b {\n"
        '  title = "b"\n'
        "}\n"
    )


def test_expressions_keep_parentheses_and_references():
    text = 'eff 1\nrun r { claim breakdown.exposed_comm=100 %-(mfu*2)/-run.r.mfu from paper "p" }\n'
    assert format_text(text).text == (
        'eff 1\n\nrun r {\n  claim breakdown.exposed_comm = 100 % - (mfu * 2) / -run.r.mfu from paper "p"\n}\n')


def test_file_references_and_provenance():
    text = 'eff 1\nrun r { timing { step_time = file "s.csv" column "ms" ms from log "train.log" } }\n'
    assert format_text(text).text == (
        'eff 1\n\nrun r {\n  timing { step_time = file "s.csv" column "ms" ms from log "train.log" }\n}\n')


def test_a_bug_never_reaches_the_file(monkeypatch):
    import effspec.fmt.layout as layout

    real = layout.render

    def drops_a_key(tree, order):
        return real(tree, order).replace("  warmup    = 0 step\n", "")

    monkeypatch.setattr(layout, "render", drops_a_key)
    with pytest.raises(FormatterError):
        format_text("eff 1\nrun r { timing { step_time = 1 s  warmup = 0 step } }\n")


def test_byte_order_mark_and_crlf():
    text = '\ufeffeff 1\r\nrun r {\r\n  title = "t"  # c\r\n}\r\n'
    assert format_text(text).text == 'eff 1\n\nrun r {\n  title = "t"  # c\n}\n'


def test_a_line_pragma_follows_each_statement_of_its_line():
    text = ('eff 1\nrun r {\n  hardware { accelerator = "H100-SXM5-80GB"\n'
            '    count = 8 device  peak = 400 TFLOP/s  # effspec: ignore[EFF203]\n  }\n}\n')
    out = format_text(text).text
    assert out == ('eff 1\n\nrun r {\n  hardware {\n    accelerator = "H100-SXM5-80GB"\n'
                   '    count       = 8 device     # effspec: ignore[EFF203]\n'
                   '    peak        = 400 TFLOP/s  # effspec: ignore[EFF203]\n  }\n}\n')
    assert _codes(out, "x.eff", None) == _codes(text, "x.eff", None)


def test_a_pragma_inside_a_statement_goes_to_the_end_of_its_line():
    text = ('eff 1\nrun r {\n  timing # effspec: ignore[EFF502]\n  { step_time = [1, 2] s  warmup = # effspec: ignore\n'
            '    0 step }\n}\n')
    assert format_text(text).text == (
        "eff 1\n\nrun r {\n"
        "  timing {  # effspec: ignore[EFF502]\n"
        "    step_time = [1, 2] s  # effspec: ignore\n"
        "    warmup    = 0 step    # effspec: ignore\n"
        "  }\n}\n")


def test_provenance_aligns_across_the_claims_that_cite_one():
    text = ('eff 1\nrun r {\n  claim achieved_flops_per_device = 430 TFLOP/s from paper "T4"\n'
            '  claim mfu = 43 % from paper "T4"\n  claim hfu = 50 %\n}\n')
    assert format_text(text).text == (
        "eff 1\n\nrun r {\n"
        '  claim achieved_flops_per_device = 430 TFLOP/s from paper "T4"\n'
        '  claim mfu                       = 43 %        from paper "T4"\n'
        "  claim hfu                       = 50 %\n"
        "}\n")
