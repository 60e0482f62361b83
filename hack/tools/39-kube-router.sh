#!/usr/bin/env bash
# Builds kube-router from the Go module proxy at a pinned version. The test
# cluster runs only its network-policy controller (--run-firewall), so the
# NetworkPolicies the chart renders are enforced there (iptables + ipset on
# the bridge), as on a cluster with a policy-enforcing CNI. Idempotent: returns
# at once when the cached binary reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"
BIN="$INTERLACE_BIN/kube-router"

if [[ -x "$BIN" ]] && [[ "$("$BIN" --version 2>&1 || true)" == *"version $KUBE_ROUTER_VERSION,"* ]]; then
  log "kube-router $KUBE_ROUTER_VERSION cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build kube-router"; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
WORK="$INTERLACE_CACHE/build/kube-router-$KUBE_ROUTER_VERSION"
mkdir -p "$WORK"
cd "$WORK"
started=$(date +%s)
log "building kube-router $KUBE_ROUTER_VERSION"
# A throwaway module: `go install pkg@version` would work too, but a module
# keeps the resolved versions in the cache beside the other builds.
printf 'module interlace.dev/build/kube-router\n\ngo 1.24.0\n' > go.mod
pkg="github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
go get "$pkg@$KUBE_ROUTER_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\|upgraded\)' || true
CGO_ENABLED=0 go build -trimpath \
  -ldflags="-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
  -o "$BIN.tmp" "$pkg"
mv "$BIN.tmp" "$BIN"
log "kube-router $KUBE_ROUTER_VERSION built in $(( $(date +%s) - started ))s"
