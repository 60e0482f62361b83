#!/usr/bin/env bash
# The README's main command: installs dependencies if needed, then runs the
# local stack serving the sample AgentApp of samples/ (nats-server, the
# sample ToolPool's runner, an engine on a generated model, the router) and a
# sample session through the app's endpoint; prints its events and timings.
#   bash hack/demo.sh            # bench model, async vs sync
#   bash hack/demo.sh --quick    # tiny test model
#   bash hack/demo.sh --free     # also an unscripted session (Gemma 3 270M when fetched)
#   bash hack/demo.sh --in-process-tools   # one engine with its tools inside it, no NATS, no router
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
bash hack/tools/10-nats-server.sh
exec npx tsx hack/demo.ts "$@"
