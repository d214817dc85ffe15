# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent);
# `make test` lints first (`ruff check .`, rules in pyproject.toml; a finding fails it), then installs the
# services its tests start for real (scripts/test-services.sh).
# `make fault` runs the fault-injection suite (tests/fault/) in its full form: more kill moments and workers.
# `make fuzz` runs the property-based harness (tests/fuzz/) long and random: SWEEP_FUZZ_EXAMPLES per command.
PY := $(if $(VIRTUAL_ENV),python,$(if $(CONDA_PREFIX),python,.venv/bin/python))

.PHONY: setup demo test fault fuzz
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m sweep demo

test: setup
	$(PY) -m ruff check .
	bash scripts/test-services.sh
	$(PY) -m pytest -q

fault: setup
	bash scripts/test-services.sh
	SWEEP_FAULT_FULL=1 $(PY) -m pytest -q tests/fault

fuzz: setup
	SWEEP_FUZZ_EXAMPLES=$${SWEEP_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q tests/fuzz
