# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent);
# `make test` lints first (`ruff check .`, rules in pyproject.toml; a finding fails it), builds the docs site with
# warnings as errors (`make docs`: mkdocs.yml, docs/), then installs the services its tests start for real
# (scripts/test-services.sh).
# `make fault` runs the fault-injection suite (tests/fault/) in its full form: more kill moments and workers.
# `make fuzz` runs the property-based harness (tests/fuzz/) long and random: SWEEP_FUZZ_EXAMPLES per command.
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
	$(PY) -m pytest -q

fault: setup
	bash scripts/test-services.sh
	SWEEP_FAULT_FULL=1 $(PY) -m pytest -q tests/fault

fuzz: setup
	SWEEP_FUZZ_EXAMPLES=$${SWEEP_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q tests/fuzz
