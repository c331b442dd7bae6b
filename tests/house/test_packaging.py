"""Ready to publish: the addresses the tool prints, the derived package list, the sdist and twine.

1. Every address the tool prints comes from the package metadata (`[project.urls]`,
   read back as `Project-URL`), and none is written in the package's code.
2. setup.py's package list is every folder of compiler/ with an `__init__.py` and
   every data folder, so a new stage or rule family ships with no edit; the wheel
   holds each of them.
3. The sdist ships the tests with their fixtures: built, installed, and some of its
   own tests run from the unpacked tree against the installed package (slow).
4. `twine check` passes on the sdist and the wheel (skips without twine or build).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from effspec import version

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def declared(monkeypatch):
    """Pretend the metadata declares these `Project-URL` entries."""

    def declare(*entries: str) -> None:
        class Meta:
            def get_all(self, name):
                return list(entries) if name == "Project-URL" else None

        import importlib.metadata

        monkeypatch.setattr(importlib.metadata, "metadata", lambda name: Meta())
        version.project_urls.cache_clear()

    yield declare
    version.project_urls.cache_clear()


def test_no_address_is_written_in_the_package():
    allowed = {
        "https://json.schemastore.org/sarif-2.1.0.json",  # SARIF's own schema
        "https://bford.info/cachedir/",  # the cache directory tag's specification
        "https://effspec.invalid/spec/eff-ir/1/eff-ir.schema.json",  # the IR schema's $id: .invalid never resolves (RFC 2606)
        "https://docs.example.org/rules/",  # an example value in a help text (example.org: RFC 2606)
        "https://",  # prefixes in checks and comments
        "http://",
    }
    found = set()
    for path in (ROOT / "compiler").rglob("*.py"):
        for url in re.findall(r"https?://[^\s\\\"'`)>]*", path.read_text(encoding="utf-8")):
            if url not in allowed and "doi.org" not in url and "arxiv.org" not in url:
                found.add(f"{path.relative_to(ROOT)}: {url}")
    assert found == set()


def test_addresses_come_from_the_metadata(declared):
    from effspec.report.sarif import sarif_log

    declared("Homepage, https://effspec.example/", "Bug Tracker, https://effspec.example/issues")
    assert version.project_url("homepage") == "https://effspec.example/"
    assert version.project_url("issues") == "https://effspec.example/issues"  # "Bug Tracker" is PEP 753's alias
    assert version.report_a_bug() == "Please report it with the spec that triggers it: https://effspec.example/issues"
    driver = sarif_log([])["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://effspec.example/"


def test_without_declared_addresses_none_is_printed(declared):
    from effspec.report.sarif import sarif_log

    declared("Homepage, ftp://not-a-web-address", "Funding")  # neither is an http(s) address
    assert version.project_urls() == {}
    assert version.report_a_bug() == "Please report it to effspec's maintainers with the spec that triggers it"
    driver = sarif_log([])["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver and driver["name"] == "effspec"  # informationUri is optional in SARIF 2.1.0


def test_the_installed_metadata_is_what_is_read():
    from importlib import metadata

    entries = metadata.metadata("effspec").get_all("Project-URL") or []
    version.project_urls.cache_clear()
    assert len(version.project_urls()) == len({e.split(",", 1)[0] for e in entries})


def subpackages() -> set[str]:
    """What setup.py must find, listed here from the tree itself."""
    found = {"effspec"} | {"effspec." + ".".join(p.parent.relative_to(ROOT / "compiler").parts)
                           for p in (ROOT / "compiler").rglob("__init__.py") if p.parent != ROOT / "compiler"}
    for package, folder in {"effspec.grammar": "grammar", "effspec.templates": "templates", "effspec.spec": "spec"}.items():
        found.add(package)
        found |= {f"{package}.{d.relative_to(ROOT / folder).as_posix().replace('/', '.')}"
                  for d in (ROOT / folder).rglob("*") if d.is_dir() and "__pycache__" not in d.parts}
    return found


def test_the_package_list_is_derived():
    code = ("import runpy, setuptools, sys; setuptools.setup = lambda **kw: print(sorted(kw['packages'])); "
            "runpy.run_path('setup.py')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = set(ast.literal_eval(proc.stdout))
    assert listed == subpackages()
    # today: 17 folders of compiler/ with an __init__.py besides compiler/ itself, the root, 3 data packages,
    # and their data folders templates/fonts and spec/rules
    assert {"effspec.rules.numerics", "effspec.ranks.traces", "effspec.templates.fonts", "effspec.spec.rules"} <= listed


def test_the_wheel_holds_every_package_and_its_data(effspec_wheel):
    names = set(zipfile.ZipFile(effspec_wheel).namelist())
    for package in subpackages():
        folder = package.replace(".", "/")
        assert any(n.startswith(folder + "/") for n in names), package
    for data in ("effspec/grammar/eff.lark", "effspec/templates/report.html.j2", "effspec/templates/fonts/DejaVuSansMono.ttf",
                 "effspec/spec/eff-ir.schema.json", "effspec/spec/rules/EFF202.md", "effspec/data/peaks.json"):
        assert data in names, data
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="`build` is in the dev dependency group (make test installs it)")
    out = tmp_path_factory.mktemp("dist")
    for kind in ("--sdist", "--wheel"):
        proc = subprocess.run([sys.executable, "-m", "build", kind, "--no-isolation", "--outdir", str(out), str(ROOT)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.mark.slow
def test_twine_check_passes(distributions):
    pytest.importorskip("twine", reason="twine is in the dev dependency group (make test installs it)")
    files = sorted(str(p) for p in distributions.iterdir())
    assert len(files) == 2  # the sdist and the wheel
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2


@pytest.mark.slow
def test_the_sdist_ships_its_tests_and_they_pass(distributions, tmp_path):
    (sdist,) = distributions.glob("effspec-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        for needed in ("tests/conftest.py", "tests/fixtures/rules/EFF202", "tests/golden", "examples/example_b_vendor_claim.eff",
                       "grammar/eff.lark", "editors/vscode/scripts/generate_grammar.py", "LICENSE", "setup.py"):
            assert any(n == f"{top}/{needed}" or n.startswith(f"{top}/{needed}/") for n in names), needed
        tar.extractall(tmp_path, filter="data")
    tree = tmp_path / top
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                                "--target", str(site), str(tree)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    # The rule fixtures and pages, and the one-lexicon checks: data from tests/fixtures, spec/ and editors/.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
                           "tests/rules/test_rules.py", "tests/front/test_lexicon.py", "-k", "fixture or page or lexicon or scanner or copy"],
                          capture_output=True, text=True, cwd=tree, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\b\d{3} passed\b", proc.stdout), proc.stdout[-500:]  # 236 when this was written
    # it ran the installed copy, not this tree
    where = subprocess.run([sys.executable, "-c", "import effspec; print(effspec.__file__)"], capture_output=True, text=True,
                           cwd=tree, env=env, timeout=60)
    assert where.stdout.strip().startswith(str(site))
