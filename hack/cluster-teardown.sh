#!/usr/bin/env bash
# Removes everything one single-node cluster (hack/cluster.ts) made, whatever
# state it was left in: its processes (by the process groups it recorded),
# the containers and shims of its containerd (found by its socket path), the
# mounts under its folder and its pods' network namespaces, its bridge,
# kube-proxy's and kube-router's iptables rules (and kube-router's ipsets), and the folder itself. Idempotent.
#
#   bash hack/cluster-teardown.sh DIR             tear down now
#   bash hack/cluster-teardown.sh --after PID DIR wait until PID exits, then tear down
#                                                 (the harness starts this beside itself,
#                                                 so a test that dies leaves nothing behind)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${INTERLACE_BIN:-${INTERLACE_CACHE:-$ROOT/.cache}/bin}"

if [[ "${1:-}" == "--after" ]]; then
  owner="$2"
  shift 2
  trap '' INT HUP
  while kill -0 "$owner" 2>/dev/null; do sleep 1; done
fi
DIR="${1:?usage: cluster-teardown.sh [--after PID] DIR}"
[[ -d "$DIR" ]] || exit 0
# Only folders the harness made (it writes this marker first).
[[ -f "$DIR/interlace-cluster" ]] || { echo "cluster-teardown: $DIR is not a cluster folder" >&2; exit 1; }
BRIDGE="$(cat "$DIR/bridge" 2>/dev/null || true)"
SOCK="$DIR/containerd.sock"

# 1. The processes the harness started, each in its own process group: TERM, then KILL.
if [[ -f "$DIR/pgids" ]]; then
  while read -r pg; do [[ -n "$pg" ]] && kill -TERM -- "-$pg" 2>/dev/null; done < "$DIR/pgids"
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    alive=0
    while read -r pg; do [[ -n "$pg" ]] && kill -0 -- "-$pg" 2>/dev/null && alive=1; done < "$DIR/pgids"
    [[ $alive -eq 0 ]] && break
    sleep 0.5
  done
  while read -r pg; do [[ -n "$pg" ]] && kill -KILL -- "-$pg" 2>/dev/null; done < "$DIR/pgids"
fi

# 2. Container processes: the shims of this containerd (their command line names
#    its socket) and every process under them.
descendants() {
  local p c
  for p in "$@"; do
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
      echo "$c"
      descendants "$c"
    done
  done
}
shims=()
for p in /proc/[0-9]*; do
  if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF -- "-address $SOCK "; then shims+=("${p#/proc/}"); fi
done
if [[ ${#shims[@]} -gt 0 ]]; then
  mapfile -t kids < <(descendants "${shims[@]}")
  kill -KILL "${kids[@]}" 2>/dev/null
  kill -KILL "${shims[@]}" 2>/dev/null
  sleep 0.5
fi

# 3. Network namespaces of this cluster's pods (recorded by the harness from containerd), then mounts under DIR, deepest first.
for ns in $(cat "$DIR/netns" 2>/dev/null) $(grep -rhos '/var/run/netns/cni-[0-9a-f-]*' "$DIR/state" 2>/dev/null | sort -u); do
  umount "$ns" 2>/dev/null
  rm -f "$ns"
done
awk -v d="$DIR/" '{ gsub(/\\040/, " ", $5); if (index($5, d) == 1) print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null
done

# 4. The bridge (its veths went with the namespaces), kube-proxy's and kube-router's rules.
if [[ -n "$BRIDGE" ]] && ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE" 2>/dev/null; fi
if [[ -x "$BIN/kube-proxy" ]] && command -v iptables >/dev/null; then
  "$BIN/kube-proxy" --cleanup --proxy-mode=iptables >/dev/null 2>&1
  # The kubelet's localnet guard (made even without makeIPTablesUtilChains).
  for ipt in iptables ip6tables; do
    while $ipt -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    while $ipt -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    $ipt -F KUBE-FIREWALL 2>/dev/null && $ipt -X KUBE-FIREWALL 2>/dev/null
  done
fi

# kube-router's network-policy chains (jumps from INPUT/FORWARD/OUTPUT first) and its ipsets.
for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null || continue
  for c in INPUT FORWARD OUTPUT; do
    $ipt -S "$c" 2>/dev/null | grep -e "-j KUBE-ROUTER-$c" | sed 's/^-A /-D /' | while read -r rule; do eval "$ipt $rule" 2>/dev/null; done
  done
  chains=$($ipt -S 2>/dev/null | awk '/^-N (KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-)/ { print $2 }')
  for c in $chains; do $ipt -F "$c" 2>/dev/null; done
  for c in $chains; do $ipt -X "$c" 2>/dev/null; done
done
if command -v ipset >/dev/null; then
  for set in $(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-'); do ipset destroy "$set" 2>/dev/null; done
fi

# 5. What the kubelet makes outside its root folder: its cgroups (empty now) and,
#    when it made it, /var/lib/kubelet (device-plugin and pod-resources sockets).
for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [[ -d "$cg" ]] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
done
[[ -f "$DIR/var-lib-kubelet-made" ]] && rm -rf /var/lib/kubelet

if [[ -f "$DIR/ip_forward" ]]; then cat "$DIR/ip_forward" > /proc/sys/net/ipv4/ip_forward 2>/dev/null; fi
if [[ -f "$DIR/bridge-nf-call-iptables" ]]; then cat "$DIR/bridge-nf-call-iptables" > /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null; fi

cpdir="$(cat "$DIR/control-plane-dir" 2>/dev/null || true)"
if [[ "$cpdir" == */interlace-cp-* && -d "$cpdir" ]]; then
  # etcd and kube-apiserver stop with their owner (the watchdog in control-plane.ts); wait for that.
  sleep 2
  rm -rf "$cpdir"
fi
rm -rf "$DIR"
exit 0
