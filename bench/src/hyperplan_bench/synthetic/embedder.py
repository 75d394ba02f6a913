"""A fast embedder for synthetic graphs of millions of tools: a fixed pseudo-random unit vector
per word and the normalised sum per text (bag of words). It is ~20x faster (~200K texts/s)
than :class:`~hyperplan.embed.HashingEmbedder` (~10K texts/s, i.e. 12 minutes for the 7M tool and
node texts of 1M tools) and its dimension is a parameter: GraphIndex keeps a float32 vector per
node, and 6M nodes x 512 dims (the hashing default) alone is 12 GB.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from hyperplan.embed.base import FloatMatrix
from hyperplan.graph.text import singular

__all__ = ["DEFAULT_DIM", "RandomWordEmbedder"]

DEFAULT_DIM = 64


class RandomWordEmbedder:
    """A bag of pseudo-random word vectors: each word (a lower-cased run of ASCII letters and
    digits and non-ASCII characters, singularised) gets a fixed random unit vector seeded by
    its blake2b hash; a text is the L2-normalised sum of its words' vectors, so similarity is
    word overlap. Deterministic, no model, ~20x faster than the hashing embedder; meant for
    scale benchmarks only."""

    # bytes.translate table: ASCII letters, digits and UTF-8 bytes of non-ASCII characters
    # stay, every other byte becomes a space (tokenising in C, ~3x faster than a regex)
    _SPACES = bytes(c if c >= 128 or chr(c).isalnum() else 32
                    for c in range(256))
    _CHUNK = 65536

    def __init__(self, dim: int = DEFAULT_DIM, seed: int = 0) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim, self._seed = dim, seed
        self._ids: dict[bytes, int] = {}
        self._vectors = np.zeros((0, dim), dtype=np.float32)

    @property
    def name(self) -> str:
        return f"random-words-v1-d{self._dim}-s{self._seed}"

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, word: str) -> FloatMatrix:
        digest = hashlib.blake2b(f"{self._seed}:{word}".encode(), digest_size=8).digest()
        vec = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(self._dim)
        out: FloatMatrix = (vec / np.linalg.norm(vec)).astype(np.float32)
        return out

    def _word_id(self, token: bytes, new: list[str]) -> int:
        """The id of a word missing from the vocabulary a moment ago."""
        known = self._ids.get(token)
        if known is not None:  # added by an earlier occurrence in the same chunk
            return known
        base = singular(token.decode())
        key = base.encode()
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = self._vectors.shape[0] + len(new)
            new.append(base)
        self._ids[token] = i
        return i

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        table = self._SPACES
        for lo in range(0, len(texts), self._CHUNK):
            chunk = texts[lo:lo + self._CHUNK]
            tokens = [text.lower().encode().translate(table).split() for text in chunk]
            flat = list(itertools.chain.from_iterable(tokens))
            ids = list(map(self._ids.get, flat))  # the per-token work stays in C
            new: list[str] = []
            if None in ids:
                ids = [self._word_id(t, new) if i is None else i
                       for t, i in zip(flat, ids, strict=True)]
            if new:
                self._vectors = np.concatenate([self._vectors,
                                                np.stack([self._vector(w) for w in new])])
            counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            indptr = np.concatenate([[0], np.cumsum(counts)])
            indices = np.fromiter(ids, dtype=np.int64, count=len(ids))
            bag = sp.csr_matrix((np.ones(indices.size, dtype=np.float32), indices, indptr),
                                shape=(len(chunk), self._vectors.shape[0]))
            block = np.asarray(bag @ self._vectors, dtype=np.float32)
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            np.divide(block, norms, out=block, where=norms > 0)
            out[lo:lo + len(chunk)] = block
        return out
