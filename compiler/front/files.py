"""Reading files named by hostile text: `file "…"` references, specs found in a folder.

Every such file is opened beneath its folder, one path component at a time
from a descriptor of the folder (``openat`` with ``O_NOFOLLOW``), so the check
that a path stays inside and the open are the same step: swapping a folder for
a symlink between them cannot lead outside.  A symlink is followed only by
resolving its target here, component by component, and only while it stays
inside.  The file opened must be a regular file with a single name: a hard
link inside the folder can name any file on the same disk (allowed with
``--allow-hardlinks``).  System pseudo-filesystems are never read.
"""

from __future__ import annotations

import codecs
import csv
import errno
import io
import math
import os
import stat
from array import array
from contextvars import ContextVar
from typing import TYPE_CHECKING

from effspec.diagnostics import Span, clip, name_list, sanitize
from effspec.front.context import BuildContext, suggest
from effspec.front.limits import LIMITS

if TYPE_CHECKING:
    from _csv import Reader  # what csv.reader returns (typeshed's name)
    from collections.abc import Iterator

# Pseudo-filesystems are never data, even when a spec sits at their root.
_FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", "/run")
_MAX_SYMLINKS = 40

# The result cache's record of every file the current check reads beneath a
# folder (`file` references, CSVs, per-rank tables): it appends (root, rel,
# hard links allowed, outcome), the outcome being the digest of the bytes the
# check read, or what the read failed with (:func:`outcome`).  None, the
# default, records nothing.
READS: ContextVar[list[tuple[str, str, bool, str]] | None] = ContextVar("effspec_reads", default=None)


class CheckFiles:
    """The files one check has read: each is opened and read once, and every stage that uses it
    (the `file` reference's check, the CSV parser, the per-rank loader, a second reference to
    it) gets those same bytes, so a file rewritten during the check is never seen in two
    versions, and the result cache's digest is of the bytes the check used."""

    def __init__(self) -> None:
        self.by_ref: dict[tuple[str, str, bool], tuple[bytes, str, str] | OSError | ValueError] = {}
        self.by_path: dict[str, tuple[bytes, str]] = {}  # canonical path -> (bytes, digest or "")


# The current check's files; check_text sets it for one check.  None: every read opens the file.
FILES: ContextVar[CheckFiles | None] = ContextVar("effspec_files", default=None)

# Whether a file read for the current check may be a hard link (st_nlink > 1).
# check_text sets it for one check (`--allow-hardlinks`), so that it reaches the
# CSV and per-rank loaders without passing through every stage.
ALLOW_HARDLINKS: ContextVar[bool] = ContextVar("effspec_allow_hardlinks", default=False)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Folders on the way are opened as paths only (O_PATH, where there is one):
# like an ordinary open, that needs search permission on a folder, not read
# permission, so a spec under a 0711 home folder still reads its files.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC | getattr(os, "O_BINARY", 0)
_BENEATH = os.open in os.supports_dir_fd and os.readlink in os.supports_dir_fd and bool(_NOFOLLOW)


class Refused(OSError):
    """A file not read: it resolves outside its folder or into a system
    pseudo-filesystem, or it is not a regular file with a single name.

    ``strerror`` says why, to follow the path's name; ``reason`` is one of
    outside, pseudo, hardlink, not-regular, loop, changed; ``link`` and
    ``target`` name the symlink that led away, if one did.
    """

    def __init__(self, reason: str, message: str, link: str | None = None, target: str | None = None, names: int = 1):
        super().__init__(errno.EACCES, message)
        self.reason, self.link, self.target, self.names = reason, link, target, names


class NotFound(FileNotFoundError):
    """A file that is not there; ``siblings`` are the names in the folder it was looked for in."""

    def __init__(self, code: int, message: str, siblings: list[str]):
        super().__init__(code, message)
        self.siblings = siblings


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def in_pseudo_filesystem(path: str) -> bool:
    """True when the absolute ``path`` lies in /proc, /sys, /dev or /run (lexically)."""
    return any(_inside(r, path) for r in _FORBIDDEN_ROOTS if os.path.isabs(r) and os.path.isabs(path))


def _parts(path: str) -> list[str]:
    if os.altsep:
        path = path.replace(os.altsep, os.sep)
    return path.split(os.sep)


def _symlink_target(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:  # not a symlink, or gone
        return None


def _open_folder(path: str) -> int:
    """A descriptor of the canonical folder ``path``, no component of which may
    be a symlink (one there now means it was replaced after it was resolved)."""
    fd = os.open(os.sep, _DIR_FLAGS)
    try:
        for part in _parts(path):
            if part:
                try:
                    nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    if _symlink_target(part, fd) is not None:
                        raise Refused("changed", "lies in a folder that is a symlink (it changed after it was resolved)") from None
                    raise
                os.close(fd)
                fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _checked(fd: int, allow_hardlinks: bool | None) -> int:
    """``fd`` if it is a regular file (and not a hard link unless allowed); else it is closed
    and the reason raised."""
    try:
        _check_opened(fd, allow_hardlinks)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_opened(fd: int, allow_hardlinks: bool | None) -> None:
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not-regular", "is not a regular file")
    allowed = ALLOW_HARDLINKS.get() if allow_hardlinks is None else allow_hardlinks
    if st.st_nlink > 1 and not allowed:
        raise Refused("hardlink", f"is a hard link (one file with {st.st_nlink} names)", names=st.st_nlink)


def open_beneath(root: str, rel: str, allow_hardlinks: bool | None = None) -> tuple[int, str]:
    """Open the regular file ``rel`` inside the folder ``root``; return its
    descriptor and its canonical path.

    ``root`` must be canonical (``os.path.realpath``); it is walked without
    following any symlink.  ``rel`` is walked one component at a time beneath
    it: ``..`` may not climb above ``root``, a symlink is resolved here and
    only while it stays inside, nothing in a pseudo-filesystem is opened, and
    the last component is opened with O_NOFOLLOW | O_NONBLOCK, then checked
    with fstat (a regular file; a single name unless ``allow_hardlinks``,
    which defaults to :data:`ALLOW_HARDLINKS`).  Raises :class:`Refused`,
    IsADirectoryError, :class:`NotFound` (a FileNotFoundError) or another OSError.
    """
    return _open_beneath(root, rel, allow_hardlinks)


class TooLarge(OSError):
    """A file larger than the limit, by fstat, before anything is read; ``size`` is its size."""

    def __init__(self, size: int, limit: int):
        super().__init__(errno.EFBIG, f"is {size:,} bytes; the limit is {limit:,}")
        self.size = size


def read_beneath(root: str, rel: str, allow_hardlinks: bool | None = None, limit: int | None = None) -> tuple[bytes, str]:
    """The bytes (at most ``limit + 1``) and the canonical path of the regular file ``rel`` inside
    ``root``, opened as :func:`open_beneath` opens it; a file larger than ``limit`` (default: the
    CSV limit) by fstat is :class:`TooLarge`, and is not read.

    Within a check (:data:`FILES`) each file is read once: the same reference, or another path to
    the same file, gets the bytes of the first read, and so does a failure.  The read is
    recorded for the result cache (:data:`READS`) with the digest of those bytes.
    """
    allowed = ALLOW_HARDLINKS.get() if allow_hardlinks is None else allow_hardlinks
    files, reads = FILES.get(), READS.get()
    key = (root, os.sep.join(p for p in _parts(rel) if p not in ("", ".")), allowed)  # `./a.csv` is `a.csv`
    got = files.by_ref.get(key) if files is not None else None
    if isinstance(got, (OSError, ValueError)):
        raise got
    if got is None:
        try:
            got = _read_once(root, rel, allowed, LIMITS.max_csv_bytes if limit is None else limit, files,
                             reads is not None)
        except (OSError, ValueError) as exc:
            if files is not None:
                files.by_ref[key] = exc
            if reads is not None:
                reads.append((root, rel, allowed, failure(exc)))
            raise
        if files is not None:
            files.by_ref[key] = got
        if reads is not None:
            reads.append((root, rel, allowed, got[2]))
    return got[0], got[1]


def _read_once(root: str, rel: str, allowed: bool, limit: int, files: CheckFiles | None,
               digest: bool) -> tuple[bytes, str, str]:
    """(bytes, canonical path, their digest, or '' unless ``digest``): those the check read already
    when the path is one it read, else read now."""
    fd, path = _open_beneath(root, rel, allowed)
    try:
        if files is not None and path in files.by_path:
            raw, sha = files.by_path[path]
        else:
            size = os.fstat(fd).st_size
            if size > limit:
                raise TooLarge(size, limit)
            raw, sha = _read_fd(fd, limit), ""
    finally:
        os.close(fd)
    if digest and not sha:
        import hashlib

        sha = hashlib.sha256(raw).hexdigest()
    if files is not None:
        files.by_path[path] = (raw, sha)
    return raw, path, sha


def failure(exc: Exception) -> str:
    """A read's failure as the result cache records it: everything the check's message about it
    depends on (the reason, the symlink and its target, the number of names, the size, the names
    beside a file not found), which a later read must fail with too."""
    import hashlib
    import json

    siblings = getattr(exc, "siblings", None)
    return "!" + json.dumps([type(exc).__name__, str(exc), getattr(exc, "reason", ""), getattr(exc, "link", None),
                             getattr(exc, "target", None), getattr(exc, "names", None), getattr(exc, "size", None),
                             None if siblings is None else
                             hashlib.sha256("\0".join(siblings).encode("utf-8", "surrogateescape")).hexdigest()])


def outcome(root: str, rel: str, allow_hardlinks: bool) -> str:
    """What reading ``rel`` beneath ``root`` gives now, as :func:`read_beneath` records it: the
    digest of its bytes, or the failure (see :data:`READS`)."""
    try:
        return _read_once(root, rel, allow_hardlinks, LIMITS.max_csv_bytes, None, True)[2]
    except (OSError, ValueError) as exc:
        return failure(exc)


def _open_beneath(root: str, rel: str, allow_hardlinks: bool | None) -> tuple[int, str]:
    if in_pseudo_filesystem(root):
        raise Refused("pseudo", "lies in a system pseudo-filesystem")
    if not _BENEATH:  # pragma: no cover - platforms without openat: resolve, then open
        return _open_resolved(root, rel, allow_hardlinks)
    walk = _Walk(root)
    try:
        fd, path = walk.run(rel)
    finally:
        walk.close()
    return _checked(fd, allow_hardlinks), path


class _Walk:
    """The state of one walk beneath ``root``: a descriptor per folder on the
    way (``..`` pops one, so it never climbs above the root) and their names."""

    def __init__(self, root: str):
        self.root = root
        self.root_parts = [p for p in _parts(root) if p]
        self.stack = [_open_folder(root)]
        self.names: list[str] = []
        self.links = 0

    def close(self) -> None:
        for fd in self.stack:
            os.close(fd)
        self.stack = []

    def run(self, rel: str) -> tuple[int, str]:
        # Each pending component carries the symlink it came from, if any, to name it in a refusal.
        todo: list[tuple[str, tuple[str, str] | None]] = [(p, None) for p in _parts(rel)]
        while todo:
            part, via = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if len(self.stack) == 1:
                    raise Refused("outside", "leaves the spec's folder", *(via or (None, None)))
                os.close(self.stack.pop())
                self.names.pop()
                continue
            here = os.path.join(self.root, *self.names, part)
            if in_pseudo_filesystem(here):
                raise Refused("pseudo", "lies in a system pseudo-filesystem", *(via or (None, None)))
            last = all(p in ("", ".") for p, _ in todo)
            try:
                fd = os.open(part, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=self.stack[-1])
            except OSError as exc:
                todo[:0] = self._follow(part, exc, last)
                continue
            if last:
                return fd, here
            self.stack.append(fd)
            self.names.append(part)
        raise IsADirectoryError(errno.EISDIR, "is a directory")  # `rel` named a folder (`.`, `a/..`)

    def _names_here(self) -> list[str]:
        """The names in the current folder (for "did you mean"), or none if it cannot be listed."""
        try:
            fd = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC, dir_fd=self.stack[-1])
        except OSError:
            return []
        try:
            return os.listdir(fd)
        except OSError:
            return []
        finally:
            os.close(fd)

    def _follow(self, part: str, exc: OSError, last: bool) -> list[tuple[str, tuple[str, str]]]:
        """The components a symlink ``part`` stands for; re-raise ``exc`` if it is not one."""
        target = _symlink_target(part, self.stack[-1])
        if target is None:
            if isinstance(exc, FileNotFoundError) and last:
                raise NotFound(errno.ENOENT, "not found", self._names_here()) from None
            raise exc
        self.links += 1
        if self.links > _MAX_SYMLINKS:
            raise Refused("loop", "has too many levels of symbolic links")
        via = (os.path.join(*self.names, part), target)
        if os.path.isabs(target):
            parts = [p for p in _parts(target) if p not in ("", ".")]
            if parts[: len(self.root_parts)] != self.root_parts:
                pseudo = in_pseudo_filesystem(os.path.normpath(target))
                raise Refused("pseudo" if pseudo else "outside",
                              "lies in a system pseudo-filesystem" if pseudo else "leaves the spec's folder", *via)
            for fd in self.stack[1:]:  # start again from the root
                os.close(fd)
            del self.stack[1:], self.names[:]
            return [(p, via) for p in parts[len(self.root_parts):]]
        if in_pseudo_filesystem(os.path.normpath(os.path.join(self.root, *self.names, target))):
            raise Refused("pseudo", "lies in a system pseudo-filesystem", *via)
        return [(p, via) for p in _parts(target)]


def _open_resolved(root: str, rel: str, allow_hardlinks: bool | None) -> tuple[int, str]:  # pragma: no cover
    """Fallback without openat: resolve every symlink, check, then open (racy)."""
    path = os.path.realpath(os.path.join(root, rel))
    if not _inside(root, path):
        raise Refused("outside", "leaves the spec's folder")
    if in_pseudo_filesystem(path):
        raise Refused("pseudo", "lies in a system pseudo-filesystem")
    fd = os.open(path, _FILE_FLAGS)
    return _checked(fd, allow_hardlinks), path


_REFUSED_HELP = {
    "outside": "a `file` must lie in the .eff file's folder or below it (symlinks are followed only while they stay inside)",
    "pseudo": "devices, /proc and /sys are never read",
    "hardlink": "a hard link can name any file on the same disk: copy the file into the folder, "
                "or pass --allow-hardlinks if you trust whoever wrote this folder",
    "not-regular": "devices, FIFOs, sockets and folders are not read",
}


def _resolve_file(ctx: BuildContext, rel: str, span: Span) -> str | None:
    """The canonical path of a `file` inside the spec's folder, or EFF020.

    The file is read (beneath the folder, by :func:`read_beneath`) to check
    it; within a check, the readers then get the bytes read here.
    """
    if ctx.folder is None:
        ctx.error("EFF020", span, f"`file \"{rel}\"` needs the spec to be read from a file",
                  "files resolve relative to the .eff file's folder")
        return None
    if not rel or os.path.isabs(rel) or "\x00" in rel or rel.startswith("~") or len(rel) > 4096:
        ctx.error("EFF020", span, f"`{rel[:200]}` is not a relative path inside the spec's folder",
                  "write a path relative to the .eff file, without leaving its folder")
        return None
    try:
        _, path = read_beneath(ctx.folder, rel)  # canonical: check_text resolved it once
    except TooLarge as exc:
        ctx.error("EFF030", span, f"`{rel}` {exc.strerror}", "")
        return None
    except Refused as exc:
        through = f" through the symlink `{exc.link}` → `{exc.target}`" if exc.link and exc.reason in ("outside", "pseudo") else ""
        ctx.error("EFF020", span, f"`{rel}` {exc.strerror}{through}", _REFUSED_HELP.get(exc.reason, ""))
        return None
    except IsADirectoryError:
        ctx.error("EFF020", span, f"`{rel}` is not a regular file", _REFUSED_HELP["not-regular"])
        return None
    except FileNotFoundError as exc:
        near = suggest(os.path.basename(rel), exc.siblings if isinstance(exc, NotFound) else [])
        ctx.error("EFF020", span, f"file `{rel}` not found", near or "the path is relative to the .eff file")
        return None
    except (OSError, ValueError) as exc:  # a name too long, a component that is a file, permission denied
        ctx.error("EFF020", span, f"`{rel}` cannot be read: {getattr(exc, 'strerror', None) or exc}", "")
        return None
    return path


def _read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes from ``fd``.  The first read asks for the size
    fstat gives (within the limit), so a file read whole is one bytes object, not
    chunks joined into a copy (a 72 MB per-rank CSV peaked at twice its size)."""
    chunks: list[bytes] = []
    remaining = limit + 1
    first = min(remaining, max(os.fstat(fd).st_size + 1, 1 << 20))
    while remaining > 0:
        chunk = os.read(fd, first if not chunks else min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_regular_file(path: str, limit: int, follow_symlinks: bool = False) -> bytes:
    """At most ``limit + 1`` bytes of a regular file.

    With ``follow_symlinks`` (a file the user named, such as a scheduler
    file) it is a plain non-blocking open, checked with fstat: a FIFO or
    device is refused instead of blocking.  Otherwise ``path`` is a canonical path (as :func:`_resolve_file` returns) and is
    read by :func:`read_beneath` from its folder: no folder on the way may be
    a symlink now, the file must be a regular file with one name (unless
    hard links are allowed), nothing in a pseudo-filesystem is read, and a
    FIFO or device is refused instead of blocking.  Within a check, a file
    the check has read already is not read again.  Raises IsADirectoryError
    for a folder, :class:`Refused`, :class:`TooLarge` or another OSError otherwise.
    """
    if follow_symlinks:
        fd = _checked(os.open(path, _FILE_FLAGS & ~_NOFOLLOW), True)
        try:
            return _read_fd(fd, limit)
        finally:
            os.close(fd)
    files = FILES.get()
    if files is not None and path in files.by_path:
        return files.by_path[path][0]
    path = os.path.abspath(path)
    return read_beneath(os.path.dirname(path), os.path.basename(path), limit=limit)[0]


def read_spec(path: str, limit: int, root: str | None = None, allow_hardlinks: bool = False,
              contained: bool = False) -> tuple[bytes, str]:
    """At most ``limit + 1`` bytes of a spec file, and the canonical folder
    its `file` references resolve in.

    A spec the user named (``root`` None) may be a symlink, which is followed
    unless it leads into a system pseudo-filesystem.  A spec found in the
    folder ``root`` is read under the rules of a `file` reference: it must lie
    inside ``root`` (symlinks included), never in a pseudo-filesystem, and
    have a single name unless ``allow_hardlinks``.  With ``contained``
    (``--isolated``), a named spec that is a symlink is followed only while
    it stays inside the folder that names it.  Raises :class:`Refused`
    with a message that follows the path (``is a symlink to …; not read``),
    IsADirectoryError, FileNotFoundError or another OSError.
    """
    apath = os.path.abspath(path)
    if root is not None:
        base = os.path.realpath(root)
        rel = os.path.relpath(apath, os.path.abspath(root))
        try:
            fd, _ = open_beneath(base, rel, allow_hardlinks)
        except Refused as exc:
            raise _spec_refusal(exc, root, rel) from None
        # The folder the spec was found in, as for a named spec (a symlink's
        # own folder).  Not resolved again: os.walk entered no symlinked
        # folder, and one swapped in since is refused when a `file` is read.
        folder = os.path.normpath(os.path.join(base, os.path.dirname(rel)))
    else:
        folder, fd = _open_named(apath, contained, path)
    try:
        return _read_fd(fd, limit), folder
    finally:
        os.close(fd)


def _open_named(apath: str, contained: bool = False, shown: str = "") -> tuple[str, int]:
    """The canonical folder of a spec the user named (``shown``, as named), and the spec opened."""
    folder = os.path.realpath(os.path.dirname(apath))
    name = os.path.basename(apath)
    if os.path.islink(apath):
        target = os.readlink(apath)
        real = os.path.realpath(apath)
        if in_pseudo_filesystem(real) or in_pseudo_filesystem(os.path.normpath(os.path.join(folder, target))):
            raise Refused("pseudo", f"is a symlink to {target}, a system pseudo-filesystem; not read", name, target)
        if contained:  # --isolated: only while it stays inside the folder that names it
            try:
                fd, _ = open_beneath(folder, name, allow_hardlinks=True)
            except Refused as exc:
                if exc.reason != "outside":
                    raise
                where = os.path.dirname(shown) or "."
                how = (f"is a symlink to {exc.target}" if exc.link == name else
                       f"is reached through the symlink {os.path.join(where, exc.link or '')} → {exc.target}")
                raise Refused("outside", f"{how}, which leads outside its folder {where}; not read",
                              exc.link, exc.target) from None
            return folder, fd
        fd, _ = open_beneath(os.path.dirname(real), os.path.basename(real), allow_hardlinks=True)
        return folder, fd
    if in_pseudo_filesystem(os.path.join(folder, name)):
        raise Refused("pseudo", f"lies in a system pseudo-filesystem ({os.path.join(folder, name)}); not read")
    fd, _ = open_beneath(folder, name, allow_hardlinks=True)
    return folder, fd


def _spec_refusal(exc: Refused, root: str, rel: str) -> Refused:
    """The refusal of the spec ``rel`` found in ``root``, said for the command line."""
    if exc.reason in ("outside", "pseudo") and exc.target is not None:
        where = "a system pseudo-filesystem" if exc.reason == "pseudo" else f"outside {root}"
        if os.path.normpath(exc.link or "") == os.path.normpath(rel):
            message = f"is a symlink to {exc.target}, {where}; not read"
        else:
            message = f"is reached through the symlink {os.path.join(root, exc.link or '')} → {exc.target}, {where}; not read"
    elif exc.reason == "hardlink":
        message = (f"is a hard link (one file with {exc.names} names, which may lie outside {root}); not read "
                   "(--allow-hardlinks reads it)")
    else:
        message = f"{exc.strerror}; not read"
    return Refused(exc.reason, message, exc.link, exc.target, exc.names)


def read_csv_header_and_rows(ctx: BuildContext, path: str, rel: str, span: Span) -> tuple[list[str], Reader] | None:
    """Strict UTF-8 CSV with a header row; returns (header, rows) or None."""
    try:
        raw = read_regular_file(path, LIMITS.max_csv_bytes)
    except OSError as exc:
        ctx.error("EFF020", span, f"`{rel}` cannot be read: {exc.strerror or exc}", "")
        return None
    if len(raw) > LIMITS.max_csv_bytes:
        ctx.error("EFF030", span, f"`{rel}` is larger than {LIMITS.max_csv_bytes:,} bytes", "")
        return None
    return csv_header_and_rows(ctx, raw, rel, span)


# ----------------------------------------------------------------------------
# Parsing a CSV's bytes in bounded memory: the bytes are held once (as read),
# but never the whole decoded text (four bytes a character once one emoji is
# in it) nor a list of its rows.  A 245 MB step-time CSV took 2.1 GB.

_CHUNK = 1 << 20
# No valid row is longer than this: the csv module's field limit times the column limit.
MAX_CSV_LINE_CHARS = 131_072 * 64
_CONTINUATION = bytes(range(0x80, 0xC0))


def first_invalid_utf8(raw: bytes) -> int | None:
    """The offset of the first byte of ``raw`` that is not UTF-8, or None; decoded a chunk at a time."""
    view = memoryview(raw)
    pos = 0
    while pos < len(raw):
        try:
            _, used = codecs.utf_8_decode(view[pos:pos + _CHUNK], "strict", pos + _CHUNK >= len(raw))
        except UnicodeDecodeError as exc:
            return pos + exc.start
        pos += used
    return None


def utf8_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset, counted in the valid UTF-8 before it
    (a leading byte-order mark is not a column)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    if line_start == 0 and raw.startswith(b"\xef\xbb\xbf") and offset >= 3:
        line_start = 3
    # Characters are the bytes that do not continue a sequence: no decoded copy of a long line.
    column = len(raw[line_start:offset].translate(None, _CONTINUATION)) + 1
    return raw.count(b"\n", 0, offset) + 1, column


class CsvLineTooLong(ValueError):
    """A physical line longer than ``MAX_CSV_LINE_CHARS``: no CSV row is that long."""


def bounded_lines(stream: io.TextIOBase, limit: int = MAX_CSV_LINE_CHARS) -> Iterator[str]:
    """The stream's lines, each at most ``limit`` characters (else CsvLineTooLong)."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(("\n", "\r")):
            raise CsvLineTooLong(limit)
        yield line


def csv_header_and_rows(ctx: BuildContext, raw: bytes, rel: str, span: Span) -> tuple[list[str], Reader] | None:
    """The header and a row reader of a CSV's bytes, or None after an error.

    UTF-8 and NUL are checked over the whole file first (a bad byte anywhere is
    reported before any row), then rows are decoded as they are read.
    """
    bad = first_invalid_utf8(raw)  # strict: a bad byte is an error, never a replacement character
    if bad is not None:
        line, column = utf8_position(raw, bad)
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: not valid UTF-8 (byte 0x{raw[bad]:02x})",
                  "save the CSV as UTF-8")
        return None
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, column = utf8_position(raw, nul)
        ctx.error("EFF003", span, f"`{rel}` line {line}, column {column}: a NUL byte: not a CSV file", "")
        return None
    # newline="" as the csv module asks; BytesIO shares the bytes, it does not copy them.
    text = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", newline="")
    rows = csv.reader(bounded_lines(text), strict=True)
    try:
        header = next(rows)
    except StopIteration:
        ctx.error("EFF003", span, f"`{rel}` is empty: a header row naming the columns is needed", "")
        return None
    except CsvLineTooLong:
        ctx.error("EFF030", span, f"`{rel}` row 1 is longer than {MAX_CSV_LINE_CHARS:,} characters", "")
        return None
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row 1: malformed header ({exc})", "")
        return None
    if len(header) > LIMITS.max_csv_columns:
        ctx.error("EFF030", span, f"`{rel}` has {len(header)} columns; the limit is {LIMITS.max_csv_columns}", "")
        return None
    return [h.strip() for h in header], rows


def load_column(ctx: BuildContext, path: str, rel: str, column: str, span: Span,
                factor: float) -> tuple[tuple[float, ...], tuple[int, ...]] | None:
    """One numeric column of a CSV, converted by ``factor``, and the physical line of each value;
    a clear error on a bad row."""
    got = read_csv_header_and_rows(ctx, path, rel, span)
    if got is None:
        return None
    header, rows = got
    if column not in header:
        # difflib on two long names is slow, and a suggestion that long helps no one.
        hint = suggest(column, [h for h in header if len(h) <= 100]) if len(column) <= 100 else ""
        ctx.error("EFF020", span, f"`{rel}` has no column `{clip(column, 200)}`",
                  (hint + " " if hint else "") + "columns: " + name_list(header))
        return None
    index = header.index(column)
    where = f"column {index + 1} (`{clip(column, 200)}`)"
    values = array("d")  # the floats only: 8 bytes a row, not a Python object each
    lines = array("l")
    n = 1
    try:
        for row in rows:
            n = rows.line_num  # the physical line, so quoted newlines keep the count honest
            if not row:
                continue
            if len(values) >= LIMITS.max_csv_rows:
                ctx.error("EFF030", span, f"`{rel}` has more than {LIMITS.max_csv_rows:,} rows", "")
                return None
            if len(row) > LIMITS.max_csv_columns:
                ctx.error("EFF030", span, f"`{rel}` row {n} has {len(row)} columns; the limit is {LIMITS.max_csv_columns}", "")
                return None
            cell = row[index].strip() if index < len(row) else ""
            shown = sanitize(cell[:40])
            try:
                v = float(cell)
            except ValueError:
                ctx.error("EFF003", span, f"`{rel}` row {n}, {where}: `{shown}` is not a number",
                          "every row needs a number in this column")
                return None
            v *= factor
            if not math.isfinite(v) or v <= 0 or v > LIMITS.max_magnitude:
                ctx.error("EFF011", span, f"`{rel}` row {n}, {where}: `{shown}` is not a positive finite time",
                          "step times are finite and greater than zero")
                return None
            values.append(v)
            lines.append(n)
    except CsvLineTooLong:
        ctx.error("EFF030", span, f"`{rel}` row {rows.line_num + 1} is longer than {MAX_CSV_LINE_CHARS:,} characters", "")
        return None
    except csv.Error as exc:
        ctx.error("EFF003", span, f"`{rel}` row {rows.line_num or n}: malformed CSV ({exc})", "")
        return None
    if not values:
        ctx.error("EFF003", span, f"`{rel}` column `{column}` has no rows", "")
        return None
    return tuple(values), tuple(lines)
