"""Reading one trace file: plain or gzip JSON, hashed as it is read, decoded
in batches when small and parsed in chunks when large, in memory bounded by
a small multiple of the file.

A Kineto trace is one JSON object whose ``traceEvents`` member is the list of
events; its other members (``distributedInfo``, ``host_name``,
``baseTimeNanoseconds``, ``deviceProperties``…) are small.  Up to
``whole_limit`` decompressed bytes, with msgspec, the document is decoded
once with ``traceEvents`` kept as raw JSON, then the events a batch of about
256 KiB at a time (objects for one batch at once: msgspec makes up to ~35x a
batch's bytes in objects, for events of ``{}``), against a schema of the few
fields a reduction reads.  Anything else (no msgspec, a larger trace, a
document that does not fit the schema) is read in chunks and ``traceEvents``
parsed one event at a time with ``json.JSONDecoder.raw_decode``, so memory
stays bounded by the chunk, the largest event and the compact arrays the
reduction keeps.  Both give the same values (big integers, NaN refused, the
same UTF-8 check).

Every problem is a :class:`TraceError` with a code, a message, and a JSON
line and column when there is one.
"""

from __future__ import annotations

import codecs
import decimal
import gzip
import hashlib
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK = 1 << 20  # bytes read at a time
WHOLE_LIMIT = 256 * 1024 * 1024  # decompressed bytes parsed in one call; above, in chunks
# One event (or top-level member) larger than this is refused: parsed, its objects take up to ~35x its text
# (lists of `[]`), so this bounds what any one event costs (a Kineto event is a few hundred bytes; the largest
# top-level member, distributedInfo's process groups, about 6 bytes per rank per group dimension).
MAX_EVENT_CHARS = 4 * 1024 * 1024
MAX_TRACE_BYTES = 1 << 40  # decompressed bytes of one trace (1 TiB): the last guard
# A gzip bomb: Kineto JSON compresses about 14:1 (the fixtures: 13.0-14.2); a
# file past BOMB_FLOOR decompressed bytes at more than BOMB_RATIO:1 is not a trace.
BOMB_FLOOR = 64 * 1024 * 1024
BOMB_RATIO = 200


class TraceError(Exception):
    """A coded problem with one trace file."""

    def __init__(self, code: str, message: str, help: str = "", line: int = 0, column: int = 0):
        super().__init__(message)
        self.code, self.message, self.help, self.line, self.column = code, message, help, line, column


@dataclass
class Source:
    """The file's identity, filled in as it is read: size and SHA-256 of its bytes on disk."""

    bytes: int = 0
    sha256: str = ""
    gzip: bool = False
    parser: str = ""  # msgspec | chunked
    decompressed: int = 0


class _HashingReader:
    """A raw file that hashes and counts every byte read from it."""

    def __init__(self, fd: int):
        self.fh = os.fdopen(fd, "rb", buffering=0)
        self.hash = hashlib.sha256()
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n if n is not None and n >= 0 else CHUNK * 64)
        self.hash.update(data)
        self.count += len(data)
        return data

    def readable(self) -> bool:
        return True

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    def close(self) -> None:
        self.fh.close()


def _open(path: str, beneath: bool = False, allow_hardlinks: bool = False) -> _HashingReader:
    """A regular file, opened non-blocking so that a FIFO never hangs the reader.

    ``beneath``: ``path`` was found in a folder (its canonical folder joined
    with the name listed there) and is opened under the rules of a `file`
    reference (front/files.py): a symlink only while it stays inside the
    folder, one name unless ``allow_hardlinks``.  A file named on the command
    line may be a symlink, never into /proc, /sys, /dev or /run.
    """
    from effspec.front.files import Refused, in_pseudo_filesystem, open_beneath

    try:
        if beneath:
            fd, _ = open_beneath(os.path.dirname(path), os.path.basename(path), allow_hardlinks)
        else:
            if in_pseudo_filesystem(os.path.realpath(path)) or in_pseudo_filesystem(os.path.abspath(path)):
                raise Refused("pseudo", "lies in a system pseudo-filesystem; not read")
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                         | getattr(os, "O_CLOEXEC", 0))
    except Refused as exc:
        raise TraceError("EFF020", _refusal(exc, os.path.dirname(path)), _REFUSAL_HELP.get(exc.reason, "")) from None
    except OSError as exc:
        raise TraceError("EFF020", f"cannot be read: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise TraceError("EFF020", "is not a regular file", "a trace is a .json or .json.gz file")
    return _HashingReader(fd)


_REFUSAL_HELP = {
    "outside": "copy the trace into the folder, or name it on the command line",
    "hardlink": "--allow-hardlinks reads it (only for folders you trust)",
}


def _refusal(exc: Exception, folder: str) -> str:
    reason = getattr(exc, "reason", "")
    target = getattr(exc, "target", None)
    if reason == "outside" and target is not None:
        return f"is a symlink to {target}, outside its folder {folder}; not read"
    if reason == "pseudo" and target is not None:
        return f"is a symlink to {target}, a system pseudo-filesystem; not read"
    if reason == "hardlink":
        return f"is a hard link (one file with {getattr(exc, 'names', 2)} names, which may lie outside {folder}); not read"
    text = getattr(exc, "strerror", None) or str(exc)
    return text if text.endswith("not read") else f"{text}; not read"


def _chunks(path: str, source: Source, limit: int, beneath: bool = False, allow_hardlinks: bool = False) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` in chunks; fills ``source`` when the file is read to its end."""
    raw = _open(path, beneath, allow_hardlinks)
    try:
        head = raw.read(2)
        source.gzip = head == b"\x1f\x8b"
        if source.gzip:
            stream = gzip.GzipFile(fileobj=_Prefixed(head, raw), mode="rb")  # type: ignore[call-overload]
        else:
            stream = _Prefixed(head, raw)
        total = 0
        while True:
            try:
                chunk = stream.read(CHUNK)
            except EOFError:
                raise TraceError("EFF003", f"truncated gzip: the compressed data ends after {raw.count:,} bytes, "
                                 "before the end-of-stream marker", "the file was cut short (a full disk, a copy "
                                 "interrupted): profile again or copy it whole") from None
            except (gzip.BadGzipFile, zlib.error, OSError) as exc:
                raise TraceError("EFF003", f"corrupt gzip data ({exc})", "the file is not a valid .gz archive") from None
            if not chunk:
                break
            total += len(chunk)
            if source.gzip and total > BOMB_FLOOR and total > BOMB_RATIO * raw.count:
                raise TraceError("EFF030", f"a gzip bomb: {raw.count:,} compressed bytes have already expanded to "
                                 f"{total:,} (more than {BOMB_RATIO}:1; a profiler trace compresses about 14:1)",
                                 "this is not a profiler trace; nothing more of it is read")
            if total > limit:
                raise TraceError("EFF030", f"decompresses to more than {limit:,} bytes; the limit is {limit:,}",
                                 "split the profile (fewer steps per trace), or raise --max-trace-bytes")
            yield chunk
        raw.drain()
        source.bytes, source.sha256, source.decompressed = raw.count, raw.hash.hexdigest(), total
    finally:
        raw.close()


class _Prefixed:
    """A reader that first returns ``head``, then the rest of ``raw``."""

    def __init__(self, head: bytes, raw: _HashingReader):
        self.head, self.raw = head, raw

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            return out if n is None or n < 0 or n <= len(out) else out + self.raw.read(n - len(out))
        return self.raw.read(n)

    def readable(self) -> bool:
        return True


class Structs(list):
    """A batch of events msgspec decoded against the schema below:
    objects with the fields as attributes (None when absent), not dicts."""


class NotFit(Exception):
    """A batch of events does not fit the schema: the trace is read again by the general (chunked) parser."""


_TOP_FIELDS = ("distributedInfo", "host_name", "hostname", "baseTimeNanoseconds")
BATCH = 1 << 18  # bytes of events decoded into objects at a time: msgspec makes up to ~35x their JSON in objects
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")  # between two events (checked: a split anywhere else does not decode)
_DECODERS: list = []  # [(trace decoder, batch decoder)], or [None] without msgspec


def _decoders():
    """msgspec decoders, or None when msgspec is not installed: of the document (``traceEvents`` kept as raw
    JSON, the top-level members the reduction reads as raw JSON, nothing else), and of a batch of events (the
    few fields a reduction reads; the others are skipped, never made into objects), with floats as floats
    and, for an exact reading, as ``decimal.Decimal`` (the number's text, exactly)."""
    if not _DECODERS:
        try:
            import msgspec
        except ImportError:
            _DECODERS.append(None)
            return None
        from typing import Any

        # defstruct, not class statements: this module's annotations are strings
        # (postponed), which msgspec cannot resolve for classes made in a function.
        args = msgspec.defstruct("Args", [("correlation", Any, None)], gc=False)
        event = msgspec.defstruct("Event", [(f, Any, None) for f in ("ph", "cat", "name", "ts", "dur", "pid", "tid")]
                                  + [("args", args | None, None)], gc=False)  # type: ignore[operator, unused-ignore]
        trace = msgspec.defstruct("Trace", [("traceEvents", msgspec.Raw)]
                                  + [(f, msgspec.Raw, None) for f in _TOP_FIELDS], gc=False)
        _DECODERS.append((msgspec.json.Decoder(trace), msgspec.json.Decoder(list[event]),  # type: ignore[valid-type]
                          msgspec.json.Decoder(list[event], float_hook=decimal.Decimal)))  # type: ignore[valid-type]
    return _DECODERS[0]


def _reject_constant(name: str):
    raise ValueError(f"`{name}` is not JSON")


class StructBatches:
    """The events of a trace whose document fits the schema, decoded a batch of about ``BATCH`` bytes at a
    time (so the objects of one batch exist at once, never those of the whole trace).  A batch that does not
    fit raises :class:`NotFit`; :meth:`fallback` then reads the same bytes with the chunked parser."""

    def __init__(self, data: bytes, events, decoder, top: dict, exact: bool = False):
        self.data, self.events, self.decoder, self.top, self.exact = data, events, decoder, top, exact

    def __iter__(self):
        import msgspec

        inner = memoryview(self.events)[1:-1]  # the array's text without its brackets
        pos, n = 0, len(inner)
        while pos < n:
            end, after = n, n
            if n - pos > BATCH:
                m = _BOUNDARY.search(inner, pos + BATCH, pos + BATCH + MAX_EVENT_CHARS)
                if m is None:  # an event over the limit, or not a list of objects: the general parser says which
                    raise NotFit
                end, after = m.start() + 1, m.end() - 1
            try:
                batch = self.decoder.decode(b"[" + bytes(inner[pos:end]) + b"]")
            except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
                raise NotFit from None
            yield Structs(batch)
            del batch
            pos = after

    def fallback(self, source: Source):
        """The events read by the general parser from the same bytes (``top`` is filled again as they are read)."""
        self.top.clear()
        source.parser = "chunked"
        data, self.data, self.events = self.data, b"", None
        reader = _Stream((data[i:i + CHUNK] for i in range(0, len(data), CHUNK)), self.top, self.exact)
        return reader.events()


def _typed(data: bytes, exact: bool = False):
    """``(top, batches)`` when msgspec is installed and the document fits the schema (any malformed or unusual
    content does not: the general parser then reads it, and says what is wrong), else None."""
    decoders = _decoders()
    if decoders is None:
        return None
    import msgspec

    from effspec.front.files import first_invalid_utf8

    if first_invalid_utf8(data) is not None:  # msgspec does not check the bytes it skips: the general parser says where
        return None
    trace_decoder, batch_decoder, exact_decoder = decoders
    try:
        typed = trace_decoder.decode(data)
        if bytes(memoryview(typed.traceEvents)[:1]) != b"[":
            return None
        # The top-level members as the chunked parser reads them (the standard library: big integers stay integers).
        top = {name: json.loads(bytes(value), parse_constant=_reject_constant) for name in _TOP_FIELDS
               if (value := getattr(typed, name)) is not None}
    except (msgspec.DecodeError, RecursionError, ValueError):
        return None
    return top, StructBatches(data, typed.traceEvents, exact_decoder if exact else batch_decoder, top, exact)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, len(data[start:offset].decode("utf-8", "replace")) + 1


def read_trace(path: str, whole_limit: int = WHOLE_LIMIT, max_bytes: int = MAX_TRACE_BYTES, beneath: bool = False,
               allow_hardlinks: bool = False, exact: bool = False):
    """``(top, events, source)``: the top-level members but ``traceEvents``, an
    iterator over the events, and the file's identity (complete once the
    events are exhausted).  ``exact``: the events' non-integer numbers are
    ``decimal.Decimal``, their text exactly, not the nearest double."""
    source = Source()
    chunks = _chunks(path, source, max_bytes, beneath, allow_hardlinks)
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > whole_limit:
            break
    else:  # the whole file fits: decoded by msgspec, a batch at a time, or by the general parser
        data = b"".join(head)
        head.clear()
        typed = _typed(data, exact)
        if typed is not None:
            source.parser = "msgspec"
            return typed[0], typed[1], source
        head.append(data)
        del data
    source.parser = "chunked"
    reader = _Stream(_chain(head, chunks), exact=exact)
    return reader.top, reader.events(), source


def _chain(head: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    while head:
        yield head.pop(0)
    yield from rest


_WS = " \t\n\r"
_TAIL = 32  # characters: longer than any number or keyword a chunk boundary can cut


class _Stream:
    """An incremental reader of one top-level JSON object whose ``traceEvents``
    array is yielded element by element; other members go to ``top``."""

    def __init__(self, chunks: Iterator[bytes], top: dict | None = None, exact: bool = False):
        self.chunks = chunks
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.json = json.JSONDecoder(parse_constant=_reject_constant, parse_float=decimal.Decimal if exact else None)
        self.buf, self.pos, self.eof = "", 0, False
        self.line_base, self.line_start = 1, 0  # lines before buf, and where the current line starts (may be < 0)
        self.top: dict = {} if top is None else top
        self.seen_events = False

    # -- low-level --------------------------------------------------------
    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = b""
        try:
            chunk = next(self.chunks)
            text = self.decoder.decode(chunk)
        except StopIteration:
            self.eof = True
            text = self.decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:  # placed after the chunk's good bytes
            good = chunk[: max(exc.start, 0)].decode("utf-8", "replace")
            raise self._error(f"invalid JSON: not UTF-8 ({exc.reason})", len(self.buf) + len(good), good) from None
        if self.pos > CHUNK and self.pos > len(self.buf) // 2:  # drop what has been consumed
            dropped = self.buf[: self.pos]
            newlines = dropped.count("\n")
            if newlines:
                self.line_base += newlines
                self.line_start = dropped.rfind("\n") + 1 - self.pos
            else:
                self.line_start -= self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += text
        return bool(text) or not self.eof

    def _error(self, message: str, at: int, pending: str = "") -> TraceError:
        before = (self.buf + pending)[:at]
        newlines = before.count("\n")
        line = self.line_base + newlines
        start = before.rfind("\n") + 1 if newlines else self.line_start
        return TraceError("EFF003", message, "the trace must be one JSON object", line, at - start + 1)

    def _peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                raise self._error("invalid JSON: the document ends early (truncated?)", len(self.buf))

    def _expect(self, chars: str) -> str:
        c = self._peek()
        if c not in chars:
            raise self._error(f"invalid JSON: expected {' or '.join(repr(x) for x in chars)}, found {c!r}", self.pos)
        self.pos += 1
        return c

    def _value(self):
        self._peek()
        while True:
            try:
                value, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # Only an error at the buffer's end (a number or keyword cut by the chunk)
                # or an unterminated string may be mended by reading on; any other is final.
                cut_short = exc.pos >= len(self.buf) - _TAIL or exc.msg.startswith("Unterminated string")
                if not cut_short:
                    raise self._error(f"invalid JSON: {exc.msg}", exc.pos) from None
                if len(self.buf) - self.pos > MAX_EVENT_CHARS:
                    raise TraceError("EFF030", f"one trace event is larger than {MAX_EVENT_CHARS:,} characters",
                                     "a Kineto event is a few hundred bytes: this is not a profiler trace") from None
                if self._more():
                    continue
                raise self._error(f"invalid JSON: {exc.msg}", exc.pos) from None
            except RecursionError:
                raise self._error("invalid JSON: nested too deeply", self.pos) from None
            except ValueError as exc:  # NaN, Infinity (parse_constant)
                raise self._error(f"invalid JSON: {exc}", self.pos) from None
            # A number at the end of the buffer may continue in the next chunk.
            if end == len(self.buf) and not self.eof and self._more():
                continue
            self.pos = end
            return value

    # -- structure --------------------------------------------------------
    def _members(self) -> Iterator[str]:
        if self._peek() in '["-0123456789tfn':  # a JSON value, not an object
            raise TraceError("EFF003", "not a Kineto trace: no `traceEvents` list in a top-level object",
                             "pass the JSON that torch.profiler's export_chrome_trace or tensorboard_trace_handler writes")
        self._expect("{")
        if self._peek() == "}":
            self.pos += 1
            return
        while True:
            if self._peek() != '"':
                raise self._error("invalid JSON: expected a member name", self.pos)
            key = self._value()
            self._expect(":")
            yield key
            if self._expect(",}") == "}":
                return

    def events(self) -> Iterator[object]:
        members = self._members()
        for key in members:
            if key != "traceEvents":
                self.top[key] = self._value()
                continue
            self.seen_events = True
            if self._peek() != "[":
                raise self._error("not a Kineto trace: `traceEvents` is not a list", self.pos)
            self.pos += 1
            if self._peek() == "]":
                self.pos += 1
                continue
            while True:
                yield self._value()
                if self._expect(",]") == "]":
                    break
        if not self.seen_events:
            raise TraceError("EFF003", "not a Kineto trace: no `traceEvents` list in a top-level object",
                             "pass the JSON that torch.profiler's export_chrome_trace or tensorboard_trace_handler writes")
        if self._rest_nonblank():
            raise self._error("invalid JSON: extra data after the top-level object", self.pos)

    def _rest_nonblank(self) -> bool:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self._more():
                return False
