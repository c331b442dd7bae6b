"""What every command shares: the tool-error exception, the files a command is given, reading a spec as
`check` reads it, replacing one, and loading a spec."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class ToolError(Exception):
    """The tool could not run (exit status 2)."""


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn the ways reading ``path`` fails into one ToolError each, named by the path."""
    try:
        yield
    except FileNotFoundError:
        raise ToolError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ToolError(f"{path}: is a directory") from None
    except PermissionError:
        raise ToolError(f"{path}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror or exc}") from None


def load_spec(path: str, **options):
    """``effspec.load(path, **options)`` (a `.json` file: ``effspec.api.load_ir``, spec/ir-json.md); a file that
    cannot be read is a ToolError."""
    from effspec import load

    with reading(path):
        if path.endswith(".json"):
            from effspec.api import load_ir

            return load_ir(path, **options)
        return load(path, **options)


STDIN = "\0stdin"  # the root expand_paths gives `-`: no folder can be named so


def expand_paths(paths: list[str]) -> list[tuple[str, str | None]]:
    """Each file to read, with the folder it was found in (None when named; STDIN for `-`).

    Files are taken as given; folders become their `.eff` and `.eff.json` (IR) files, sorted.  A
    spec found in a folder is then read under the rules of a `file`
    reference (see effspec.load's ``root``): a symlink that leaves the folder
    or points into /proc, /sys, /dev or /run, or a hard link, is refused, not
    read; the user never named it.  `check`, `check --fix` and `fmt` share this.
    """
    out: list[tuple[str, str | None]] = []
    for p in paths:
        if p == "-":
            out.append((p, STDIN))
        elif os.path.isdir(p):
            for root, dirs, files in os.walk(p):  # symlinked folders are listed, never entered
                dirs.sort()
                out += [(os.path.join(root, f), p) for f in sorted(files) if f.endswith((".eff", ".eff.json"))]
        else:
            out.append((p, None))
    return out


def read_as_checked(path: str, root: str | None, allow_hardlinks: bool = False,
                    isolated: bool = False) -> tuple[str, str] | None:
    """The spec's text and folder, read as `effspec check` reads it: a ToolError when the check would refuse it
    (with ``isolated``, a named symlink out of its folder too), None when it is too large to check (EFF030)."""
    from effspec.front.files import read_spec
    from effspec.front.limits import LIMITS

    with reading(path):
        raw, folder = read_spec(path, LIMITS.max_spec_bytes, root, allow_hardlinks, contained=isolated)
        return (raw.decode("utf-8"), folder) if len(raw) <= LIMITS.max_spec_bytes else None


def replace_text(path: str, old: str, new: str, verb: str = "written") -> None:
    """Replace the file ``path`` names (through a symlink, not over it) with ``new``: atomically, never over a
    hard link (the other names would keep the old text), never over a change made since ``old`` was read."""
    from effspec.atomic import write_atomic

    real = os.path.realpath(path)
    with reading(path):
        links = os.stat(real).st_nlink
        if links > 1:
            raise ToolError(f"{path}: has {links} hard links; not {verb} (replacing it would leave the other names "
                            "with the old text)")
        with open(real, encoding="utf-8", newline="") as fh:
            if fh.read() != old:
                raise ToolError(f"{path}: changed while effspec was working on it; not {verb}")
        write_atomic(real, new)
