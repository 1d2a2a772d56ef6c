# clustersmith: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SPEC   ?= examples/cv-training-500tb.yaml
OUT    ?= out

# The lab tier (real kernels under QEMU), all of it in `make test`: the lab's own tests on the default lab, then on
# one booted lab of examples/lab.yaml every role's molecule scenario, site.yml, the storage path under a rail cut,
# acceptance and the monitoring alerts (tests/lab/conftest.py orders them). Ansible runs there with Mitogen's
# strategy (tests/lab/conftest.py: ansible_strategy_env), one scenario with the stock one.
LAB_TESTS ?= tests/lab

.PHONY: demo test test-unit test-lab test-molecule lint typecheck venv clean golden catalogue bench

# Python keeps the bytecode of what it imports (in __pycache__, ignored by git) and the next process reuses it. An
# environment that sets PYTHONDONTWRITEBYTECODE (this project's CI machines do) makes every process compile ansible,
# pydantic and the rest again: `clustersmith --version` took 2.3 s against 0.8 s, and the unit tier 10.1 against 8.7
# CPU minutes (2026-12-07, docs/benchmarks.md). Each tier runs hundreds of Python processes.
unexport PYTHONDONTWRITEBYTECODE

# --no-compile: pip would byte-compile every installed module (pulumi-azure-native alone is 356 MB of Python), 62 s
# against 21 s for the same install on a 2-core machine (2026-12-06); Python compiles what is imported, when it is.
$(BIN)/clustersmith: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -e '.[dev]'
	@touch $@

venv: $(BIN)/clustersmith

demo: venv
	$(BIN)/clustersmith validate $(SPEC)
	$(BIN)/clustersmith plan $(SPEC)
	$(BIN)/clustersmith build $(SPEC) -o $(OUT)
	$(BIN)/clustersmith explain $(OUT)/$$($(BIN)/python -c "$$DESIGN_NAME" $(SPEC)) acceptance.storage.read_throughput

# The build folder is named by the spec's metadata.name, whatever the file is called (make demo SPEC=my.yaml).
export DESIGN_NAME = import sys; from pathlib import Path; from blueprints.loader import load_requirements; \
print(load_requirements(Path(sys.argv[1])).metadata.name)

# The unit tier runs on three workers that steal each other's queued tests: many tests wait on real tools, sleeps and
# timeouts, so a third worker fills the two cores' idle time (side by side on 2 cores, 2026-12-06: -n 2 164 s, -n 3
# 139 s, -n 4 145 s; with --dist load one worker sat idle behind the slow ones: docs/benchmarks.md); the lab tier in one
# process (one lab, its tests in MODULE_ORDER), listing its slowest tests for the CI budget. `make test` is lint,
# test-unit and test-lab, in that order; .ci/run calls those parts one by one to time each (tests/unit/test_ci_run.py
# holds the two to the same commands).
UNIT_TIER = $(BIN)/pytest -q -n 3 --dist worksteal tests -m "not lab"
LAB_TIER  = $(BIN)/pytest -q --durations=30 -m lab $(LAB_TESTS)

test: venv lint
	$(UNIT_TIER)
	$(LAB_TIER)

test-unit: venv
	$(UNIT_TIER)

test-lab: venv
	$(LAB_TIER)

# Every role's molecule scenario on one booted lab (one role alone: see tests/roles/shared_lab/README.md).
test-molecule: venv
	$(BIN)/pytest -q -m lab tests/lab/test_role_scenarios.py

# mypy is strict on blueprints/, stacks/, validators/ and the roles' Python (pyproject.toml); ruff checks them all.
# What runs on the hosts (library/, module_utils/, files/; the monitoring exporter, a script without a .py suffix,
# named as it is) is checked for the oldest host Python the roles support (pyproject.toml's [tool.ruff]); the roles'
# controller-side scripts (molecule/, tests/) with the rest.
HOST_PYTHON := $(wildcard roles/*/library/*.py roles/*/module_utils/*.py roles/*/files/*.py) \
               roles/monitoring/files/clustersmith-exporter
ROLES_CONTROLLER_PYTHON := $(wildcard roles/*/molecule/*/*.py roles/*/tests/*.py)

# The last step lints what `build` writes for every example, as a user's CI would: yamllint (strict) and
# ansible-lint's production profile, from this folder (its .yamllint and ansible.cfg).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy blueprints validators stacks $(ROLES_CONTROLLER_PYTHON)
	$(BIN)/mypy --python-version 3.10 --scripts-are-modules $(HOST_PYTHON)
	$(BIN)/python tests/lint_generated.py

golden: venv
	$(BIN)/pytest -q tests/golden --update-golden

# The check catalogue at the top of validators/README.md, from the rules' texts and the planner over examples/*.yaml
# (tests/unit/validators/test_catalogue.py fails while it is out of date).
catalogue: venv
	$(BIN)/python -m validators.catalogue

bench: venv
	$(BIN)/python tests/bench_planner.py

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
