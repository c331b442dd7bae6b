# Two commands do all the set-up on a fresh machine:
#   make demo   - .venv, the package, and every example rendered to out/ (HTML and PDF)
#   make test   - .venv with the test extras, lint, the whole suite (it names missing system tools; make sysdeps installs them)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
EXAMPLES := $(wildcard examples/*.eff)

.PHONY: demo test check lint sysdeps sysdeps-report clean rules-pages bench

$(PY):
	$(PYTHON) -m venv $(VENV)

# One editable install serves both targets, so `make demo` and `make test`
# never undo each other; tests/test_core.py builds and installs a real wheel
# to prove a non-editable `pip install .` ships the grammar, templates and data.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -e '.[test]'
	@touch $@ $(VENV)/.installed

# pdftoppm/pdftotext (poppler-utils) rasterize and read PDFs in the tests;
# HarfBuzz-subset lets WeasyPrint subset fonts without its slow fallback.
# `make test` only names what is missing (the tests that need it skip, saying
# why); `make sysdeps` installs it, and .ci/run calls that before `make test`.
SYSDEPS_MISSING = $(strip $(if $(shell command -v pdftoppm 2>/dev/null),,poppler-utils) \
                  $(if $(shell ldconfig -p 2>/dev/null | grep libharfbuzz-subset),,libharfbuzz-subset0))

sysdeps-report:
	@if [ -n "$(SYSDEPS_MISSING)" ]; then \
	  echo "note: missing system packages: $(SYSDEPS_MISSING); the tests that need them skip (install: make sysdeps)" >&2; fi

sysdeps:
	@if [ -z "$(SYSDEPS_MISSING)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSDEPS_MISSING) >/dev/null; \
	else echo "run: sudo apt-get install $(SYSDEPS_MISSING)" >&2; exit 1; fi

demo: $(VENV)/.installed
	@mkdir -p out
	@for f in $(EXAMPLES); do \
	  name=$$(basename $$f .eff); \
	  $(VENV)/bin/effspec report $$f -o out/$$name.html 2>/dev/null; s1=$$?; \
	  $(VENV)/bin/effspec report $$f -o out/$$name.pdf 2>/dev/null; s2=$$?; \
	  if [ $$s1 -ge 2 ] || [ $$s2 -ge 2 ]; then echo "failed: $$f" >&2; exit 2; fi; \
	  echo "out/$$name.html  out/$$name.pdf"; \
	done

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
lint: $(VENV)/.installed-test $(MYPY_PATH)/effspec
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

check: lint

test: lint sysdeps-report
	$(PY) -m pytest

rules-pages: $(VENV)/.installed-test
	$(PY) -m effspec.rules.pages --write spec/rules

bench: $(VENV)/.installed-test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) out build *.egg-info
