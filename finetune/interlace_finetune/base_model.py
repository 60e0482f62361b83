"""The base model a LoRA adapter is trained on: loaded from the GGUF file the
engine serves (transformers dequantises it), or from a Hugging Face model
folder, with the config llama.cpp's LoRA converter needs beside the adapter."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from .file_hash import file_sha256


def base_identity(path: Path) -> str:
    """SHA-256 of the GGUF file, or of a model folder's config and weight files."""
    if path.is_file():
        return file_sha256(path)
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.suffix in (".json", ".safetensors", ".bin", ".model"):
            h.update(f.name.encode())
            h.update(file_sha256(f).encode())
    return h.hexdigest()


def load_base(path: Path, device: str, dtype: torch.dtype) -> torch.nn.Module:
    """A causal LM from a GGUF file (dequantised) or a Hugging Face folder."""
    if path.is_file() and path.suffix == ".gguf":
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    else:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    return model.to(device=device, dtype=dtype)


def save_base_config(model: torch.nn.Module, folder: Path) -> Path:
    """config.json for llama.cpp's LoRA converter; a config read from a GGUF has no `architectures`, which it needs."""
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()
    config["architectures"] = config.get("architectures") or [type(model).__name__]
    (folder / "config.json").write_text(json.dumps(config, indent=2, default=str))
    return folder
