# Two commands matter: `make demo` and `make test`. Both set everything up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the demo needs tracekit and its own dependencies only (a minute
# on a fresh machine; `tracekit serve` included); the suite also needs the dev
# extras (pyspark, playwright, mypy, ruff, hypothesis, ...: a gigabyte and minutes more).
BASE_STAMP := $(VENV)/.installed-base
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean install notebook browser graphviz java screenshot record-frameworks clear-notebooks

$(BASE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@# a venv made before the distribution was named tracekit-agents holds it as `tracekit`
	@$(BIN)/python -m pip uninstall -q -y tracekit 2>/dev/null || true
	$(BIN)/python -m pip install -q -e .
	touch $(BASE_STAMP)

$(STAMP): $(BASE_STAMP)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,lovia,notebook,openai-agents,serve]'
	touch $(STAMP)

install: $(STAMP)

demo: $(BASE_STAMP) graphviz
	@bash examples/demo.sh

# JupyterLab on the notebooks/, from the venv (the `notebook` extra: JupyterLab and the kernel).
NOTEBOOK_STAMP := $(VENV)/.installed-notebook
$(NOTEBOOK_STAMP): $(BASE_STAMP)
	$(BIN)/python -m pip install -q -e '.[notebook]'
	touch $(NOTEBOOK_STAMP)

notebook: $(NOTEBOOK_STAMP)
	$(BIN)/jupyter lab notebooks/

# The dashboard's test drives a real headless Chromium: Debian's, installed when missing.
browser:
	@bash .ci/browser.sh

# The dashboard's delegation graph is laid out by Graphviz's dot: Debian's, installed when missing.
graphviz:
	@bash .ci/graphviz.sh

# The Spark tests run a local Spark Connect server on Java 17: Debian's, installed when missing.
java:
	@bash .ci/java.sh

test: $(STAMP) browser graphviz java
	$(BIN)/python -m pytest -n 2 -q

# dashboards/fleet-health.png, the picture in dashboards/README.md, taken by the browser test.
screenshot: $(STAMP) browser graphviz
	TRACEKIT_SCREENSHOT=dashboards/fleet-health.png $(BIN)/python -m pytest -q -n 0 \
		tests/test_dashboard.py -k browser

# The committed notebooks carry no outputs (tests/test_notebooks.py checks it).
clear-notebooks:
	$(PY) -c 'import glob, json; \
	cells = lambda nb: [c.update(outputs=[], execution_count=None) for c in nb["cells"] if c["cell_type"] == "code"]; \
	[(cells(nb), open(p, "w").write(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")) \
	 for p in glob.glob("notebooks/*.ipynb") for nb in [json.load(open(p))]]'

lint: $(STAMP)
	$(BIN)/ruff check tracekit tests bench examples
	$(BIN)/ruff format --check tracekit tests bench examples
	$(BIN)/mypy

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b; done

# Real runs of thirteen agent frameworks, recorded offline as OTLP JSON (tests/frameworks/).
# Each framework pins its own OpenTelemetry, so each gets its own venv in .frameworks/;
# `make test` only reads the committed recordings and never needs these.
FRAMEWORKS := openai_agents pydantic_ai google_adk langgraph strands crewai autogen \
	agent_framework smolagents llama_index agno langgraph_swarm langgraph_supervisor

.frameworks/%/.installed: tests/frameworks/requirements-%.txt
	test -x .frameworks/$*/bin/python || $(PY) -m venv .frameworks/$*
	.frameworks/$*/bin/python -m pip install -q -r $<
	touch $@

record-frameworks: $(STAMP) $(foreach f,$(FRAMEWORKS),.frameworks/$(f)/.installed)
	@for f in $(FRAMEWORKS); do echo "== $$f"; .frameworks/$$f/bin/python tests/frameworks/record_$$f.py || exit 1; done
	$(BIN)/python -m pytest -q -n 0 tests/frameworks/test_recordings.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build
