#!/usr/bin/env bash
# Provides a pinned `prometheus` binary in the git-ignored cache, taken from
# Debian's package. The .deb is downloaded and unpacked into the cache rather
# than installed: no service is started, no system user is created, and the
# UI's JavaScript dependencies are not needed (tests only use the HTTP API).
# Building Prometheus from the Go module proxy instead pulls hundreds of
# modules and takes many minutes on a small machine. Idempotent: returns at
# once when the cached binary reports the pinned version.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# The Debian package version; Debian's build reports it as the revision in
# `prometheus --version`.
PROMETHEUS_DEB_VERSION="${PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1}"
BIN="$INTERLACE_BIN/prometheus"

cached_version() { "$BIN" --version 2>/dev/null | sed -n 's/.*revision: \([^)]*\)).*/\1/p'; }
if [[ -x "$BIN" && "$(cached_version)" == "$PROMETHEUS_DEB_VERSION" ]]; then
  log "prometheus $PROMETHEUS_DEB_VERSION cached"
  exit 0
fi
command -v apt-get >/dev/null || { log "apt-get is required to fetch prometheus (Debian package)"; exit 1; }

started=$(date +%s)
work="$INTERLACE_CACHE/build/prometheus-deb"
rm -rf "$work"
mkdir -p "$work/root"
cd "$work"
# `apt-get download` needs package lists; refresh them only when the pinned
# version is unknown (a fresh machine has none).
if ! apt-get download -q "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1; then
  log "apt-get update"
  apt-get update -qq
  if ! apt-get download -q "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1; then
    # A Debian point release replaces the pinned build: take the candidate
    # but say so, rather than breaking a fresh machine's test run.
    log "prometheus=$PROMETHEUS_DEB_VERSION is no longer in the archive; using the current candidate"
    apt-get download -q prometheus >/dev/null
  fi
fi
deb=$(ls prometheus_*.deb)
dpkg-deb -x "$deb" root
cp root/usr/bin/prometheus "$BIN.tmp"
chmod +x "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
if [[ -x root/usr/bin/promtool ]]; then cp root/usr/bin/promtool "$INTERLACE_BIN/promtool.tmp" && mv "$INTERLACE_BIN/promtool.tmp" "$INTERLACE_BIN/promtool"; fi
cd "$ROOT"
rm -rf "$work"
log "prometheus $(cached_version) installed from $deb in $(( $(date +%s) - started ))s"
