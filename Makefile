# Set-up and checks. Every target creates the virtualenv it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: test lint preview clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

test: $(VENV)/.installed  ## unit, conformance and snapshot tests (Pulumi mocks; no cloud, no cluster)
	$(PY) -m ruff check .
	$(PY) -m pytest -q

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
