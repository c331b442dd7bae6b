"""`effspec export FILE.eff -o FILE.eff.json`: the checked IR as JSON (spec/ir-json.md), written atomically."""

from __future__ import annotations

import os
import sys

from effspec.cli.common import ToolError, load_spec
from effspec.diagnostics import printable


def register(sub) -> None:
    e = sub.add_parser("export", help="write a spec's checked IR as JSON (spec/eff-ir.schema.json)",
                       description="Compile FILE and write its IR as JSON to OUT (default: FILE with .json added), "
                                   "atomically. A spec that does not compile (EFF0xx errors) writes nothing. "
                                   "`effspec check OUT` then gives the spec's findings and figures.")
    e.add_argument("file", metavar="FILE", help="the .eff file")
    e.add_argument("-o", "--output", metavar="OUT", help="the JSON file to write (`-`: stdout); default FILE.json")
    e.add_argument("--allow-hardlinks", action="store_true",
                   help="read `file` references that are hard links (only for folders you trust)")
    e.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from effspec.api import export_ir
    from effspec.atomic import write_atomic
    from effspec.report.text import text

    out = args.output or args.file + ".json"
    if out != "-" and os.path.exists(out) and os.path.exists(args.file) and os.path.samefile(out, args.file):
        raise ToolError(f"{out}: is the spec {args.file}; not overwritten with its IR (choose another output file)")
    result = load_spec(args.file, allow_hardlinks=args.allow_hardlinks, isolated=True)
    try:
        data = export_ir(result)
    except ValueError:
        print(text(result), file=sys.stderr)
        print(f"effspec: {printable(args.file)} does not compile (the EFF0xx errors above); "
              f"{printable(out)} was not written", file=sys.stderr)
        return 1
    if out == "-":
        sys.stdout.write(data)
        return 0
    try:
        write_atomic(out, data)
    except OSError as exc:
        raise ToolError(f"{out}: cannot write it ({exc.strerror or exc}); it is unchanged") from None
    print(f"wrote {printable(out)}", file=sys.stderr)
    return 0
