"""The pygls server: requests routed to :mod:`effspec.lsp.features`.

One process serves every document and stays warm: the grammar, unit table,
catalog and rules are loaded once, at start-up.  A change is checked after
the typing pauses (``debounceMs``, 30 ms by default); a newer change cancels
the pending check.  A check that raises becomes an EFF000 diagnostic on that
document and every handler catches its own errors, so one bad document never
stops the server.  Nor does a bad frame: the reading loop is effspec.lsp.framing's,
which resynchronises after it and answers with a JSON-RPC error where it can.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from effspec.lsp import analysis as A
from effspec.lsp import features as F
from effspec.lsp.incremental import IncrementalParser
from effspec.version import __version__


class EffServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("effspec", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Incremental)
        self.settings = F.Settings()
        self.analyses: dict[str, A.Analysis] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.parsers: dict[str, IncrementalParser] = {}  # per document: the trees of its unchanged runs

    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve over stdio as pygls does, but read the frames with effspec.lsp.framing (it survives a bad one)."""
        from pygls.io_ import StdoutWriter

        from effspec.lsp.framing import serve

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(serve(self._stop_event, stdin or sys.stdin.buffer, self.thread_pool, self.protocol))
        except BrokenPipeError:
            print("effspec lsp: the connection to the editor is lost", file=sys.stderr)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def analysis(self, uri: str) -> A.Analysis:
        """The latest analysis of ``uri``, re-checked now if the text moved on since."""
        doc = self.workspace.get_text_document(uri)
        current = self.analyses.get(uri)
        if current is None or current.text != doc.source:
            current = self.check(uri)
        current.version = doc.version  # the same text again (an undo): its check stands, under the new version
        return current

    def check(self, uri: str) -> A.Analysis:
        doc = self.workspace.get_text_document(uri)
        parser = self.parsers.setdefault(uri, IncrementalParser())
        result = A.analyze(uri, doc.source, doc.version, parser)
        self.analyses[uri] = result
        return result

    def publish(self, uri: str) -> None:
        result = self.analysis(uri)  # checked already if a hover or hint asked for this text
        try:
            diags = F.diagnostics(result)
        except Exception as exc:  # a diagnostic that cannot be converted: still say something
            traceback.print_exc()
            result.crash, result.result = f"{type(exc).__name__}: {exc}", None
            diags = F.diagnostics(result)
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=result.version))

    def schedule(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        delay = self.settings.debounce_ms / 1000.0

        async def later() -> None:
            await asyncio.sleep(delay)
            self.pending.pop(uri, None)
            self.publish(uri)

        self.pending[uri] = asyncio.get_running_loop().create_task(later())


server = EffServer()


def _guarded(default):
    """A handler that logs its exception and returns ``default`` instead of failing the request."""
    def wrap(fn):
        def handler(ls: EffServer, params):
            try:
                return fn(ls, params)
            except Exception:
                traceback.print_exc()
                return default
        handler.__name__ = fn.__name__
        return handler
    return wrap


@server.feature(T.INITIALIZE)
def initialize(ls: EffServer, params: T.InitializeParams) -> None:
    ls.settings.update(params.initialization_options)


@server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: EffServer, params: T.DidChangeConfigurationParams) -> None:
    ls.settings.update(params.settings)
    refresh = ls.client_capabilities.workspace and ls.client_capabilities.workspace.inlay_hint
    if refresh and refresh.refresh_support:  # ask the editor to fetch the hints again
        ls.workspace_inlay_hint_refresh(None)


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: EffServer, params: T.DidOpenTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: EffServer, params: T.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: EffServer, params: T.DidSaveTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: EffServer, params: T.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.analyses.pop(uri, None)
    ls.parsers.pop(uri, None)
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(T.TEXT_DOCUMENT_HOVER)
@_guarded(None)
def hover(ls: EffServer, params: T.HoverParams) -> T.Hover | None:
    return F.hover(ls.analysis(params.text_document.uri), params.position)


@server.feature(T.TEXT_DOCUMENT_INLAY_HINT)
@_guarded([])
def inlay_hint(ls: EffServer, params: T.InlayHintParams) -> list[T.InlayHint]:
    return F.inlay_hints(ls.analysis(params.text_document.uri), params.range, ls.settings)


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=["=", " ", "[", ",", '"', "."]))
@_guarded(None)
def completion(ls: EffServer, params: T.CompletionParams) -> T.CompletionList | None:
    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)
    # Completion reads only tokens: no need to wait for a check of the newest text.
    current = ls.analyses.get(uri)
    if current is None or current.text != doc.source:
        current = A.Analysis(uri, A.path_of(uri), doc.source, doc.version, current.result if current else None)
    return F.completion(current, params.position)


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
@_guarded([])
def code_action(ls: EffServer, params: T.CodeActionParams) -> list[T.CodeAction]:
    return F.code_actions(ls.analysis(params.text_document.uri), params.range)


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
@_guarded(None)
def formatting(ls: EffServer, params: T.DocumentFormattingParams) -> list[T.TextEdit] | None:
    doc = ls.workspace.get_text_document(params.text_document.uri)
    return F.formatting(doc.source)


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@_guarded([])
def document_symbol(ls: EffServer, params: T.DocumentSymbolParams) -> list[T.DocumentSymbol]:
    return F.document_symbols(ls.analysis(params.text_document.uri))


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
@_guarded(None)
def definition(ls: EffServer, params: T.DefinitionParams) -> T.Location | None:
    return F.definition(ls.analysis(params.text_document.uri), params.position)


def warm_up() -> None:
    """Load what every check needs once: modules, parser tables, rules, units, the catalog, the reference tables."""
    import effspec
    from effspec.engine import catalog

    effspec.check_text("eff 1\nrun warm { work { seq_len = 1 token/sequence  global_batch = 1 sequence }"
                       "  hardware { accelerator = \"A100-SXM4-80GB\"  count = 1 device  peak = catalog }"
                       "  timing { step_time = 1 s }  claim mfu = 1 % }\n")
    catalog.known_accelerators()
    F.reference_tables()


def main() -> int:
    warm_up()
    print(f"effspec {__version__} language server on stdio", file=sys.stderr)
    server.start_io()
    return 0
