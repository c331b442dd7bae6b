"""The server's reading loop: `Content-Length` framing that survives a bad frame.

pygls's own loop (``pygls.io_.run_async``) reads a header only where a line is
exactly ``Content-Length: N``: after a frame whose length is missing, not a
number or negative, its body runs into the next header, and every message after
it is lost.  This loop reads the stream into a buffer instead and, after a bad
frame, skips to the next ``Content-Length:`` header (resynchronises).  It answers
what it can with a JSON-RPC error:

- a body that is not JSON: ParseError (-32700; the id cannot be known, so it is
  null, as JSON-RPC 2.0 says);
- a frame without a usable length whose body is a JSON request, a length shorter
  than the body (the body then continues up to the next header) or longer (the
  next frame's header comes first), or a message that is not a JSON-RPC object:
  InvalidRequest (-32600) with the request's id (null when none can be read);
- a request whose params do not fit its method: InvalidParams (-32602).

Positions (``{"line": …, "character": …}``) are clamped to LSP's `uinteger`
range (0 to 2**31 - 1) before the message is read, so a hover at line -1 or
2**31 is answered (null: no such line) rather than dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

__all__ = ["serve", "clamp_positions", "MAX_HEADER_BYTES", "MAX_BODY_BYTES"]

logger = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
UINTEGER_MAX = 2**31 - 1
MAX_HEADER_BYTES = 8192  # a header block longer than this is not one
MAX_BODY_BYTES = 64 * 1024 * 1024  # an editor's document is far below this

_HEADER = b"Content-Length:"
_LENGTH = re.compile(rb"Content-Length:[ \t]*([^\r\n]*)")
_HEADER_BLOCK = re.compile(rb"\s*(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n]*\r\n)+\r\n")
_DECODER = json.JSONDecoder()


def clamp_positions(node: Any) -> Any:
    """``node`` with every LSP position's line and character clamped to 0 .. 2**31 - 1."""
    if isinstance(node, dict):
        out = {k: clamp_positions(v) for k, v in node.items()}
        if set(out) == {"line", "character"}:
            for key in ("line", "character"):
                value = out[key]
                if isinstance(value, int) and not isinstance(value, bool):
                    out[key] = min(max(value, 0), UINTEGER_MAX)
        return out
    if isinstance(node, list):
        return [clamp_positions(v) for v in node]
    return node


def error_frame(msg_id: Any, code: int, message: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _request_id(data: Any) -> Any:
    """The id of a request (a string or integer), else None."""
    if isinstance(data, dict):
        msg_id = data.get("id")
        if isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool)):
            return msg_id
    return None


def _json_prefix(raw: bytes) -> tuple[Any, int] | None:
    """(the JSON value ``raw`` starts with, after blanks, and the bytes it takes), or None."""
    text = raw.decode("utf-8", "surrogateescape")
    start = len(text) - len(text.lstrip())
    try:
        value, end = _DECODER.raw_decode(text, start) if start < len(text) else (None, 0)
    except (ValueError, RecursionError):
        return None
    return (value, len(text[:end].encode("utf-8", "surrogateescape"))) if end else None


def _prefix_id(raw: bytes) -> Any:
    found = _json_prefix(raw)
    return _request_id(found[0]) if found is not None else None


class Stream:
    """A byte buffer over the binary input, filled in the executor (a blocking read never holds the loop)."""

    def __init__(self, raw, executor) -> None:
        self.raw, self.executor, self.buf, self.eof = raw, executor, bytearray(), False
        self._read = getattr(raw, "read1", None) or raw.read

    async def fill(self) -> bool:
        """Read what is available (at least a byte, unless the input ended); False at the end."""
        if self.eof:
            return False
        chunk = await asyncio.get_running_loop().run_in_executor(self.executor, self._read, 65536)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class Reader:
    """Frames from a :class:`Stream`, each (body, None) or (None, error frame to send)."""

    def __init__(self, stream: Stream) -> None:
        self.s = stream

    async def _headers(self) -> tuple[bytes, bytes] | None:
        """(the skipped bytes before the header, the header block), or None at the end of the input."""
        while True:
            block = _HEADER_BLOCK.match(self.s.buf)
            if block is not None and _HEADER not in block.group(0):  # headers without a Content-Length
                return b"", self.s.take(block.end())
            at = self.s.buf.find(_HEADER)
            if at >= 0:
                end = self.s.buf.find(b"\r\n\r\n", at)
                if end >= 0:
                    skipped = self.s.take(at)
                    return skipped, self.s.take(end + 4 - at)
                if len(self.s.buf) - at > MAX_HEADER_BYTES:  # not a header: look for the next one
                    self.s.take(at + len(_HEADER))
                    continue
            if not await self.s.fill():
                return None

    async def next(self) -> tuple[bytes | None, bytes | None] | None:
        """The next frame's body, or an error to answer; None at the end of the input."""
        found = await self._headers()
        if found is None:
            return None
        skipped, header = found
        stray = _prefix_id(skipped)
        if stray is not None:  # the body of a frame without a usable length: its request gets an answer
            return None, error_frame(stray, INVALID_REQUEST, "the request's frame has no valid Content-Length")
        m = _LENGTH.search(header)
        value = m.group(1).strip() if m else b""
        if not value.isdigit() or int(value) > MAX_BODY_BYTES:
            return await self._unframed(value)
        length = int(value)
        while len(self.s.buf) < length:
            if self.s.buf.find(_HEADER) >= 0:  # the next frame began before this one's length ran out
                whole = _json_prefix(bytes(self.s.buf))
                if whole is not None and self.s.buf.find(_HEADER, whole[1]) >= 0:
                    self.s.take(whole[1])
                    return None, error_frame(_request_id(whole[0]), INVALID_REQUEST,
                                             f"the request is shorter than its Content-Length ({length})")
            if not await self.s.fill():
                return None
        return self.s.take(length), None

    async def _unframed(self, value: bytes) -> tuple[bytes | None, bytes | None]:
        """After a header without a usable length: the body is what runs up to the next header."""
        while (found := _json_prefix(bytes(self.s.buf))) is None and self.s.buf.find(_HEADER) < 0:
            if len(self.s.buf) > MAX_BODY_BYTES or not await self.s.fill():
                break
        at = self.s.buf.find(_HEADER)
        end = found[1] if found is not None else at if at >= 0 else len(self.s.buf)
        self.s.take(end)  # the body, and no byte of the next header
        shown = value[:40].decode("ascii", "replace") or "empty"
        msg_id = _request_id(found[0]) if found is not None else None
        if msg_id is not None:
            return None, error_frame(msg_id, INVALID_REQUEST, f"the request's Content-Length is not a length ({shown})")
        return None, None  # nothing to answer: no id is known


def _shorter_body(body: bytes, rest: bytes) -> Any:
    """The id of the request that ``body`` starts and ``rest`` (up to the next header) ends, or None."""
    at = rest.find(_HEADER)
    return _prefix_id(body + (rest[:at] if at >= 0 else rest))


def read_message(body: bytes, protocol, rest: bytes = b"") -> tuple[Any, bytes | None]:
    """(the message pygls reads, None), or (None, the error frame to answer)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        msg_id = _shorter_body(body, rest)
        if msg_id is not None:
            return None, error_frame(msg_id, INVALID_REQUEST, "the request is longer than its Content-Length")
        return None, error_frame(None, PARSE_ERROR, "the message body is not JSON")
    msg_id = _request_id(data)
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or "method" in data and not isinstance(data["method"], str):
        return None, error_frame(msg_id, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    try:
        message = json.loads(json.dumps(clamp_positions(data)), object_hook=protocol.structure_message)
    except Exception:
        logger.exception("a message that does not fit its method")
        if "method" in data and "id" in data:
            return None, error_frame(msg_id, INVALID_PARAMS, f"the params do not fit `{data['method'][:80]}`")
        return None, None  # a notification or a response: nothing to answer
    return message, None


async def serve(stop_event, raw_input, executor, protocol) -> None:
    """Read frames from ``raw_input`` and hand each message to ``protocol`` until the input ends or the server stops."""
    reader = Reader(Stream(raw_input, executor))
    while not stop_event.is_set():
        frame = await reader.next()
        if frame is None:
            break
        body, error = frame
        message = None
        if body is not None:
            message, error = read_message(body, protocol, bytes(reader.s.buf))
        if error is not None:
            protocol.writer.write(error)
            continue
        if message is None:
            continue
        try:
            protocol.handle_message(message)
        except Exception:
            logger.exception("unable to handle a message")
