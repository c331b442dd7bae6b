"""`effspec explain`: the page of a diagnostic code or a convention preset, or the list of either."""

from __future__ import annotations

from effspec.cli.common import ToolError


def cmd_explain(args) -> int:
    from effspec.front import layers, presets
    from effspec.rules.pages import page

    text = page(args.code.upper()) or presets.page(args.code) or layers.page(args.code)
    if text is None:
        raise ToolError(f"unknown code or preset `{args.code}`; codes look like EFF202 (see `effspec explain --list`), "
                        "presets are listed by `effspec explain --presets`, layer kinds are "
                        + ", ".join(f"`{t}`" for t in layers.PAGES))
    print(text)
    return 0


def cmd_list(_args) -> int:
    from effspec.rules import code_table

    for code, (title, severity) in code_table().items():
        print(f"{code}  {severity:<7}  {title}")
    return 0


def cmd_presets(_args) -> int:
    """One line per preset: its name, and the formula and source it reproduces."""
    from effspec.front import presets

    width = max(len(n) for n in presets.names())
    for preset in presets.PRESETS:
        print(f"{preset.name:<{width}}  {preset.formula} ({preset.upstream})")
    print(f"{'custom':<{width}}  {presets.CUSTOM_NOTE}")
    return 0
