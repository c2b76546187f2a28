#!/usr/bin/env bash
# Set up repogym for development on a fresh Debian machine (run as root or with sudo).
# Installs bubblewrap (the sandbox) and chromium (the report's browser test), creates .venv and installs repogym with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v bwrap >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq bubblewrap git patch util-linux >/dev/null
fi
# Headless Chromium renders report.html in the report's browser test (tests/evaluate/test_report.py).
if ! command -v chromium >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: on these machines 2.13.0 is a local CPU wheel; an unpinned torch pulls GBs of CUDA.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
