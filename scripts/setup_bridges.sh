#!/usr/bin/env bash
# The trainers' own environments for the bridge tests (tests/integrations), each beside repogym's .venv because
# their pins differ from repogym's: .venv-verl holds verl 0.9.1 and this repository (about 2.6 minutes and 2 GB
# on a fresh machine). Run after scripts/setup.sh; CI (.ci/run) runs both. Without it those tests skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! .venv-verl/bin/python -c "import verl, repogym" >/dev/null 2>&1; then
  [ -x .venv-verl/bin/python ] || "$PYTHON" -m venv .venv-verl
  .venv-verl/bin/python -m pip install -q --upgrade pip
  # torch first and pinned, as in setup.sh; verl 0.9.1's agent loop imports cachetools, uvicorn and fastapi
  # without declaring them.
  .venv-verl/bin/python -m pip install -q "torch==2.13.0"
  .venv-verl/bin/python -m pip install -q "verl==0.9.1" cachetools uvicorn fastapi
  .venv-verl/bin/python -m pip install -q -e .
fi
