"""Atomic output: a temporary file in the same folder, fsynced, then renamed.

An existing file is replaced only by a complete new one; on any error the
temporary file is removed and the old output stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Sequence


def write_atomic(path: str, data: bytes | str | Iterable[bytes]) -> None:
    """``data`` may also be an iterable of byte chunks, written as they come (a large CSV)."""
    write_all_atomic([(path, data)])


def _staged(path: str, data: bytes | str | Iterable[bytes]) -> str:
    """A complete, fsynced temporary file beside ``path`` holding ``data``, with the mode ``path`` will have."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    chunks = (data,) if isinstance(data, bytes) else data
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".effspec-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_all_atomic(items: Sequence[tuple[str, bytes | str | Iterable[bytes]]]) -> None:
    """Several outputs, all or none: every one is written to a temporary file
    first, and only when all are complete are they renamed into place; if
    staging any of them fails, every output stays as it was."""
    staged: list[tuple[str, str]] = []
    try:
        for path, data in items:
            staged.append((_staged(path, data), path))
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
    except BaseException:
        for tmp, _path in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
