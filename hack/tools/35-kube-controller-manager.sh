#!/usr/bin/env bash
# Builds kube-controller-manager (same pinned Kubernetes version and the same
# throwaway module as 30-kube-apiserver.sh, so most packages are already
# compiled) into the git-ignored cache. The test control plane
# (hack/control-plane.ts) runs only its garbage collector when a test asks for
# it (those tests run no kubelet and set Deployment status themselves); the
# single-node cluster (hack/cluster.ts) runs it with the controllers that turn
# Deployments and StatefulSets into pods, for its kubelet.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
BIN="$INTERLACE_BIN/kube-controller-manager"

if [[ -x "$BIN" ]] && [[ "$("$BIN" --version 2>/dev/null || true)" == "Kubernetes $K8S_VERSION" ]]; then
  log "kube-controller-manager $K8S_VERSION cached"
  exit 0
fi
WORK="$INTERLACE_CACHE/build/kube-apiserver-$K8S_VERSION"
if [[ ! -f "$WORK/go.mod" ]]; then
  # The module (with its replace block) is written by the kube-apiserver script.
  bash "$ROOT/hack/tools/30-kube-apiserver.sh"
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
cd "$WORK"
started=$(date +%s)
log "building kube-controller-manager $K8S_VERSION"
go get "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\)' || true
CGO_ENABLED=0 go build -trimpath \
  -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#v1.}" \
  -o "$BIN.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
mv "$BIN.tmp" "$BIN"
log "kube-controller-manager $K8S_VERSION built in $(( $(date +%s) - started ))s"
