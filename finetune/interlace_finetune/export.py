"""A peft LoRA adapter → a GGUF LoRA adapter node-llama-cpp loads at context
creation, through llama.cpp's own converter; then copied once more with
Interlace's metadata added (how the engine must prompt a model wearing it,
and the adapter's provenance) and the LoRA matrices stored as F16 (the
converter keeps every `.lora_a`/`.lora_b` tensor in F32, twice the size)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def export_gguf(adapter_dir: Path, base_config: Path, out: Path, converter: Path, metadata: dict[str, str]) -> Path:
    raw = out.with_suffix(".raw.gguf")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(converter / "gguf-py"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run(
        [sys.executable, str(converter / "convert_lora_to_gguf.py"), "--base", str(base_config), "--outtype", "f16", "--outfile", str(raw), str(adapter_dir)],
        check=True,
        env=env,
    )
    rewrite(raw, out, metadata)
    raw.unlink()
    return out


def rewrite(src: Path, out: Path, metadata: dict[str, str]) -> None:
    """Copies `src` with `metadata` added and its F32 LoRA matrices as F16."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(src, "r")
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(out, arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        # Virtual fields, and the ones GGUFWriter writes itself.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF.") or field.name in metadata:
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    for key, value in metadata.items():
        writer.add_key_value(key, value, gguf.GGUFValueType.STRING)
    for tensor in reader.tensors:
        data = tensor.data
        if tensor.tensor_type == gguf.GGMLQuantizationType.F32 and tensor.name.endswith((".lora_a", ".lora_b")):
            writer.add_tensor(tensor.name, np.asarray(data, dtype=np.float16), raw_dtype=gguf.GGMLQuantizationType.F16)
        else:
            writer.add_tensor(tensor.name, np.asarray(data), raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
