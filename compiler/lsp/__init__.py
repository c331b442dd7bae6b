"""`effspec lsp`: a Language Server Protocol server for `.eff` files.

The package sits at the top of the pipeline, beside the CLI: it runs the same
``effspec.check_text`` the CLI runs and reads the Result (IR, evaluation,
diagnostics) for hovers, inlay hints and code actions.

- :mod:`effspec.lsp.scan`: a tolerant tokenizer and the block context at a
  cursor (works on text that does not parse);
- :mod:`effspec.lsp.analysis`: one checked document and its LSP diagnostics;
- :mod:`effspec.lsp.features`: hover, inlay hints, completion, code actions,
  symbols and go-to-definition, as plain functions of an Analysis;
- :mod:`effspec.lsp.server`: the pygls glue (imported only by ``effspec lsp``).

Only :mod:`effspec.lsp.server` and :mod:`effspec.lsp.features` import pygls or
lsprotocol, so ``effspec check`` never loads them.
"""
