"""Rule pages: ``effspec explain CODE`` and the generated ``spec/rules/``.

A rule's page is its docstring (What it does / Why is this bad? / Example /
Use instead) under a header line with the code, title and default severity.
Front-end codes (EFF001-EFF099) have no rule class; their pages are written
here, in the same four sections.  Rules are imported only when a rule page is
asked for, so ``import effspec.rules.pages`` stays cheap.

``python -m effspec.rules.pages --write spec/rules`` writes one ``EFFxxx.md`` per
code and a ``README.md`` index; the output depends on nothing but the code
table and the docstrings, so a test can regenerate it and compare bytes.
"""

from __future__ import annotations

import inspect
import os
import sys
import textwrap

from effspec.rules import code_table

# One spec, reused by every front-end example: each page changes one line.
_BASE = """eff 1

run base_8 {{
  model {{ kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }}
  convention {{ preset = palm }}
  work {{ seq_len = 2048 token/sequence  global_batch = 256 sequence }}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  {hardware} }}
  timing {{ step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s  warmup = 0 step  boundary = "optimizer step" }}{extra}
}}
"""


def _spec(hardware: str = "peak = catalog", extra: str = "", after: str = "") -> str:
    return _BASE.format(hardware=hardware, extra=extra) + after


_SECOND_RUN = "\n" + _spec().split("\n", 2)[2].replace("base_8", "scaled_64").replace("count = 8 device", "count = 64 device").replace(
    "[4.02, 4.00, 4.05, 3.99, 4.01]", "[0.61, 0.60, 0.62, 0.60, 0.61]")


def _eff(text: str) -> str:
    return "```eff\n" + text.rstrip("\n") + "\n```"


# Each `(0 % + …)` is one level of operator nesting; 70 exceed the limit of 64.
_DEEP = "(0 % + " * 70 + "52 %" + ")" * 70

FRONT_END: dict[str, tuple[str, str, str, str, str, str]] = {
    # code: (what it does, why, example lead-in, example, use-instead lead-in, corrected)
    "EFF001": (
        "Reports text the grammar cannot read: a missing `=` or `{`, an unclosed "
        "block or string, a stray character, or a file that ends early. The "
        "message says what was expected at that point, and the caret points at "
        "the first token that does not fit; a block left open is shown at its "
        "`{`. Where the fix is clear the help says it: `TFLOP/s` for `TFLOPS` or "
        "`tflops`, `token` for `tokens`, `1_000` for `1,000`; `effspec check "
        "--fix` writes the unit spellings. A file that is not UTF-8 is one "
        "EFF001 at its first bad byte, and is not checked further.",
        "A spec that does not parse has no meaning to check, so no figure is "
        "computed from it. Syntax errors cannot be suppressed or downgraded.",
        "`peak` is written without `=`:",
        _spec("peak catalog"),
        "",
        _spec(),
    ),
    "EFF002": (
        "Reports a block or key that is not in the v1 vocabulary, with the "
        "closest valid name when one is near.",
        "An unknown key is never ignored: a misspelt `dtype` would otherwise "
        "leave the default in force, and every figure would be computed for a "
        "datatype the author did not mean.",
        "",
        _spec("datatype = fp8  peak = catalog").replace("dtype = bf16  ", ""),
        "",
        _spec("peak = catalog").replace("dtype = bf16", "dtype = fp8"),
    ),
    "EFF003": (
        "Reports a value of the wrong kind for its key: a word that is not one "
        "of the key's choices, a string where a number belongs, a non-integer "
        "layer count, a repeated key, or a required key left out.",
        "Values such as `dtype`, `ffn` or `attention` select formulas and catalog "
        "rows. Guessing what an invalid one meant would silently pick a "
        "formula; the spec must say it.",
        "`bfloat` is not one of `bf16`, `fp16`, `fp8`, `tf32`, `fp32`, `int8`, `nvfp4`, `mxfp4`, `fp6`:",
        _spec("peak = catalog").replace("dtype = bf16", "dtype = bfloat"),
        "",
        _spec(),
    ),
    "EFF010": (
        "Reports a quantity whose unit has the wrong dimension for its key, "
        "for example a peak in `FLOP` instead of `FLOP/s`, a step time in "
        "tokens, or a claimed MFU written in `token/s`.",
        "Units are checked so that a rate is never divided by a count or a "
        "per-device figure mistaken for a per-step one. Without the check, "
        "312 TFLOP would be read as 312 TFLOP/s and nobody would notice the "
        "author meant something else.",
        "",
        _spec("peak = 312 TFLOP"),
        "",
        _spec("peak = 312 TFLOP/s from datasheet \"A100 datasheet, dense BF16\""),
    ),
    "EFF011": (
        "Reports a number that cannot describe a training run: not finite "
        "(`1e400` overflows), negative where only zero or more makes sense, "
        "zero where a positive value is needed (a step time, a device count), "
        "beyond any plausible size, or a division by zero in an expression.",
        "Such a value turns every figure derived from it into infinity, zero "
        "or a negative utilization. It is reported where it is written rather "
        "than as a strange MFU later.",
        "",
        _spec().replace("count = 8 device", "count = -8 device"),
        "",
        _spec(),
    ),
    "EFF020": (
        "Reports a name that does not resolve: a `scaling` baseline or run that "
        "is not in the file, a claim that refers to a metric or value the run "
        "does not have, a `file` that does not exist or lies outside the "
        "spec's folder, a CSV column that is missing, or an accelerator that "
        "`peak = catalog` cannot find. Under `--isolated`, a spec named on the "
        "command line that is a symlink leading out of its folder is EFF020 "
        "too, naming the link and its target; nothing of it is read.",
        "A comparison against a run that does not exist, or a step time read "
        "from nowhere, has no value; the file rule also keeps a spec from "
        "reading files outside its own folder.",
        "The baseline is misspelt:",
        _spec(after=_SECOND_RUN + "\nscaling dp_strong { kind = strong  baseline = base8  runs = [scaled_64] }\n"),
        "",
        _spec(after=_SECOND_RUN + "\nscaling dp_strong { kind = strong  baseline = base_8  runs = [scaled_64] }\n"),
    ),
    "EFF030": (
        "Reports input beyond a fixed limit: a spec over 10 MiB, more than "
        "5,000 runs and scalings in one file, more than 1,000 claims in a run, "
        "expressions nested more than 64 levels deep, inline lists over "
        "100,000 items, CSV files over 256 MiB, 5,000,000 rows or 64 columns, "
        "or a project pyproject.toml over 256 KiB or nested more than 32 levels "
        "(checked before it is parsed). As an info line, it also says how many "
        "findings were not shown: a file shows at most 200 findings (errors "
        "first), and counts the rest.",
        "The limits keep the compiler's time and memory bounded on any input, "
        "including hostile ones, so that checking a spec can never hang or "
        "exhaust memory; real specs stay far below them.",
        "A claim whose expression nests 70 operators deep (generated text, typically):",
        _spec(extra=f"\n  claim mfu = {_DEEP}"),
        "",
        _spec(extra="\n  claim mfu = 52 %"),
    ),
    "EFF040": (
        "Reports a value written as `TODO`: a placeholder for a fact the spec "
        "does not have yet. `effspec import` writes one wherever a training log "
        "is silent (the accelerator, its peak, the model shape when the log has "
        "no argument dump), so that nothing is silently assumed. The help says "
        "what the key takes: its unit, its choices, or `catalog` for a peak.",
        "A placeholder is not a value. Evaluating the spec with a guessed one "
        "would give figures that look checked but rest on nobody's statement; "
        "the spec is therefore not evaluated until every `TODO` is replaced.",
        "The log named no accelerator and no peak:",
        _spec("peak = TODO"),
        "Fill in the peak (here from the catalog) and say where each value comes from:",
        _spec(),
    ),
}

# Codes that `effspec import` reports about a training log, not about a spec:
# their examples are log excerpts (```text blocks), and the importer tests
# (tests/importers/test_importers.py) run them.
IMPORTER: dict[str, tuple[str, str, str, str, str, str]] = {
    "EFF801": (
        "Reports a line of a training log that looks like one the importer reads "
        "but cannot be read whole: a truncated line (the log was cut while it was "
        "written), two ranks' output interleaved on one line, a number that does "
        "not parse, or bytes that are not UTF-8. The import goes on past it; the "
        "diagnostic names the log file, the line and the column.",
        "A half-written line would give a wrong step time or a wrong figure if it "
        "were read anyway, and dropping it silently would hide a gap in the "
        "samples. The line is left out of the step samples and named, so that "
        "the samples can be traced back to the log line by line.",
        "A Megatron-LM iteration line cut in the middle (`effspec import megatron train.log -o run.eff`):",
        " [2026-01-16 07:32:24] iteration        5/     100 | consumed samples:        10240 | elapsed time per iteration (ms): 158",
        "The whole line, as Megatron-LM writes it:",
        " [2026-01-16 07:32:24] iteration        5/     100 | consumed samples:        10240 | elapsed time per iteration (ms): 15800.0 |"
        " throughput per GPU (TFLOP/s/GPU): 490.0 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    ),
    "EFF805": (
        "Reports a step sample that no chip could produce and leaves it out of the samples: a step time more "
        "than 100 times shorter than the median of the same log's steps (a timer read before the work was "
        "dispatched, a unit slip, another run's line). The diagnostic names the log file and the line, the "
        "step's time and the median it was compared with.",
        "One impossible sample moves a mean, a percentile or a stall count, and a claim checked against it "
        "reads as a wild mismatch. Left out and named, it can be traced back to its line.",
        "Megatron-LM iteration lines, one timed at a thousandth of its neighbours (`effspec import megatron train.log -o run.eff`):",
        " [2026-01-16 07:32:08] iteration        4/     100 | consumed samples:         8192 | elapsed time per iteration (ms): 15790.2 |"
        " throughput per GPU (TFLOP/s/GPU): 490.3 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2026-01-16 07:32:24] iteration        5/     100 | consumed samples:        10240 | elapsed time per iteration (ms): 15.8 |"
        " throughput per GPU (TFLOP/s/GPU): 490000.0 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2026-01-16 07:32:40] iteration        6/     100 | consumed samples:        12288 | elapsed time per iteration (ms): 15812.9 |"
        " throughput per GPU (TFLOP/s/GPU): 489.6 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        "The steps as the timer measured them after the work:",
        " [2026-01-16 07:32:08] iteration        4/     100 | consumed samples:         8192 | elapsed time per iteration (ms): 15790.2 |"
        " throughput per GPU (TFLOP/s/GPU): 490.3 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2026-01-16 07:32:24] iteration        5/     100 | consumed samples:        10240 | elapsed time per iteration (ms): 15800.0 |"
        " throughput per GPU (TFLOP/s/GPU): 490.0 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2026-01-16 07:32:40] iteration        6/     100 | consumed samples:        12288 | elapsed time per iteration (ms): 15812.9 |"
        " throughput per GPU (TFLOP/s/GPU): 489.6 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    ),
    "EFF806": (
        "Says that the log leaves the framework version open between two presets: its lines are dated within "
        "half a year after a preset's boundary commit (a date only bounds the checkout from above, so an older "
        "checkout is possible), or a `--framework-version` names a preset whose boundary is after the log's "
        "date (the log's date wins). The message names the preset written and the other candidate.",
        "The same TFLOP/s line means different FLOPs under two versions of a framework's formula; a version "
        "chosen silently would make a claim look wrong, or right, for the wrong reason.",
        "A Megatron-LM log dated five days after the 2024-03-25 formula change (`effspec import megatron train.log -o run.eff`):",
        " [2024-03-30 10:00:00] iteration       10/     100 | consumed samples:        20480 | elapsed time per iteration (ms): 5361.6 |"
        " throughput per GPU (TFLOP/s/GPU): 130.1 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2024-03-30 10:00:06] iteration       11/     100 | consumed samples:        22528 | elapsed time per iteration (ms): 5470.7 |"
        " throughput per GPU (TFLOP/s/GPU): 127.5 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        "A log dated well after the boundary (or the checkout's date given with `--framework-version`):",
        " [2024-12-30 10:00:00] iteration       10/     100 | consumed samples:        20480 | elapsed time per iteration (ms): 5361.6 |"
        " throughput per GPU (TFLOP/s/GPU): 130.1 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        "\n"
        " [2024-12-30 10:00:06] iteration       11/     100 | consumed samples:        22528 | elapsed time per iteration (ms): 5470.7 |"
        " throughput per GPU (TFLOP/s/GPU): 127.5 | learning rate: 4.134000E-07 | global batch size:  2048 | lm loss: 1.344240E+01 |"
        " loss scale: 1.0 | grad norm: 1.283 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    ),
    "EFF810": (
        "Reports a Hugging Face `config.json` given with `--model-config` that cannot "
        "fill the model block: a `model_type` effspec does not map (the message names "
        "the keys the config has), a key the family needs that is missing, a value "
        "that is not a whole number in range, an activation the language has no `ffn` "
        "for, a file over 256 KiB, nesting deeper than 32, or text that is not JSON.",
        "A shape guessed from a config effspec does not understand would give wrong "
        "FLOPs per token with every key cited, so nothing is written.",
        "A config of a family effspec does not map (`effspec import megatron train.log --model-config config.json -o run.eff`):",
        '{"model_type": "bert", "hidden_size": 768}',
        "A config of a mapped family (Llama, Mistral, Mixtral, Qwen2/3, Gemma 2/3, DeepSeek-V2/V3, GPT-OSS, OLMo), "
        "or the model block written by hand:",
        '{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, '
        '"hidden_act": "silu", "intermediate_size": 14336, "vocab_size": 128256}',
    ),
}


# The project configuration's own problems: the example is a pyproject.toml
# beside an ordinary spec (tests/rules/test_rules.py writes both and checks them).
_PYPROJECT_SPEC = _spec()


def _config_keys() -> str:
    """The known keys of [tool.effspec], from the front end's one table: "`a`, `b` and `c`"."""
    from effspec.front.config import KEYS

    names = [f"`{k}`" for k in KEYS]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _toml(text: str) -> str:
    return "```toml\n" + text.rstrip("\n") + "\n```"


FRONT_END["EFF031"] = (
    "Reports a project configuration that was found but not applied: the "
    "pyproject.toml that holds the spec's `[tool.effspec]` table is not valid "
    "TOML or UTF-8, names a key other than " + _config_keys() + " (the closest key is suggested), "
    "gives one a value of the wrong kind, is not a regular "
    "file, or cannot be trusted: every user may write it, or another user owns "
    "it in a folder every user may write (such as /tmp). None of its settings "
    "apply, and the spec is checked with the defaults. The diagnostic is at "
    "the line and column in pyproject.toml: the key that is wrong, or where "
    "the TOML parser stopped.",
    "The configuration decides which findings are dropped or re-graded. A "
    "misspelt key (`inline-config`) would otherwise leave a vendor's pragmas "
    "in force without a word, and a file planted in a shared folder above the "
    "spec would silence the audit. `effspec check --show-settings FILE` prints "
    "which file applies.",
    "With this pyproject.toml beside the spec, the key is misspelt:",
    _toml('[tool.effspec]\ninline-config = false') + "\n\n" + _eff(_PYPROJECT_SPEC),
    "",
    _toml('[tool.effspec]\ninline_config = false') + "\n\n" + _eff(_PYPROJECT_SPEC),
)
FRONT_END["EFF032"] = (
    "Reports a `# effspec:` comment that is not a pragma effspec understands: "
    "an unknown verb (`ignroe`), a code list that is not codes (`[eff202]`), "
    "`file-ignore` or `severity` without codes, a severity other than `error`, "
    "`warning` or `info`, or a front-end code (EFF001-EFF099), which no pragma "
    "drops or lowers. The pragma is not applied; the caret is on it.",
    "A pragma that silently does nothing leaves its author believing a "
    "finding was dealt with; one read loosely (`ignore[eff202]` taken as a "
    "bare `ignore`) would drop every finding on its line. Reported when "
    "pragmas apply (not under `--no-inline-config` or `--isolated`).",
    "The severity is not one effspec has:",
    _eff(_spec(after="# effspec: severity[EFF502]=fatal\n")),
    "",
    _eff(_spec(after="# effspec: severity[EFF502]=info\n")),
)
FRONT_END["EFF033"] = (
    "Reports a code, in a pragma or in the `ignore` or `severity` settings of "
    "the project's pyproject.toml, that no rule has, with the closest code "
    "that exists. A pragma's is reported at the pragma; the configuration's "
    "at the code's line and column in pyproject.toml. The rest of the pragma "
    "or configuration applies: the unknown code matches nothing.",
    "A misspelt code (`EFF5020` for `EFF502`) suppresses nothing, so the "
    "finding it was meant for is still reported, and nothing says why.",
    "The code has one digit too many:",
    _eff(_spec(after="# effspec: file-ignore[EFF5020]\n")),
    "",
    _eff(_spec(after="# effspec: file-ignore[EFF502]\n")),
)
FRONT_END["EFF099"] = (
    "Reports that effspec itself failed while checking the file: an exception "
    "inside the tool, not a problem the spec states. The message names the "
    "file and the exception. In a folder check the other files are checked and "
    "reported as usual, and the command exits with status 2.",
    "A crash on one file must not hide the findings of the others, and must "
    "not read as a clean result. This diagnostic cannot be suppressed: the "
    "file was not audited.",
    "No spec should cause it; when one does, report it with the spec "
    "(`--debug` shows the traceback). Any spec may be the one:",
    _spec(),
    "Nothing in the spec needs to change; once the bug is fixed the same spec "
    "is checked normally:",
    _spec(),
)


def _fenced(text: str) -> str:
    return text if text.startswith("```") else _eff(text)


def _text(text: str) -> str:
    return "```text\n" + text.rstrip("\n") + "\n```"


def _front_end_page(code: str) -> str:
    table, block = (IMPORTER, _text) if code in IMPORTER else (FRONT_END, _fenced)
    what, why, lead, example, use_lead, corrected = (
        textwrap.fill(part, 78) if i in (0, 1, 2, 4) and part else part for i, part in enumerate(table[code]))
    parts = ["## What it does", "", what, "", "## Why is this bad?", "", why, "", "## Example", ""]
    if lead:
        parts += [lead, ""]
    parts += [block(example), "", "## Use instead", ""]
    if use_lead:
        parts += [use_lead, ""]
    parts += [block(corrected)]
    return "\n".join(parts)


def header(code: str) -> str:
    title, severity = code_table()[code]
    return f"{code} — {title} (default severity: {severity})"


def body(code: str) -> str | None:
    """The page without its header: the rule's docstring, or the front-end page."""
    if code in FRONT_END or code in IMPORTER:
        return _front_end_page(code)
    if code not in code_table():
        return None
    from effspec.rules import rule_for  # imported here: rules load only when a rule page is asked for

    rule = rule_for(code)
    if rule is None:
        return None
    return inspect.getdoc(type(rule))


def page(code: str) -> str | None:
    """The page for any code in the code table, or None for an unknown code (or a code without a page)."""
    text = body(code)
    if text is None:
        return None
    return f"{header(code)}\n\n{text}\n"


def write_pages(folder: str) -> list[str]:
    """Write ``EFFxxx.md`` for every code and ``README.md``; return the files written, sorted."""
    os.makedirs(folder, exist_ok=True)
    written = []
    rows = ["# Diagnostic codes", "",
            "Generated by `python -m effspec.rules.pages --write spec/rules` from the rule docstrings; do not edit.", "",
            "| code | severity | title |", "|---|---|---|"]
    for code in code_table():
        text = page(code)
        if text is None:
            raise LookupError(f"{code} has no page")
        path = os.path.join(folder, f"{code}.md")
        _write(path, "# " + text)
        written.append(path)
        title, severity = code_table()[code]
        rows.append(f"| [{code}]({code}.md) | {severity} | {title} |")
    readme = os.path.join(folder, "README.md")
    _write(readme, "\n".join(rows) + "\n")
    return sorted(written + [readme])


def _write(path: str, text: str) -> None:
    # Bytes, LF line endings, UTF-8: identical output on every platform.
    with open(path, "wb") as fh:
        fh.write(text.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m effspec.rules.pages", description="Print or write rule pages.")
    p.add_argument("code", nargs="?", help="print the page for CODE")
    p.add_argument("--write", metavar="FOLDER", help="write one page per code and README.md into FOLDER")
    args = p.parse_args(argv)
    if args.write:
        for path in write_pages(args.write):
            print(path)
        return 0
    if args.code:
        text = page(args.code.upper())
        if text is None:
            print(f"unknown code `{args.code}`", file=sys.stderr)
            return 2
        sys.stdout.write(text)
        return 0
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
