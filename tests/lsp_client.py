"""A small JSON-RPC 2.0 client for the language server over stdio (Content-Length framing).

Used by tests/lsp/test_lsp.py and benchmarks/lsp_latency.py: it talks to
`effspec lsp` in a subprocess exactly as an editor does.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path


def uri_of(path: Path | str) -> str:
    return Path(path).resolve().as_uri()


class Client:
    def __init__(self, argv: list[str] | None = None, cwd: Path | str | None = None, env: dict | None = None):
        argv = argv or [sys.executable, "-m", "effspec", "lsp"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=cwd, env=env or dict(os.environ))
        self.next_id = 0
        self.messages: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    # -- wire -------------------------------------------------------------
    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _next(self, timeout: float) -> dict:
        try:
            msg = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no message from the server; stderr:\n" + b"".join(self.stderr).decode(errors="replace")) from None
        if msg is None:
            raise EOFError("the server closed stdout; stderr:\n" + b"".join(self.stderr).decode(errors="replace"))
        return msg

    # -- requests and notifications ---------------------------------------
    def request(self, method: str, params: dict | None = None, timeout: float = 60.0):
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params or {}})
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next(max(0.01, deadline - time.monotonic()))
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            self._other(msg)

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def _other(self, msg: dict) -> None:
        if "method" in msg and "id" in msg:  # a request from the server (configuration, registration)
            self.send({"id": msg["id"], "result": None})
        else:
            self.notifications.append(msg)

    def wait_for(self, method: str, predicate=lambda params: True, timeout: float = 60.0) -> dict:
        """The first notification ``method`` (already received or arriving) whose params pass ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            for i, msg in enumerate(self.notifications):
                if msg.get("method") == method and predicate(msg.get("params")):
                    del self.notifications[: i + 1]
                    return msg["params"]
            self._other(self._next(max(0.01, deadline - time.monotonic())))

    # -- the usual conversation -------------------------------------------
    def initialize(self, root: Path | str, options: dict | None = None) -> dict:
        result = self.request("initialize", {"processId": os.getpid(), "rootUri": uri_of(root), "capabilities": {
            "textDocument": {"publishDiagnostics": {"relatedInformation": True}, "inlayHint": {},
                             "completion": {"completionItem": {"snippetSupport": False}}}},
            "initializationOptions": options or {}})
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "eff", "version": version, "text": text}})

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 60.0) -> list[dict]:
        params = self.wait_for("textDocument/publishDiagnostics",
                               lambda p: p["uri"] == uri and (version is None or p.get("version") == version), timeout)
        return params["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", timeout=10)
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(Exception):
                stream.close()
