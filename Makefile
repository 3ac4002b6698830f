# The two commands of the README: `make demo` and `make test`. Both install what they need
# into .venv first (Python packages from PyPI; nothing else is needed yet).
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml setup.py | sha1sum | cut -c1-12)

.PHONY: install demo test lint typecheck wheel-check pytest clean

$(STAMP):
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e ".[dev]"
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/railtrace demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	.ci/typecheck

wheel-check: install
	.ci/check-wheel

pytest: install
	$(VENV)/bin/pytest -q

test: lint typecheck wheel-check pytest

clean:
	rm -rf $(VENV) build dist *.egg-info railtrace-demo
