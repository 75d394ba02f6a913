"""The selector: a catalog's hypergraph and retrieval index, built once, answering
:meth:`Selector.select` with no LLM anywhere on the path (HyperAgent, "Task-Level Planning"
and "Tool-Level Planning", used as a pre-selection layer in front of any agent).

A selection reads the request with the deterministic interpretation
(:func:`~hyperplan.retrieve.interpret_request`), grounds what the agent already holds
(:func:`~hyperplan.plan.grounding.ground`, the state S of Definition 4), extracts the
state-conditioned Tool Context Graph and lets DOE propose the chain of producers each
anchored tool still needs (:mod:`hyperplan.select.rank`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.embed.base import Embedder, l2_normalize
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.overrides import ObservedFlow
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import Grounding, ground
from hyperplan.retrieve.context_graph import (
    ContextGraphConfig,
    GraphIndex,
    embed_interpretation,
    extract_with_vectors,
    index_texts,
)
from hyperplan.retrieve.interpret import interpret_request
from hyperplan.retrieve.serialize import count_tokens, tokenizer_identity
from hyperplan.select import derived, rank
from hyperplan.select.model import SelectedTool, Selection

if TYPE_CHECKING:
    from hyperplan.select.session import Session

DEFAULT_BUDGET = 20
LEARNING_RATE = 0.5  # w <- w + rate (1 - w) per observed flow (strengthen_from_traces)


def selection_context() -> ContextGraphConfig:
    """The context graph of a selection: the request as written is a row of d_op (Eq. 1) and
    the places the candidates leave are filled by similarity (``request_row``, ``fill``):
    a host's budget is the number of tools it can take, not a cut-off."""
    return ContextGraphConfig(request_row=True, fill=True)


@dataclass(frozen=True)
class SelectConfig:
    """``budget``: tools per selection; ``terminals``: anchored tools DOE plans a chain for;
    ``chain``: whether DOE plans chains (False: the context graph alone); ``placement``:
    where the chains' producers go in the ranking (:class:`~hyperplan.select.rank.ChainPlacement`);
    ``context`` / ``doe``: the extraction's and DOE's own settings. The selection's context
    graph also anchors tools on the request as written and fills the budget
    (:func:`selection_context`); the paper's extraction, as ``eval retrieval`` measures it,
    is :class:`ContextGraphConfig`'s own default."""

    budget: int = DEFAULT_BUDGET
    terminals: int = 3
    chain: bool = True
    placement: rank.ChainPlacement = rank.ChainPlacement.FILL
    context: ContextGraphConfig = field(default_factory=selection_context)
    doe: DOEConfig = field(default_factory=DOEConfig)


def definition(tool: ToolSpec) -> dict[str, Any]:
    """The tool as an OpenAI-style function definition: what an agent sends the model."""
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description,
                         "parameters": tool.input_schema}}


class Selector:
    """Selection over one catalog. Build it with :func:`hyperplan.select.build_selector`
    (cached on disk) or from a catalog, its graph and an embedder."""

    def __init__(self, catalog: Catalog, graph: Hypergraph, embedder: Embedder,
                 config: SelectConfig | None = None, *, entry: Path | None = None) -> None:
        if catalog.names() != [t.name for t in graph.tools]:
            raise ValueError("the graph was not built from this catalog")
        self.catalog = catalog
        self.graph = graph
        self.embedder = embedder
        self.config = config or SelectConfig()
        self.entry = entry  # the cache entry, where learned flows are kept
        self._specs = {t.name: t for t in catalog.tools}

    def learn(self, flows: Iterable[ObservedFlow], *, rate: float = LEARNING_RATE,
              persist: bool = True) -> int:
        """Strengthen the links of observed ``flows`` (those naming nodes of the graph;
        :func:`~hyperplan.graph.overrides.strengthen_from_traces`) and, with ``persist`` and a
        cache entry, keep them there for the next build. Returns how many flows were used."""
        from hyperplan.graph.overrides import strengthen_from_traces
        from hyperplan.select.cache import FLOWS_FILE
        from hyperplan.select.flows import known_flows, write_flows

        kept = known_flows(self.graph, flows)
        if not kept:
            return 0
        self.graph = strengthen_from_traces(self.graph, kept, rate=rate)
        for cached in ("index", "free_inputs"):  # built from the links: rebuilt on use
            self.__dict__.pop(cached, None)
        if persist and self.entry is not None and self.entry.is_dir():
            write_flows(self.entry / FLOWS_FILE, kept)
        return len(kept)

    @cached_property
    def index(self) -> GraphIndex:
        """Tool and node embeddings (built on first use: one embedder call per text), read
        from the cache entry when they were stored there (:mod:`hyperplan.select.derived`)."""
        if self.entry is None:
            return GraphIndex(self.graph, self.embedder)
        texts = index_texts(self.graph)
        digest = derived.texts_digest(texts)
        name = self.embedder.name
        stored = derived.read_vectors(self.entry, name, digest, len(texts))
        index = GraphIndex(self.graph, self.embedder, stored)
        if stored is None:
            derived.write_vectors(self.entry, name, digest, index.vectors)
        return index

    @cached_property
    def tool_tokens(self) -> np.ndarray:
        """Definition tokens of every tool, in graph order (kept in the cache entry)."""
        tokenizer = tokenizer_identity()
        n = len(self.catalog.tools)
        stored = derived.read_tokens(self.entry, tokenizer, n) if self.entry else None
        if stored is not None:
            return stored
        tokens = np.asarray([count_tokens(json.dumps(definition(t), ensure_ascii=False))
                             for t in self.catalog.tools], dtype=np.int64)
        if self.entry is not None:
            derived.write_tokens(self.entry, tokenizer, tokens)
        return tokens

    @property
    def all_tokens(self) -> int:
        """The definition tokens of the whole catalog (sending every tool)."""
        return int(self.tool_tokens.sum())

    def tool(self, name: str) -> ToolSpec:
        """The catalog entry of ``name`` (KeyError when the catalog has no such tool)."""
        return self._specs[name]

    def definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        return [definition(self._specs[n]) for n in names]

    @cached_property
    def free_inputs(self) -> np.ndarray:
        """Per input-side node, whether no tool produces it (no link of at least the
        context graph's ``min_link_weight``): a value only the user or the model can give,
        which DOE therefore does not count as a deficit."""
        prod = self.graph.producer_matrix
        strong = np.zeros(self.graph.n_input_nodes, dtype=bool)
        rows = np.repeat(np.arange(prod.shape[0]), np.diff(prod.indptr))
        strong[rows[prod.data >= self.config.context.min_link_weight]] = True
        kinds = np.asarray([n.kind is NodeKind.INPUT
                            for n in self.graph.nodes[: self.graph.n_input_nodes]], dtype=bool)
        return kinds & ~strong

    def grounding(self, known: Iterable[str] = (), effects: Iterable[str] = ()) -> Grounding:
        """The input nodes the state grounds: ``known`` holds bare parameter names, input
        node keys or output node keys of values the agent holds (rules of
        :mod:`hyperplan.plan.grounding`), and every input no tool produces
        (:attr:`free_inputs`)."""
        held = ground(self.graph, list(known), effects,
                      min_weight=self.config.context.min_link_weight)
        vector = held.grounded | self.free_inputs
        vector.setflags(write=False)
        return Grounding(vector)

    def select(self, request: str, *, known: Collection[str] = (),
               effects: Collection[str] = (), budget: int | None = None,
               chain: bool | None = None,
               placement: rank.ChainPlacement | None = None,
               called: Sequence[str] = ()) -> Selection:
        """The tools for ``request`` given what the agent holds, best first (at most
        ``budget``), each with why it is there, the chain DOE proposes and token costs.
        ``called``: the tools the agent has called successfully, in order (the calls C of
        the state, Definition 4): the best consumer of their results goes first
        (:func:`~hyperplan.select.rank.follow_calls`) and they go last."""
        started = time.perf_counter()
        cfg = self.config
        k = cfg.budget if budget is None else budget
        if k < 1:
            raise ValueError(f"budget must be at least 1, got {k}")
        interp = interpret_request(request, self.index.namespaces)
        query = embed_interpretation(interp, self.embedder,
                                     request if cfg.context.request_row else "")
        grounding = self.grounding(known, effects)
        context = replace(cfg.context, budget=k)
        cg = extract_with_vectors(self.index, interp, query, context, grounding.grounded)
        use_chain = cfg.chain if chain is None else chain
        terminals = rank.anchored(cg, cfg.terminals) if use_chain else []
        relevance = self.index.tool_vecs @ l2_normalize(query.operations[:1])[0]
        asked = None if cfg.context.unasked_writes_produce else [*cg.asked, *terminals]
        chains = rank.plan_chains(self.graph, terminals, grounding,
                                  relevance.astype(np.float64), cfg.doe, asked)
        ranked = rank.merge(cg, chains, k, cfg.placement if placement is None else placement)
        if called:
            done = [self.graph.tool_index[n] for n in called if n in self.graph.tool_index]
            follow = rank.follow_calls(self.index, done, relevance.astype(np.float64))
            ranked = rank.place_follow(ranked, follow, done, k)
        return self._selection(request, ranked, chains, known, started)

    def session(self, request: str = "", *, known: Collection[str] = ()) -> Session:
        """A state-conditioned session (Definition 4) for one conversation."""
        from hyperplan.select.session import Session

        return Session(self, request, known=known)

    def _selection(self, request: str, ranked: list[rank.Ranked], chains: rank.Chains,
                   known: Collection[str], started: float) -> Selection:
        graph, tokens = self.graph, self.tool_tokens
        tools = tuple(SelectedTool(
            name=graph.tools[r.tool].name, reason=r.reason, score=round(r.score, 6),
            tokens=int(tokens[r.tool]),
            for_tool=graph.tools[r.for_tool].name if r.for_tool >= 0 else "",
            for_input=graph.nodes[r.for_input].path if r.for_input >= 0 else "")
            for r in ranked)
        best = chains.best()
        steps = rank.all_steps(graph, chains, [r.tool for r in ranked])
        missing: tuple[str, ...] = ()
        notes: list[str] = []
        if chains.first >= 0 and best is None:
            missing = tuple(graph.nodes[d].path for d in chains.deficits)
            notes.append(f"no chain supplies every input of {graph.tools[chains.first].name}")
        if not tools:
            notes.append("the request anchors no tool")
        return Selection(
            request=request, tools=tools, chain=steps, missing=missing,
            held=tuple(sorted(known)), tokens=sum(t.tokens for t in tools),
            all_tokens=self.all_tokens, ms=(time.perf_counter() - started) * 1000,
            notes=tuple(notes))

