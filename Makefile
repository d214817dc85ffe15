# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent);
# `make test` also installs the services its tests start for real (scripts/test-services.sh).
PY := $(if $(VIRTUAL_ENV),python,$(if $(CONDA_PREFIX),python,.venv/bin/python))

.PHONY: setup demo test
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m sweep demo

test: setup
	bash scripts/test-services.sh
	$(PY) -m pytest -q
