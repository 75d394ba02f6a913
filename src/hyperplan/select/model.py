"""What a selection returns: frozen records with no numpy in them, so that a host (an MCP
gateway, an agent framework's tool filter) can keep, compare and print them cheaply."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: :attr:`Selection.method` of a selection over the graph (context graph + DOE).
GRAPH_METHOD = "context-graph+doe"
#: :attr:`Selection.method` of a keyword (BM25) selection, made without the graph.
KEYWORD_METHOD = "bm25"


class Reason(StrEnum):
    """Why a tool is in a selection.

    * ``anchored``: the request names what it does (a seed hyperedge of Eq. 1, or the producer
      or consumer of a schema node the request anchors: "Seed Hyperedge/Node Anchoring");
    * ``producer``: it produces a required input of another selected tool (a backward hop of
      Eq. 2 or the prerequisite bound of the context graph);
    * ``chain``: Deficit-Oriented Expansion (Definition 6) put it in the support graph of an
      anchored tool: it supplies a value the state does not hold yet;
    * ``similar``: a place of the budget the context graph left, filled by the tool's
      similarity to the request alone;
    * ``follows``: it takes a value a call of the session returned (a link out of that
      call's outputs): the likely next step of the chain the agent is walking;
    * ``keyword``: no graph was used: the tool's name and description share words with the
      request (BM25), what a host serves while the graph is being built
      (:mod:`hyperplan.integrations.host`).
    """

    ANCHORED = "anchored"
    PRODUCER = "producer"
    CHAIN = "chain"
    SIMILAR = "similar"
    FOLLOWS = "follows"
    KEYWORD = "keyword"


@dataclass(frozen=True)
class SelectedTool:
    """One selected tool, in rank order.

    ``for_tool`` / ``for_input``: for a ``producer`` or ``chain`` tool, the tool whose input it
    supplies and that input's name (empty when unknown); for a ``follows`` tool, the called
    tool whose result it takes and its own input that takes it; ``tokens``: the token count of its
    definition as an OpenAI-style function (name, description, JSON-schema parameters);
    ``score``: the context graph's priority (0 for a tool only DOE proposed)."""

    name: str
    reason: Reason
    score: float
    tokens: int
    for_tool: str = ""
    for_input: str = ""

    def why(self) -> str:
        """The reason as one phrase: ``anchored by the request`` or ``producer of order_id
        for cancel_order``."""
        if self.reason is Reason.ANCHORED:
            return "anchored by the request"
        if self.reason is Reason.SIMILAR:
            return "similar to the request"
        if self.reason is Reason.KEYWORD:
            return "matches words of the request (BM25)"
        if self.reason is Reason.FOLLOWS:
            what = self.for_input or "an input"
            return f"follows {self.for_tool}: takes {what} from its result"
        what = self.for_input or "an input"
        verb = "chain" if self.reason is Reason.CHAIN else "producer"
        return f"{verb}: supplies {what} for {self.for_tool}" if self.for_tool else verb

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason.value, "why": self.why(),
                "score": self.score, "tokens": self.tokens}


@dataclass(frozen=True)
class ChainStep:
    """One call of the chain DOE proposes: ``tool`` and, per required input it reads from an
    earlier step, ``(input, producer tool, producer output)``."""

    tool: str
    reads: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Selection:
    """The answer of :meth:`hyperplan.select.Selector.select`.

    ``tools``: the selected tools, best first (at most the budget); ``chain``: the calls DOE
    proposes for the selected anchored tools, each anchor's producers before it, omitting
    what the state already holds; ``missing``: the required inputs of the best anchored tool
    that no tool or held value supplies (empty when its chain is complete); ``tokens``: the
    definition tokens of ``tools``; ``all_tokens``: those of every tool of the catalog (what
    sending them all costs; None while a host has not counted them yet); ``ms``: the
    selection's wall time, query embedding included; ``method``: how the tools were found,
    :data:`GRAPH_METHOD` (the state-conditioned context graph with DOE's chains) or
    :data:`KEYWORD_METHOD` (a host's BM25 fallback while the graph is being built)."""

    request: str
    tools: tuple[SelectedTool, ...]
    chain: tuple[ChainStep, ...] = ()
    missing: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    tokens: int = 0
    all_tokens: int | None = 0
    ms: float = 0.0
    notes: tuple[str, ...] = field(default=())
    method: str = GRAPH_METHOD

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def as_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "method": self.method,
            "tools": [t.as_dict() for t in self.tools],
            "chain": [{"tool": s.tool,
                       "reads": [{"input": i, "from": p, "output": o} for i, p, o in s.reads]}
                      for s in self.chain],
            "missing": list(self.missing),
            "held": list(self.held),
            "tokens": self.tokens,
            "all_tokens": self.all_tokens,
            "ms": round(self.ms, 3),
            "notes": list(self.notes),
        }
