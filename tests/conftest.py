"""Shared pytest configuration: the fuzz tally printed at the end of a run.

The fuzz tests count every input they feed to the pipeline and every
exception that escaped it; the summary line makes the CI figure visible
without `-rP` or `-s`.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

# `effspec check`'s result cache is off for the suite (tests monkeypatch the
# pipeline in-process and would otherwise be served earlier runs' outputs);
# tests/cli/test_result_cache.py turns it on for its own runs.
os.environ["EFFSPEC_NO_CACHE"] = "1"

# The generators of checked-in files (scripts/write_*.py: the language reference's tables, the import
# examples, the golden PNGs) are importable by the tests that check their output is current.
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


def _per_process_caches() -> list:
    """The package's memos of what a fresh process reads afresh: the configuration found above a folder
    (a test edits pyproject.toml between two commands), the cache's secret, the peak catalog."""
    from effspec.cli import cache
    from effspec.engine import catalog
    from effspec.front import config

    return [config.project_settings, cache.secret, cache.catalog_digest, catalog._catalog]


def cli(*args: str | bytes | os.PathLike, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
        stdin: str | bytes | None = None, text: bool = True) -> subprocess.CompletedProcess:
    """`effspec ARGS` run in this process: ``effspec.cli.main`` with its own streams, folder and environment.

    For tests about what a command prints, writes and exits with (issue 29: a subprocess costs
    0.25-0.5 s of start-up).  It gives what ``subprocess.run([effspec, *args], capture_output=True,
    text=text, cwd=cwd, env=env, input=stdin)`` gives: a CompletedProcess with the exit status and
    the two streams (text: decoded as UTF-8 with universal newlines, as ``text=True`` does; else
    bytes).  ``env`` replaces the whole environment, as subprocess's does; the process's
    environment, folder and streams are put back afterwards, and the package's per-process memos
    (_per_process_caches) are cleared before and after, so a call sees what a fresh process sees.
    stdin is empty unless given (``sys.stdin.buffer`` and ``sys.stdin.read`` both work), and no
    stream is a terminal.  A SystemExit gives its status; an exception that escapes ``main``
    (``--debug``) is printed to stderr with status 1, as the interpreter does.

    What needs a process keeps one (effspec_process): signals, start-up weight (what `import` pulls in),
    exit on a closed pipe, the installed console script, anything measured from outside.
    """
    argv = [os.fsdecode(a) for a in args]  # bytes as a new process reads them from the OS: surrogateescape
    stdin_bytes = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
    streams = (sys.stdin, sys.stdout, sys.stderr, sys.argv)
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.BytesIO(), io.BytesIO()
    # Held here until the bytes are read: a wrapper that is collected closes its buffer.
    wrappers = (io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding="utf-8"),
                io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True),
                io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = wrappers
    sys.argv = ["effspec", *argv]
    for memo in _per_process_caches():
        memo.cache_clear()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        from effspec.cli import main

        try:
            status = main(argv)
        except SystemExit as exc:
            code = exc.code
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
            status = 1 if code is not None and not isinstance(code, int) else int(code or 0)
        except Exception:
            traceback.print_exc()
            status = 1
        for wrapper in wrappers[1:]:
            wrapper.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for memo in _per_process_caches():
            memo.cache_clear()
    stdout, stderr = out.getvalue(), err.getvalue()
    for wrapper in wrappers:
        wrapper.detach()
    if text:
        return subprocess.CompletedProcess(["effspec", *argv], status, _text(stdout), _text(stderr))
    return subprocess.CompletedProcess(["effspec", *argv], status, stdout, stderr)


# The installed console script (beside the interpreter running the tests), for the tests that run a process.
EFFSPEC = Path(sys.executable).with_name("effspec")


def effspec_process(*args: str | os.PathLike, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
                    stdin: str | bytes | None = None, text: bool = True, timeout: float = 300,
                    module: bool = False) -> subprocess.CompletedProcess:
    """`effspec ARGS` in a process of its own, for a test about the process rather than the output (see cli):
    the installed console script (``python -m effspec`` with ``module``, or where the script is not installed),
    its streams captured, ``env`` the whole environment (as subprocess's), killed after ``timeout`` seconds."""
    command = [sys.executable, "-m", "effspec"] if module or not EFFSPEC.exists() else [str(EFFSPEC)]
    return subprocess.run([*command, *map(os.fspath, args)], capture_output=True, text=text, cwd=cwd, env=env,
                          input=stdin, timeout=timeout)


def _text(data: bytes) -> str:
    """Bytes as ``subprocess.run(text=True)`` reads them (UTF-8 here; universal newlines)."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory):
    """The session's shared cache of the examples' HTML and PDF reports (tests/rendering.py).

    Under pytest-xdist each worker's basetemp is a folder of the run's own basetemp root,
    so the cache sits in that root, where every worker of this run finds it."""
    from rendering import RenderCache

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return RenderCache(root / "render-cache")


@dataclass
class FuzzTally:
    inputs: int = 0
    uncaught: int = 0


_TALLY = pytest.StashKey[FuzzTally]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = FuzzTally()


@pytest.fixture(scope="session")
def fuzz_tally(pytestconfig: pytest.Config) -> FuzzTally:
    """The run's counter of fuzz inputs and uncaught exceptions."""
    return pytestconfig.stash[_TALLY]


# Under pytest-xdist (`make test` runs the files on every core) each worker counts its own
# inputs; it hands its tally to the controller when it finishes, which adds them up.
def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    tally = session.config.stash.get(_TALLY, None)
    if output is not None and tally is not None:
        output["fuzz_tally"] = (tally.inputs, tally.uncaught)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    inputs, uncaught = getattr(node, "workeroutput", {}).get("fuzz_tally", (0, 0))
    tally = node.config.stash[_TALLY]
    tally.inputs += inputs
    tally.uncaught += uncaught


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    tally = config.stash.get(_TALLY, None)
    if tally is not None and tally.inputs:
        terminalreporter.write_line(f"fuzz: {tally.inputs} inputs, {tally.uncaught} uncaught exceptions")


# `make test-fast` (pytest -m "not slow") leaves these out: whole files whose
# nature is slow (fuzzing, subprocess servers, pre-commit's own venv, Dask,
# memory and growth measurements, the hash-seed runs, the package copies), every
# test that renders a PDF (WeasyPrint is most of a report's time), every
# hypothesis test (the fuzzers), every test of the built wheel, and the tests
# named in tests/slow_tests.txt (each took 0.3 s or more in a measured run).
# `make test` runs everything.
SLOW_FILES = {
    "test_fuzz.py", "test_fmt_fuzz.py", "test_pre_commit.py", "test_traces.py", "test_bounded_cost.py",
    "test_growth.py", "test_import_weight.py", "test_lsp.py", "test_lsp_features.py", "test_lsp_incremental.py",
    "test_extreme_values.py", "test_fmt_cli.py", "test_importers.py", "test_makefile.py", "test_report.py",
    "test_injection.py", "test_failed_report_keeps_output.py", "test_untrusted_reading.py", "test_catalog_cli.py",
    "test_result_cache.py", "test_determinism.py", "test_recipes.py",
}
# The tests a measured run found slow (tests/slow_tests.txt, written by scripts/write_slow_tests.py), by
# file::name without parameters: every case of one goes together.
SLOW_TESTS = frozenset(line.strip() for line in (Path(__file__).parent / "slow_tests.txt").read_text(encoding="utf-8")
                       .splitlines() if line.strip() and not line.startswith("#"))
WHEEL_FIXTURES = {"effspec_wheel", "installed_wheel"}


# The files that take the most CPU time (benchmarks/suite_times.md), heaviest first: collected first, so
# pytest-xdist (--dist loadfile hands out whole files in collection order) starts them first and the
# small files fill in around them, instead of one heavy file running alone at the end of the run.
HEAVY_FIRST = (
    "test_determinism.py", "test_report_layout.py", "test_fuzz.py", "test_bounded_cost.py", "test_result_cache.py",
    "test_report.py", "test_cli_workflow.py", "test_pre_commit.py", "test_import_weight.py", "test_first_contact.py",
    "test_lsp_features.py", "test_trust_traces.py", "test_report_reviewer.py", "test_extreme_values.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order is kept
    slow = pytest.mark.slow
    for item in items:
        function = getattr(item, "function", None)
        if (item.path.name in SLOW_FILES or "pdf" in item.name.lower()
                or item.nodeid.split("[", 1)[0] in SLOW_TESTS
                or getattr(function, "is_hypothesis_test", False)
                or WHEEL_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(slow)


# The wheel a non-editable `pip install .` gets, built once per session (tests/front/test_front_end.py and
# tests/front/test_ir_json.py read it), in the render cache's folder, keyed by what goes into it.
WHEEL_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "compiler", "grammar", "templates", "spec")


def _wheel_key() -> str:
    import hashlib

    from rendering import ROOT

    digest = hashlib.sha256(b"wheel\0" + sys.version.encode())
    for top in WHEEL_INPUTS:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for f in files:
            digest.update(str(f.relative_to(ROOT)).encode("utf-8") + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def _fill_wheel(folder: Path) -> None:
    from rendering import ROOT

    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(folder), str(ROOT)], capture_output=True, text=True)
    if proc.returncode != 0:
        (folder / "error.txt").write_text(proc.stderr[-300:], encoding="utf-8")


@pytest.fixture(scope="session")
def effspec_wheel(render_cache) -> Path:
    """The effspec wheel of this tree (``pip wheel --no-deps --no-build-isolation .``), built once per session;
    the test skips, saying why, where no wheel can be built here."""
    folder = render_cache.folder_of(_wheel_key(), _fill_wheel)
    if (folder / "error.txt").exists():
        pytest.skip(f"cannot build a wheel here: {(folder / 'error.txt').read_text(encoding='utf-8')}")
    (wheel,) = folder.glob("effspec-*.whl")
    return wheel


@pytest.fixture(scope="session")
def installed_wheel(render_cache, effspec_wheel: Path) -> Path:
    """A folder that the wheel was installed into (``pip install --no-deps --target``), once per session:
    PYTHONPATH=it imports the installed package, not this tree."""

    def fill(folder: Path) -> None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder / "site"),
                        str(effspec_wheel)], check=True)

    return render_cache.folder_of("site-" + effspec_wheel.parent.name, fill) / "site"


# effspec's dependencies (and its build requirements) as wheels, for an environment that installs
# effspec from a copy of this tree (tests/house/test_pre_commit.py's hook virtualenv): built once, keyed
# by pyproject.toml's bytes, then installed with --no-index from the folder (56 s became 21 s).
# In the session's cache folder; under $EFFSPEC_TEST_WHEELHOUSE instead, when set, so that CI or a
# developer can keep it between runs (a changed pyproject.toml gets a folder of its own).
WHEELHOUSE_ENV = "EFFSPEC_TEST_WHEELHOUSE"


@pytest.fixture(scope="session")
def dependency_wheelhouse(render_cache) -> Path | None:
    """The folder of wheels, or None where pip could not build them (no index reachable): the caller
    then installs as before, from the index."""
    import hashlib

    from rendering import ROOT, RenderCache

    pyproject = (ROOT / "pyproject.toml").read_bytes()
    key = "wheelhouse-" + hashlib.sha256(pyproject + sys.version.encode()).hexdigest()[:32]
    cache = RenderCache(Path(os.environ[WHEELHOUSE_ENV])) if os.environ.get(WHEELHOUSE_ENV) else render_cache

    def fill(folder: Path) -> None:
        import tomllib

        build = tomllib.loads(pyproject.decode("utf-8"))["build-system"]["requires"]
        for what in ([str(ROOT)], [*build, "wheel"]):
            proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "-w", str(folder), *what],
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                (folder / "error.txt").write_text(proc.stderr[-2000:], encoding="utf-8")
                return
        for own in folder.glob("effspec-*.whl"):  # the hooks install effspec from their own copy
            own.unlink()

    folder = cache.folder_of(key, fill)
    return None if (folder / "error.txt").exists() else folder
