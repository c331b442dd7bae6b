"""Write the imported examples: examples/{megatron,torchtitan,maxtext}_import.eff, their steps CSVs and
their Markdown reports, each a fresh `effspec import` of its `.log` with the `TODO` lines filled in.

    .venv/bin/python scripts/write_import_examples.py          # or: make import-examples

tests/importers/test_importers.py imports the examples in a temporary folder the same way (make_example) and fails
while a committed file differs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The fill-ins of a Qwen3-4B-like torchtitan run (tests/importers/test_importers.py fills other imports with it too).
QWEN3_4B_LIKE = {"kind": "dense_transformer", "layers": "36", "d_model": "2560",
                 "heads": "32  head_dim = 128  kv_heads = 8  tied_embeddings = true", "ffn": "swiglu", "d_ff": "9728",
                 "vocab": "151936", "count": "8 device", "dtype": "bf16"}

# The examples of examples/README.md: each is a fresh import of its log plus these fill-ins, nothing else.
EXAMPLES = {
    "megatron_import": ("megatron", {"accelerator": '"H100-SXM5-80GB"', "peak": "catalog"}),
    "torchtitan_import": ("torchtitan", {**QWEN3_4B_LIKE}),
    "maxtext_import": ("maxtext", {"kind": "moe_transformer  experts = 64  top_k = 6  shared_experts = 2  d_ff_expert = 1408  "
                                           "moe_layers = 26", "layers": "27",
                                   "heads": "16  q_lora_rank = 0  kv_lora_rank = 512  qk_nope_head_dim = 128  qk_rope_head_dim = 64  "
                                            "v_head_dim = 128", "d_ff": "10944",
                                   "vocab": "102400", "ffn": "swiglu", "dtype": "bf16", "peak": "459 TFLOP/s"}),
}

Runner = Callable[..., subprocess.CompletedProcess]


def effspec(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`effspec ARGS` in a fresh interpreter (the package on the path)."""
    return subprocess.run([sys.executable, "-m", "effspec", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def fill(path: Path, values: dict[str, str]) -> None:
    """Replace `KEY = TODO` by `KEY = VALUE` for each key (each exactly once); no TODO may be left."""
    text = path.read_text(encoding="utf-8")
    for key, value in values.items():
        text, n = re.subn(rf"^(\s+{key}\s+= |.*\{{ {key} = )TODO\b", lambda m, v=value: m.group(1) + v, text, flags=re.M)
        assert n == 1, f"{key}: {n} TODO lines"
    assert " = TODO" not in text
    path.write_text(text, encoding="utf-8")


def make_example(name: str, folder: Path, run: Runner = effspec) -> Path:
    """The import, the fill-ins, then the report (`effspec report -o NAME_report.md`), in ``folder``;
    ``run(*args, cwd=)`` runs effspec (the tests pass their in-process conftest.cli)."""
    fmt, values = EXAMPLES[name]
    if folder != ROOT / "examples":
        shutil.copy(ROOT / "examples" / f"{name}.log", folder / f"{name}.log")
    proc = run("import", fmt, f"{name}.log", "-o", f"{name}.eff", "--force", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    fill(folder / f"{name}.eff", values)
    proc = run("fmt", f"{name}.eff", cwd=folder)  # the fill-ins laid out as the import is (`effspec fmt`)
    assert proc.returncode == 0, proc.stderr
    proc = run("report", f"{name}.eff", "-o", f"{name}_report.md", cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    return folder / f"{name}.eff"


def main() -> int:
    for example in EXAMPLES:
        make_example(example, ROOT / "examples")
        print(ROOT / "examples" / f"{example}.eff")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
