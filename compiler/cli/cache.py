"""`effspec check`'s result cache: an unchanged file's output is a look-up, as in ruff.

An entry holds one file's formatted output (the payload `check` prints) and
its summary, under a key made of

- effspec's version and the peak catalog's data (a digest of ``peaks.json``);
- the resolved configuration (the project settings that apply, as
  ``--show-settings`` prints them) and every flag that changes the output
  (format, --select/--ignore, --no-inline-config, --allow-hardlinks,
  --quiet, --show-suppressed), the path as given and the working folder;
- the spec's bytes, read once: a miss checks those very bytes, never the
  file read again (a rewrite in between would pair one content's key with
  another's verdict);

and it records every file the check read beneath a folder (`file`
references, CSVs, per-rank tables), each read once by the check
(:class:`effspec.front.files.CheckFiles`), with the digest of the bytes the
check used, or everything the message about its failure depends on (the
reason, a symlink's target, the number of names, the names beside a file not
found).  A look-up reads each again, in the same way, and a changed, missing
or newly present file is a miss.  An entry is written only when the check
applied the settings of its key.

The cache lives in ``.effspec_cache/`` at the project root (the folder whose
pyproject.toml or ``.git`` ended the configuration search; else the spec's
folder), or ``--cache-dir``, or ``$EFFSPEC_CACHE_DIR``.  ``--no-cache`` and
``--isolated`` (and ``$EFFSPEC_NO_CACHE``) turn it off.

The project folder is hostile (SECURITY.md): a vendor's repository could ship
a ``.effspec_cache/`` whose entries say "no findings".  Each entry therefore
carries an HMAC-SHA256 made with a per-user secret kept in effspec's
owner-checked cache folder (:mod:`effspec.front.cachedir`), private to the user
(0600: one that others may read, or not ours, is replaced); an entry without
a valid MAC is a miss, and is rewritten.  The cache folder is used only when
it is not a symlink and is ours (owned by this user, not writable by group or
others), entries are opened without following symlinks and must be ours too,
and they are JSON, never pickle.  Writes go to a temporary file in the same
folder, fsynced, then renamed over the entry: concurrent runs leave every
entry whole, and a corrupt, truncated or oversized entry is a miss.

Only the standard library and the front end's file and configuration modules
are imported here: a look-up never loads the parser, the units or the engine.
SARIF's rule table, the same for every file of a version, is kept once in
effspec's own cache folder, so a warm SARIF log loads no rule module either.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass
from functools import cache, partial

from effspec.version import __version__

DIR_NAME = ".effspec_cache"
ENV = "EFFSPEC_CACHE_DIR"
NO_CACHE_ENV = "EFFSPEC_NO_CACHE"
KEY_FILE = "result-cache-key"  # the per-user secret, in effspec's own cache folder
ENTRY_LIMIT = 64 * 1024 * 1024  # a larger entry is a miss, and is not written
LAYOUT = 5  # the entry layout: part of every key (2: the fixable counts; 3: SARIF results carry fixes;
# 4: the reads are digests of the bytes the check used, and failures say all their message does;
# 5: fixes vetted by a re-check, and the hidden ones named)
CACHEDIR_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                b"# This file is a cache directory tag created by effspec.\n"
                b"# For information about cache directory tags see https://bford.info/cachedir/\n")

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def add_arguments(command) -> None:
    """`check --no-cache` and `--cache-dir`."""
    command.add_argument("--no-cache", action="store_true",
                         help="neither read nor write the result cache (--isolated and $EFFSPEC_NO_CACHE imply it)")
    command.add_argument("--cache-dir", metavar="DIR", default=None,
                         help=f"the result cache's folder (default: ${ENV}, else {DIR_NAME}/ at the project root)")


# ----------------------------------------------------------------------------
# The per-user secret


def _make_secret(folder: str, replace: bool = False) -> None:
    """Write a new secret as ``folder/KEY_FILE`` unless one is there (the first of racing writers
    wins), or over the one there with ``replace``."""
    import secrets
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # 0600, ours
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_hex(32).encode("ascii"))
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, os.path.join(folder, KEY_FILE))
            return
        with contextlib.suppress(FileExistsError):
            os.link(tmp, os.path.join(folder, KEY_FILE))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _unsafe_secret(path: str) -> str:
    """Why the secret at ``path`` must not be used: '' when it is ours and private (0600), or missing."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"its mode is {stat.S_IMODE(st.st_mode):04o}, so others may read it (it must be 0600)"
    return ""


@cache
def secret() -> bytes | None:
    """This user's secret for the entries' MACs, made on first use; None when effspec's own
    cache folder is not ours (then the result cache is off).  A secret that others may read,
    or that is not ours, is never used: it is replaced by a new one, and stderr says so (every
    entry made with it is then a miss)."""
    import sys

    from effspec.diagnostics import printable
    from effspec.front.cachedir import cache_root, owned_folder, read_owned

    folder = cache_root()
    if owned_folder(folder) is None:
        return None
    why = _unsafe_secret(os.path.join(folder, KEY_FILE))
    if why:
        print(f"effspec: note: the result cache's secret {printable(os.path.join(folder, KEY_FILE))} is not used: "
              f"{why}; a new one replaces it (results cached with the old one are checked again)", file=sys.stderr)
        try:
            _make_secret(folder, replace=True)
        except OSError:
            return None
    for _attempt in range(2):
        data = read_owned(folder, KEY_FILE, 128, private=True)
        if data is not None and len(data) == 64:
            try:
                return bytes.fromhex(data.decode("ascii"))
            except ValueError:
                return None  # damaged: off, rather than trusting a key someone else may know
        if data is not None:
            return None
        try:
            _make_secret(folder)
        except OSError:
            return None
    return None


def _mac(key: bytes, name: str, header: bytes) -> bytes:
    return hmac.new(key, name.encode("utf-8") + b"\0" + header, hashlib.sha256).hexdigest().encode("ascii")


# ----------------------------------------------------------------------------
# The cache folder and its entries


_folders: dict[str, int | None] = {}


def _mark(dir_fd: int) -> None:
    """CACHEDIR.TAG and a `.gitignore` of `*`, as ruff leaves in its cache, if missing."""
    for name, data in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", b"# Automatically created by effspec.\n*\n")):
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dir_fd)
        except OSError:
            continue
        with contextlib.suppress(OSError), os.fdopen(fd, "wb") as fh:
            fh.write(data)


_refused: dict[str, str] = {}  # cache folder -> why it is not used


def _open_folder(path: str) -> int | None:
    """A descriptor of the cache folder, made if missing; None unless it is ours and not a symlink
    (then ``_refused[path]`` says why)."""
    from effspec.front.cachedir import ours

    if os.open not in os.supports_dir_fd or not _NOFOLLOW:  # pragma: no cover - no openat: no cache
        _refused[path] = "this system cannot open files beneath a folder descriptor"
        return None
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        _refused[path] = f"it cannot be created ({e.strerror or e})"
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    except OSError as e:
        _refused[path] = f"it cannot be opened as a folder ({e.strerror or e})"
        return None
    if not ours(os.fstat(fd)):
        os.close(fd)
        _refused[path] = ("it is not owned by you, or others can write to it: an entry there could be "
                          "planted (chmod go-w, or choose another folder)")
        return None
    _mark(fd)
    return fd


def _folder(path: str) -> int | None:
    if path not in _folders:
        _folders[path] = _open_folder(path)
    return _folders[path]


HEAD_LIMIT = 1024  # the MAC line and the header line: all that is read of an entry that is not ours


def _read_until(fd: int, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_entry(dir_fd: int, name: str, secret_key: bytes, key: str) -> bytes | None:
    """The body of the entry ``name`` if it is ours, whole, MACed under ``secret_key`` and for ``key``; else None.

    An entry is ``MAC\nHEADER\nBODY``: the MAC covers the entry's name and the
    header, and the header gives the key, the body's size and its SHA-256, so
    an entry that is not ours costs one read of at most HEAD_LIMIT bytes.
    """
    from effspec.front.cachedir import ours

    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not ours(st) or st.st_size > ENTRY_LIMIT:
            return None
        head = os.read(fd, HEAD_LIMIT)
        mac, _, rest = head.partition(b"\n")
        header, newline, start = rest.partition(b"\n")
        if not newline or not hmac.compare_digest(mac, _mac(secret_key, name, header)):
            return None  # planted, damaged or made with another secret
        meta = json.loads(header)
        size = meta["size"]
        if meta["key"] != key or not isinstance(size, int) or st.st_size != len(mac) + len(header) + 2 + size:
            return None
        body = start + _read_until(fd, size - len(start))
        return body if hashlib.sha256(body).hexdigest() == meta["sha256"] else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(fd)


def _entry(secret_key: bytes, name: str, key: str, body: bytes) -> bytes:
    header = json.dumps({"key": key, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()},
                        separators=(",", ":")).encode("ascii")
    return _mac(secret_key, name, header) + b"\n" + header + b"\n" + body


def _write_entry(dir_fd: int, name: str, data: bytes) -> None:
    """``name`` replaced whole by ``data``: a temporary file beside it, fsynced, renamed. Never raises."""
    import secrets

    tmp = f".tmp-{os.getpid()}-{secrets.token_hex(6)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)


# ----------------------------------------------------------------------------
# Keys


@cache
def catalog_digest() -> str:
    """The peak catalog's data, by digest: an edited catalog changes every key."""
    try:
        with open(catalog_path(), "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return "missing"


def catalog_path() -> str:
    import effspec

    return os.path.join(os.path.dirname(os.path.abspath(effspec.__file__)), "data", "peaks.json")


@dataclass(frozen=True)
class Plan:
    """Where one file's entry lives and the key it must carry."""

    folder: str  # the cache folder
    name: str  # the entry's file name: a digest of what names the file and the flags, not of its content
    key: str  # the digest of everything the output depends on, but the files it reads
    spec_folder: str  # the spec's canonical folder, where its settings are found
    settings: str  # those settings as the key has them: the check must have applied the same


def _flags(args) -> list:
    from effspec.cli.select import Selection

    sel = Selection(args.select, args.ignore, args.extend_select, args.extend_ignore)
    return [args.format, bool(args.show_suppressed), bool(args.quiet), bool(args.no_inline_config),
            bool(getattr(args, "allow_hardlinks", False)), sel.active, sel.select, sel.ignore]


def _location(args, settings, spec_folder: str) -> str:
    chosen = args.cache_dir or os.environ.get(ENV)
    if chosen:
        return os.path.realpath(chosen)  # the user's own choice: a symlink they made is followed
    base = os.path.dirname(settings.path) if settings.path else settings.root or spec_folder
    return os.path.join(base, DIR_NAME)


def settings_key(settings) -> str:
    """Everything of the project settings an output can show: what --show-settings prints, and
    where each code the configuration names is (EFF033's position)."""
    return json.dumps([settings.to_json(), [list(at) for at in settings.locations]])


def read_source(args, path: str, root: str | None) -> tuple[bytes, str] | None:
    """The spec's bytes and canonical folder, read once: the key is their digest and the check
    evaluates them.  None when it cannot be read (the check then says why)."""
    from effspec.front.files import read_spec
    from effspec.front.limits import LIMITS

    try:
        return read_spec(path, LIMITS.max_spec_bytes, root, bool(getattr(args, "allow_hardlinks", False)),
                         contained=bool(getattr(args, "isolated", False)))
    except (OSError, ValueError):
        return None


def plan(args, flags: list, path: str, root: str | None, source: tuple[bytes, str]) -> Plan | None:
    """The entry for checking ``path`` (found in ``root``) whose bytes are ``source``, or None when
    it is not cached (a spec over the size limit)."""
    from effspec.front.config import project_settings
    from effspec.front.limits import LIMITS

    raw, folder = source
    if len(raw) > LIMITS.max_spec_bytes:
        return None
    settings = settings_key(project_settings(folder))
    names = [LAYOUT, os.getcwd(), path, os.path.abspath(path), root, root and os.path.abspath(root), flags]
    key = [names, __version__, catalog_digest(), hashlib.sha256(raw).hexdigest(), folder, settings]
    name = hashlib.sha256(json.dumps(names).encode("utf-8")).hexdigest()[:40] + ".json"
    return Plan(_location(args, project_settings(folder), folder), name,
                hashlib.sha256(json.dumps(key).encode("utf-8")).hexdigest(), folder, settings)


# ----------------------------------------------------------------------------
# Look-up and store


def lookup(p: Plan, key: bytes) -> tuple | None:
    """The cached (path, payload, summary, None, None) of a hit, else None."""
    from effspec.cli.fix import Summary
    from effspec.front.files import outcome

    dir_fd = _folder(p.folder)
    body = None if dir_fd is None else _read_entry(dir_fd, p.name, key, p.key)
    if body is None:
        return None
    try:
        entry = json.loads(body)
        for root, rel, allowed, was in entry["reads"]:
            if outcome(root, rel, allowed) != was:
                return None
        summary = Summary((code, sev) for code, sev in entry["summary"])
        safe, unsafe = entry["fixable"]
        summary.fixable = (int(safe), int(unsafe))
        summary.hidden = tuple(str(name) for name in entry["hidden"])
        return entry["path"], entry["payload"], summary, None, None
    except (ValueError, KeyError, TypeError):
        return None


class Store:
    """Wraps the check of one file (in whichever process runs it): records the files it opens and,
    when it ends without a tool or internal error, writes its entry."""

    def __init__(self, plans: dict[tuple[str, str | None], Plan], key: bytes, fmt: str, debug: bool = False) -> None:
        self.plans, self.key, self.fmt, self.debug = plans, key, fmt, debug

    def wrap(self, one):
        return partial(self, one)

    def __call__(self, one, path: str, root: str | None = None, source: tuple[bytes, str] | None = None, **kw):
        p = self.plans.get((path, root))
        if p is None or source is None:
            return one(path, root, source, **kw)
        from effspec.front.config import project_settings
        from effspec.front.files import READS

        reads: list[tuple[str, str, bool, str]] = []
        token = READS.set(reads)
        try:
            out = one(path, root, source, **kw)  # the bytes the key was made from, not read again
        finally:
            READS.reset(token)
        # The settings the check applied are those of the key (a worker that is not a fork of
        # this process reads the configuration again: it may have changed since).
        if out[3] is None and out[4] is None and settings_key(project_settings(p.spec_folder)) == p.settings:
            try:
                self.write(p, out, reads)
            except Exception:  # the output stands whether or not it could be stored
                if self.debug:
                    raise
        return out

    def write(self, p: Plan, out: tuple, reads: list) -> None:
        payload = out[1]
        if self.fmt == "sarif":
            from effspec.report.sarif import sarif_file

            payload = sarif_file(payload)
        try:
            entry = {"path": out[0], "reads": list(dict.fromkeys(reads)), "payload": payload, "summary": out[2],
                     "fixable": list(getattr(out[2], "fixable", (0, 0))), "hidden": list(getattr(out[2], "hidden", ()))}
            body = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):
            return
        dir_fd = _folder(p.folder)
        data = _entry(self.key, p.name, p.key, body)
        if dir_fd is not None and len(data) <= ENTRY_LIMIT:
            _write_entry(dir_fd, p.name, data)


def _sarif_rules(done: bool) -> None:
    """SARIF's rule table without its links (they depend on the documentation base), which depends
    on the version only, kept in effspec's own owner-checked cache folder: used when every file was
    a hit (``done``), else stored for the next warm run."""
    from effspec.front.cachedir import cache_root, keyed_name, read_owned, write_owned
    from effspec.report import sarif

    name = keyed_name("sarif-rule-table", f"{LAYOUT} {__version__}")
    if done:
        data = read_owned(cache_root(), name, ENTRY_LIMIT)
        try:
            rules = json.loads(data) if data is not None else None
        except ValueError:
            rules = None
        if isinstance(rules, list) and all(isinstance(r, dict) for r in rules):
            sarif.STORED_RULES = rules
        return
    sarif.STORED_RULES = None
    if read_owned(cache_root(), name, ENTRY_LIMIT) is None:
        write_owned(cache_root(), name, json.dumps(sarif.plain_descriptors()).encode("utf-8"))


def enabled(args) -> bool:
    """Off with --no-cache, with --isolated, and when $EFFSPEC_NO_CACHE is set (to anything but "", 0 or false)."""
    off = os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false")
    return not (off or getattr(args, "no_cache", False) or getattr(args, "isolated", False))


def cached(args, items: list[tuple[str, str | None]], check_all, stdin_root: str) -> list[tuple]:
    """``check_all(items, wrap)``'s results, in order, with every hit taken from the cache and only
    the misses checked (and stored)."""
    key = secret() if enabled(args) else None
    if key is None:
        return check_all(items, None, None)
    for fd in _folders.values():  # a folder opened by an earlier check in this process may be gone
        if fd is not None:
            os.close(fd)
    _folders.clear()
    flags = _flags(args)
    out: list[tuple | None] = [None] * len(items)
    plans: dict[tuple[str, str | None], Plan] = {}
    sources: dict[int, tuple[bytes, str] | None] = {}
    todo = []
    for i, (path, root) in enumerate(items):
        p = hit = source = None
        try:  # the cache never stops a check: anything unexpected here is a miss
            source = None if root == stdin_root else read_source(args, path, root)
            p = None if source is None else plan(args, flags, path, root, source)
            hit = None if p is None else lookup(p, key)
        except Exception:
            if getattr(args, "debug", False):
                raise
        if hit is not None and hit[0] == path:
            out[i] = hit
            continue
        todo.append(i)
        sources[i] = source  # a miss checks the bytes read here: each spec is read once
        if p is not None:
            plans[(path, root)] = p
    _say_refused(args)
    if args.format == "sarif":
        with contextlib.suppress(OSError, ValueError):
            _sarif_rules(done=not todo)
    if todo:
        store = Store(plans, key, args.format, bool(getattr(args, "debug", False)))
        for i, res in zip(todo, check_all([items[i] for i in todo], store.wrap, [sources[i] for i in todo]), strict=True):
            out[i] = res
    return out  # type: ignore[return-value]


def _say_refused(args) -> None:
    """One note on stderr when the folder the user chose (``--cache-dir``, ``$EFFSPEC_CACHE_DIR``)
    cannot be used; the check goes on without the cache.  A project's default folder that is not
    ours is passed over silently: auditing someone else's read-only tree is normal."""
    import sys

    from effspec.diagnostics import printable

    chosen = str(args.cache_dir or os.environ.get(ENV) or "")
    folder = os.path.realpath(chosen) if chosen else None
    if folder is not None and folder in _folders and _folders[folder] is None:
        why = _refused.get(folder, "it cannot be used")
        print(f"effspec: note: the cache folder {printable(chosen)} is not used: {why}; checking without the cache",
              file=sys.stderr)
