"""Retrieval baselines, returning ranked tool ids like :attr:`ContextGraph.tool_ids`.

* :func:`semantic_top_k`: cosine of the raw request against each tool text (Eq. 1 with the
  whole request as the query, no graph).
* :func:`bm25_top_k`: BM25 of the raw request against the same tool texts.
* :func:`one_hop`: In-N-Out-style one-hop expansion: the top semantic seeds, then their
  upstream and downstream neighbours (Definition 1), each neighbour ranked by
  cos(request, tool) times the heaviest link joining it to a seed, capped at the budget.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hyperplan.embed.base import FloatMatrix
from hyperplan.embed.bm25 import BM25Index
from hyperplan.graph.model import Hypergraph
from hyperplan.retrieve.context_graph import GraphIndex, tool_text

__all__ = ["bm25_index", "bm25_top_k", "one_hop", "semantic_top_k"]

Scores = npt.NDArray[np.float64]


def semantic_top_k(index: GraphIndex, request_vec: FloatMatrix, k: int) -> list[int]:
    """The k tools whose text is most similar to the request embedding, best first."""
    scores = _cosines(index, request_vec)
    return _rank(scores, np.arange(scores.size), k)


def bm25_index(graph: Hypergraph) -> BM25Index:
    """A BM25 index over the tool texts (same texts as the embeddings)."""
    return BM25Index([tool_text(t) for t in graph.tools])


def bm25_top_k(bm25: BM25Index, request: str, k: int) -> list[int]:
    """The k tools with the highest positive BM25 score, best first (may be fewer)."""
    return [i for i, _ in bm25.search(request, k)]


def one_hop(index: GraphIndex, request_vec: FloatMatrix, k: int, n_seeds: int = 5) -> list[int]:
    """Top ``n_seeds`` semantic seeds, then their one-hop neighbours by cos x link weight,
    at most ``k`` tools in all (seeds first)."""
    scores = _cosines(index, request_vec)
    seeds = _rank(scores, np.arange(scores.size), min(n_seeds, k))
    if not seeds:
        return []
    link = np.zeros(scores.size, dtype=np.float64)  # heaviest link to or from a seed
    rows = np.concatenate([index.inputs_all[e] for e in seeds])
    if rows.size:
        _, tools, w = index.producers(rows)  # upstream: producers of the seeds' inputs
        np.maximum.at(link, tools, w)
    support = index.graph.support_by_tool  # downstream: owners of inputs the seeds support
    for e in seeds:
        lo, hi = support.indptr[e], support.indptr[e + 1]
        owners = index.node_tool[support.indices[lo:hi]]
        np.maximum.at(link, owners, support.data[lo:hi])
    link[seeds] = 0.0
    candidates = np.flatnonzero(link > 0)
    neighbours = _rank(scores[candidates] * link[candidates], candidates, k - len(seeds))
    return seeds + neighbours


def _cosines(index: GraphIndex, request_vec: FloatMatrix) -> Scores:
    vec = np.asarray(request_vec, dtype=np.float32).reshape(-1)
    return (index.tool_vecs @ vec).astype(np.float64)


def _rank(scores: Scores, ids: npt.NDArray[np.int64], k: int) -> list[int]:
    """``ids`` ordered by descending score (ties: lower id), the first k."""
    if k <= 0 or ids.size == 0:
        return []
    order = np.lexsort((ids, -scores))[:k]
    return [int(i) for i in ids[order]]
