"""Deficit-Oriented Expansion (HyperAgent, "Tool-Level Planning", Definitions 5–6, Eq. 3–5).

For a candidate terminal tool e_t, DOE beam-searches the hypergraph for a *Tool Support
Subgraph*: a set of tools whose outputs, together with the agent state, supply every required
input of every selected tool.

* The deficit set M (Definition 6) holds required input-side nodes of selected tools that are
  neither grounded by the state nor supported by a selected tool. It starts as I(e_t) minus the
  grounded nodes (Eq. 4 encodes it as a binary vector over V_I).
* Each expansion scores every tool by Ω(e, M) = Σ_{r∈M} ρ(e, r) (Eq. 5), i.e. m^T A_prod,
  computed from the rows of A_prod indexed by M (work proportional to the links of the
  deficits, not to |E|), and branches on the top-K tools with Ω > 0.
* Adding producer e_p resolves every deficit it supports (keeping the link used), then adds
  e_p's own ungrounded required inputs unless a selected tool that does not depend on e_p
  supports them (so support never runs in a cycle).
* Candidates are ranked by |M| (then fewer tools, then higher support) and the best B kept.
  Candidates with M = ∅ are complete. The search stops at the first depth that completes
  (those have the fewest tools), when the beam empties, or at ``max_depth``; a deficit with no
  producer outside the candidate kills it. Every expansion adds a new tool, so DOE always ends.
* Dead ends are pruned before they take a branch: a producer whose expansion leaves a deficit
  nothing outside the candidate produces is skipped for the next best (``prune_dead_ends``).

Refinements that need a per-tool ``relevance`` to the subtask (e.g. the cosine of tool and
request text; without it DOE is exactly the above): relevance is added to Ω when choosing the
top-K producers and to the support when ranking the beam (equal supports are otherwise broken
by tool id); the search goes ``extra_depth`` depths past the first complete one, and Support
Graph Selection prices every tool at ``size_cost`` instead of always taking the fewest tools
(:func:`best_support_graph`), so a chain through a step the request asks for beats a
shortcut. Missing links: with ``min_link_weight`` DOE only trusts links at least that heavy
and, if the terminal is then unsatisfiable, retries with links down to
``fallback_link_weight``; with ``open_world_weight`` that retry also lets every tool with an
output offer it for any deficit (open-world producers, :class:`_OpenProducers`), at that
weight times the type fit, so the relevance to the request picks the producer of a value no
inferred link explains (a generic input such as ``data`` or ``text`` fed by whatever the
request computed before). When one request has several independent goals, each goal's DOE
reads :func:`goal_relevance`: the other goals' relevance is explained away (set to 0).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from hyperplan._lazy import renamed_names
from hyperplan.graph.effects import write_tools
from hyperplan.graph.links import type_codes, type_fit
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.plan.grounding import Grounding, empty_grounding

# Offer weight of open-world producers where a caller opens them (``DOEConfig.open_world_weight``):
# chosen on the NESTFUL dev split of ``hyperplan eval chains`` (0.4-0.5 tied, 0.6 and up
# override real links), below the trusted link weight 0.5.
OPEN_WORLD_WEIGHT = 0.4


@dataclass(frozen=True)
class DOEConfig:
    """Parameters of Deficit-Oriented Expansion (module doc); how the defaults were chosen:
    docs/benchmarks.md, "Configuration history".

    top_k: producers branched on per expansion (K).
    beam_width: candidates kept per depth (B).
    max_depth: expansions at most.
    include_optional: optional inputs count as deficits too.
    relevance_weight: scale of a tool's relevance, added to Ω and to a candidate's support.
    prune_dead_ends: a producer whose expansion is a dead end is skipped for the next best.
    scan_limit: producers looked at per candidate for K viable ones (with prune_dead_ends).
    extra_depth: depths searched past the first complete graph (with a relevance).
    size_cost: price of each tool in Support Graph Selection (None: fewest tools first).
    min_link_weight: links trusted in the first search (0: every link).
    fallback_link_weight: weaker links retried for an unsatisfiable terminal (None: no retry).
    open_world_weight: open-world offer weight in that retry (None: none; needs a relevance;
        keep it below min_link_weight, so an offer never outweighs a trusted link).
    open_world_reads_only: offers only from tools without the effect ``<tool>.done``
        (:func:`hyperplan.graph.effects.write_tools`).
    """

    top_k: int = 5
    beam_width: int = 4
    max_depth: int = 8
    include_optional: bool = False
    relevance_weight: float = 1.0
    prune_dead_ends: bool = True
    scan_limit: int = 16
    extra_depth: int = 1
    size_cost: float | None = 2.0
    min_link_weight: float = 0.0
    fallback_link_weight: float | None = None
    open_world_weight: float | None = None
    open_world_reads_only: bool = False


@dataclass(frozen=True, order=True)
class Resolution:
    """Deficit ``deficit`` (an input node) resolved by ``producer`` through the link
    ``source`` -> ``deficit`` of weight ``weight``."""

    deficit: int
    producer: int
    source: int
    weight: float


@dataclass(frozen=True)
class SupportGraph:
    """A complete Tool Support Subgraph for ``terminal``: ``tools`` in execution order
    (producers before consumers) and the links that resolve each deficit."""

    terminal: int
    tools: tuple[int, ...]
    resolutions: tuple[Resolution, ...]

    @property
    def support(self) -> float:
        return float(sum(r.weight for r in self.resolutions))


@dataclass(frozen=True)
class DOEResult:
    """Outcome of DOE for one terminal tool: complete support graphs (fewest tools first), or
    none and the deficits of the best dead end in ``unsatisfiable``."""

    terminal: int
    complete: tuple[SupportGraph, ...]
    unsatisfiable: frozenset[int] = frozenset()
    expansions: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.complete)


class _Rank(NamedTuple):
    """How a candidate ranks in the beam, best first: fewest deficits |M|, then fewest
    tools, then highest support plus relevance (negated), then the sorted tool ids."""

    deficits: int
    tools: int
    neg_score: float
    ids: tuple[int, ...]


@dataclass(frozen=True)
class _Candidate:
    tools: frozenset[int]
    deficits: frozenset[int]
    resolutions: tuple[Resolution, ...]
    producers_of: tuple[tuple[int, frozenset[int]], ...] = field(default=())  # consumer -> deps

    relevance: float = 0.0  # sum of the producers' weighted relevance to the subtask

    @property
    def support(self) -> float:
        return float(sum(r.weight for r in self.resolutions))

    def rank(self) -> _Rank:
        return _Rank(len(self.deficits), len(self.tools), -(self.support + self.relevance),
                     tuple(sorted(self.tools)))


@dataclass(frozen=True, order=True)
class _Blocked:
    """A dead end met during the search: its blocking deficits (no producer outside the
    candidate), how many, and the rank of the candidate it was met at. Ordered as the dead
    end reported when nothing completes: fewest blocking deficits, then the best rank."""

    n_blocking: int
    rank: _Rank
    deficits: frozenset[int]


@dataclass(frozen=True)
class _Context:
    """What every expansion of one search reads: the graph, the agent state's grounding, the
    configuration, the rows of A_prod in use and the per-tool relevance bonus (None: no
    relevance)."""

    graph: Hypergraph
    grounding: Grounding
    cfg: DOEConfig
    rows: _Rows
    bonus: np.ndarray | None

    def needs(self, tool: int) -> list[int]:
        return _needs(self.graph, tool, self.grounding, self.cfg)

    def bonus_of(self, tool: int) -> float:
        return 0.0 if self.bonus is None else float(self.bonus[tool])


@dataclass(frozen=True)
class _Children:
    """A candidate's expansions kept for the next beam, and the dead ends skipped on the way
    (their blocking deficits)."""

    kept: list[_Candidate]
    dead_ends: list[frozenset[int]]


class _Rows:
    """Memoised rows of A_prod: ``rows(r)`` = {tool: ρ(tool, r)} for input node r, keeping
    only supports of at least ``min_weight`` (0: every link); with ``open_producers``, every
    row also holds their offers (the larger of offer and link counts)."""

    def __init__(self, graph: Hypergraph, min_weight: float = 0.0,
                 open_producers: _OpenProducers | None = None,
                 silent: np.ndarray | None = None) -> None:
        self.prod = graph.producer_matrix
        self.min_weight = min_weight
        self.silent = silent if silent is not None and silent.any() else None
        self.dropped = False  # whether a row read so far had a lighter support left out
        self.cache: dict[int, dict[int, float]] = {}
        self.open = open_producers

    def __call__(self, r: int) -> dict[int, float]:
        row = self.cache.get(r)
        if row is None:
            lo, hi = self.prod.indptr[r], self.prod.indptr[r + 1]
            tools, weights = self.prod.indices[lo:hi], self.prod.data[lo:hi]
            if self.min_weight > 0:
                keep = weights >= self.min_weight
                self.dropped |= not bool(keep.all())
                tools, weights = tools[keep], weights[keep]
            if self.silent is not None:
                speak = ~self.silent[tools]
                tools, weights = tools[speak], weights[speak]
            row = dict(zip(tools.tolist(), weights.tolist(), strict=True))
            if self.open is not None:
                merged = self.open.row(r)
                for t, w in row.items():
                    merged[t] = max(w, merged.get(t, 0.0))
                row = merged
            self.cache[r] = row
        return row

    def resolution(self, graph: Hypergraph, producer: int, deficit: int) -> Resolution:
        """How ``producer`` resolves ``deficit``: its heaviest link, else its open output."""
        if self.open is not None:
            offer = self.open.resolution(producer, deficit)
            if offer.weight >= self(deficit)[producer]:
                return offer
        return _best_link(graph, producer, deficit)

    def omega(self, graph: Hypergraph, deficits: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """Ω(e, M) over the kept supports (:func:`omega` when nothing is filtered)."""
        if self.min_weight <= 0 and self.open is None and self.silent is None:
            return omega(graph, deficits)
        tools: list[int] = []
        weights: list[float] = []
        for r in deficits:
            row = self(r)
            tools += row.keys()
            weights += row.values()
        if not tools:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        ids, inverse = np.unique(np.asarray(tools, dtype=np.int64), return_inverse=True)
        return ids.astype(np.int64), np.bincount(inverse, weights=np.asarray(weights))


class _OpenProducers:
    """Open-world producers for deficits no link supplies well (missing links): every tool
    with an output, other than the deficit's own tool, offers its best-fitting output at
    ``weight`` times the JSON-type fit of that output to the deficit
    (:func:`hyperplan.graph.links.type_fit`). Only meaningful with a relevance to the
    request, which then chooses among the offers."""

    def __init__(self, graph: Hypergraph, weight: float, reads_only: bool = False,
                 only: Collection[int] | None = None, silent: np.ndarray | None = None,
                 ) -> None:
        outs = [n for n in graph.nodes if n.kind is NodeKind.OUTPUT]
        self.graph, self.weight = graph, weight
        # tools that make no offer: (silent) those given, (reads_only) the writing ones,
        # and (only) the others
        self.silent = write_tools(graph) if reads_only else np.zeros(graph.n_tools, dtype=bool)
        if silent is not None:
            self.silent = self.silent | silent
        if only is not None:
            offering = np.zeros(graph.n_tools, dtype=bool)
            offering[list(only)] = True
            self.silent = self.silent | ~offering
        self.out_ids = np.array([n.id for n in outs], dtype=np.int64)
        self.out_tools = np.array([n.tool for n in outs], dtype=np.int64)
        self.out_types = type_codes([n.type for n in outs])
        self.collected = np.array(["[]" in n.path for n in outs], dtype=bool)
        self._offers: dict[int, np.ndarray] = {}

    def offers(self, deficit: int) -> np.ndarray:
        """The offer of every output node for ``deficit`` (memoised: a deficit's row and each
        of its resolutions read the same offers)."""
        offers = self._offers.get(deficit)
        if offers is None:
            fit = type_fit(self.out_types, self.collected, self.graph.nodes[deficit].type)
            offers = self._offers[deficit] = self.weight * np.asarray(fit, dtype=np.float64)
        return offers

    def row(self, deficit: int) -> dict[int, float]:
        """{tool: its best offer} for ``deficit``."""
        best = np.zeros(self.graph.n_tools)
        np.maximum.at(best, self.out_tools, self.offers(deficit))
        best[self.graph.nodes[deficit].tool] = 0.0
        best[self.silent] = 0.0
        tools = np.flatnonzero(best > 0)
        return dict(zip(tools.tolist(), best[tools].tolist(), strict=True))

    def resolution(self, producer: int, deficit: int) -> Resolution:
        """``producer``'s best offer for ``deficit`` as a resolution."""
        offers = np.where(self.out_tools == producer, self.offers(deficit), -np.inf)
        k = int(np.argmax(offers))
        return Resolution(deficit, producer, int(self.out_ids[k]), float(offers[k]))


def _needs(graph: Hypergraph, tool: int, grounding: Grounding, cfg: DOEConfig) -> list[int]:
    ports = graph.tools[tool].inputs if cfg.include_optional else graph.tools[tool].required
    return [r for r in ports if not grounding.grounded[r]]


def omega(graph: Hypergraph, deficits: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
    """Ω(e, M) for every tool with Ω > 0 (Eq. 5): ``(tool ids, scores)``, i.e. the non-zero
    entries of m^T A_prod, from the rows of A_prod indexed by the deficits."""
    rows = np.fromiter(deficits, dtype=np.int64)
    prod = graph.producer_matrix
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    starts, ends = prod.indptr[rows], prod.indptr[rows + 1]
    if int((ends - starts).sum()) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    idx = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])
    tools, inverse = np.unique(prod.indices[idx], return_inverse=True)
    return tools.astype(np.int64), np.bincount(inverse, weights=prod.data[idx])


def _best_link(graph: Hypergraph, producer: int, deficit: int) -> Resolution:
    best = max(
        (lk for lk in graph.links_into(deficit) if graph.nodes[lk.source].tool == producer),
        key=lambda lk: (lk.weight, -lk.source),
    )
    return Resolution(deficit, producer, best.source, best.weight)


def _dependants(cand: _Candidate, tool: int) -> set[int]:
    """Tools of the candidate that (transitively) consume ``tool``'s outputs."""
    consumers: dict[int, set[int]] = {}
    for consumer, deps in cand.producers_of:
        for dep in deps:
            consumers.setdefault(dep, set()).add(consumer)
    seen, stack = set(), [tool]
    while stack:
        for nxt in consumers.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _expand(ctx: _Context, cand: _Candidate, producer: int) -> _Candidate:
    """``cand`` with ``producer`` added (module doc): the deficits it supports resolved, its
    own required inputs supplied by a selected tool that does not depend on it, or added as
    deficits."""
    graph, rows = ctx.graph, ctx.rows
    resolved = [r for r in cand.deficits if producer in rows(r)]
    resolutions = [rows.resolution(graph, producer, r) for r in resolved]
    deps = {c: set(d) for c, d in cand.producers_of}
    for r in resolved:
        deps.setdefault(graph.nodes[r].tool, set()).add(producer)
    grown = _Candidate(cand.tools | {producer}, frozenset(), (),
                       tuple((c, frozenset(d)) for c, d in deps.items()))
    forbidden = _dependants(grown, producer) | {producer}
    new_deficits = []
    for r in ctx.needs(producer):
        row = rows(r)
        helpers = [e for e in cand.tools - forbidden if e in row]
        if helpers:
            helper = max(helpers, key=lambda e: (row[e], -e))
            resolutions.append(rows.resolution(graph, helper, r))
            deps.setdefault(producer, set()).add(helper)
        else:
            new_deficits.append(r)
    return _Candidate(
        tools=cand.tools | {producer},
        deficits=(cand.deficits - set(resolved)) | frozenset(new_deficits),
        resolutions=tuple(sorted((*cand.resolutions, *resolutions))),
        producers_of=tuple(sorted((c, frozenset(d)) for c, d in deps.items())),
        relevance=cand.relevance + ctx.bonus_of(producer),
    )


def _blocking(cand: _Candidate, rows: _Rows) -> frozenset[int]:
    """Deficits with no producer outside the candidate: the candidate can never complete."""
    return frozenset(r for r in cand.deficits if not rows(r).keys() - cand.tools)


# Producers tied at the top-K boundary whose own open inputs are counted to break the tie.
TIE_SCAN = 256


def _ranked_producers(ctx: _Context, cand: _Candidate, k: int) -> list[int]:
    """The k best tools outside the candidate by Ω(e, M) (plus ``bonus[e]``, the weighted
    relevance of e to the subtask, when given). Ties go to the producer with fewer inputs of
    its own still to supply (required inputs not grounded: fewer new deficits, so a smaller
    support graph), then to the lower tool id. Only the first max(k, :data:`TIE_SCAN`) tools
    scoring at least the k-th score are counted."""
    tools, scores = ctx.rows.omega(ctx.graph, cand.deficits)
    outside = np.array([int(e) not in cand.tools for e in tools], dtype=bool)
    tools, scores = tools[outside], scores[outside]
    if ctx.bonus is not None:
        scores = scores + ctx.bonus[tools]
    order = np.lexsort((tools, -scores))
    if order.size == 0:
        return []
    kth = scores[order[min(k, order.size) - 1]]
    head = order[: min(int((scores >= kth).sum()), max(k, TIE_SCAN))]
    if np.unique(scores[head]).size == head.size:  # no tie: Ω alone orders them
        return [int(e) for e in tools[head[:k]]]
    needs = np.array([len(ctx.needs(int(e))) for e in tools[head]])
    ranked = head[np.lexsort((tools[head], needs, -scores[head]))][:k]
    return [int(e) for e in tools[ranked]]


def _children(ctx: _Context, cand: _Candidate) -> _Children:
    """The candidate expanded by each of its top-K producers. With ``prune_dead_ends``,
    producers whose expansion leaves a deficit no tool outside the candidate supports (a
    dead end: an input nobody produces, or a cycle) are skipped and the next best producer
    taken instead, scanning at most ``scan_limit`` producers; the dead ends' blocking deficits
    are returned with the kept children."""
    cfg = ctx.cfg
    if not cfg.prune_dead_ends:
        return _Children([_expand(ctx, cand, p)
                          for p in _ranked_producers(ctx, cand, cfg.top_k)], [])
    out = _Children([], [])
    for p in _ranked_producers(ctx, cand, max(cfg.scan_limit, cfg.top_k)):
        child = _expand(ctx, cand, p)
        blocking = _blocking(child, ctx.rows)
        if blocking:
            out.dead_ends.append(blocking)
            continue
        out.kept.append(child)
        if len(out.kept) == cfg.top_k:
            break
    return out


def _execution_order(cand: _Candidate) -> tuple[int, ...]:
    deps = {c: set(d) for c, d in cand.producers_of}
    order: list[int] = []
    remaining = set(cand.tools)
    while remaining:
        ready = sorted(t for t in remaining if not (deps.get(t, set()) & remaining))
        if not ready:  # cannot happen: support never runs in a cycle
            ready = sorted(remaining)
        order.extend(ready)
        remaining -= set(ready)
    return tuple(order)


def expand(graph: Hypergraph, terminal: int, grounding: Grounding | None = None,
           config: DOEConfig | None = None, *, relevance: np.ndarray | None = None,
           offering: Collection[int] = (), silent: np.ndarray | None = None) -> DOEResult:
    """Run DOE for one candidate terminal tool (module doc). ``relevance`` (one score per
    tool, e.g. the cosine of tool and subtask text) adds ``relevance_weight`` times the
    relevance of a producer to its Ω when choosing the top-K producers and to a candidate's
    support when ranking the beam; Ω and |M| still come first.

    Missing links: DOE uses the links of weight >= ``min_link_weight``; when that leaves the
    terminal unsatisfiable and ``fallback_link_weight`` is lower, it searches once more with
    the weaker links too (a link too weak to trust by default is better than no plan). With
    ``open_world_weight`` and a relevance, that second search also opens every deficit to
    every tool with an output (:class:`_OpenProducers`): a missing link must not leave the
    terminal unsatisfiable when the request itself points at the producer.

    ``offering``: tools that make open-world offers in the first search too (with
    ``open_world_weight`` and a relevance), e.g. the calls stated values were meant for
    (:mod:`hyperplan.plan.stated`), whose outputs no inferred link may lead anywhere.

    ``silent``: per tool, whether it is never a producer in this search (e.g. the write tools
    the request does not ask for, :attr:`Hypergraph.unprompted_writers`); None: every tool
    may produce."""
    cfg = config or DOEConfig()
    # open-world offers need their weight and a relevance to choose among them
    open_weight = cfg.open_world_weight if cfg.relevance_weight and relevance is not None else None
    rows = _Rows(graph, cfg.min_link_weight, silent=silent)
    if offering and open_weight:
        rows = _Rows(graph, cfg.min_link_weight,
                     _OpenProducers(graph, open_weight, cfg.open_world_reads_only,
                                    only=offering, silent=silent), silent)
    result = _search(graph, terminal, grounding, cfg, relevance, rows)
    if result.ok:
        return result
    fallback = cfg.fallback_link_weight
    floor = cfg.min_link_weight if fallback is None else min(fallback, cfg.min_link_weight)
    if open_weight:
        retry_rows = _Rows(graph, floor, _OpenProducers(graph, open_weight,
                                                          cfg.open_world_reads_only,
                                                          silent=silent), silent)
    elif rows.dropped and floor < rows.min_weight:
        retry_rows = _Rows(graph, floor, silent=silent)
    else:
        return result
    retry = _search(graph, terminal, grounding, cfg, relevance, retry_rows)
    if retry.ok:
        return DOEResult(terminal, retry.complete, expansions=result.expansions + retry.expansions)
    return result


def _search(graph: Hypergraph, terminal: int, grounding: Grounding | None, cfg: DOEConfig,
            relevance: np.ndarray | None, rows: _Rows) -> DOEResult:
    state = grounding or empty_grounding(graph)
    start = _Candidate(frozenset({terminal}), frozenset(_needs(graph, terminal, state, cfg)), ())
    if not start.deficits:
        return DOEResult(terminal, (SupportGraph(terminal, (terminal,), ()),))
    bonus = None
    if relevance is not None and cfg.relevance_weight:
        bonus = cfg.relevance_weight * np.maximum(np.asarray(relevance, dtype=np.float64), 0.0)
    ctx = _Context(graph, state, cfg, rows, bonus)
    beam, expansions = [start], 0
    found: list[_Candidate] = []
    seen_complete: set[frozenset[int]] = set()
    depth_left: int | None = None  # depths still searched once a complete graph was found
    blocked: list[_Blocked] = []
    for _ in range(cfg.max_depth):
        children: dict[frozenset[int], _Candidate] = {}
        for cand in beam:
            blocking = _blocking(cand, rows)
            if blocking:
                blocked.append(_Blocked(len(blocking), cand.rank(), blocking))
                continue
            kids = _children(ctx, cand)
            blocked += [_Blocked(len(d), cand.rank(), d) for d in kids.dead_ends]
            for child in kids.kept:
                expansions += 1
                if child.tools not in children or child.rank() < children[child.tools].rank():
                    children[child.tools] = child
        ranked = sorted(children.values(), key=_Candidate.rank)
        found += [c for c in ranked if not c.deficits and c.tools not in seen_complete]
        seen_complete.update(c.tools for c in ranked if not c.deficits)
        if found and depth_left is None:
            depth_left = cfg.extra_depth if bonus is not None else 0
        if depth_left is not None:
            if depth_left == 0:
                break
            depth_left -= 1
        ranked = [c for c in ranked if c.deficits]
        if not ranked:
            break
        beam = ranked[: cfg.beam_width]
    if found:
        found.sort(key=lambda c: (len(c.tools), c.rank()))
        graphs = tuple(SupportGraph(terminal, _execution_order(c), c.resolutions) for c in found)
        return DOEResult(terminal, graphs, expansions=expansions)
    # the blocked candidate with the fewest blocking deficits, else the best of the last beam
    missing = min(blocked).deficits if blocked else beam[0].deficits
    return DOEResult(terminal, (), unsatisfiable=missing, expansions=expansions)


def goal_relevance(relevance: np.ndarray, goals: Sequence[int], goal: int) -> np.ndarray:
    """The relevance DOE uses for ``goal`` when it is one of several independent ``goals`` of
    one request (tool ids; our design, not the paper's): a copy of ``relevance`` with every other
    goal's entry set to 0. The request text that makes another goal relevant is explained by
    that goal's own role in the plan, so it is no evidence that the goal also produces this
    goal's inputs; a link can still make it a producer, only the relevance bonus is gone."""
    out = np.array(relevance, dtype=np.float64)
    others = [g for g in goals if g != goal]
    out[others] = 0.0
    return out


def rank_support_graphs(graphs: Iterable[SupportGraph], relevance: np.ndarray | None = None,
                        relevance_weight: float = 1.0,
                        size_cost: float | None = None) -> list[SupportGraph]:
    """Support Graph Selection's order, best first: fewest tools, then the highest total
    support — plus, when a per-tool ``relevance`` to the subtask is given (e.g. cosine of tool
    and subtask text), that relevance of the non-terminal tools times ``relevance_weight``,
    which separates producers that support a deficit equally well. The paper leaves this
    choice to the LLM; this is the deterministic stand-in.

    With ``size_cost`` c and a ``relevance``, the fewest-tools rule becomes a price: the graph
    with the highest ``support + relevance_weight * relevance - c * (tools - 1)`` comes first
    (ties: fewer tools), so a longer chain is chosen only when its extra producers are
    relevant enough to pay for themselves (the request asked for that step). Without
    ``relevance`` nothing can justify a longer chain and the fewest-tools rule applies.
    Remaining ties go by tool ids, so the order is total."""

    def score(g: SupportGraph) -> float:
        value = g.support
        if relevance is not None:
            value += relevance_weight * sum(max(float(relevance[t]), 0.0) for t in g.tools
                                            if t != g.terminal)
        return value

    if size_cost is None or relevance is None:
        return sorted(graphs, key=lambda g: (len(g.tools), -score(g), g.tools))
    return sorted(graphs, key=lambda g: (-(score(g) - size_cost * (len(g.tools) - 1)),
                                         len(g.tools), g.tools))


def best_support_graph(graphs: Iterable[SupportGraph], relevance: np.ndarray | None = None,
                       relevance_weight: float = 1.0,
                       size_cost: float | None = None) -> SupportGraph | None:
    """Support Graph Selection: the first graph of :func:`rank_support_graphs` (None when
    there is none)."""
    ranked = rank_support_graphs(graphs, relevance, relevance_weight, size_cost)
    return ranked[0] if ranked else None


@dataclass(frozen=True)
class SupportGraphChoice:
    """Support Graph Selection over candidate terminal tools (:func:`select_support_graph`):
    the chosen graph (fewest tools, then highest total support), the per-terminal results,
    and a readable reason when none is feasible. (Formerly ``Selection``, a name that now
    means only :class:`hyperplan.select.Selection`, what a selector returns.)"""

    chosen: SupportGraph | None
    results: tuple[DOEResult, ...]
    reason: str = ""


def select_support_graph(graph: Hypergraph, terminals: Sequence[int | str],
                         grounding: Grounding | None = None,
                         config: DOEConfig | None = None,
                         relevance: np.ndarray | None = None,
                         offering: Collection[int] = ()) -> SupportGraphChoice:
    """DOE for each candidate terminal tool (:func:`expand`, ``offering`` as there), then
    Support Graph Selection (:func:`best_support_graph`)."""
    ids = [graph.tool(t).id if isinstance(t, str) else t for t in terminals]
    cfg = config or DOEConfig()
    results = tuple(expand(graph, t, grounding, cfg, relevance=relevance, offering=offering)
                    for t in ids)
    best = best_support_graph((g for r in results for g in r.complete), relevance,
                              cfg.relevance_weight, cfg.size_cost)
    if best is not None:
        return SupportGraphChoice(best, results)
    missing = sorted({d for r in results for d in r.unsatisfiable})
    names = ", ".join(graph.node_name(d) for d in missing) or "no terminal tools"
    return SupportGraphChoice(None, results, f"unsatisfiable: {names}")


__getattr__ = renamed_names(__name__, {"Selection": "SupportGraphChoice"})
