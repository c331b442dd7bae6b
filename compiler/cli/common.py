"""What every command shares: the tool-error exception and loading a spec."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

BUG_URL = "https://github.com/effspec/effspec/issues"


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
    """``effspec.load(path, **options)``; a file that cannot be read is a ToolError."""
    from effspec import load

    with reading(path):
        return load(path, **options)
