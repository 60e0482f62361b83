#!/usr/bin/env bash
# Builds CoreDNS (the cluster DNS: Service and pod names for the test
# cluster) from the Go module proxy at a pinned version, with only the plugins
# the cluster uses (bind, errors, log, cache, kubernetes): the stock build
# links every cloud DNS provider's SDK. Idempotent: returns at once when the
# cached binary reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

COREDNS_VERSION="${COREDNS_VERSION:-v1.13.2}"
BIN="$INTERLACE_BIN/coredns"

if [[ -x "$BIN" ]] && [[ "$("$BIN" -version 2>/dev/null || true)" == *"CoreDNS-${COREDNS_VERSION#v}"* ]]; then
  log "coredns $COREDNS_VERSION cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build coredns"; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
WORK="$INTERLACE_CACHE/build/coredns-$COREDNS_VERSION"
mkdir -p "$WORK"
cd "$WORK"
started=$(date +%s)
log "building coredns $COREDNS_VERSION"
printf 'module interlace.dev/build/coredns\n\ngo 1.24.0\n' > go.mod
# The plugin order is the directive order of CoreDNS's plugin.cfg.
cat > main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GO
go get "github.com/coredns/coredns@$COREDNS_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\)' || true
go mod tidy 2>&1 | grep -v '^go: \(downloading\|finding\|found\)' || true
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
log "coredns $COREDNS_VERSION built in $(( $(date +%s) - started ))s"
