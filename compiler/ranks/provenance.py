"""Whether a per-rank CSV's provenance is the CSV's claim or checked.

`effspec traces` writes one ``# effspec-traces 1: file=NAME bytes=N sha256=H …``
line per trace; anyone can write the same line by hand.  A line is
**verified** only when effspec finds the trace beside the CSV (``NAME`` beneath
the CSV's folder, else its last component in that folder), opened beneath the
folder as every `file` reference is (front/files.py: no symlink out, one name,
no FIFO), and its size and SHA-256 are the ones recorded; **differs** when the
file found there has another size or hash; **declared** otherwise (no such file
there, refused, or past the bytes effspec hashes for one table).  Lines without
a ``file=`` are ``""``.
"""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import unquote_to_bytes

VERIFIED, DIFFERS, DECLARED = "verified", "differs", "declared"
MAX_VERIFY_BYTES = 1 << 30  # trace bytes hashed for one table; the rest stays declared
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _fields(line: str) -> dict[str, str]:
    return dict(t.split("=", 1) for t in line.split(": ", 1)[-1].split() if "=" in t)


def _candidates(name: str) -> list[str]:
    """Where the trace would lie beneath the CSV's folder: the recorded relative name, then its last component."""
    out = []
    if name and "\0" not in name and not os.path.isabs(name):
        out.append(name)
    base = os.path.basename(name)
    if base and "\0" not in base and base not in out and base not in (".", ".."):
        out.append(base)
    return out


def check(csv_path: str, lines: tuple[str, ...]) -> tuple[str, ...]:
    """One status per provenance line (see the module docstring); nothing outside the CSV's folder is read.

    A trace is read as every `file` reference is (``read_beneath``): once per check, and recorded
    for the result cache, so a trace changed since is a cache miss.  One larger than a CSV may be
    (``LIMITS.max_csv_bytes``), or past the table's budget, stays declared.
    """
    from effspec.front.files import TooLarge, read_beneath
    from effspec.front.limits import LIMITS

    root = os.path.dirname(os.path.realpath(csv_path))
    budget = MAX_VERIFY_BYTES
    out = []
    for line in lines:
        kv = _fields(line) if " file=" in line else {}
        size, digest = kv.get("bytes", ""), kv.get("sha256", "")
        if "file" not in kv:
            out.append("")
            continue
        if (not (size.isascii() and size.isdigit() and _SHA256.fullmatch(digest)) or int(size) > budget
                or int(size) > LIMITS.max_csv_bytes):
            out.append(DECLARED)
            continue
        name = unquote_to_bytes(kv["file"]).decode("utf-8", "surrogateescape")
        status = DECLARED
        for rel in _candidates(name):
            try:
                raw, _ = read_beneath(root, rel, limit=int(size))
            except TooLarge:
                status = DIFFERS
                break
            except (OSError, ValueError):
                continue
            budget -= len(raw)
            status = VERIFIED if len(raw) == int(size) and hashlib.sha256(raw).hexdigest() == digest else DIFFERS
            break
        out.append(status)
    return tuple(out)
