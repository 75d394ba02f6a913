"""A dependency-free lexical embedder: signed feature hashing of words and character 3-grams."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from hyperplan.embed.base import FloatMatrix, check_texts
from hyperplan.embed.text import tokenize

__all__ = ["HashingEmbedder"]

# Bump when features, hashing or weighting change: it is part of ``name`` and so of cache keys.
_VERSION = 1
# Character 3-grams are many per word; this keeps whole-word matches the stronger signal.
_CHAR_WEIGHT = 0.5
_SIGN_BIT = 1 << 63


def _hash64(feature: str) -> int:
    """A stable 64-bit hash (unlike ``hash()``, it does not change between processes)."""
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")


@lru_cache(maxsize=65536)
def _word_features(word: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Hashes of the word unigram and of the character 3-grams of ``<word>``."""
    padded = f"<{word}>"
    grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
    return (_hash64("w:" + word),), tuple(_hash64("c:" + g) for g in grams)


class HashingEmbedder:
    """Deterministic lexical vectors with no model and no dependency beyond numpy.

    Tokens come from :func:`hyperplan.embed.text.tokenize`; features are word unigrams and
    character 3-grams of each word (with ``<``/``>`` boundary marks), hashed with blake2b into
    ``dim`` signed buckets, weighted ``1 + log(tf)`` (3-grams scaled by 0.5) and L2-normalised.
    Identical across processes and machines. Texts without any word give all-zero rows.
    """

    def __init__(self, dim: int = 512) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hashing-v{_VERSION}-d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        for row, text in enumerate(items):
            self._embed_one(text, out[row])
        return out

    def _embed_one(self, text: str, row: FloatMatrix) -> None:
        words = Counter(tokenize(text))
        if not words:
            return
        word_tf: Counter[int] = Counter()
        char_tf: Counter[int] = Counter()
        for word, count in words.items():
            word_hashes, char_hashes = _word_features(word)
            for h in word_hashes:
                word_tf[h] += count
            for h in char_hashes:
                char_tf[h] += count
        dim = self._dim
        for tf, weight in ((word_tf, 1.0), (char_tf, _CHAR_WEIGHT)):
            for h, count in tf.items():
                value = weight * (1.0 + math.log(count))
                row[h % dim] += -value if h & _SIGN_BIT else value
        norm = float(np.linalg.norm(row))
        if norm > 0:
            row /= norm
