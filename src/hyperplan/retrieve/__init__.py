"""Task-level retrieval (HyperAgent, Task-Level Planning): task interpretation d_t = (d_op, d_sch),
Tool Context Graph extraction (Eq. 1-2, Definition 2), its prompt serialisation, and the
baselines it is compared with."""

from __future__ import annotations

from hyperplan.retrieve.baselines import bm25_index, bm25_top_k, one_hop, semantic_top_k
from hyperplan.retrieve.context_graph import (
    ContextGraph,
    ContextGraphConfig,
    GraphIndex,
    QueryVectors,
    RetrievedTool,
    embed_interpretation,
    extract_context_graph,
    extract_with_vectors,
    index_texts,
    node_text,
    single_thread_blas,
    tool_text,
)
from hyperplan.retrieve.interpret import (
    InterpretationError,
    TaskInterpretation,
    from_llm_json,
    interpret_request,
    match_apps,
)
from hyperplan.retrieve.serialize import (
    count_tokens,
    serialize_context_graph,
    serialize_subgraph,
    serialize_tools,
    tokenizer_name,
)

__all__ = [
    "ContextGraph",
    "ContextGraphConfig",
    "GraphIndex",
    "InterpretationError",
    "QueryVectors",
    "RetrievedTool",
    "TaskInterpretation",
    "bm25_index",
    "bm25_top_k",
    "count_tokens",
    "embed_interpretation",
    "extract_context_graph",
    "extract_with_vectors",
    "from_llm_json",
    "index_texts",
    "interpret_request",
    "match_apps",
    "node_text",
    "one_hop",
    "semantic_top_k",
    "serialize_context_graph",
    "serialize_subgraph",
    "serialize_tools",
    "single_thread_blas",
    "tokenizer_name",
    "tool_text",
]
