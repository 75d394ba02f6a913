"""BM25 keyword retrieval over a fixed list of documents (backed by ``bm25s``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hyperplan.embed.text import tokenize

__all__ = ["BM25Index"]


class BM25Index:
    """BM25 (Lucene variant) over ``texts``, tokenized like :class:`HashingEmbedder`.

    Works for any number of documents, including one, and for documents or queries without any
    word: those score 0 everywhere instead of raising.
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        if isinstance(texts, str):
            raise TypeError("BM25Index takes a sequence of strings, not a single string")
        self.k1 = k1
        self.b = b
        self._n_docs = len(texts)
        corpus = [tokenize(text) for text in texts]
        self._retriever: Any = None
        if any(corpus):  # bm25s cannot index a corpus without a single token
            import bm25s

            self._retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._retriever.index(corpus, show_progress=False)

    def __len__(self) -> int:
        return self._n_docs

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 score of ``query`` against every document, in document order."""
        if self._retriever is None:
            return np.zeros(self._n_docs, dtype=np.float32)
        vocab: dict[str, int] = self._retriever.vocab_dict
        ids = [vocab[t] for t in tokenize(query) if t in vocab and t != ""]
        if not ids:
            return np.zeros(self._n_docs, dtype=np.float32)
        raw = self._retriever.get_scores_from_ids(ids)
        return np.asarray(raw, dtype=np.float32)

    def search(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """Up to ``k`` ``(document index, score)`` pairs with a positive score, best first.

        Ties keep document order.
        """
        if k <= 0:
            return []
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(int(i), float(scores[i])) for i in order if scores[i] > 0]
