# `make demo` and `make test` each set up the environment first (scripts/setup.sh, idempotent).
PY := $(if $(VIRTUAL_ENV),python,$(if $(CONDA_PREFIX),python,.venv/bin/python))

.PHONY: setup demo test
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m sweep coord-check --model gpt
	$(PY) -m sweep train studies/gpt-proxy-run.yaml --resume

test: setup
	$(PY) -m pytest -q
