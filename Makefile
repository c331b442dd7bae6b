# Two commands do all the set-up on a fresh machine:
#   make demo   - .venv, the package, and every example checked and rendered to out/ (HTML and PDF)
#   make test   - .venv with the test extras, lint, the whole suite (it names missing system tools; make sysdeps installs them)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
EXAMPLES := $(wildcard examples/*.eff)

.PHONY: demo test test-fast slow-tests check lint sysdeps sysdeps-report python-version clean rules-pages bench golden docs vscode \
        generated language-reference import-examples recipe-proof

# effspec needs Python >= 3.11. A .venv made by another Python (an earlier try
# with 3.10, say) is removed here, before any rule runs, and rebuilt.
PY_VERSION   := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2]) if sys.version_info >= (3, 11) else None' 2>/dev/null)
VENV_VERSION := $(shell [ -x $(PY) ] && $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifneq ($(PY_VERSION),)
ifneq ($(wildcard $(VENV)),)
ifneq ($(VENV_VERSION),$(PY_VERSION))
$(info note: $(VENV) was made by Python $(or $(VENV_VERSION),unknown), not $(PYTHON) ($(PY_VERSION)); rebuilding it)
$(shell rm -rf $(VENV))
endif
endif
endif

python-version:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null || { \
	  echo "effspec needs Python >= 3.11; $(PYTHON) is $$( (command -v $(PYTHON) >/dev/null && $(PYTHON) --version 2>&1) || echo "not found")." >&2; \
	  echo "Run again with a newer one, e.g.: make PYTHON=python3.11 demo" >&2; exit 2; }

$(PY): | python-version
	$(PYTHON) -m venv $(VENV)

# One editable install serves both targets, so `make demo` and `make test`
# never undo each other; tests/front/test_front_end.py builds and installs a real wheel
# to prove a non-editable `pip install .` ships the grammar, templates and data.
$(VENV)/.installed: pyproject.toml $(wildcard setup.py) | $(PY)
	$(PIP) install -e .
	@touch $@

# The test extra, and the `dev` dependency group (linters, build, twine, mkdocs):
# pip >= 25.1 reads a group itself (`pip install --group dev`), but the venv's
# own pip may be older, so the group's list is read here with tomllib.
DEV_GROUP = $(PY) -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["dependency-groups"]["dev"]))'

$(VENV)/.installed-test: pyproject.toml $(wildcard setup.py) | $(PY)
	$(PIP) install -e '.[test]' $$($(DEV_GROUP))
	@touch $@ $(VENV)/.installed

# pdftoppm/pdftotext (poppler-utils) rasterize and read PDFs in the tests;
# HarfBuzz-subset lets WeasyPrint subset fonts without its slow fallback.
# `make test` only names what is missing (the tests that need it skip, saying
# why); `make sysdeps` installs it, and .ci/run calls that before `make test`.
# Libraries are found by ctypes (which reads the loader cache by absolute path),
# so a PATH without /sbin does not make an installed library look missing.
SYSDEPS_MISSING = $(strip $(if $(shell command -v pdftoppm 2>/dev/null),,poppler-utils) \
                  $(if $(shell $(PYTHON) -c 'import ctypes.util; print(ctypes.util.find_library("harfbuzz-subset") or "")' 2>/dev/null),,libharfbuzz-subset0))

sysdeps-report:
	@if [ -n "$(SYSDEPS_MISSING)" ]; then \
	  echo "note: missing system packages: $(SYSDEPS_MISSING); the tests that need them skip (install: make sysdeps)" >&2; fi

sysdeps:
	@if [ -z "$(SYSDEPS_MISSING)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSDEPS_MISSING) >/dev/null; \
	else echo "run: sudo apt-get install $(SYSDEPS_MISSING)" >&2; exit 1; fi

# Each example is checked (its findings printed: they are the point) and
# rendered to HTML and PDF; a report is rebuilt only when its spec, a file
# beside it, or the package changed. Exit status 1 (findings) is expected of
# an audit; 2 (could not run) stops the demo.
REPORTS   := $(patsubst examples/%.eff,out/%.html,$(EXAMPLES)) $(patsubst examples/%.eff,out/%.pdf,$(EXAMPLES))
PKG_FILES := $(shell find compiler grammar templates spec -type f -not -name '*.pyc' 2>/dev/null)
EX_DATA   := $(wildcard examples/*.csv)

demo: python-version $(REPORTS)
	@echo "reports in out/: $(notdir $(REPORTS))"

out/%.html: examples/%.eff $(EX_DATA) $(PKG_FILES) $(VENV)/.installed
	@mkdir -p out
	@echo "== $<"
	@$(VENV)/bin/effspec check $<; [ $$? -le 1 ]
	@out=$$($(VENV)/bin/effspec report $< -o $@ 2>&1); s=$$?; \
	if [ $$s -le 1 ]; then echo "$$out" | tail -n 1; else echo "$$out" >&2; exit 2; fi

out/%.pdf: examples/%.eff $(EX_DATA) $(PKG_FILES) $(VENV)/.installed
	@mkdir -p out
	@out=$$($(VENV)/bin/effspec report $< -o $@ 2>&1); s=$$?; \
	if [ $$s -le 1 ]; then echo "$$out" | tail -n 1; else echo "$$out" >&2; exit 2; fi

# mypy checks the package under its import name, effspec, but the sources live
# in compiler/ (setuptools package-dir).  No mypy setting maps a folder to
# another package name (mypy_path, explicit_package_bases and files all name
# modules after their folders), and mypy cannot follow the editable install,
# which is an import hook rather than a path.  So a folder of its own under
# .venv/ holds one relative symlink, effspec -> compiler, and pyproject's
# [tool.mypy] mypy_path points there.
MYPY_PATH := $(VENV)/mypy

$(MYPY_PATH)/effspec: | $(PY)
	@mkdir -p $(MYPY_PATH)
	@ln -sfn ../../compiler $@

# ruff (lint rules), import-linter (the stage contracts in pyproject) and mypy
# (strict for front and engine, basic elsewhere: [tool.mypy] in pyproject).
lint: python-version $(VENV)/.installed-test $(MYPY_PATH)/effspec
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

check: lint

# The edit loop: the suite without the slow marks (fuzzing, PDFs, servers,
# measurements; tests/conftest.py), no linters. `make test` is what CI runs.
# pytest-xdist runs the test files on every core (JOBS=0: all in this one process);
# --dist loadfile keeps a file's tests on one worker, so a module's fixtures
# (the examples' laid-out PDFs) are built once.
# Bytecode is written under .venv/pycache even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): without it every worker rewrites every test module's
# asserts again and every `effspec` subprocess compiles the package from source
# (make test-fast on 2 cores: 51 s without, 32 s with the cache warm). Nothing is
# written beside the sources.
JOBS ?= auto
PYTEST := env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache \
          $(PY) -m pytest -n $(JOBS) --dist loadfile

test-fast: $(VENV)/.installed-test
	$(PYTEST) -m "not slow"

# Measure the fast set and add the tests of 0.3 s or more to tests/slow_tests.txt (scripts/write_slow_tests.py).
slow-tests: $(VENV)/.installed-test
	mkdir -p out
	$(PYTEST) -m "not slow" --junitxml=$(CURDIR)/out/fast-times.xml || true
	$(PY) scripts/write_slow_tests.py out/fast-times.xml

test: lint sysdeps-report
	$(PYTEST)

# CONTRIBUTING's rule recipe followed word for word on a copy of the tree, then the whole suite run there
# (scripts/recipe_proof.py): as long as `make test`.
recipe-proof: $(VENV)/.installed-test
	JOBS=$(JOBS) $(PY) scripts/recipe_proof.py

rules-pages: $(VENV)/.installed-test
	$(PY) -m effspec.rules.pages --write spec/rules

# The generated files that are committed, each rewritten by its generator in scripts/ (the tests that
# check them only read): `make generated` runs them all.
# The generated tables of spec/language.md: keys, codes, presets, the catalog and its matching rules.
language-reference: $(VENV)/.installed-test
	$(PY) scripts/write_language_reference.py

# examples/*_import.eff, their steps CSVs and reports: a fresh import of each log plus its fill-ins.
import-examples: $(VENV)/.installed-test
	$(PY) scripts/write_import_examples.py

generated: rules-pages language-reference import-examples golden

# The documentation site (mkdocs.yml: spec/ and the rule pages) in out/site; --strict makes a
# broken Markdown link or anchor an error, and scripts/check_links.py then checks every internal
# link of the built HTML (tests/house/test_docs.py does both in `make test`).
docs: $(VENV)/.installed-test
	$(VENV)/bin/mkdocs build --strict --quiet
	$(PY) scripts/check_links.py out/site

# The VS Code extension as a .vsix in editors/vscode: npm ci (the lockfile's esbuild, vsce and
# language client), then esbuild bundles extension.js into dist/ and vsce packages it.  Needs node
# and the npm registry; tests/lsp/test_vscode_package.py packages it again offline once this has run.
vscode:
	cd editors/vscode && npm ci --no-audit --no-fund && npm run package

bench: $(VENV)/.installed-test
	$(PY) benchmarks/run.py

# The page-1 PNGs people look at (tests/golden/*_page1.png, 60 dpi), rendered
# afresh from the examples; needs pdftoppm (make sysdeps).
golden: $(VENV)/.installed-test
	$(PY) scripts/write_goldens.py

clean:
	rm -rf $(VENV) out build *.egg-info
