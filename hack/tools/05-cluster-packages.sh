#!/usr/bin/env bash
# Debian packages the single-node test cluster and the local image builds
# need: containerd + runc + CNI plugins (the kubelet's runtime), iptables and
# conntrack (kube-proxy), ipset (kube-router's network-policy controller), podman + mmdebstrap (images without a registry).
# Idempotent: installs only what is missing. Needs root and apt; elsewhere it
# says what is missing and leaves the cluster test to report it.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack ipset podman mmdebstrap)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  log "cluster packages installed"
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  log "cluster packages missing (${missing[*]}): install them as root with apt-get; the cluster test will fail without them"
  exit 0
fi
started=$(date +%s)
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# --no-install-recommends: no crun, no slirp, no systemd units that would start a second containerd.
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}
# Debian starts its own containerd service; the cluster runs its own instance
# with its own socket and state, so the packaged one is not needed (and on a
# machine without systemd it never started).
log "cluster packages installed in $(( $(date +%s) - started ))s"
