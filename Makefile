# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent);
# `make test` also installs the services its tests start for real (scripts/test-services.sh).
PY := $(if $(VIRTUAL_ENV),python,$(if $(CONDA_PREFIX),python,.venv/bin/python))

.PHONY: setup demo test
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m sweep coord-check --model gpt
	$(PY) -m sweep train studies/gpt-proxy-run.yaml --resume
	$(PY) -m sweep proxy studies/demo.yaml --width 32 --workers 2
	$(PY) -m sweep results studies/demo.yaml --top 5

test: setup
	bash scripts/test-services.sh
	$(PY) -m pytest -q
