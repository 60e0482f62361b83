#!/usr/bin/env bash
# Builds the rest of a single-node cluster at the pinned Kubernetes version:
# kube-scheduler, kubelet, kube-proxy and kubectl, from the same throwaway
# module as 30-kube-apiserver.sh (most packages are already compiled).
# Idempotent: each binary is built only when it does not report the pinned
# version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
WORK="$INTERLACE_CACHE/build/kube-apiserver-$K8S_VERSION"

version_of() {
  case "$1" in
    kubectl) "$INTERLACE_BIN/kubectl" version --client 2>/dev/null | sed -n 's/^Client Version: //p' ;;
    *) "$INTERLACE_BIN/$1" --version 2>/dev/null | sed -n 's/^Kubernetes //p' ;;
  esac
}

todo=()
for cmd in kube-scheduler kube-proxy kubectl kubelet; do
  if [[ -x "$INTERLACE_BIN/$cmd" && "$(version_of "$cmd" || true)" == "$K8S_VERSION" ]]; then
    log "$cmd $K8S_VERSION cached"
  else
    todo+=("$cmd")
  fi
done
[[ ${#todo[@]} -eq 0 ]] && exit 0

if [[ ! -f "$WORK/go.mod" ]]; then
  # The module (with its replace block) is written by the kube-apiserver script.
  bash "$ROOT/hack/tools/30-kube-apiserver.sh"
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
cd "$WORK"
for cmd in "${todo[@]}"; do
  started=$(date +%s)
  pkg="k8s.io/kubernetes/cmd/$cmd"
  log "building $cmd $K8S_VERSION (kubelet: several minutes from an empty build cache)"
  go get "$pkg@$K8S_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\|upgraded\)' || true
  CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#v1.} -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
    -o "$INTERLACE_BIN/$cmd.tmp" "$pkg"
  mv "$INTERLACE_BIN/$cmd.tmp" "$INTERLACE_BIN/$cmd"
  log "$cmd $K8S_VERSION built in $(( $(date +%s) - started ))s"
done
