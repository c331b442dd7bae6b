"""effspec's own cache folder, used only when it is ours.

Every on-disk cache (the unit-word table, pint's registry cache, the parser
tables) lives under one folder, ``$XDG_CACHE_HOME/effspec`` or
``~/.cache/effspec``.  A cache read from a place another user can write could
feed us wrong numbers, or for a pickle run code, so a folder is used only when
this user owns it and nobody else can write to it; never a shared temp folder.

Each entry's file name carries a digest of its key (:func:`keyed_name`), so
two installs (two venvs with other lark or pint versions) used alternately
keep an entry each instead of evicting each other; :func:`prune` keeps the
newest :data:`KEEP` entries of a kind.
"""

from __future__ import annotations

import contextlib
import os
import stat

# Entries kept per kind (parser tables, unit table): one per install in use.
KEEP = 8


def keyed_name(stem: str, key: str) -> str:
    """``<stem>-<digest of key>.json``: the file of one install's entry."""
    import hashlib

    return f"{stem}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}.json"


def prune(folder: str, stem: str, keep: int = KEEP) -> None:
    """Delete all but the ``keep`` most recently written ``<stem>-*.json`` entries of ours. Never raises."""
    try:
        entries = []
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(stem + "-") and entry.name.endswith(".json"):
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and ours(st):
                        entries.append((st.st_mtime_ns, entry.name))
        for _, name in sorted(entries, reverse=True)[keep:]:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
    except OSError:
        return


def cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "effspec")


def ours(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others (the test every cache folder and file passes)."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not st.st_mode & 0o022


def owned_folder(folder: str) -> str | None:
    """``folder``, created 0700 if missing, or None unless it is ours.

    A cache read from a directory another user controls could feed us
    arbitrary factors (or, for a pickle, arbitrary code): refuse it.
    """
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return folder if ours(os.stat(folder)) else None
    except OSError:
        return None


def read_owned(folder: str, name: str, limit: int, private: bool = False) -> bytes | None:
    """The bytes of ``folder/name`` if the folder and the file are ours (and, if ``private``,
    the file can be read by no one else: mode 0600 or less); else None.

    The folder is opened once and checked through its descriptor, then the
    file is opened beneath it without following a symlink and checked through
    its own descriptor, so nothing can be swapped in between.  Never raises.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    dir_fd = fd = -1
    try:
        if os.open in os.supports_dir_fd:
            dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            if not ours(os.fstat(dir_fd)):
                return None
            fd = os.open(name, flags, dir_fd=dir_fd)
        else:  # pragma: no cover - platforms without openat
            if owned_folder(folder) is None:
                return None
            fd = os.open(os.path.join(folder, name), flags)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not ours(st) or st.st_size > limit or (private and st.st_mode & 0o077):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        for f in (fd, dir_fd):
            if f >= 0:
                os.close(f)


def write_owned(folder: str, name: str, data: bytes) -> bool:
    """Store ``data`` as ``folder/name`` atomically (0600), if the folder is ours."""
    if owned_folder(folder) is None:
        return False
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # 0600, ours
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, os.path.join(folder, name))
        return True
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
