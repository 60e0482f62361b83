#!/usr/bin/env bash
# Installs Interlace's Python client (clients/python, from this checkout, as
# pip installs any package) with its pinned test tools (pytest, mypy) into a
# private virtualenv under the git-ignored cache, for the tests that run it
# against a real router. Pure Python wheels: seconds. Idempotent: returns at
# once when the venv holds a build of the client's current sources.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SRC="$ROOT/clients/python"
VENV="$INTERLACE_CACHE/venv/interlace-python"
# The sources the package is built from; tests are run from the checkout, not installed.
stamp="$(cd "$SRC" && find pyproject.toml README.md src -type f ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"

if [[ -x "$VENV/bin/python" && "$(cat "$VENV/.interlace-client-stamp" 2>/dev/null)" == "$stamp" ]]; then
  log "python interlace client cached ($stamp)"
  exit 0
fi
py="$(command -v python3 || command -v python || true)"
[[ -n "$py" ]] || { log "python3 (with venv) is required for the Python client tests"; exit 1; }
[[ -x "$VENV/bin/python" ]] || "$py" -m venv "$VENV"
# A fresh build each time the sources change (not editable: the test checks the package as pip installs it).
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$SRC"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$SRC[test]"
echo "$stamp" >"$VENV/.interlace-client-stamp"
log "python interlace client $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("interlace-client"))') installed in $VENV ($stamp)"
