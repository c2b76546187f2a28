#!/usr/bin/env bash
# The trainers' own environments for the bridge tests (tests/integrations), each beside repogym's .venv because
# their pins differ from repogym's: .venv-verl holds verl 0.9.1 and this repository (about 2.6 minutes and 2 GB
# on a fresh machine); .venv-openrlhf and .venv-skyrl hold OpenRLHF 0.11.2 and skyrl-gym 0.4.0 (about 2 minutes
# and 1.5 GB, 1 minute and 0.5 GB). Run after scripts/setup.sh; CI (.ci/run) runs both. Without them those tests
# skip and say why.
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

# bridge VENV MODULE STEP...: a venv in which MODULE and repogym import, each STEP one `pip install STEP`.
# Best effort: a failed step is written to VENV/install-error.txt, which the bridge's tests quote when they
# skip, and the setup goes on.
bridge() {
  local venv=$1 module=$2 log step
  shift 2
  if "$venv/bin/python" -c "import $module, repogym" >/dev/null 2>&1; then return 0; fi
  log=$(mktemp)
  rm -f "$venv/install-error.txt"
  if ! { [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv" >"$log" 2>&1; }; then
    mkdir -p "$venv"
    { echo "$PYTHON -m venv $venv failed:"; tail -n 20 "$log"; } >"$venv/install-error.txt"
  fi
  for step in "$@"; do
    [ -e "$venv/install-error.txt" ] && break
    # shellcheck disable=SC2086  # a step is several words: pip's arguments
    if ! "$venv/bin/python" -m pip install -q $step >"$log" 2>&1; then
      { echo "pip install $step failed:"; grep -v "^WARNING: Location" "$log" | tail -n 20; } >"$venv/install-error.txt"
    fi
  done
  rm -f "$log"
  if [ -e "$venv/install-error.txt" ]; then
    echo "setup_bridges: $module not installed in $venv; its tests will skip quoting $venv/install-error.txt" >&2
  fi
}

# OpenRLHF 0.11.2 pins deepspeed, flash-attn and vllm, which do not build without CUDA (flash-attn's setup
# stops first), so OpenRLHF goes in without its dependencies, last, beside what its agent and dataset modules
# import (transformers at its pin, sympy and pylatexenc for openrlhf.utils, aiohttp, datasets); torch first and
# pinned, as in setup.sh.
bridge .venv-openrlhf openrlhf.utils.agent "--upgrade pip" "torch==2.13.0" \
  "transformers==5.15.0 sympy pylatexenc aiohttp datasets" "-e ." "--no-deps openrlhf==0.11.2"
bridge .venv-skyrl skyrl_gym "--upgrade pip" "skyrl-gym==0.4.0" "-e ."
