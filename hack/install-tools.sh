#!/usr/bin/env bash
# Installs every external component the tests and the local stack use
# (nats-server, etcd, kube-apiserver, helm, prometheus, ...) into the
# git-ignored cache. Each hack/tools/*.sh is idempotent: it returns at once
# when its pinned version is already cached.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
shopt -s nullglob
for tool in "$ROOT"/hack/tools/*.sh; do
  log "tool: $(basename "$tool" .sh)"
  bash "$tool"
done
