# clustersmith: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SPEC   ?= examples/cv-training-500tb.yaml
OUT    ?= out

# The lab tier (real kernels under QEMU): the lab's own tests on the default lab, then on one booted lab of
# examples/lab.yaml every role's molecule scenario, site.yml, the storage path under a rail cut, acceptance and
# the monitoring alerts (tests/lab/conftest.py orders them). `make test` (CI, 2 cores) runs the lab's own
# tests, the scenarios of the data-path and QoS roles and the rail cut on the lab they converged; monitoring's
# scenario, site.yml over the whole lab, acceptance and the alerts (about 40 more minutes under TCG) run in
# `make test-lab`.
CI_ROLES ?= rdma pfc_dcqcn nvmeof storage_tiering nccl
LAB_CI ?= tests/lab/test_lab_e2e.py tests/lab/test_lab_cleanup.py \
	$(foreach role,$(CI_ROLES),'tests/lab/test_role_scenarios.py::test_role_scenario[$(role)]') \
	tests/lab/test_storage_path_e2e.py::test_fio_verify_survives_a_rail_cut
LAB_TESTS ?= tests/lab

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
	$(BIN)/pytest -q -m lab $(LAB_TESTS)

# Every role's molecule scenario on one booted lab (one role alone: see tests/roles/shared_lab/README.md).
test-molecule: venv
	$(BIN)/pytest -q -m lab tests/lab/test_role_scenarios.py

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy blueprints

golden: venv
	$(BIN)/pytest -q tests/golden --update-golden

bench: venv
	$(BIN)/python tests/bench_planner.py

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
