"""EFF206: a declared peak for an accelerator the catalog does not know."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine import catalog
from effspec.rules import AuditContext, Rule


def _near(name: str) -> list[str]:
    """Catalog ids whose names are close to ``name``: a form factor left out, a typo."""
    ids = catalog.known_accelerators()
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    prefixed = [i for i in ids if key and "".join(ch for ch in i.lower() if ch.isalnum()).startswith(key)]
    return prefixed or difflib.get_close_matches(name, ids, n=3, cutoff=0.6)


class EFF206(Rule):
    """## What it does

    Reports, as information, a `peak` written as a quantity for an
    `accelerator` that the built-in catalog does not know (or names
    ambiguously, such as a bare `"H100"`, which could be the SXM5, PCIe or NVL
    part). Such a figure is used as written: none of the denominator checks
    (EFF201 another datatype's figure, EFF202 the sparse figure, EFF203 a
    figure off the datasheet, EFF204 a pool's figure) can run on it.

    ## Why is this bad?

    The peak sets every MFU and HFU of the run in direct proportion. For a
    catalogued part, effspec checks the written figure against the vendor's
    datasheet row for the run's datatype and sparsity. For any other part the
    figure is unchecked: a sparse figure for dense work, or a number for a
    sibling part, passes silently. The reader should know that the
    denominator rests on the spec's citation alone.

    ## Example

    ```eff
    eff 1

    run custom_chip {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "H100"  count = 8 device  dtype = bf16  peak = 989.4 TFLOP/s }
      timing { step_time = [1.6, 1.6, 1.7, 1.6, 1.6] s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Name the part the way the catalog does, so the figure is checked (or
    taken from it with `peak = catalog`):

    ```eff
    eff 1

    run custom_chip {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = 989.4 TFLOP/s }
      timing { step_time = [1.6, 1.6, 1.7, 1.6, 1.6] s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    For a part outside the catalog, cite the vendor document in the peak's
    `from datasheet "…"` and keep the finding as the record that the figure
    was not checked (or silence it with `# effspec: ignore[EFF206]`).
    """

    code = "EFF206"
    title = "declared peak for an accelerator the catalog does not know"
    severity = "info"
    name = "peak-not-in-catalog"
    nodes = ("run.hardware.accelerator", "run.hardware.peak")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            for pool in result.pools:
                entry = pool.block.get("peak")
                if entry is None or entry.value == "catalog" or pool.peak is None or not pool.accelerator:
                    continue
                if catalog.canonical_accelerator(pool.accelerator) is not None:
                    continue
                near = _near(pool.accelerator)
                notes = []
                if near:
                    notes.append("catalog parts with a similar name: " + ", ".join(f"`{n}`" for n in near)
                                 + "; if the run used one of them, write its full name so the peak is checked")
                cited = entry.provenance.kind in ("datasheet", "paper", "measured")
                notes.append("the peak's source: " + (f"{entry.provenance.kind} \"{entry.provenance.citation}\"" if cited
                                                      else "none given (no `from`)"))
                yield self.diag(
                    entry.value_span,
                    f"`{pool.accelerator}` is not in the peak catalog: the peak {quantity(pool.peak, 'FLOP/s')} "
                    "could not be checked against a datasheet",
                    "name the accelerator as the catalog spells it (`effspec explain EFF206`), or cite the vendor "
                    "document with `from datasheet \"…\"`",
                    label="unchecked peak",
                    notes=tuple(notes),
                )
