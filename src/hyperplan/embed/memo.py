"""An embedder with an in-memory table of vectors, for benchmarks that time a selection
without its query embedding: the texts are embedded before the timed call, which reads them
back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hyperplan.embed.base import Embedder, FloatMatrix, check_texts


class MemoEmbedder:
    """``inner`` with a table of vectors. :meth:`fill` embeds texts ahead of time. With
    ``keep`` (the default) every text embedded is kept; without it a text not in the table is
    passed to ``inner`` and not kept (so building an index does not fill the table), and
    counted in ``misses``."""

    def __init__(self, inner: Embedder, *, keep: bool = True) -> None:
        self.inner = inner
        self.keep = keep
        self.misses = 0
        self._table: dict[str, FloatMatrix] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def fill(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(t for t in check_texts(texts) if t not in self._table))
        if missing:
            for text, vec in zip(missing, self.inner.embed(missing), strict=True):
                self._table[text] = np.asarray(vec, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        if self.keep:
            self.fill(items)
        elif not all(t in self._table for t in items):
            self.misses += sum(t not in self._table for t in items)
            return np.asarray(self.inner.embed(items), dtype=np.float32)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._table[t] for t in items])
