"""Issue 26 item 1: text that `effspec import` copies from a log, a TOML or the log's file
name never becomes eff syntax -- no pragma, no `from`, no new key, no closed block.

Every copied text reaches OUT.eff as an escaped string literal or through
``effspec.importers.writer.comment``, which keeps it on one line and writes the
colon of any `effspec:` (any case or spacing) as U+2236, so no `# effspec: ...`
pragma can be formed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effspec.cli import main
from effspec.diagnostics import sanitize
from effspec.front.config import scan_pragmas
from effspec.front.syntax import parser
from effspec.importers.writer import NEUTRAL_COLON, comment

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
PRAGMA = "# effspec: file-ignore[EFF601,EFF503]"
WRITTEN = PRAGMA.replace(":", "\u2236")  # as the writer neutralises it


def _import(log: Path, out: Path, fmt: str = "megatron") -> int:
    return main(["import", fmt, str(log), "-o", str(out)])


def _hostile_megatron(tmp_path: Path, name: str, payload: str) -> Path:
    """megatron_train.log with ``payload`` after the values the importer copies into comments
    (num_experts, swiglu when present, recompute_granularity when present), and line 54's
    TFLOP/s (the claim's line) raised from 490.0 to 900.0 so that the claim cannot hold."""
    text = (LOGS / "megatron_train.log").read_text(encoding="utf-8")
    text = re.sub(r"^(  (?:num_experts|swiglu|recompute_granularity) \.+ \S+)$", lambda m: m.group(1) + " " + payload,
                  text, flags=re.M)
    lines = text.split("\n")
    assert "(TFLOP/s/GPU): 490.0 |" in lines[53]
    lines[53] = lines[53].replace("(TFLOP/s/GPU): 490.0 |", "(TFLOP/s/GPU): 900.0 |")
    log = tmp_path / name
    log.write_text("\n".join(lines), encoding="utf-8")
    return log


def test_a_pragma_in_a_log_and_its_file_name_suppresses_nothing(tmp_path: Path, capsys) -> None:
    log = _hostile_megatron(tmp_path, f"run {PRAGMA}.log", PRAGMA)
    out = tmp_path / "run.eff"
    assert _import(log, out) == 0
    text = out.read_text(encoding="utf-8")
    # The payload was copied (file name in the header, num_experts in its field comment) ...
    assert text.count(WRITTEN) >= 2
    # ... but not as a pragma: the spec has none, understood or not.
    assert scan_pragmas(text) == ([], [])
    text = re.sub(r"^(\s+accelerator\s+= )TODO\b", r'\1"H100-SXM5-80GB"', text, flags=re.M)
    text = re.sub(r"^(\s+peak\s+= )TODO\b", r"\1catalog", text, flags=re.M)
    out.write_text(text, encoding="utf-8")
    capsys.readouterr()
    status = main(["check", str(out), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)[0]
    found = {d["code"] for d in doc["diagnostics"]}
    # 900.0 claimed against 490.03 TFLOP/s reconstructed (test_importers' derivation): EFF601, and the real stall EFF503.
    assert status == 1 and "EFF601" in found and "EFF503" in found
    assert not doc.get("suppressed")


# Arbitrary text, biased towards what could close a comment or form syntax.
TOKENS = ("#", "# effspec: ", "#effspec:", "#  EFFSPEC:", "# effspec:\t", "effspec:", "ignore", "file-ignore",
          "[EFF601,EFF503]", "severity[EFF503]=info", "}", "{", '"', "\\", "\n", "\r", "\u2028", "\x85", "\x0b", "\t",
          ' from log "x.log:1"', "\n  peak = 1 TFLOP/s", " ", "=")
HOSTILE = st.lists(st.sampled_from(TOKENS) | st.text(max_size=4), max_size=12).map("".join)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HOSTILE)
def test_comment_writer_neutralises_any_text(text: str) -> None:
    line = f"x = 1  # {comment(text)}\n"
    assert "\n" not in comment(text) and not re.search(r"effspec\s*:", comment(text), re.I)
    # Round trip: undo the two neutralised characters and the comment is the text as one sanitized line.
    if NEUTRAL_COLON not in text:
        one_line = sanitize(re.sub(r"[\r\n\u2028\u2029\x0b\x0c\x85]+", " ", text)).strip()[:400]
        assert comment(text).replace(NEUTRAL_COLON, ":") == one_line
    assert scan_pragmas(line) == ([], [])


def _spec_is_inert(out: Path) -> str:
    text = out.read_text(encoding="utf-8")
    assert scan_pragmas(text) == ([], [])
    parser().parse(text)  # still one well-formed spec: nothing copied closed a block or added a key
    return text


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=HOSTILE.filter(lambda s: s.strip() and "\n" not in s and "\r" not in s and "\x85" not in s
                              and "\u2028" not in s and "\x0b" not in s and "\x0c" not in s and "\u2029" not in s
                              and "\x1c" not in s and "\x1d" not in s and "\x1e" not in s))
def test_megatron_argument_values_round_trip_in_comments_only(tmp_path_factory, payload: str) -> None:
    tmp = tmp_path_factory.mktemp("m")
    log = _hostile_megatron(tmp, "train.log", payload)
    out = tmp / "o.eff"
    assert _import(log, out) in (0, 1)
    text = _spec_is_inert(out)
    # The num_experts comment carries the copied text, neutralised (args.text strips the value's ends).
    assert comment("num_experts None " + payload) in text or comment("num_experts None " + payload.strip()) in text


NAME = st.lists(st.sampled_from(TOKENS) | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                                                   max_size=4), min_size=1, max_size=8).map("".join).filter(
    lambda s: "/" not in s and "\x00" not in s and 0 < len(s.encode("utf-8", "surrogatepass")) < 200)


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAME)
def test_any_log_file_name_is_inert_in_the_header(tmp_path_factory, name: str) -> None:
    tmp = tmp_path_factory.mktemp("n")
    if name in (".", ".."):
        name = name + "x"
    log = tmp / name
    try:
        shutil.copyfile(LOGS / "nanogpt_train.log", log)
    except OSError:
        return  # a name this file system cannot hold
    out = tmp / "o.eff"
    assert _import(log, out, "nanogpt") in (0, 1)
    _spec_is_inert(out)


def test_torchtitan_model_line_and_toml_name_flavor_are_inert(tmp_path: Path) -> None:
    # A `Model NAME FLAVOR size: N total parameters` line (torchtitan's train.py format) carrying the pragma,
    # and the TOML's [model] name/flavor carrying it too.
    lines = (LOGS / "torchtitan_train.log").read_text(encoding="utf-8").split("\n")
    lines.insert(len(lines) // 2, "[rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - Model qwen3"
                 + PRAGMA.replace(" ", "") + " 4B size: 4,022,468,096 total parameters")
    log = tmp_path / "t.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    toml = (LOGS / "torchtitan_train.toml").read_text(encoding="utf-8")
    toml = toml.replace('name = "qwen3"', f'name = "qwen3 {PRAGMA}"').replace('flavor = "4B"', f'flavor = "4B {PRAGMA}"')
    (tmp_path / "t.toml").write_text(toml, encoding="utf-8")
    for n, extra in enumerate(([], ["--config", str(tmp_path / "t.toml")])):
        out = tmp_path / f"o{n}.eff"
        assert main(["import", "torchtitan", str(log), "-o", str(out), *extra]) in (0, 1)
        text = _spec_is_inert(out)
        assert "#effspec" + NEUTRAL_COLON in text


def test_mlperf_platform_and_straggler_notes_are_inert(tmp_path: Path) -> None:
    # submission_platform is a JSON string: a `"\n}` in it must not close the run block either.
    mll = (LOGS / "mllog_gpt3.log").read_text(encoding="utf-8")
    mll = mll.replace('"value": "64xDGXH100"', '"value": ' + json.dumps(f"64xDGXH100 {PRAGMA}\n}}\nfrom log \"x:1\""))
    (tmp_path / "m.log").write_text(mll, encoding="utf-8")
    assert main(["import", "mllog", str(tmp_path / "m.log"), "-o", str(tmp_path / "m.eff")]) in (0, 1)
    assert WRITTEN in _spec_is_inert(tmp_path / "m.eff")
    # The straggler detector's "Bottom N Ranks" line is copied into a note.
    meg = (LOGS / "megatron_train.log").read_text(encoding="utf-8").split("\n")
    assert "Bottom 4 Ranks" in meg[58]
    meg[58] = meg[58].rstrip() + " " + PRAGMA
    (tmp_path / "s.log").write_text("\n".join(meg), encoding="utf-8")
    assert main(["import", "megatron", str(tmp_path / "s.log"), "-o", str(tmp_path / "s.eff")]) in (0, 1)
    text = _spec_is_inert(tmp_path / "s.eff")
    assert "bottom 4 ranks by throughput" in text and WRITTEN in text  # copied, neutralised
