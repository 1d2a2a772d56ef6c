# clustersmith: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SPEC   ?= examples/cv-training-500tb.yaml
OUT    ?= out

# The lab tests CI runs on every submission (boot the default lab once, rails, faults, cleanup).
# `make test-lab` runs every lab test: acceptance, monitoring alerts and the storage data path too.
LAB_CI ?= tests/lab/test_lab_e2e.py tests/lab/test_lab_cleanup.py

.PHONY: demo test test-unit test-lab test-molecule lint typecheck venv clean golden bench

$(BIN)/clustersmith: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

venv: $(BIN)/clustersmith

demo: venv
	$(BIN)/clustersmith validate $(SPEC)
	$(BIN)/clustersmith plan $(SPEC)
	$(BIN)/clustersmith build $(SPEC) -o $(OUT)
	$(BIN)/clustersmith explain $(OUT)/$$(basename $(SPEC) .yaml) acceptance.storage.read_throughput

test: venv lint
	$(BIN)/pytest -q tests -m "not lab"
	$(BIN)/pytest -q -m lab $(LAB_CI)

test-unit: venv
	$(BIN)/pytest -q tests -m "not lab"

test-lab: venv
	$(BIN)/pytest -q tests -m lab

test-molecule: venv
	for role in roles/*/molecule; do (cd $$role/.. && ANSIBLE_ROLES_PATH=$(CURDIR)/roles ../../$(BIN)/molecule test) || exit 1; done

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy blueprints

golden: venv
	$(BIN)/pytest -q tests/golden --update-golden

bench: venv
	$(BIN)/python tests/bench_planner.py

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
