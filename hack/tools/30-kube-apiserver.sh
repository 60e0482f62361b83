#!/usr/bin/env bash
# Builds kube-apiserver from the Go module proxy at a pinned Kubernetes
# version into the git-ignored cache (idempotent: returns at once when the
# cached binary reports the pinned version).
#
# k8s.io/kubernetes is not meant to be consumed as a module: its go.mod points
# every k8s.io/* staging module at ./staging/src/... and requires them at
# v0.0.0. A throwaway module therefore copies that replace block, rewritten to
# the published staging versions (v1.X.Y -> v0.X.Y), and builds the command.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
BIN="$INTERLACE_BIN/kube-apiserver"

if [[ -x "$BIN" ]] && [[ "$("$BIN" --version 2>/dev/null || true)" == "Kubernetes $K8S_VERSION" ]]; then
  log "kube-apiserver $K8S_VERSION cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build kube-apiserver"; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
WORK="$INTERLACE_CACHE/build/kube-apiserver-$K8S_VERSION"
mkdir -p "$WORK"
cd "$WORK"
started=$(date +%s)
log "building kube-apiserver $K8S_VERSION (first build takes several minutes)"

modjson=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION")
gomod=$(printf '%s' "$modjson" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module interlace.dev/build/kube-apiserver"
  echo
  echo "go 1.24.0"
  echo
  echo "replace ("
  # Every `k8s.io/x => ./staging/src/k8s.io/x` becomes `k8s.io/x => k8s.io/x v0.X.Y`.
  sed -n '/^replace (/,/^)/p' "$gomod" \
    | sed -n "s#^\s*\(k8s\.io/[A-Za-z0-9._-]*\) => ./staging/src/.*#\t\1 => \1 $STAGING_VERSION#p"
  echo ")"
} > go.mod
go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\|upgraded\)' || true
CGO_ENABLED=0 go build -trimpath \
  -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#v1.}" \
  -o "$BIN.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$BIN.tmp" "$BIN"
log "kube-apiserver $K8S_VERSION built in $(( $(date +%s) - started ))s"
