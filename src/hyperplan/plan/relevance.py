"""The tools' relevance to a request: the cosine of each tool's text (its name words and
concise description, :func:`hyperplan.retrieve.context_graph.tool_text`, the text the Tool
Context Graph embeds) to the request text. DOE reads it to rank producers and support graphs
and the stated-value repairs to find the call a value was stated for
(:mod:`hyperplan.plan.support`)."""

from __future__ import annotations

import numpy as np

from hyperplan.embed.base import l2_normalize
from hyperplan.graph.links import TextEmbedder
from hyperplan.graph.model import Hypergraph


def request_relevance(graph: Hypergraph, request: str, embedder: TextEmbedder,
                      tool_vectors: np.ndarray | None = None) -> np.ndarray | None:
    """Per tool of ``graph``, the cosine of its text to ``request`` (None for an empty
    request). ``tool_vectors``: the tools' normalised embeddings when they are at hand (a
    :class:`~hyperplan.retrieve.context_graph.GraphIndex`'s ``tool_vecs``), else they are
    embedded here."""
    if not request.strip():
        return None
    if tool_vectors is None:
        from hyperplan.retrieve.context_graph import tool_text

        tool_vectors = l2_normalize(embedder.embed([tool_text(t) for t in graph.tools]))
    query = l2_normalize(embedder.embed([request]))[0]
    return np.asarray(tool_vectors @ query, dtype=np.float64)
