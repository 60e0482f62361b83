#!/usr/bin/env bash
# Shared shell settings for hack/ scripts: the git-ignored cache and its bin dir.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export INTERLACE_CACHE="${INTERLACE_CACHE:-$ROOT/.cache}"
export INTERLACE_BIN="$INTERLACE_CACHE/bin"
mkdir -p "$INTERLACE_BIN"
export PATH="$INTERLACE_BIN:$PATH"
log() { printf '[hack] %s\n' "$*" >&2; }
