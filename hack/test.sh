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
# tap keeps each file's full TAP under .tap/test-results; on a failure, repeat
# the failing files' "not ok" lines and diagnostics last, where a log's tail
# is read, since tap's own output is long and interleaved.
started="$(mktemp)"
trap 'rm -f "$started"' EXIT
rc=0
npx tap "$@" || rc=$?
if [ "$rc" -ne 0 ]; then
  log "tests failed (exit $rc); the failing files:"
  find .tap/test-results -name '*.tap' -newer "$started" -print0 |
    xargs -0 -r grep -l '^ *not ok' |
    while read -r f; do
      printf '\n== %s\n' "${f#.tap/test-results/}"
      grep -A 14 '^ *not ok' "$f" | head -120
    done
fi
exit "$rc"
