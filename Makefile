# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent);
# `make test` lints first (`ruff check .`, rules in pyproject.toml; a finding fails it), builds the docs site with
# warnings as errors (`make docs`: mkdocs.yml, docs/), then installs the services its tests start for real
# (scripts/test-services.sh).
# The tests run in TEST_WORKERS pytest-xdist workers (default 4 on CI's 2 cores: most tests wait on subprocesses and
# services more than they compute), one group of tests per worker where they share a service or a module's fixture
# (`--dist loadgroup`; tests/conftest.py); `make test TEST_WORKERS=0` runs them in this process, one at a time.
# `make fault` runs the fault-injection suite (tests/fault/) in its full form: more kill moments and workers.
# `make fuzz` runs the property-based harness (tests/fuzz/) long and random: SWEEP_FUZZ_EXAMPLES per command.
TEST_WORKERS ?= 4
PY := $(if $(VIRTUAL_ENV),python,$(if $(CONDA_PREFIX),python,.venv/bin/python))

.PHONY: setup demo docs test fault fuzz
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m sweep demo

docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

test: setup
	$(PY) -m ruff check .
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	bash scripts/test-services.sh
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

fault: setup
	bash scripts/test-services.sh
	SWEEP_FAULT_FULL=1 $(PY) -m pytest -q tests/fault

fuzz: setup
	SWEEP_FUZZ_EXAMPLES=$${SWEEP_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q tests/fuzz
