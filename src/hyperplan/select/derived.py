"""What a warm start reads instead of computing: the retrieval index's vectors and the tools'
definition token counts, kept in the selector's cache entry beside its graph.

Both are derived from the entry's catalog and graph, which its key fixes, and from one more
input each, recorded beside them and checked on every read: the digest of the texts embedded
(and the embedder's name) for the vectors, the tokenizer's identity for the counts. A file that
does not match, cannot be read or holds anything but what was written (a wrong shape or
dtype, non-finite or negative values, pickled objects) is ignored and written again, so a
stale or damaged file can cost time but never change a selection. Files are written atomically
(:func:`~hyperplan.graph.safe_paths.atomic_write`); a cache that cannot be written is no error.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from hyperplan.errors import HyperplanError
from hyperplan.graph.safe_paths import atomic_write

VECTORS_FILE = "index_vectors.npy"
VECTORS_META = "index_vectors.json"
TOKENS_FILE = "tool_tokens.json"


def texts_digest(texts: Sequence[str]) -> str:
    """A hash of the embedded texts, in order."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def read_vectors(entry: Path, embedder: str, digest: str,
                 rows: int) -> npt.NDArray[np.float32] | None:
    """The vectors stored for exactly these texts and this embedder, else None."""
    meta = _read_json(entry / VECTORS_META)
    if not isinstance(meta, dict) or meta.get("embedder") != embedder \
            or meta.get("texts") != digest:
        return None
    try:
        vectors = np.load(entry / VECTORS_FILE, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != rows \
            or not np.isfinite(vectors).all():
        return None
    found: npt.NDArray[np.float32] = vectors
    return found


def write_vectors(entry: Path, embedder: str, digest: str,
                  vectors: npt.NDArray[np.float32]) -> None:
    if not entry.is_dir():
        return
    _replace(entry / VECTORS_FILE, lambda f: np.save(f, vectors, allow_pickle=False))
    _replace(entry / VECTORS_META, lambda f: f.write(json.dumps(
        {"embedder": embedder, "texts": digest, "shape": list(vectors.shape)}).encode()))


def read_tokens(entry: Path, tokenizer: str, count: int) -> npt.NDArray[np.int64] | None:
    """The token counts stored for this tokenizer, one per tool, else None."""
    data = _read_json(entry / TOKENS_FILE)
    if not isinstance(data, dict) or data.get("tokenizer") != tokenizer:
        return None
    tokens = data.get("tokens")
    if not isinstance(tokens, list) or len(tokens) != count or not all(
            type(t) is int and t >= 0 for t in tokens):
        return None
    return np.asarray(tokens, dtype=np.int64)


def write_tokens(entry: Path, tokenizer: str, tokens: npt.NDArray[np.int64]) -> None:
    if not entry.is_dir():
        return
    body = json.dumps({"tokenizer": tokenizer, "tokens": [int(t) for t in tokens]})
    _replace(entry / TOKENS_FILE, lambda f: f.write(body.encode()))


def _read_json(path: Path) -> Any:
    try:
        if not path.is_file() or path.stat().st_size > 64 << 20:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _replace(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """:func:`~hyperplan.graph.safe_paths.atomic_write`, where a cache that cannot be
    written is no error; the file is private (0600), like the rest of the cache entry."""
    with suppress(HyperplanError):
        atomic_write(path, write)
        with suppress(OSError):
            os.chmod(path, 0o600)
