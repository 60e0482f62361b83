#!/usr/bin/env bash
# Installs the official Python `openai` package (PyPI) into a private
# virtualenv under the git-ignored cache, for the test that points a Python
# client at Interlace's OpenAI-compatible endpoint. Pure Python: seconds.
# Idempotent: returns at once when the venv reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

OPENAI_PYTHON_VERSION="${OPENAI_PYTHON_VERSION:-3.54.0}"
VENV="$INTERLACE_CACHE/venv/openai-python"

cached_version() { "$VENV/bin/python" -c 'import openai; print(openai.__version__)' 2>/dev/null; }
if [[ "$(cached_version)" == "$OPENAI_PYTHON_VERSION" ]]; then
  log "python openai $OPENAI_PYTHON_VERSION cached"
  exit 0
fi
py="$(command -v python3 || command -v python || true)"
[[ -n "$py" ]] || { log "python3 (with venv) is required for the Python openai client test"; exit 1; }
rm -rf "$VENV"
"$py" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "openai==$OPENAI_PYTHON_VERSION"
log "python openai $(cached_version) installed in $VENV"
