# Two commands matter: `make demo` and `make test`. Both set everything up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean install browser screenshot

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,lovia,notebook,serve]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@bash examples/demo.sh

# The dashboard's test drives a real headless Chromium: Debian's, installed when missing.
browser:
	@bash .ci/browser.sh

test: $(STAMP) browser
	$(BIN)/python -m pytest -n 2 -q

# dashboards/fleet-health.png, the picture in dashboards/README.md, taken by the browser test.
screenshot: $(STAMP) browser
	TRACEKIT_SCREENSHOT=dashboards/fleet-health.png $(BIN)/python -m pytest -q -n 0 \
		tests/test_dashboard.py -k browser

lint: $(STAMP)
	$(BIN)/ruff check tracekit tests bench examples
	$(BIN)/ruff format --check tracekit tests bench examples
	$(BIN)/mypy

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build
