"""`effspec catalog`: the accelerators of the peak catalog, their names, and how names match.

`effspec catalog` lists every accelerator with its aliases and peaks;
`effspec catalog NAME` says which accelerator a name resolves to (exit 1 when
it resolves to none).  The catalog is ``compiler/data/peaks.json``; the matching
is :func:`effspec.engine.catalog.canonical_accelerator`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# How `accelerator = "…"` finds its catalog row (effspec.engine.catalog);
# spec/language.md lists the same rules, checked by tests/cli/test_catalog_cli.py.
MATCHING_RULES = (
    "Case is ignored, and so is every character other than a letter or a digit: \"h100 sxm5\" is \"H100-SXM5\".",
    "Leading vendor words are dropped: NVIDIA, AMD, Google, Cloud, Intel, Habana, AWS, Amazon.",
    "A name matches an accelerator's id or one of its aliases; no name belongs to two accelerators.",
    "A name is tried as written, then without memory descriptors (80GB, 141 GB, HBM3, HBM3e), "
    "so \"H200 SXM 141GB\" finds \"H200 SXM\"; aliases themselves are never shortened.",
    "A bare name resolves only when every part it could denote has the same peaks: \"A100\" is the A100 SXM4 "
    "(its SXM4 and PCIe datasheet Tensor Core figures are identical); \"H100\", \"H200\", \"H800\" and \"V100\" "
    "alone resolve to nothing, since their variants differ: name the form factor.",
    "A name that resolves although another part's id begins with it (\"A100\": A100-SXM4, and A100-PCIe; "
    "\"Trainium\": Trainium1, and Trainium2) is reported as information (EFF207), naming the row chosen, "
    "the other parts' peaks, and how to write each.",
    "A name that resolves to nothing is EFF020 with `peak = catalog` (a bare family name such as \"H100\" is told "
    "the catalogued parts of that name); a peak written as a figure is then used as written and reported as "
    "unchecked (EFF206).",
)

_PEAK_UNIT = "TFLOP/s (int8: TOPS)"


def register(sub) -> argparse.ArgumentParser:
    c = sub.add_parser("catalog", help="list the peak catalog's accelerators, their names and the matching rules",
                       description="List the accelerators of effspec's peak catalog, the names each is known by, "
                                   "its peaks, and how `accelerator = \"…\"` names are matched. With NAME, show "
                                   "which accelerator NAME resolves to (exit status 1 if none).")
    c.add_argument("name", nargs="?", metavar="NAME", help="an accelerator name to resolve, e.g. \"NVIDIA H100 80GB HBM3\"")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.set_defaults(func=cmd_catalog)
    return c


def accelerators() -> list[dict[str, Any]]:
    """The catalog's accelerators as the data file holds them, in file order."""
    from importlib import resources

    raw = json.loads(resources.files("effspec.data").joinpath("peaks.json").read_text(encoding="utf-8"))
    return list(raw["accelerators"])


def _number(value: float) -> str:
    return f"{value:g}"


def peaks_text(acc: dict[str, Any]) -> str:
    """`bf16 312 / 624 sparse, fp16 …`: each dtype's dense figure, then its sparse one."""
    by_dtype: dict[str, dict[str, float]] = {}
    for row in acc["peaks"]:
        by_dtype.setdefault(row["dtype"], {})[row["sparsity"]] = row["tflops"]
    parts = []
    for dtype, rows in by_dtype.items():
        shown = [_number(rows["dense"])] if "dense" in rows else []
        if "sparse" in rows:
            shown.append(f"{_number(rows['sparse'])} sparse")
        parts.append(f"{dtype} " + " / ".join(shown))
    return ", ".join(parts)


def markdown_table() -> str:
    """The catalog as the table in spec/language.md."""
    lines = [f"| accelerator | vendor | also accepted | peaks, {_PEAK_UNIT} |", "|---|---|---|---|"]
    for acc in accelerators():
        aliases = ", ".join(f"`{a}`" for a in acc.get("aliases", ()))
        lines.append(f"| `{acc['id']}` | {acc.get('vendor', '')} | {aliases} | {peaks_text(acc)} |")
    return "\n".join(lines) + "\n"


def _resolve(name: str) -> int:
    from effspec.diagnostics import printable
    from effspec.engine.catalog import also_named, candidates, canonical_accelerator

    found = canonical_accelerator(name)
    if found is None:
        parts = candidates(name)
        print(f"{printable(name)}: no catalog accelerator (see `effspec catalog` for the names and the rules)"
              + (f"; catalogued parts of that name: {', '.join(parts)}" if parts else ""))
        return 1
    acc = next(a for a in accelerators() if a["id"] == found)
    print(f"{printable(name)} -> {found}")
    print(f"  peaks, {_PEAK_UNIT}: {peaks_text(acc)}")
    others = also_named(name)
    if others:
        print(f"  also fits {', '.join(others)} (EFF207, info): name the form factor to choose, e.g. "
              + ", ".join(f'"{o}"' for o in (found, *others)))
    return 0


def cmd_catalog(args) -> int:
    if args.format == "json":
        doc: dict[str, Any] = {"accelerators": accelerators(), "matching": list(MATCHING_RULES)}
        if args.name is not None:
            from effspec.engine.catalog import also_named, candidates, canonical_accelerator

            found = canonical_accelerator(args.name)
            doc["resolved"] = {"name": args.name, "accelerator": found,
                               "also": list(also_named(args.name) if found else candidates(args.name))}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 1 if args.name is not None and doc["resolved"]["accelerator"] is None else 0
    if args.name is not None:
        return _resolve(args.name)
    accs = accelerators()
    out = [f"Peak catalog: {len(accs)} accelerators; peaks per device in TFLOP/s (int8 in TOPS)", ""]
    for acc in accs:
        out.append(f"{acc['id']}  ({acc.get('vendor', '')})")
        if acc.get("aliases"):
            out.append("  names: " + ", ".join(f'"{a}"' for a in acc["aliases"]))
        out.append(f"  peaks: {peaks_text(acc)}")
    out += ["", "How names match:"]
    out += [f"  - {rule}" for rule in MATCHING_RULES]
    sys.stdout.write("\n".join(out) + "\n")
    return 0
