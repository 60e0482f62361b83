"""A peft LoRA adapter → a GGUF LoRA adapter node-llama-cpp loads at context
creation, through llama.cpp's own converter; then copied once more with
Interlace's metadata added (how the engine must prompt a model wearing it,
and the adapter's provenance) and the LoRA matrices stored as F16 (the
converter keeps every `.lora_a`/`.lora_b` tensor in F32, twice the size).

    python -m interlace_finetune.export DIR --converter CONVERTER_DIR [--metadata FILE]

converts DIR/adapter, as train.py left it on a machine without the converter
(a GPU host), into DIR/adapter.gguf and records it in DIR/provenance.json."""

from __future__ import annotations

import argparse
import json
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


def export_run(out: Path, converter: Path, metadata: Path | None) -> dict:
    """DIR/adapter → DIR/adapter.gguf with `metadata` and the run's provenance in it; returns the provenance with the adapter added."""
    provenance = json.loads((out / "provenance.json").read_text())
    extra = json.loads(metadata.read_text()) if metadata is not None else {}
    provenance.pop("adapter", None)
    gguf_path = export_gguf(out / "adapter", out / "base-config", out / "adapter.gguf", converter, {**extra, "interlace.provenance": json.dumps(provenance, sort_keys=True)})
    provenance["adapter"] = {"path": str(gguf_path), "bytes": os.path.getsize(gguf_path)}
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2))
    return provenance


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="a training run's folder (adapter/, base-config/, provenance.json)")
    p.add_argument("--converter", type=Path, required=True, help="llama.cpp's convert_lora_to_gguf.py folder (with gguf-py)")
    p.add_argument("--metadata", type=Path, help="JSON object of extra GGUF metadata (string values)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    for needed in ("adapter", "base-config", "provenance.json"):
        if not (args.out / needed).exists():
            raise SystemExit(f"{args.out / needed}: missing (train with `python -m interlace_finetune.train --out {args.out}` first)")
    provenance = export_run(args.out, args.converter, args.metadata)
    print(json.dumps(provenance["adapter"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
