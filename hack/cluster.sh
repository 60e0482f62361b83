#!/usr/bin/env bash
# A working Interlace on a real single-node Kubernetes cluster on this machine
# (root, Debian/Ubuntu; nothing is pulled from an image registry):
#
#   bash hack/cluster.sh up      build tools and images (cached), start the cluster,
#                                helm install the chart, apply the samples, print how
#                                to open a session through the AgentApp's endpoint
#   bash hack/cluster.sh down    stop it and remove everything it made
#   bash hack/cluster.sh status  kubectl get pods,interlace -A
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
STATE="$INTERLACE_CACHE/cluster/user"
mkdir -p "$STATE"

case "${1:-}" in
  up)
    if [[ -f "$STATE/pid" ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      log "already up (pid $(cat "$STATE/pid")); bash hack/cluster.sh down first"
      exit 1
    fi
    [[ -d node_modules ]] || npm ci --no-audit --no-fund --loglevel=error
    bash hack/install-tools.sh
    bash hack/images.sh >/dev/null
    rm -f "$STATE/ready.json"
    log "starting the cluster and installing Interlace (log: $STATE/cluster.log)"
    setsid nohup node node_modules/tsx/dist/cli.mjs hack/cluster-up.ts --ready-file "$STATE/ready.json" > "$STATE/cluster.log" 2>&1 < /dev/null &
    echo $! > "$STATE/pid"
    for _ in $(seq 1 900); do
      [[ -f "$STATE/ready.json" ]] && break
      kill -0 "$(cat "$STATE/pid")" 2>/dev/null || { tail -40 "$STATE/cluster.log" >&2; exit 1; }
      sleep 1
    done
    [[ -f "$STATE/ready.json" ]] || { log "not up in 900s"; tail -40 "$STATE/cluster.log" >&2; bash "$0" down; exit 1; }
    cp "$(node -p "require('$STATE/ready.json').kubeconfig")" "$STATE/kubeconfig"
    node -p "require('$STATE/ready.json').instructions"
    ;;
  down)
    if [[ -f "$STATE/pid" ]]; then
      pid=$(cat "$STATE/pid")
      if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      fi
    fi
    if [[ -f "$STATE/ready.json" ]]; then
      dir=$(node -p "require('$STATE/ready.json').dir")
      bash hack/cluster-teardown.sh "$dir"
    fi
    rm -rf "$STATE"
    log "cluster removed"
    ;;
  status)
    KUBECONFIG="$STATE/kubeconfig" "$INTERLACE_BIN/kubectl" get pods,interlace -A -o wide
    ;;
  *)
    echo "usage: bash hack/cluster.sh up|down|status" >&2
    exit 2
    ;;
esac
