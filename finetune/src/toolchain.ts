/**
 * @module Where hack/tools/80-finetune.sh puts the fine-tuning toolchain (a
 * private virtualenv with PyTorch, transformers and peft, and llama.cpp's
 * LoRA converter) in the git-ignored cache, and where the Python package is.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const CACHE = process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache");
export const FINETUNE_PYTHON = join(CACHE, "venv/finetune/bin/python");
/** llama.cpp's `convert_lora_to_gguf.py` with its `gguf-py`, from llama-cpp-python's source distribution. */
export const LLAMA_CONVERTER = join(CACHE, "llama-convert/0.3.16");
/** The folder the `interlace_finetune` package is run from (`python -m interlace_finetune.train`). */
export const FINETUNE_PACKAGE_DIR = join(ROOT, "finetune");
export const INSTALL_SCRIPT = join(ROOT, "hack/tools/80-finetune.sh");
