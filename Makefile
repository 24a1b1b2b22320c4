# Set-up and checks. Every target creates the virtualenv it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev

.PHONY: test lint offline-preview preview render validate snapshots benchmark e2e docs clean
SHELL_SCRIPTS := scripts/e2e-tools .ci/run components/pulumi-resource-kaito-aks

$(VENV)/.installed: requirements.txt requirements-dev.txt components/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

test: lint  ## lint and type-check, then unit, conformance and snapshot tests (Pulumi mocks; no cloud, no cluster)
	$(PY) -m pytest -q

lint: $(VENV)/.installed  ## ruff (lint + format), pyright (strict on the library), shellcheck
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/pyright
	$(VENV)/bin/shellcheck $(SHELL_SCRIPTS)

# Not `pulumi preview`: no cloud, no cluster, no state. The program runs under Pulumi's mock engine.
offline-preview: $(VENV)/.installed  ## what STACK (default dev) would deploy, rendered to render/$(STACK) without credentials
	$(PY) -m stacks validate $(STACK)
	$(PY) -m stacks render $(STACK)
	@cat render/$(STACK)/order.yaml | sed -n '/^waves:/,/^resources:/p' | sed '$$d'

preview:  ## renamed: `make offline-preview` renders without credentials; `pulumi preview` asks Azure and the cluster
	@echo "make preview is now make offline-preview (a render under Pulumi's mocks, no credentials)." >&2
	@echo "For the real preview against Azure and your cluster: pulumi preview --stack $(STACK) --diff" >&2
	@exit 2

render: $(VENV)/.installed  ## every stack, to render/<stack> (AGAINST=<git ref>: announce the pools a change since then replaces)
	$(PY) -m stacks render $(AGAINST:%=--against %)

validate: $(VENV)/.installed  ## config checks of every stack
	$(PY) -m stacks validate

snapshots: $(VENV)/.installed  ## accept render changes into tests/snapshots (review the diff!)
	UPDATE_SNAPSHOTS=1 $(PY) -m pytest -q tests/test_render.py -k snapshot

e2e: $(VENV)/.installed  ## real Pulumi engine + kube-apiserver, offline (toolchain built once into ~/.cache/kaito-aks)
	BIN="$$(scripts/e2e-tools | tail -1)" && KAITO_AKS_E2E_BIN="$$BIN" $(PY) -m pytest -p no:cacheprovider -q -rA --durations=0 tests/e2e

benchmark: $(VENV)/.installed  ## program evaluation time and memory for 10..1000 workspaces
	$(PY) scripts/benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache render

docs: $(VENV)/.installed  ## regenerate components/schema.json (the provider schema), docs/api.md, docs/configuration.md, the docs' example blocks
	$(PY) -m stacks docs --write > /dev/null
