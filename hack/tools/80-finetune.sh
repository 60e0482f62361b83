#!/usr/bin/env bash
# Installs the fine-tuning toolchain (`npm run finetune`, finetune/interlace_finetune/train.py)
# into the git-ignored cache:
# - a private virtualenv with PyTorch, Hugging Face transformers and peft, and
#   the `gguf` reader transformers uses to load a GGUF base model, all from PyPI
#   at pinned versions. PyPI's Linux torch wheel brings its CUDA libraries with
#   it (about 5.6 GB on disk, ~2-3 min from PyPI, seconds from pip's cache); the
#   same venv then trains on a GPU with `--device cuda`.
# - llama.cpp's LoRA converter (`convert_lora_to_gguf.py` and the `gguf-py` it
#   imports), taken from the llama-cpp-python source distribution on PyPI (the
#   version hack/tools/70-llama-server.sh builds), since llama.cpp itself is not
#   on any registry this project may use.
# Idempotent: returns at once when the venv reports the pinned versions and the
# converter is in place.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

TORCH_VERSION="${TORCH_VERSION:-2.15.0}"
TRANSFORMERS_VERSION="${TRANSFORMERS_VERSION:-5.23.0}"
PEFT_VERSION="${PEFT_VERSION:-0.21.2}"
GGUF_VERSION="${GGUF_VERSION:-0.19.0}"
MISTRAL_COMMON_VERSION="${MISTRAL_COMMON_VERSION:-1.13.1}"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.16}"
VENV="$INTERLACE_CACHE/venv/finetune"
CONVERTER="$INTERLACE_CACHE/llama-convert/$LLAMA_CPP_PYTHON_VERSION"
PINNED="torch==$TORCH_VERSION transformers==$TRANSFORMERS_VERSION peft==$PEFT_VERSION gguf==$GGUF_VERSION"

cached_versions() {
  "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m
print(" ".join(f"{p}=={m.version(p)}" for p in ("torch", "transformers", "peft", "gguf")))
EOF
}

started=$(date +%s)
if [[ "$(cached_versions)" == "$PINNED" ]]; then
  log "finetune venv cached ($PINNED)"
else
  py="$(command -v python3 || command -v python || true)"
  [[ -n "$py" ]] || { log "python3 (>= 3.10, with venv) is required for fine-tuning"; exit 1; }
  log "installing $PINNED into $VENV"
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  # mistral_common: llama.cpp's converter imports it at module load.
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PINNED "mistral-common==$MISTRAL_COMMON_VERSION" sentencepiece
  log "finetune venv: $(cached_versions)"
fi

if [[ -f "$CONVERTER/convert_lora_to_gguf.py" && -d "$CONVERTER/gguf-py" ]]; then
  log "llama.cpp LoRA converter cached ($CONVERTER)"
else
  work="$(mktemp -d "$INTERLACE_CACHE/llama-convert.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary=:all: \
    -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$work"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz -C "$work"
  src="$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
  rm -rf "$CONVERTER"
  mkdir -p "$CONVERTER"
  cp "$src"/convert_lora_to_gguf.py "$src"/convert_hf_to_gguf.py "$CONVERTER"/
  cp -r "$src"/gguf-py "$CONVERTER"/gguf-py
  log "llama.cpp LoRA converter from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION in $CONVERTER"
fi
log "finetune toolchain ready in $(( $(date +%s) - started ))s"
