#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs dependencies and tools,
# type-checks, lints (typescript-eslint with type information), then runs
# every tap test (unit, integration against real nats-server /
# kube-apiserver / etcd / helm / prometheus, and llama.cpp on generated
# models).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
log "npm ci"
npm ci --no-audit --no-fund --loglevel=error
bash hack/install-tools.sh
log "typecheck"
npm run --silent typecheck
log "lint"
npm run --silent lint
log "tests"
npx tap "$@"
