"""Tool Context Graph extraction (HyperAgent, Task-Level Planning: "Seed Hyperedge Anchoring",
"Seed Node Anchoring", "Context Graph Extraction", Eq. 1-2, Definition 2).

:class:`GraphIndex` embeds every tool ("name words: description") and schema node once;
:func:`extract_context_graph` then anchors a request, interpreted as d_t = (d_op, d_sch), in
the Tool-Schema Hypergraph and grows a compact context graph by bounded backward search over the
dependency links. Everything per query is vectorised over the candidate set with numpy and the
producer matrix A_prod; no Python loop runs over all tools.

Scores. sim(e, d_op) is Eq. 1, cos(z(e), z(d_op)), taken as the maximum over the joined d_op
and each of its phrases. Because a model-free interpretation is much poorer than an LLM's, the
similarity used to rank tools also looks at the tool's schema nodes and at the apps the request
names:

    q(e) = ns(e) * ((1 - a) * sim(e, d_op) + a * max_{v in V(e)} sim(v, d_sch))   (a = node_mix)

where ns(e) = 1 when the interpretation names no app or names the namespace of e ("spotify" of
``spotify.login``), else ``namespace_prior`` (``node_mix=0`` and ``namespace_prior=1`` give
Eq. 1 exactly). When the interpretation marks the request as a pure information question
(``TaskInterpretation.question``: every operation clause is a wh-question, none an action), q(e)
of a write tool (one with the effect ``<tool>.done``, see :mod:`hyperplan.graph.effects`) is
further multiplied by ``question_write_factor``: a question asks for no change of state. The
relevance of a retrieved tool is

    rel(e) = max( delta^j * q(e)                         seed hyperedge, j-th best of a phrase
                  q(e)                                   node-anchored tool
                  gamma^(h-1) * w(v_o, v_i) * q(e)        backward hop h: Eq. 2 with q for cos )

with gamma = ``hop_decay`` and delta = ``seed_rank_decay`` (each operation phrase's best seed
keeps q(e), its runners-up a little less, so no single phrase fills the budget). The budget
keeps tools by priority, a lexical-dense hybrid

    prio(e) = max( (1 - m) * rel(e) + m * lex(e)^p,       m = lexical_mix, p = lexical_power
                   prio(c) * w(e, r) * share(e, r)^s )     prerequisite bound, below

where lex(e) is the idf-weighted share of the words of e's name (namespace included) that occur
in d_t: the power p makes it count only when (nearly) the whole name is in the request, e.g.
``spotify.show_liked_songs`` for "... songs that I have liked ... on Spotify". The selection is
greedy: once a tool c is kept, the best producer e (highest s_back) of each required input or
precondition r of c that no kept tool supports as strongly gets priority at least
prio(c) * w(e, r) * share(e, r), where share = s_back(e) / (sum of s_back over the k_back
producers kept for r), or 1 / their number when all s_back are 0; so a login that is the only
producer of an access token ranks right after its best consumer (DOE-style closure of the kept
tools' preconditions within the budget), while one of many interchangeable producers is raised
much less (s = ``share_power``, 1 by default).
"""

from __future__ import annotations

import heapq
import importlib
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from hyperplan.embed.base import Embedder, FloatMatrix, l2_normalize
from hyperplan.graph.effects import write_tools
from hyperplan.graph.model import Hypergraph, SchemaNode, ToolEdge
from hyperplan.graph.text import concise, name_tokens, singular, text_tokens
from hyperplan.retrieve.interpret import TaskInterpretation

__all__ = [
    "ContextGraph",
    "ContextGraphConfig",
    "GraphIndex",
    "QueryVectors",
    "RetrievedTool",
    "Why",
    "embed_interpretation",
    "extract_context_graph",
    "extract_with_vectors",
    "index_texts",
    "node_text",
    "single_thread_blas",
    "tool_text",
]

IntArray = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ContextGraphConfig:
    """Settings of the extraction (HyperAgent, "Context Graph Extraction", Eq. 1-2); how the
    defaults were chosen: docs/benchmarks.md, "Configuration history".

    * ``k_e`` / ``theta_e``: seed hyperedges, top-k_e tools per operation phrase with cosine
      at least theta_e (Eq. 1).
    * ``k_v`` / ``theta_v``: seed nodes, top-k_v input-side and output-side nodes per schema
      phrase with cosine at least theta_v.
    * ``k_aug``: producer / consumer candidates kept per seed node.
    * ``k_back``: producers kept per frontier node by s_back (Eq. 2).
    * ``hops``: backward hops.
    * ``budget``: at most this many tools (None: every candidate).
    * ``hop_decay``: gamma, the factor on a candidate's score per hop.
    * ``node_mix``: weight a of the schema-node similarity in the relevance q.
    * ``frontier_required_only``: expand only required inputs and preconditions (else all).
    * ``min_link_weight``: lighter links are not followed.
    * ``namespace_prior``: factor pi on q(e) for tools outside the namespaces the request
      names (1: off).
    * ``lexical_mix`` / ``lexical_power``: weight m and power p of the name match in the
      budget priority (m = 0: off).
    * ``seed_rank_decay``: the j-th seed of an operation phrase is offered q(e) * decay^j, so
      a request's phrases share the budget (1: off).
    * ``share_power``: exponent of the producer's share in the prerequisite bound.
    * ``question_write_factor``: factor on q(e) of write tools when the request is a pure
      information question (1: off; our refinement of q, not the paper's).
    * ``request_row``: the whole request as written is one more row of d_op (Eq. 1).
    * ``fill``: places the candidates leave are filled by priority (reason ``similar``).
    * ``unasked_writes_produce``: a write tool the request does not anchor (no seed
      hyperedge) may still come in as a producer (augmentation, backward hops, the
      prerequisite bound). Off: such a tool (:attr:`Hypergraph.unprompted_writers`; logins
      excepted) is proposed only when the request asks for its effect: when it is the best
      seed of an operation row (``ContextGraph.asked``); ours, issue 37.

    ``request_row`` and ``fill`` are off here (the paper's extraction, as ``eval retrieval``
    measures it) and on in ``hyperplan.select``'s selection.
    """

    k_e: int = 6
    theta_e: float = 0.3
    k_v: int = 2
    theta_v: float = 0.35
    k_aug: int = 1
    k_back: int = 4
    hops: int = 1
    budget: int | None = 20
    hop_decay: float = 0.7
    node_mix: float = 0.6
    frontier_required_only: bool = True
    min_link_weight: float = 0.5
    namespace_prior: float = 0.8
    lexical_mix: float = 0.5
    lexical_power: float = 3.0
    seed_rank_decay: float = 0.97
    share_power: float = 1.0
    question_write_factor: float = 0.6
    request_row: bool = False
    fill: bool = False
    unasked_writes_produce: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def tool_text(tool: ToolEdge) -> str:
    """The text embedded for a tool hyperedge: its name words and its concise description
    (:func:`~hyperplan.graph.text.concise`), ``"spotify show song: Get details of ..."``."""
    return f"{' '.join(name_tokens(tool.name))}: {concise(tool.description)}".strip()


def node_text(graph: Hypergraph, node: SchemaNode) -> str:
    """The text embedded for a schema node: its path words, its tool's name words and its
    description (the paper describes a node by "its associated API tool, name, and concise
    description")."""
    path = " ".join(name_tokens(node.path))
    owner = " ".join(name_tokens(graph.tools[node.tool].name))
    desc = node.description if not node.description.startswith(("effect:", "precond")) else ""
    return f"{path} ({owner}): {desc}".strip().rstrip(":")


def index_texts(graph: Hypergraph) -> list[str]:
    """The texts a :class:`GraphIndex` embeds: every tool's, then every schema node's."""
    return [tool_text(t) for t in graph.tools] + [node_text(graph, n) for n in graph.nodes]


class GraphIndex:
    """Tool and node embeddings plus the index arrays the extraction needs, built once per
    (graph, embedder). Texts are deduplicated before embedding; with a
    :class:`~hyperplan.embed.CachedEmbedder` a rebuild reads every vector from the cache."""

    def __init__(self, graph: Hypergraph, embedder: Embedder,
                 vectors: FloatMatrix | None = None) -> None:
        """``vectors``: the normalised embeddings of :func:`index_texts` when they were
        computed before (a warm start), else they are computed here."""
        self.graph = graph
        self.embedder_name = embedder.name
        if vectors is None:
            vectors = _embed_unique(embedder, index_texts(graph))
        elif vectors.shape[0] != graph.n_tools + graph.n_nodes:
            raise ValueError("index vectors do not match the graph")
        self.vectors: FloatMatrix = vectors
        self.tool_vecs: FloatMatrix = vectors[: graph.n_tools]
        self.node_vecs: FloatMatrix = vectors[graph.n_tools:]
        self.n_input_nodes = graph.n_input_nodes
        self.node_tool: IntArray = np.asarray(graph.node_tool, dtype=np.int64)
        self._index_producers(graph)
        self._index_nodes(graph)
        self._index_names(graph)

    def _index_producers(self, graph: Hypergraph) -> None:
        """A_prod as plain arrays: by input row (CSR) and by producer tool (a column view)."""
        prod = graph.producer_matrix
        self.prod_ptr: IntArray = prod.indptr.astype(np.int64)
        self.prod_tool: IntArray = prod.indices.astype(np.int64)
        self.prod_w: Scores = prod.data.astype(np.float64)
        self.prod_row: IntArray = np.repeat(np.arange(prod.shape[0], dtype=np.int64),
                                            np.diff(self.prod_ptr))
        self.prod_feeds: IntArray = np.bincount(self.prod_tool, minlength=graph.n_tools)
        # the A_prod entries of each producer tool, in entry order (a column view)
        self.prod_by_tool: IntArray = np.argsort(self.prod_tool, kind="stable").astype(np.int64)
        self.prod_tool_ptr: IntArray = np.concatenate([[0], np.cumsum(self.prod_feeds)]).astype(
            np.int64)

    def _index_nodes(self, graph: Hypergraph) -> None:
        """Per node: precondition, required, incident tools; nodes grouped by owning tool."""
        self.precondition = np.asarray([n.kind.value == "pre" for n in graph.nodes], dtype=bool)
        self.precondition_ids: IntArray = np.flatnonzero(self.precondition).astype(np.int64)
        required = np.zeros(graph.n_input_nodes, dtype=bool)
        required[[r for t in graph.tools for r in t.required]] = True
        required |= self.precondition[: graph.n_input_nodes]  # preconditions are required
        self.required = required
        # node -> tools having it in I(e) ∪ O(e), as CSR arrays (one owner per node here)
        pairs = sorted((v, t.id) for t in graph.tools for v in (*t.inputs, *t.outputs))
        self.incident_tool: IntArray = np.asarray([e for _, e in pairs], dtype=np.int64)
        counts = np.bincount(np.asarray([v for v, _ in pairs], dtype=np.int64),
                             minlength=graph.n_nodes)
        self.incident_ptr: IntArray = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # nodes grouped by owning tool, for per-tool maxima with np.maximum.reduceat
        self.node_order: IntArray = np.argsort(self.node_tool, kind="stable")
        counts_by_tool = np.bincount(self.node_tool, minlength=graph.n_tools)
        self.tool_has_nodes = counts_by_tool > 0
        self.tool_node_start: IntArray = (np.cumsum(counts_by_tool) - counts_by_tool)[
            self.tool_has_nodes
        ]
        self.writes = write_tools(graph)  # the state-change effect "<tool>.done"
        self.inputs_all = [np.asarray(t.inputs, dtype=np.int64) for t in graph.tools]
        self.inputs_required = [a[required[a]] for a in self.inputs_all]

    def _index_names(self, graph: Hypergraph) -> None:
        """The tools' name words (by column) and namespaces."""
        self.name_vocab, words = _name_words(graph)
        # the (E, vocabulary) name-word matrix by column, as plain arrays (no scipy per query)
        self.name_ptr: IntArray = words.indptr.astype(np.int64)
        self.name_tool: IntArray = words.indices.astype(np.int64)
        self.name_weight: Scores = words.data.astype(np.float64)
        self.tool_names: list[str] = [t.name for t in graph.tools]
        prefixes = [t.name.rsplit(".", 1)[0] if "." in t.name else "" for t in graph.tools]
        spaces = sorted(set(prefixes) - {""})
        # namespaces ("spotify" of "spotify.login") when the tool names have at least two
        self.namespaces: tuple[str, ...] = tuple(spaces) if len(spaces) > 1 else ()
        slot = {ns: k for k, ns in enumerate(self.namespaces)}
        self.tool_namespace: IntArray = np.asarray(
            [slot.get(p, -1) for p in prefixes], dtype=np.int64
        )

    def namespace_weights(self, apps: Sequence[str], prior: float) -> Scores:
        """1 for the tools of the namespaces named in ``apps``, ``prior`` for all others; 1
        everywhere when ``apps`` names no namespace of the graph."""
        named = [k for k, ns in enumerate(self.namespaces) if ns in set(apps)]
        weights = np.ones(self.graph.n_tools)
        if named and prior != 1:
            weights[~np.isin(self.tool_namespace, named)] = prior
        return weights

    def name_match(self, text: str) -> Scores:
        """lex(e, text) per tool: the share of the idf mass of e's name words whose stems occur
        in ``text`` (1: every name word occurs, 0: none)."""
        cols = sorted({self.name_vocab[w] for w in word_stems(text) if w in self.name_vocab})
        if not cols:
            return np.zeros(self.graph.n_tools)
        flat = np.concatenate([np.arange(self.name_ptr[c], self.name_ptr[c + 1]) for c in cols])
        return np.bincount(self.name_tool[flat], weights=self.name_weight[flat],
                           minlength=self.graph.n_tools).astype(np.float64)

    def fed_by(self, tools: Sequence[int]) -> IntArray:
        """The A_prod entries (positions in ``prod_tool``) whose producer is one of
        ``tools``, in entry order."""
        parts = [self.prod_by_tool[self.prod_tool_ptr[t]:self.prod_tool_ptr[t + 1]]
                 for t in set(tools)]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def producers(self, rows: IntArray) -> tuple[IntArray, IntArray, Scores]:
        """(row position, producer tool, weight) of every A_prod entry in ``rows``."""
        starts, ends = self.prod_ptr[rows], self.prod_ptr[rows + 1]
        counts = ends - starts
        pos = np.repeat(np.arange(rows.size), counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        flat = np.repeat(starts, counts) + offsets
        return pos, self.prod_tool[flat], self.prod_w[flat]


@dataclass(frozen=True)
class QueryVectors:
    """Embeddings of one interpretation: row 0 of ``operations`` is the joined d_op, the other
    rows its phrases; ``schemas`` has one row per d_sch phrase (possibly none); ``request``:
    the whole request as written, one row, when it was embedded (else none)."""

    operations: FloatMatrix
    schemas: FloatMatrix
    request: FloatMatrix | None = None


def embed_interpretation(interp: TaskInterpretation, embedder: Embedder,
                         request: str = "") -> QueryVectors:
    """z(d_op) and z(d_sch) phrase embeddings, and z(request) when ``request`` is given, in
    one embedder call (each distinct text embedded once)."""
    ops = [interp.operation_text, *interp.operations]
    whole = [request] if request.strip() else []
    texts = [*ops, *interp.schemas, *whole]
    unique = list(dict.fromkeys(texts))  # a one-clause request is its own d_op and phrase
    rows = {text: i for i, text in enumerate(unique)}
    vecs = l2_normalize(embedder.embed(unique))[[rows[t] for t in texts]]
    n = len(ops) + len(interp.schemas)
    return QueryVectors(vecs[: len(ops)], vecs[len(ops):n], vecs[n:] if whole else None)


class Why(StrEnum):
    """Why a tool is in the context graph (its values are what JSON output shows)."""

    SEED = "seed"  # a seed hyperedge (Eq. 1)
    PRODUCER_OF = "producer-of"  # produces a seed node (named in ``via``)
    CONSUMER_OF = "consumer-of"  # consumes a seed node (named in ``via``)
    BACKWARD = "backward"  # a producer found by the backward search (Eq. 2), hop ``hop``
    PREREQUISITE = "prerequisite"  # of the kept tool named in ``via``, raised by the bound
    SIMILAR = "similar"  # a place of the budget the candidates left, filled by priority


class _Reason(NamedTuple):
    """Why a candidate was offered: ``via`` is a node id, or a tool id for a prerequisite."""

    why: Why
    hop: int
    via: int


@dataclass(frozen=True)
class RetrievedTool:
    """A tool of the context graph, with why it is there (:class:`Why`): ``via`` names the
    seed node, the frontier node of hop ``hop`` or the tool it is a prerequisite of."""

    tool: int
    name: str
    score: float
    reason: Why
    hop: int = 0
    via: str = ""


@dataclass(frozen=True)
class ContextGraph:
    """The Tool Context Graph H_s of Definition 2, restricted to the budget: ``tools`` ranked
    best first, the anchored ``seed_nodes`` (node id, similarity) and, lazily, the induced
    ``subgraph``; ``n_candidates`` counts the tools before the budget cut."""

    graph: Hypergraph = field(repr=False)
    interpretation: TaskInterpretation
    tools: tuple[RetrievedTool, ...]
    seed_nodes: tuple[tuple[int, float], ...]
    n_candidates: int
    asked: tuple[int, ...] = ()  # the best seed of each operation row: what the request asks

    @property
    def tool_ids(self) -> list[int]:
        return [t.tool for t in self.tools]

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    @cached_property
    def subgraph(self) -> Hypergraph:
        """H_s = (V_s, E_s, D_s) induced by the kept tools (Definition 2)."""
        return self.graph.induce(self.tool_ids)


def extract_context_graph(
    graph: Hypergraph,
    interpretation: TaskInterpretation,
    *,
    embedder: Embedder,
    index: GraphIndex | None = None,
    config: ContextGraphConfig | None = None,
) -> ContextGraph:
    """Anchor ``interpretation`` in ``graph`` and extract its Tool Context Graph.

    Pass a prebuilt ``index`` (same graph and embedder) to avoid re-embedding the graph.
    """
    if index is None:
        index = GraphIndex(graph, embedder)
    elif index.graph is not graph or index.embedder_name != embedder.name:
        raise ValueError("index was built for another graph or embedder")
    query = embed_interpretation(interpretation, embedder)
    return extract_with_vectors(index, interpretation, query, config or ContextGraphConfig())


def _row_max(matrix: FloatMatrix) -> Scores:
    """Row-wise maximum of a tall, narrow matrix, one column at a time (several times faster
    than ``matrix.max(axis=1)`` on a C-ordered (n, few) array)."""
    if matrix.shape[1] == 0:
        return np.full(matrix.shape[0], -np.inf)
    best = matrix[:, 0].astype(np.float64)
    for col in range(1, matrix.shape[1]):
        np.maximum(best, matrix[:, col], out=best)
    return best


def extract_with_vectors(
    index: GraphIndex,
    interpretation: TaskInterpretation,
    query: QueryVectors,
    config: ContextGraphConfig,
    grounded: npt.NDArray[np.bool_] | None = None,
) -> ContextGraph:
    """The extraction proper, from precomputed query embeddings (this is what is timed).

    ``grounded`` (a boolean vector over the input-side nodes, as
    :class:`~hyperplan.plan.grounding.Grounding` holds) conditions the extraction on the agent
    state S of Definition 4: a grounded input needs no producer, so it is neither a frontier
    node of the backward search nor a reason for the prerequisite bound (None: the state
    holds nothing, the extraction of the paper).

    The few small matrix products run with single-threaded BLAS when ``threadpoolctl`` is
    installed: on a busy 2-core machine a second OpenBLAS thread waiting for a core made
    them 5x slower.
    """
    with single_thread_blas():
        state = _State(index, config, query, interpretation, grounded)
        state.anchor_hyperedges()
        state.block_unasked_writers()
        seeds = state.anchor_nodes()
        state.augment(seeds)
        state.expand_backward(seeds)
        kept = state.select()
    return ContextGraph(
        graph=index.graph,
        interpretation=interpretation,
        tools=tuple(kept),
        seed_nodes=tuple((int(v), round(float(s), 4)) for v, s in seeds),
        n_candidates=len(state.rel),
        asked=tuple(sorted(state.asked)),
    )


class _State:
    """Mutable per-query bookkeeping: relevance, reason and best producers found so far."""

    def __init__(
        self,
        index: GraphIndex,
        config: ContextGraphConfig,
        q: QueryVectors,
        interp: TaskInterpretation,
        grounded: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        self.index, self.cfg = index, config
        self.grounded = grounded
        self.op_phrase: FloatMatrix = index.tool_vecs @ q.operations.T  # (E, 1 + P), Eq. 1
        self.request_sim: Scores | None = None
        if config.request_row and q.request is not None:
            self.request_sim = (index.tool_vecs @ q.request[0]).astype(np.float64)
        self.op_sim: Scores = _row_max(self.op_phrase)
        self.node_sims: FloatMatrix = index.node_vecs @ q.schemas.T  # (V, S)
        self.node_sims[index.precondition_ids] = -1.0  # states shared by an app's tools
        self.relevance = self.op_sim
        if q.schemas.shape[0] and config.node_mix > 0:
            tool_node = np.full(index.graph.n_tools, -1.0)
            best = _row_max(self.node_sims)[index.node_order]
            tool_node[index.tool_has_nodes] = np.maximum.reduceat(best, index.tool_node_start)
            self.relevance = (1 - config.node_mix) * self.op_sim + config.node_mix * tool_node
        if interp.apps and config.namespace_prior != 1:
            self.relevance = self.relevance * index.namespace_weights(
                interp.apps, config.namespace_prior
            )
        if interp.question and config.question_write_factor != 1:
            self.relevance = np.where(
                index.writes, self.relevance * config.question_write_factor, self.relevance
            )
        self.lexical = np.zeros(index.graph.n_tools)
        if config.lexical_mix > 0:
            words = " ".join([*interp.operations, *interp.schemas])
            self.lexical = index.name_match(words) ** config.lexical_power
        self.rel: dict[int, float] = {}
        self.why: dict[int, _Reason] = {}
        # tools that make no producer offer (block_unasked_writers), the best seeds
        self.no_producer = np.zeros(index.graph.n_tools, dtype=bool)
        self.asked: set[int] = set()
        # input node -> (best producer, link weight, share of s_back among the kept producers)
        self.best_producer: dict[int, tuple[int, float, float]] = {}

    def _offer(self, tool: int, score: float, reason: _Reason) -> None:
        if score > self.rel.get(tool, -np.inf):
            self.rel[tool] = score
            self.why[tool] = reason

    def anchor_hyperedges(self) -> None:
        """Seed hyperedge anchoring (Eq. 1): per row of d_op (joined text and each phrase) the
        top-k_e tools with cos >= theta_e, plus the top-k_e tools by q."""
        decay = self.cfg.seed_rank_decay
        for col in self.op_phrase.T:
            for rank, e in enumerate(_top(col, self.cfg.k_e, self.cfg.theta_e).tolist()):
                self._offer(e, float(self.relevance[e]) * decay ** rank, _Reason(Why.SEED, 0, -1))
                self.asked.update([e] if rank == 0 else [])
        if self.relevance is not self.op_sim:
            for rank, e in enumerate(_top(self.relevance, self.cfg.k_e, self.cfg.theta_e).tolist()):
                self._offer(e, float(self.relevance[e]) * decay ** rank, _Reason(Why.SEED, 0, -1))
                self.asked.update([e] if rank == 0 else [])
        if self.request_sim is not None:
            sim = self.request_sim
            for rank, e in enumerate(_top(sim, self.cfg.k_e, self.cfg.theta_e).tolist()):
                score = max(float(self.relevance[e]), float(sim[e]))
                self._offer(e, score * decay ** rank, _Reason(Why.SEED, 0, -1))
                self.asked.update([e] if rank == 0 else [])

    def block_unasked_writers(self) -> None:
        """After seed anchoring: the write tools the request does not ask for (none is the
        best seed of an operation row) make no producer offer (``unasked_writes_produce``
        off; :attr:`Hypergraph.unprompted_writers`)."""
        if self.cfg.unasked_writes_produce:
            return
        blocked = self.index.graph.unprompted_writers.copy()
        blocked[list(self.asked)] = False
        self.no_producer = blocked

    def anchor_nodes(self) -> list[tuple[int, float]]:
        """Seed node anchoring: per phrase of d_sch, top-k_v input-side and top-k_v
        output-side nodes with cos >= theta_v (V_seed = V_seed^I ∪ V_seed^O). Precondition
        nodes are not anchored: they are states shared by all tools of an app."""
        n_in = self.index.n_input_nodes
        best: dict[int, float] = {}
        for col in self.node_sims.T:
            for lo, part in ((0, col[:n_in]), (n_in, col[n_in:])):
                for v in _top(part, self.cfg.k_v, self.cfg.theta_v):
                    best[lo + int(v)] = max(best.get(lo + int(v), -1.0), float(part[v]))
        return sorted(best.items(), key=lambda p: (-p[1], p[0]))

    def augment(self, seeds: list[tuple[int, float]]) -> None:
        """Producer candidates {e : v_o ∈ O(e)} of each output-side seed node and consumer
        candidates {e : v_i ∈ I(e)} of each input-side one, top-k_aug by sim(e, d_op)."""
        index = self.index
        for v, _ in seeds:
            cands = index.incident_tool[index.incident_ptr[v]:index.incident_ptr[v + 1]]
            kind = Why.CONSUMER_OF if v < index.n_input_nodes else Why.PRODUCER_OF
            if kind is Why.PRODUCER_OF:
                cands = cands[~self.no_producer[cands]]
            cands = cands[np.lexsort((cands, -self.op_sim[cands]))][: self.cfg.k_aug]
            for e in cands.tolist():
                self._offer(e, float(self.relevance[e]), _Reason(kind, 0, v))

    def _inputs(self, tool: int) -> IntArray:
        inputs = (self.index.inputs_required[tool] if self.cfg.frontier_required_only
                  else self.index.inputs_all[tool])
        return inputs if self.grounded is None else inputs[~self.grounded[inputs]]

    def expand_backward(self, seeds: list[tuple[int, float]]) -> None:
        """Bounded backward search: B_0 = V_seed^I ∪ inputs of E_seed; at hop h every frontier
        node keeps its top-k_back producers (other than its own tool) by
        s_back = w(v_o, v_i) · q(e) (Eq. 2, with q for the cosine); the required inputs of
        new producers form B_{h+1}; stops after ``hops`` hops or when nothing new is added."""
        n_in = self.index.n_input_nodes
        held = self.grounded
        parts = [np.asarray([v for v, _ in seeds if v < n_in and (held is None or not held[v])],
                            dtype=np.int64)]
        parts += [self._inputs(e) for e in self.rel]
        frontier = np.unique(np.concatenate(parts))
        seen = set(frontier.tolist())
        for hop in range(1, self.cfg.hops + 1):
            if frontier.size == 0:
                return
            added = self._expand_once(frontier, hop)
            nxt = [self._inputs(e) for e in added]
            cand = np.unique(np.concatenate(nxt)) if nxt else np.zeros(0, dtype=np.int64)
            frontier = np.asarray([r for r in cand.tolist() if r not in seen], dtype=np.int64)
            seen.update(frontier.tolist())

    def _expand_once(self, frontier: IntArray, hop: int) -> list[int]:
        pos, tool, w = self.index.producers(frontier)
        owner = self.index.node_tool[frontier]
        ok = (w >= self.cfg.min_link_weight) & (tool != owner[pos]) & ~self.no_producer[tool]
        pos, tool, w = pos[ok], tool[ok], w[ok]
        s_back = w * self.relevance[tool]
        order = np.lexsort((tool, -s_back, pos))
        pos, tool, w, s_back = pos[order], tool[order], w[order], s_back[order]
        first = np.ones(pos.size, dtype=bool)
        first[1:] = pos[1:] != pos[:-1]
        starts = np.maximum.accumulate(np.where(first, np.arange(pos.size), 0))
        keep = (np.arange(pos.size) - starts) < self.cfg.k_back
        decay = self.cfg.hop_decay ** (hop - 1)
        total = np.zeros(frontier.size)
        np.add.at(total, pos[keep], np.maximum(s_back[keep], 0.0))
        n_kept = np.bincount(pos[keep], minlength=frontier.size)
        added: list[int] = []
        for k in np.flatnonzero(keep).tolist():
            r, e = int(frontier[pos[k]]), int(tool[k])
            if first[k]:
                share = (max(float(s_back[k]), 0.0) / total[pos[k]] if total[pos[k]] > 0
                         else 1.0 / n_kept[pos[k]])
                self.best_producer.setdefault(r, (e, float(w[k]), share))
            if e not in self.rel:
                added.append(e)
            self._offer(e, decay * float(s_back[k]), _Reason(Why.BACKWARD, hop, r))
        return added

    def select(self) -> list[RetrievedTool]:
        """Budgeted greedy selection by priority with the prerequisite bound (module doc)."""
        budget = len(self.rel) if self.cfg.budget is None else self.cfg.budget
        m = self.cfg.lexical_mix
        prio = {e: (1 - m) * p + m * float(self.lexical[e]) for e, p in self.rel.items()}
        why = dict(self.why)
        heap = [(-p, e) for e, p in prio.items()]
        heapq.heapify(heap)
        kept: list[RetrievedTool] = []
        chosen = np.zeros(self.index.graph.n_tools, dtype=bool)
        names = self.index.tool_names
        while heap and len(kept) < budget:
            neg, e = heapq.heappop(heap)
            if chosen[e] or -neg != prio[e]:
                continue
            chosen[e] = True
            reason, hop, via = why[e]
            label = names[via] if reason is Why.PREREQUISITE else self._node_label(via)
            kept.append(RetrievedTool(e, names[e], round(-neg, 6), reason, hop, label))
            for r in self._inputs_to_supply(e):
                p, w, share = self.best_producer.get(r, (-1, 0.0, 0.0))
                if p < 0 or chosen[p] or self._supported(r, chosen, w):
                    continue
                bound = -neg * w * share ** self.cfg.share_power
                if bound > prio[p]:
                    prio[p] = bound
                    why[p] = _Reason(Why.PREREQUISITE, why[p].hop, e)
                    heapq.heappush(heap, (-bound, p))
        if self.cfg.fill and len(kept) < budget:
            kept.extend(self._fill(chosen, budget - len(kept)))
        return kept

    def _fill(self, chosen: npt.NDArray[np.bool_], places: int) -> list[RetrievedTool]:
        """The ``places`` best tools not kept, by the priority without the bound, leaving out
        the producers the state has made redundant (every input they feed is grounded)."""
        m = self.cfg.lexical_mix
        prio = (1 - m) * self.relevance + m * self.lexical
        prio = np.where(chosen | self._redundant(), -np.inf, prio)
        names = self.index.tool_names
        return [RetrievedTool(e, names[e], round(float(prio[e]), 6), Why.SIMILAR)
                for e in _top(prio, places, -np.finfo(np.float64).max).tolist()]

    def _redundant(self) -> npt.NDArray[np.bool_]:
        """Tools that feed inputs (A_prod) and feed none the state leaves ungrounded: all they
        would supply is held (Definition 4)."""
        index, n = self.index, self.index.graph.n_tools
        if self.grounded is None:
            return np.zeros(n, dtype=bool)
        open_rows = ~self.grounded[index.prod_row]
        still = np.bincount(index.prod_tool, weights=open_rows, minlength=n)
        redundant: npt.NDArray[np.bool_] = (index.prod_feeds > 0) & (still == 0)
        return redundant

    def _inputs_to_supply(self, tool: int) -> list[int]:
        """The required inputs of ``tool`` the state does not ground."""
        required = self.index.inputs_required[tool]
        if self.grounded is not None:
            required = required[~self.grounded[required]]
        return list(required.tolist())

    def _node_label(self, node: int) -> str:
        return self.index.graph.node_name(node) if node >= 0 else ""

    def _supported(self, r: int, chosen: npt.NDArray[np.bool_], w: float) -> bool:
        """Whether a kept tool already supports input r with weight >= w."""
        lo, hi = self.index.prod_ptr[r], self.index.prod_ptr[r + 1]
        tools, weights = self.index.prod_tool[lo:hi], self.index.prod_w[lo:hi]
        return bool(np.any(chosen[tools] & (weights >= w)))


@lru_cache(maxsize=1)
def _blas_controller() -> Any:
    try:  # optional; imported by name as it ships no type information
        module = importlib.import_module("threadpoolctl")
    except ImportError:
        return None
    return module.ThreadpoolController()


def single_thread_blas() -> AbstractContextManager[Any]:
    """A context limiting BLAS to one thread (no-op without ``threadpoolctl``)."""
    controller = _blas_controller()
    if controller is None:
        return nullcontext()
    limited: AbstractContextManager[Any] = controller.limit(limits=1, user_api="blas")
    return limited


def _top(scores: npt.NDArray[Any], k: int, threshold: float) -> IntArray:
    """Indices of the top-k scores that reach ``threshold``, best first (ties: lower index)."""
    if k <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k]
    part = part[np.lexsort((part, -scores[part]))]
    return part[scores[part] >= threshold].astype(np.int64)


def word_stems(text: str) -> set[str]:
    """Light stems of the content words of ``text`` (identifiers split, stopwords dropped,
    plural and -ed/-ing/-e endings cut): ``"Liked songs"`` -> ``{"lik", "song"}``."""
    return {_stem(w) for w in text_tokens(text)}


@lru_cache(maxsize=100_000)
def _stem(word: str) -> str:
    word = singular(word)
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _name_words(graph: Hypergraph) -> tuple[dict[str, int], sp.csc_matrix]:
    """Stems of the tool names' words (namespace included) as a sparse (E, vocabulary) matrix:
    row e holds idf(w) = log(1 + E / df(w)) of each of its words w divided by the row total,
    so a row sums to 1 and generic words ("show", "get") weigh little."""
    names = [sorted(word_stems(t.name)) for t in graph.tools]
    vocab: dict[str, int] = {}
    for words in names:
        for w in words:
            vocab.setdefault(w, len(vocab))
    df = np.zeros(len(vocab))
    for words in names:
        df[[vocab[w] for w in words]] += 1
    idf = np.log1p(graph.n_tools / np.maximum(df, 1))
    rows, cols, vals = [], [], []
    for e, words in enumerate(names):
        ids = [vocab[w] for w in words]
        total = float(idf[ids].sum()) if ids else 0.0
        for c in ids:
            rows.append(e)
            cols.append(c)
            vals.append(float(idf[c]) / total)
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(graph.n_tools, len(vocab)))
    return vocab, matrix


def _embed_unique(embedder: Embedder, texts: Sequence[str]) -> FloatMatrix:
    unique = list(dict.fromkeys(texts))
    vecs = l2_normalize(embedder.embed(unique)) if unique else np.zeros((0, 1), np.float32)
    row = {t: i for i, t in enumerate(unique)}
    return vecs[[row[t] for t in texts]] if texts else vecs
