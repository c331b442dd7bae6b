# Two commands do all the set-up on a fresh machine:
#   make demo   - .venv, the package, and every example rendered to out/ (HTML and PDF)
#   make test   - .venv with the test extras, system tools the tests use, the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
SOURCES := pyproject.toml $(shell find compiler grammar templates spec -type f 2>/dev/null | grep -v __pycache__)
EXAMPLES := $(wildcard examples/*.eff)

.PHONY: demo test sysdeps clean rules-pages bench

$(PY):
	$(PYTHON) -m venv $(VENV)

# The package itself, non-editable, as a user gets it.
$(VENV)/.installed: $(SOURCES) | $(PY)
	$(PIP) install .
	@touch $@

# Editable, with the test extras, for the suite.
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -e '.[test]'
	@touch $@

# pdftoppm/pdftotext (poppler-utils) rasterize and read PDFs in the tests.
sysdeps:
	@command -v pdftoppm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null; \
	  else echo "poppler-utils missing: run 'sudo apt-get install poppler-utils'" >&2; exit 1; fi; }

demo: $(VENV)/.installed
	@mkdir -p out
	@for f in $(EXAMPLES); do \
	  name=$$(basename $$f .eff); \
	  $(VENV)/bin/effspec report $$f -o out/$$name.html 2>/dev/null; s1=$$?; \
	  $(VENV)/bin/effspec report $$f -o out/$$name.pdf 2>/dev/null; s2=$$?; \
	  if [ $$s1 -ge 2 ] || [ $$s2 -ge 2 ]; then echo "failed: $$f" >&2; exit 2; fi; \
	  echo "out/$$name.html  out/$$name.pdf"; \
	done

test: $(VENV)/.installed-test sysdeps
	$(PY) -m pytest

rules-pages: $(VENV)/.installed-test
	$(PY) -m effspec.explain --write spec/rules

bench: $(VENV)/.installed-test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) out build *.egg-info
