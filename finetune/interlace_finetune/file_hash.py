"""A file's SHA-256, streamed: the provenance every stage records (base
models, adapters, soups). Its own module so that stages without torch (the
soup) need not import the base model's loader."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
