"""`effspec lsp`: the language server on stdio (needs the `lsp` extra: pygls).

Nothing here imports pygls at module load: `effspec check` imports this module
with the rest of the CLI and must not pay for the server.
"""

from __future__ import annotations

from effspec.cli.common import ToolError


def cmd_lsp(args) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        raise ToolError("`effspec lsp` needs pygls: pip install 'effspec[lsp]'") from None
    from effspec.lsp import server

    if getattr(args, "debounce_ms", None) is not None:
        server.server.settings.debounce_ms = max(0.0, args.debounce_ms)
    if getattr(args, "no_inlay_hints", False):
        server.server.settings.inlay_hints = False
    return server.main()
