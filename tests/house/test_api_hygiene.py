"""`dir()` of effspec and of each stage package with a public API lists that API only.

Imports (os, gc, dataclass, field, Callable, re, json ...), private helpers and
submodules loaded by earlier imports do not show: a user exploring the package
in a REPL sees what they may use.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import effspec

PUBLIC = ("effspec", "effspec.cli", "effspec.fmt", "effspec.importers", "effspec.report", "effspec.rules")


def test_dir_of_effspec_is_the_api():
    assert dir(effspec) == ["Diagnostic", "Result", "Span", "__version__", "check_text", "load"]
    for leaked in ("os", "gc", "dataclass", "field", "Callable", "MutableMapping", "cap", "sort_key", "annotations"):
        assert leaked not in dir(effspec)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_package_shows_its_all_and_every_name_resolves(name):
    module = importlib.import_module(name)
    assert dir(module) == sorted(module.__all__)
    for attr in module.__all__:
        assert getattr(module, attr) is not None, attr


def test_dir_stays_the_api_after_the_whole_pipeline_ran():
    """Running a check imports the stages as submodules of effspec: they do not appear in dir(effspec)."""
    probe = ("import effspec\n"
             "effspec.check_text('eff 1\\nrun r { work { seq_len = 1 token/sequence  global_batch = 1 sequence } }\\n')\n"
             "import effspec.front, effspec.engine\n"
             "print(dir(effspec))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "['Diagnostic', 'Result', 'Span', '__version__', 'check_text', 'load']"


def test_the_hidden_names_are_still_reachable():
    """Hidden from dir(), not removed: code that imports a submodule or a helper by name keeps working."""
    import effspec.front
    from effspec.rules import AuditContext, Rule  # the recipe in CONTRIBUTING.md

    assert AuditContext and Rule
    assert effspec.front.__name__ == "effspec.front"
