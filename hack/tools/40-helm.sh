#!/usr/bin/env bash
# Builds helm from the Go module proxy at a pinned version into the
# git-ignored cache. Idempotent: returns at once when the cached binary
# reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

HELM_VERSION="${HELM_VERSION:-v3.19.0}"
# The Kubernetes version helm assumes for `helm template`/`lint` without a
# cluster (its Makefile derives it from its client-go: v0.34 -> 1.34). Without
# it helm falls back to v1.20 and refuses charts that need a newer cluster.
HELM_K8S_MINOR="${HELM_K8S_MINOR:-34}"
BIN="$INTERLACE_BIN/helm"
STAMP="$BIN.stamp"
WANT="$HELM_VERSION k8s=1.$HELM_K8S_MINOR"

if [[ -x "$BIN" && "$(cat "$STAMP" 2>/dev/null || true)" == "$WANT" ]] && [[ "$("$BIN" version --template '{{.Version}}' 2>/dev/null || true)" == "$HELM_VERSION" ]]; then
  log "helm $HELM_VERSION cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build helm"; exit 1; }

started=$(date +%s)
log "building helm $HELM_VERSION"
# helm reads its version from internal/version.version, set by its Makefile.
GOTOOLCHAIN=local GOBIN="$INTERLACE_CACHE/build/helm-$HELM_VERSION" CGO_ENABLED=0 \
  go install -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
cp "$INTERLACE_CACHE/build/helm-$HELM_VERSION/helm" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "$WANT" > "$STAMP"
log "helm $HELM_VERSION built in $(( $(date +%s) - started ))s"
