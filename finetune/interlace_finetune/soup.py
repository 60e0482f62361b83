"""A model soup of LoRA fine-tunes (Wortsman et al. 2022): the uniform average
of several GGUF LoRA adapters' weight deltas, written as one GGUF adapter.

    python -m interlace_finetune.soup --out SOUP.gguf [--rank R] A.gguf B.gguf ...

Each adapter's delta per weight is B·A·(alpha/r). Their mean is exactly a
LoRA of rank Σr (the inputs' factors side by side, each B scaled by
alpha_i/(r_i·n)); `--rank R` keeps the best rank-R approximation of that mean
per weight (truncated SVD, through QR of the stacked factors so no full
matrix is formed), and the output carries alpha = R so its scale is 1.
Seed noise averages out only if every fine-tune is in: the inputs are the
whole set, never a subset picked by an eval score.

Writes the adapter with the first input's Interlace prompt metadata (all
inputs must agree on it) and a provenance of the soup (inputs' hashes, rank,
the share of the mean delta's energy the rank keeps), and prints that
provenance as one JSON line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .file_hash import file_sha256

PROMPT_KEYS = ("interlace.prompt.examples", "interlace.prompt.instructions", "interlace.prompt.call_style", "interlace.prompt.format")


class Adapter:
    """One GGUF LoRA adapter: its alpha, its metadata and its factor pairs by weight name."""

    def __init__(self, path: Path) -> None:
        import gguf

        self.path = path
        self.reader = gguf.GGUFReader(path, "r")
        alpha = self.reader.get_field(gguf.Keys.Adapter.LORA_ALPHA)
        if alpha is None:
            raise SystemExit(f"{path}: no adapter.lora.alpha: not a LoRA adapter")
        self.alpha = float(alpha.contents())
        self.strings: dict[str, str] = {}
        for field in self.reader.fields.values():
            if field.types and field.types[0] == gguf.GGUFValueType.STRING:
                self.strings[field.name] = str(field.contents())
        tensors = {t.name: t for t in self.reader.tensors}
        self.pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in tensors:
            if name.endswith(".lora_a"):
                weight = name[: -len(".lora_a")]
                b = tensors.get(weight + ".lora_b")
                if b is None:
                    raise SystemExit(f"{path}: {name} has no {weight}.lora_b")
                # GGUFReader gives numpy arrays in row-major (rows, cols) = (r, in) for A and (out, r) for B.
                self.pairs[weight] = (np.asarray(tensors[name].data, dtype=np.float64), np.asarray(b.data, dtype=np.float64))
        if not self.pairs:
            raise SystemExit(f"{path}: no .lora_a/.lora_b tensors")

    def rank(self) -> int:
        return next(iter(self.pairs.values()))[0].shape[0]


def stacked(adapters: list[Adapter], weight: str) -> tuple[np.ndarray, np.ndarray]:
    """The mean delta of `weight` as one LoRA pair (B_all, A_all): B_all·A_all = (1/n)·Σ B_i·A_i·alpha_i/r_i."""
    n = len(adapters)
    a_parts, b_parts = [], []
    for adapter in adapters:
        a, b = adapter.pairs[weight]
        a_parts.append(a)
        b_parts.append(b * (adapter.alpha / a.shape[0] / n))
    return np.concatenate(b_parts, axis=1), np.concatenate(a_parts, axis=0)


def truncate(b_all: np.ndarray, a_all: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The best rank-`rank` pair (B, A) of B_all·A_all, and the share of its squared Frobenius norm kept."""
    qb, rb = np.linalg.qr(b_all)  # out × k, k × k
    qa, ra = np.linalg.qr(a_all.T)  # in × k, k × k
    u, s, vt = np.linalg.svd(rb @ ra.T)
    keep = min(rank, len(s))
    total = float(np.sum(s**2))
    kept = float(np.sum(s[:keep] ** 2)) / total if total > 0 else 1.0
    root = np.sqrt(s[:keep])
    b = (qb @ u[:, :keep]) * root
    a = (root[:, None] * vt[:keep]) @ qa.T
    if keep < rank:  # zero-padded so every weight has the same rank, as llama.cpp expects of one adapter
        b = np.pad(b, ((0, 0), (0, rank - keep)))
        a = np.pad(a, ((0, rank - keep), (0, 0)))
    return b, a, kept


def soup(inputs: list[Path], out: Path, rank: int | None) -> dict:
    import gguf

    adapters = [Adapter(p) for p in inputs]
    first = adapters[0]
    for other in adapters[1:]:
        if set(other.pairs) != set(first.pairs):
            raise SystemExit(f"{other.path} and {first.path} adapt different weights: a soup needs the same targets")
        for key in PROMPT_KEYS:
            if other.strings.get(key) != first.strings.get(key):
                raise SystemExit(f"{other.path}: {key}={other.strings.get(key)!r}, {first.path}: {first.strings.get(key)!r}: the engine would prompt them differently")
        for weight, (a, b) in other.pairs.items():
            fa, fb = first.pairs[weight]
            if a.shape[1] != fa.shape[1] or b.shape[0] != fb.shape[0]:
                raise SystemExit(f"{other.path}: {weight} is {b.shape[0]}×{a.shape[1]}, {first.path} has {fb.shape[0]}×{fa.shape[1]}")
    full_rank = sum(a.rank() for a in adapters)
    out_rank = full_rank if rank is None else rank
    arch = first.reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(out, arch=arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    # alpha = rank: llama.cpp scales each delta by alpha/rank, and the factors already hold the mean.
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(out_rank))
    inputs_record = [{"path": str(a.path), "sha256": file_sha256(a.path), "rank": a.rank(), "alpha": a.alpha} for a in adapters]
    energy: list[float] = []
    tensors: list[tuple[str, np.ndarray]] = []
    for weight in sorted(first.pairs):
        b_all, a_all = stacked(adapters, weight)
        if rank is None:
            b, a, kept = b_all, a_all, 1.0
        else:
            b, a, kept = truncate(b_all, a_all, rank)
        energy.append(kept)
        tensors.append((weight + ".lora_a", a))
        tensors.append((weight + ".lora_b", b))
    provenance = {
        "method": "model soup: uniform mean of the inputs' LoRA deltas B·A·alpha/r (Wortsman et al. 2022)",
        "inputs": inputs_record,
        "rank": out_rank,
        "exact": rank is None or rank >= full_rank,
        "truncation": None if rank is None else "per-weight truncated SVD of the mean delta",
        "energy_kept": {"min": round(min(energy), 4), "mean": round(float(np.mean(energy)), 4)},
    }
    for key in PROMPT_KEYS:
        if key in first.strings:
            writer.add_string(key, first.strings[key])
    writer.add_string("general.name", f"soup of {len(adapters)} LoRA adapters (Interlace)")
    writer.add_string("interlace.provenance", json.dumps(provenance, sort_keys=True))
    for name, data in tensors:
        writer.add_tensor(name, np.ascontiguousarray(data, dtype=np.float16), raw_dtype=gguf.GGMLQuantizationType.F16)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {**provenance, "adapter": {"path": str(out), "bytes": out.stat().st_size, "sha256": file_sha256(out)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", type=Path, nargs="+", help="GGUF LoRA adapters of the same base model and targets")
    p.add_argument("--out", type=Path, required=True, help="the soup's GGUF adapter")
    p.add_argument("--rank", type=int, help="keep the best rank-R approximation of the mean (default: exact, the inputs' ranks summed)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if len(args.inputs) < 2:
        raise SystemExit("a soup needs at least two adapters")
    if args.rank is not None and args.rank < 1:
        raise SystemExit("--rank must be a positive integer")
    print(json.dumps(soup(args.inputs, args.out, args.rank)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
