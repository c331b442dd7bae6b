"""The language server survives bad frames and out-of-range positions (issue 26, item 12).

Each malformed frame is written raw to `effspec lsp`'s stdin, followed by a
valid request, which must get its reply: the server resynchronises on the next
`Content-Length:` header.  Where the bad frame's request id can be read, the
server answers it with a JSON-RPC error (InvalidRequest -32600, InvalidParams
-32602); a body that is not JSON gets ParseError (-32700) with a null id.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra (pygls)")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lsp_client import Client, uri_of  # noqa: E402

from effspec.lsp.framing import UINTEGER_MAX, clamp_positions  # noqa: E402

SPEC = """eff 1

run r {
  model { kind = custom  flops_per_token = 1.2e10 FLOP/token }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
}
"""


def frame(body: bytes, length: bytes | None = None) -> bytes:
    header = b"Content-Length: " + (str(len(body)).encode() if length is None else length) + b"\r\n"
    return header + b"\r\n" + body


def request_body(rid, method: str = "shutdown", params: dict | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})}).encode()


@pytest.fixture(scope="module")
def lsp(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trust_lsp")
    path = folder / "r.eff"
    path.write_text(SPEC, encoding="utf-8")
    client = Client()
    client.initialize(folder)
    client.uri = uri_of(path)
    client.open(client.uri, SPEC)
    client.diagnostics(client.uri)
    yield client
    client.close()


def write(lsp: Client, raw: bytes) -> None:
    lsp.proc.stdin.write(raw)
    lsp.proc.stdin.flush()


def reply(lsp: Client, rid, timeout: float = 30.0) -> dict:
    """The server's response to ``rid`` (null: an error without an id); other messages are set aside."""
    deadline = time.monotonic() + timeout
    while True:
        msg = lsp._next(max(0.01, deadline - time.monotonic()))
        if "method" not in msg and msg.get("id") == rid and ("error" in msg or rid is not None):
            return msg
        lsp._other(msg)


def hover(lsp: Client, line: int, character: int = 4) -> dict:
    lsp.next_id += 1
    rid = lsp.next_id
    lsp.send({"id": rid, "method": "textDocument/hover",
              "params": {"textDocument": {"uri": lsp.uri}, "position": {"line": line, "character": character}}})
    return reply(lsp, rid)


def assert_still_serving(lsp: Client) -> None:
    """A valid hover after the bad frame gets its reply: the run's name on line 3 (0-based 2)."""
    msg = hover(lsp, 2)
    assert "error" not in msg, msg
    assert "run `r`" in msg["result"]["contents"]["value"]


# (case, the raw bytes, the id answered, the error code)
BAD_FRAMES = [
    ("non-numeric length", frame(request_body("nan-1"), b"abc"), "nan-1", -32600),
    ("negative length", frame(request_body(7001), b"-5"), 7001, -32600),
    ("empty length", frame(request_body(7002), b""), 7002, -32600),
    ("missing length", b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + request_body(7003),
     7003, -32600),
    ("length shorter than the body", frame(request_body(7004), b"10"), 7004, -32600),
    ("body not JSON", frame(b"{this is not json}"), None, -32700),
    ("length longer than the body", frame(request_body(7007), b"100000"), 7007, -32600),
    ("JSON but not JSON-RPC", frame(b"[1, 2, 3]"), None, -32600),
    ("a request without jsonrpc 2.0", frame(json.dumps({"id": 7005, "method": "shutdown"}).encode()), 7005, -32600),
    ("params that do not fit the method", frame(request_body(7006, "textDocument/hover", {
        "textDocument": {"uri": "file:///x.eff"}, "position": {"line": "one", "character": 0}})), 7006, -32602),
]


@pytest.mark.parametrize("case, raw, rid, code", BAD_FRAMES, ids=[c[0] for c in BAD_FRAMES])
def test_a_bad_frame_is_answered_and_the_next_request_still_is(lsp, case, raw, rid, code):
    """The bad frame, then at once a valid hover: both are answered (the error may come only once the next
    header shows where the bad frame ended)."""
    lsp.next_id += 1
    hover_id = lsp.next_id
    good = {"jsonrpc": "2.0", "id": hover_id, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": lsp.uri}, "position": {"line": 2, "character": 4}}}
    write(lsp, raw + frame(json.dumps(good).encode()))
    answers: dict = {}
    deadline = time.monotonic() + 30
    while hover_id not in answers or rid not in answers:
        msg = lsp._next(max(0.01, deadline - time.monotonic()))
        if "method" in msg:
            lsp._other(msg)
        elif "error" in msg or msg.get("id") == hover_id:
            answers[msg.get("id")] = msg
    assert answers[rid]["error"]["code"] == code, answers
    assert "run `r`" in answers[hover_id]["result"]["contents"]["value"]
    assert_still_serving(lsp)
    assert lsp.proc.poll() is None  # and the process lives


def test_a_bad_request_in_a_bad_frame_is_not_run(lsp):
    """`shutdown` sent with a non-numeric length is answered with an error, not obeyed: hovers are still answered."""
    write(lsp, frame(request_body(7100, "shutdown"), b"twelve"))
    assert reply(lsp, 7100)["error"]["code"] == -32600
    assert_still_serving(lsp)


def test_two_messages_in_one_write_after_a_bad_frame(lsp):
    """The bad frame's body runs straight into the next header (no newline between): the next message is kept."""
    lsp.next_id += 1
    good = {"jsonrpc": "2.0", "id": lsp.next_id, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": lsp.uri}, "position": {"line": 2, "character": 4}}}
    write(lsp, frame(request_body(7200), b"x") + frame(json.dumps(good).encode()))
    assert reply(lsp, 7200)["error"]["code"] == -32600
    assert "run `r`" in reply(lsp, lsp.next_id)["result"]["contents"]["value"]


@pytest.mark.parametrize("line", [-1, 2**31, 2**63, UINTEGER_MAX])
def test_hover_at_an_out_of_range_line_gets_a_reply(lsp, line):
    msg = hover(lsp, line)
    assert msg.get("result") is None and "error" not in msg, msg  # no such line: null
    assert_still_serving(lsp)


def test_hover_at_a_negative_character_is_clamped_to_the_line_start(lsp):
    """Line 3, character -5 reads as character 0 (the `run` keyword): the same reply as character 0, not an error."""
    clamped, start = hover(lsp, 2, -5), hover(lsp, 2, 0)
    assert "error" not in clamped, clamped
    assert clamped["result"] == start["result"]


def test_clamp_positions():
    params = {"textDocument": {"uri": "u"}, "range": {"start": {"line": -1, "character": 2**40},
                                                      "end": {"line": 3, "character": True}}}
    assert clamp_positions(params) == {"textDocument": {"uri": "u"}, "range": {
        "start": {"line": 0, "character": UINTEGER_MAX}, "end": {"line": 3, "character": True}}}
    assert UINTEGER_MAX == 2147483647
