"""Training samples as `npm run gen-finetune` writes them with a model: each
line's `tokens` holds the sample in the base model's tokens (rendered by the
engine's own code) and the spans the loss is taken on."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    input_ids: list[int]
    # Positions whose NEXT token is in the loss: the logits to compute.
    positions: list[int]


def read_samples(path: Path, vocab_size: int) -> tuple[list[Sample], str]:
    """The samples and the file's SHA-256. A line without tokens, or with ids outside the vocabulary, is an error."""
    raw = path.read_bytes()
    samples: list[Sample] = []
    for n, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        tokens = row.get("tokens")
        if tokens is None:
            raise ValueError(f"{path}:{n}: no `tokens` (generate the data with --model pointing at the base model)")
        ids = tokens["input_ids"]
        if max(ids) >= vocab_size:
            raise ValueError(f"{path}:{n}: token id {max(ids)} outside the base model's vocabulary ({vocab_size}): the data was tokenized for another model")
        positions = [t - 1 for start, end in tokens["loss_spans"] for t in range(start, end) if t > 0]
        if positions:
            samples.append(Sample(ids, positions))
    if not samples:
        raise ValueError(f"{path}: no samples with loss tokens")
    return samples, hashlib.sha256(raw).hexdigest()
