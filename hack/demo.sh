#!/usr/bin/env bash
# The README's main command: installs dependencies if needed, then runs the
# local stack (nats-server, a tool runner, an engine pod on a generated model)
# serving a sample async session with builtin tools; prints its events and timings.
#   bash hack/demo.sh            # bench model (~11 ms/token), async vs sync
#   bash hack/demo.sh --quick    # tiny test model
#   bash hack/demo.sh --free     # also an unscripted session (Gemma 3 270M when fetched)
#   bash hack/demo.sh --child    # engine as a child process instead of in-process
#   bash hack/demo.sh --in-process-tools   # tools inside the engine, no NATS
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
bash hack/tools/10-nats-server.sh
exec npx tsx hack/demo.ts "$@"
