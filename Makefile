# passlens build/test scaffolding.
#   make venv   - create .venv, install passlens[test,tvm,iree] (editable) + system deps
#   make test   - run the test suite
#   make demo   - run the tour notebook headless; report in build/demo/
#   make notebooks-html - execute every notebook, publish static HTML in build/notebooks/
#   make lab    - start JupyterLab on notebooks/
#   make clean  - remove the venv and build/test artefacts

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

# Prefer an explicit python3.11; fall back to python3 (checked to be >= 3.11).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
VPY    := $(VENV)/bin/python
PIP    := $(VPY) -m pip
STAMP  := $(VENV)/.installed
# quiet: errors and the summary line below only (PIP_QUIET= shows pip's whole output)
PIP_QUIET ?= -q --progress-bar off
PIP_INSTALL := $(PIP) install $(PIP_QUIET) -c constraints.txt

# System (Debian) dependencies as PKG:CMD pairs; installed by .ci/ensure-apt.sh when CMD is missing
# (node runs the graph layout engine's tests).
APT_DEPS := graphviz:dot chromium:chromium nodejs:node g++:g++

PYTEST_ARGS ?= -n 2 --dist loadfile
LAB_ARGS    ?=

.PHONY: venv sysdeps test demo notebooks-html lab clean

venv: $(STAMP) sysdeps

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "passlens needs Python >= 3.11, got " + sys.version)'
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	@start=$$(date +%s); \
	$(PIP_INSTALL) -e '.[test,tvm,iree]'; \
	echo ">>> pip install took $$(( $$(date +%s) - start ))s"
	@$(VPY) -c 'import torch; v = torch.__version__; assert v.split("+")[0] == "2.13.0", "wrong torch " + v; print(">>> torch", v)'
	touch $@

sysdeps:
	@for dep in $(APT_DEPS); do .ci/ensure-apt.sh "$${dep%%:*}" "$${dep##*:}"; done

test: venv
	$(VPY) -m pytest $(PYTEST_ARGS)

demo: venv
	$(VENV)/bin/passlens demo --notebook notebooks/00_tour.ipynb --out build/demo

# each notebook executed in a fresh kernel, converted by nbconvert (cells tagged `hide` left out,
# screenshots embedded): one self-contained page per notebook
notebooks-html: venv
	$(VPY) -m passlens.notebooks --out build/notebooks

# as root (a container, a fresh VM) Jupyter refuses to start without --allow-root
lab: venv
	mkdir -p notebooks
	$(VENV)/bin/jupyter lab notebooks/ $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis .ruff_cache
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
