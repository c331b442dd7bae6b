"""The VS Code extension packages cleanly: `vsce package` bundles it (esbuild) and warns about nothing.

Runs on a copy of editors/vscode with the modules `npm ci` installed there (`make vscode`); skips,
saying why, without node or those modules: the test itself never reaches the network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
SOURCES = ("package.json", "package-lock.json", "extension.js", "LICENSE", ".vscodeignore", "README.md",
           "language-configuration.json", "syntaxes")

pytestmark = pytest.mark.slow


def test_the_extension_ships_its_license_and_ignores_its_build_inputs():
    assert (VSCODE / "LICENSE").read_text(encoding="utf-8") == (ROOT / "LICENSE").read_text(encoding="utf-8")
    package = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == "Apache-2.0" and package["main"] == "./dist/extension.js"
    assert "repository" not in package  # no public address is declared yet: none is made up
    ignored = (VSCODE / ".vscodeignore").read_text(encoding="utf-8").split("\n")
    assert {"node_modules/**", "scripts/**", "extension.js"} <= set(ignored)


def test_vsce_package_passes_without_warnings(tmp_path):
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    if not (VSCODE / "node_modules" / ".bin" / "vsce").exists() or not (VSCODE / "node_modules" / ".bin" / "esbuild").exists():
        pytest.skip("editors/vscode has no node_modules: run `make vscode` (npm ci) once")
    work = tmp_path / "vscode"
    work.mkdir()
    for name in SOURCES:
        source = VSCODE / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, work / name)
    (work / "node_modules").symlink_to(VSCODE / "node_modules", target_is_directory=True)
    done = subprocess.run(["npm", "run", "--silent", "package"], cwd=work, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output and "DONE  Packaged" in output, output
    (vsix,) = work.glob("effspec-*.vsix")
    names = set(zipfile.ZipFile(vsix).namelist())
    for shipped in ("extension/dist/extension.js", "extension/package.json", "extension/LICENSE.txt",
                    "extension/syntaxes/eff.tmLanguage.json", "extension/language-configuration.json"):
        assert shipped in names, shipped
    assert not [n for n in names if "/node_modules/" in n or "/scripts/" in n or n == "extension/extension.js"], sorted(names)
    bundle = zipfile.ZipFile(vsix).read("extension/dist/extension.js").decode("utf-8")
    # the language client is inside the bundle, not required at run time; only `vscode` stays external
    assert 'require("vscode-languageclient' not in bundle and 'require("vscode")' in bundle
    assert '"lsp"' in bundle
