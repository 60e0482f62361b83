#!/usr/bin/env bash
# Builds etcd (the kube-apiserver's storage) from the Go module proxy at a
# pinned version into the git-ignored cache. Idempotent: returns at once when
# the cached binary reports the pinned version.
#
# go.etcd.io/etcd/server/v3 has `replace` lines pointing at sibling folders,
# so `go install pkg@version` refuses it; a throwaway module that requires it
# builds it instead (a dependency's replace lines are ignored).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
BIN="$INTERLACE_BIN/etcd"

# (Output captured first: with pipefail, `grep -q` closing the pipe early would fail the check.)
if [[ -x "$BIN" ]] && [[ "$("$BIN" --version 2>/dev/null || true)" == *"etcd Version: ${ETCD_VERSION#v}"* ]]; then
  log "etcd $ETCD_VERSION cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build etcd"; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
WORK="$INTERLACE_CACHE/build/etcd-$ETCD_VERSION"
mkdir -p "$WORK"
cd "$WORK"
started=$(date +%s)
log "building etcd $ETCD_VERSION"
printf 'module interlace.dev/build/etcd\n\ngo 1.23\n' > go.mod
go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\)' || true
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" go.etcd.io/etcd/server/v3
mv "$BIN.tmp" "$BIN"
log "etcd $ETCD_VERSION built in $(( $(date +%s) - started ))s"
