#!/usr/bin/env bash
# Installs a pinned nats-server (JetStream built in) into the git-ignored
# cache, built from the Go module proxy. Idempotent: returns at once when the
# cached binary already reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
NATS_SERVER_VERSION="${NATS_SERVER_VERSION:-v2.12.15}"
bin="$INTERLACE_BIN/nats-server"
if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -q "${NATS_SERVER_VERSION#v}\$"; then
  log "nats-server ${NATS_SERVER_VERSION} already cached"
  exit 0
fi
command -v go >/dev/null || { log "go is required to build nats-server (install Go >= 1.24)"; exit 1; }
log "building nats-server ${NATS_SERVER_VERSION} from the Go module proxy"
# A private module/build cache under .cache keeps the build reproducible and
# out of the user's GOPATH; CGO off gives a static binary.
export GOPATH="$INTERLACE_CACHE/go" GOMODCACHE="$INTERLACE_CACHE/go/mod" GOFLAGS="-modcacherw"
CGO_ENABLED=0 GOBIN="$INTERLACE_BIN" go install "github.com/nats-io/nats-server/v2@${NATS_SERVER_VERSION}"
"$bin" --version
