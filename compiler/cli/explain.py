"""`effspec explain`: the page of a diagnostic code, or the list of codes."""

from __future__ import annotations

from effspec.cli.common import ToolError


def cmd_explain(args) -> int:
    from effspec.rules.pages import page

    text = page(args.code.upper())
    if text is None:
        raise ToolError(f"unknown code `{args.code}`; codes look like EFF202 (see `effspec explain --list`)")
    print(text)
    return 0


def cmd_list(_args) -> int:
    from effspec.rules import code_table

    for code, (title, severity) in code_table().items():
        print(f"{code}  {severity:<7}  {title}")
    return 0
