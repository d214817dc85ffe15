#!/usr/bin/env bash
# Install the project into a Python environment, idempotently.
#
# Which environment: the active virtualenv/conda env if there is one (your own torch is kept),
# otherwise ./.venv (created on first use).
# torch: installed as torch==2.13.0 only when no torch imports; whatever torch is present is
# then pinned through a pip constraints file, so no later requirement (mup declares torchvision,
# which declares torch) can replace it or pull CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${VIRTUAL_ENV:-}" ] || [ -n "${CONDA_PREFIX:-}" ]; then
  py=python
else
  [ -x .venv/bin/python ] || python3 -m venv .venv
  py=.venv/bin/python
fi
pip=("$py" -m pip -q --disable-pip-version-check)

if ! "$py" -c "import torch" 2>/dev/null; then
  "${pip[@]}" install "torch==2.13.0"
fi
torch_version=$("$py" -c "import torch; print(torch.__version__)" 2>/dev/null)
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "torch==${torch_version}" >"$constraints"

"${pip[@]}" install -c "$constraints" -e ".[test]"
"$py" -c "import torch, mup, sweep" # fails loudly if the install is broken
echo "environment ready: $("$py" -c 'import sys; print(sys.prefix)') (torch ${torch_version})"
