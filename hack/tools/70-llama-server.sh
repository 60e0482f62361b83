#!/usr/bin/env bash
# Installs a third-party OpenAI-compatible server for the upstream-backend
# tests and benchmark: llama.cpp's server as packaged by `llama-cpp-python`
# (PyPI, `[server]` extra), built once into a private virtualenv under the
# git-ignored cache. Interlace did not write it; tests start it on loopback in
# front of a generated GGUF (`python -m llama_cpp.server`).
#
# Debian bookworm has no llama.cpp package and PyPI ships only an sdist, so
# pip compiles llama.cpp here: a plain CPU build (no BLAS, no native-only
# flags so the cached venv survives a CPU change, no tests/examples). It takes
# several minutes on a small machine, once; later runs return at once when
# the venv reports the pinned version. The wrapper `.cache/bin/llama-openai-server`
# is what tests call.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.16}"
VENV="$INTERLACE_CACHE/venv/llama-cpp-python"
WRAPPER="$INTERLACE_BIN/llama-openai-server"

cached_version() { "$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null; }
# The wrapper finds the venv next to its own bin/ folder, not at the path the
# cache had when it was built: a cache reached through a symlink or moved
# (another checkout, a worktree) keeps working.
write_wrapper() {
  cat >"$WRAPPER" <<EOF
#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION), see hack/tools/70-llama-server.sh
exec "\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)/venv/llama-cpp-python/bin/python" -m llama_cpp.server "\$@"
EOF
  chmod +x "$WRAPPER"
}
if [[ "$(cached_version)" == "$LLAMA_CPP_PYTHON_VERSION" ]]; then
  write_wrapper
  log "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION (llama.cpp server) cached"
  exit 0
fi
py="$(command -v python3 || command -v python || true)"
[[ -n "$py" ]] || { log "python3 (>= 3.9, with venv) is required for llama-cpp-python"; exit 1; }
command -v cmake >/dev/null || { log "cmake and a C++ compiler are required to build llama-cpp-python"; exit 1; }

started=$(date +%s)
log "building llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION into $VENV (compiles llama.cpp, CPU only)"
rm -rf "$VENV"
"$py" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# A portable CPU build: GGML_NATIVE off (the cache may move between machines),
# no BLAS/OpenMP extras, nothing but the library. pip keeps the wheel it
# builds in its own cache, so a fresh clone on the same machine installs it
# without compiling again.
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"

write_wrapper
log "llama-cpp-python $(cached_version) built in $(( $(date +%s) - started ))s"
