# The two commands of the README: `make run` (the app) and `make test` (the tests).
# Each creates .venv from the pinned requirements on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501

.PHONY: run test bench clean

# ui.serve: `streamlit run app.py`, then one session on the root before any visitor (see ui/serve.py)
run: $(VENV)/.runtime
	$(BIN)/python -m ui.serve --server.port $(PORT)

# Tests that start a Ray cluster run in a pytest process of their own: a process that has joined Ray carries
# its threads, and forking it (the local executor's pool) can deadlock.
test: $(VENV)/.dev $(VENV)/.ray
	$(BIN)/python -m pytest -m "not ray"
	$(BIN)/python -m pytest -m ray

$(VENV)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

# Ray for the ray executor's tests (tests marked `ray` start a small local cluster)
$(VENV)/.ray: requirements-ray.txt $(VENV)/.runtime
	$(BIN)/python -m pip install --quiet -r requirements-ray.txt
	touch $@

clean:
	rm -rf $(VENV) data/kneepoint.duckdb .pytest_cache
