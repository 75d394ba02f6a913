"""One planning policy: the Tool Support Subgraph of a request's terminals (HyperAgent,
"Tool-Level Planning": Deficit-Oriented Expansion, Definitions 5-6, then Support Graph
Selection), with the repairs the executor, the selector and the chains benchmark share.

:func:`plan_support` runs DOE (:func:`~hyperplan.plan.doe.expand`) for every terminal, then the
steps a :class:`Policy` switches on, each a small named function below. The paper's steps:

* :func:`deficit_oriented_expansion` — DOE for each terminal and Support Graph Selection
  (:func:`~hyperplan.plan.doe.rank_support_graphs`). ``relevance`` (the tools' relevance to
  the request, :func:`hyperplan.plan.relevance.request_relevance`) is read by DOE and the
  selection only with ``Policy.relevance_in_doe`` (ours; without it the selection is the
  paper's: fewest tools, then link support).

Ours (the paper does not cover them):

* :func:`open_world_producers` — an unsatisfiable plan is planned again with open-world
  producers (any tool's output, picked by the relevance; :func:`~hyperplan.plan.doe.expand`):
  a missing link must not leave the goal unplanned;
* the stated-value repairs (:mod:`hyperplan.plan.stated`): when the plan leaves a value the
  user stated unused, DOE runs again :func:`release_contested` (the plan's inputs that share a
  stated name with the tool the value was probably stated for are released),
  :func:`favour_claimants` (the most relevant such tool favoured), and
  :func:`offer_claimants` (it also offers its outputs open-world, never displacing a tool that
  takes a stated value); each new plan is kept only if it uses more stated values;
* :func:`attach_claimants` — a claimant that takes a still unused value as a required input
  and has all its inputs joins the plan as it is.

How terminals combine (:class:`Goals`) is the caller's: a subtask's candidate terminals are
alternatives (``ANY``: the best support graph among them), a request's terminals are all
wanted (``ALL``: every terminal's support graph, united).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np

from hyperplan.graph.effects import write_tools
from hyperplan.graph.model import Hypergraph
from hyperplan.plan.doe import (
    OPEN_WORLD_WEIGHT,
    DOEConfig,
    DOEResult,
    SupportGraph,
    expand,
    goal_relevance,
    rank_support_graphs,
)
from hyperplan.plan.grounding import Grounding
from hyperplan.plan.stated import (
    CLAIMANT_BONUS,
    attachable_claimants,
    best_claimants,
    favour,
    keeps_takers,
    release_unused,
    uses_more,
)


class Goals(StrEnum):
    """How the terminals of one plan combine: ``any`` one of them achieves the goal (a
    subtask's candidate terminals; the plan is the best support graph among them), or ``all``
    of them are wanted (a request's terminals; the plan is the union of their graphs)."""

    ANY = "any"
    ALL = "all"


@dataclass(frozen=True)
class Policy:
    """Which steps of :func:`plan_support` run (module doc); all but DOE and Support Graph
    Selection are ours.

    relevance_in_doe: DOE and Support Graph Selection read the request relevance (off: the
        paper's selection, fewest tools then link support; the steps that need a relevance
        read it either way).
    independent_goals: with ``Goals.ALL``, each terminal's DOE reads
        :func:`~hyperplan.plan.doe.goal_relevance` (the others' relevance is 0).
    open_world: :func:`open_world_producers`.
    release_contested, favour_claimants, offer_claimants, attach_claimants: the steps of
        those names.
    reading_claimants_only: the guard of the claimant steps: a claimant that writes
        (:func:`~hyperplan.graph.effects.write_tools`) is never favoured, offered or attached
        (a state-changing call is never added just to use a stated value).
    """

    relevance_in_doe: bool = False
    independent_goals: bool = False
    open_world: bool = False
    release_contested: bool = False
    favour_claimants: bool = False
    offer_claimants: bool = False
    attach_claimants: bool = False
    reading_claimants_only: bool = True

    def steps(self) -> tuple[str, ...]:
        """The names of the steps this policy runs, in order (the guard when it guards a
        claimant step)."""
        names = ("relevance_in_doe", "independent_goals", "open_world", "release_contested",
                 "favour_claimants", "offer_claimants", "attach_claimants")
        on = tuple(n for n in names if getattr(self, n))
        claimants = self.favour_claimants or self.offer_claimants or self.attach_claimants
        return (*on, "reading_claimants_only") if claimants and self.reading_claimants_only \
            else on


# The paper's Tool-Level Planning: DOE and Support Graph Selection, nothing else.
PAPER = Policy()
# The agent's (execute/subtask.py): every repair of ours, the paper's Support Graph Selection
# (with the request relevance in DOE the demo's LLM-free goals drop from 26/26 to 21/26:
# relevant-sounding longer chains beat its minimal ones).
AGENT = Policy(open_world=True, release_contested=True, favour_claimants=True,
               offer_claimants=True)
# The selector's (select/rank.py): DOE and the selection read the request relevance.
SELECTOR = Policy(relevance_in_doe=True)
# The chains benchmark's (eval/chains.py): the agent's, with the relevance in DOE, each
# terminal's DOE blind to the other terminals' relevance, the attachable claimants added
# (chosen on the NesTools and NESTFUL dev splits; docs/benchmarks.md, "Stated values") and
# writing claimants allowed, as before this module (a plan is only scored here, never run;
# the agent's guard ties on the dev splits and, measured once on heldout, loses: NesTools
# exact 0.904 -> 0.890, Seal-Tools producer recall 0.692 -> 0.577).
CHAINS = replace(AGENT, relevance_in_doe=True, independent_goals=True, attach_claimants=True,
                 reading_claimants_only=False)


class PolicyName(StrEnum):
    """The named policies above, for a command line or a config file: ``paper``
    (:data:`PAPER`), ``agent`` (:data:`AGENT`), ``selector`` (:data:`SELECTOR`), ``chains``
    (:data:`CHAINS`)."""

    PAPER = "paper"
    AGENT = "agent"
    SELECTOR = "selector"
    CHAINS = "chains"

    @property
    def policy(self) -> Policy:
        return _POLICIES[self]


_POLICIES = {PolicyName.PAPER: PAPER, PolicyName.AGENT: AGENT, PolicyName.SELECTOR: SELECTOR,
             PolicyName.CHAINS: CHAINS}


@dataclass(frozen=True)
class SupportPlan:
    """What :func:`plan_support` found: per terminal its DOE result and its complete support
    graphs in selection order; ``chosen``: the best graph of all (``Goals.ANY``; None when
    every terminal is unsatisfiable); ``attached``: tools :func:`attach_claimants` added;
    ``config``: the DOE configuration of the last kept plan; ``via``: the steps whose plan was
    kept, in order."""

    goals: Goals
    terminals: tuple[int, ...]
    results: tuple[DOEResult, ...]
    ranked: tuple[tuple[SupportGraph, ...], ...]
    chosen: SupportGraph | None
    config: DOEConfig
    attached: frozenset[int] = frozenset()
    via: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """ANY: a graph was chosen; ALL: every terminal is satisfiable."""
        if self.goals is Goals.ANY:
            return self.chosen is not None
        return all(r.ok for r in self.results)

    @property
    def tools(self) -> tuple[int, ...]:
        """The plan's tools: the chosen graph's (ANY), or the union of every terminal's best
        graph, an unsatisfiable terminal standing for itself (ALL), with the attached tools."""
        return self.union(1)[0]

    def union(self, alternatives: int) -> list[tuple[int, ...]]:
        """Per n = 1..``alternatives``, the plan's tools with each terminal's n best graphs
        (n = 1: :attr:`tools`; ANY: the chosen graph for every n)."""
        if self.goals is Goals.ANY:
            base = self.chosen.tools if self.chosen is not None else ()
            return [tuple(dict.fromkeys((*base, *sorted(self.attached))))] * alternatives
        out: list[set[int]] = [set(self.attached) for _ in range(alternatives)]
        for terminal, graphs in zip(self.terminals, self.ranked, strict=True):
            widened: set[int] = {terminal} if not graphs else set()
            for n, tools in enumerate(out):
                if n < len(graphs):
                    widened |= set(graphs[n].tools)
                tools |= widened
        return [tuple(sorted(tools)) for tools in out]

    def best(self, terminal: int) -> SupportGraph | None:
        """The selected support graph of ``terminal`` (None: unsatisfiable or not planned)."""
        for t, graphs in zip(self.terminals, self.ranked, strict=True):
            if t == terminal:
                return graphs[0] if graphs else None
        return None

    def reason(self, graph: Hypergraph) -> str:
        """Why nothing was chosen: the deficits DOE could not resolve."""
        missing = sorted({d for r in self.results for d in r.unsatisfiable})
        names = ", ".join(graph.node_name(d) for d in missing) or "no terminal tools"
        return f"unsatisfiable: {names}"


@dataclass(frozen=True)
class _Run:
    """What every step of one :func:`plan_support` call reads."""

    graph: Hypergraph
    terminals: tuple[int, ...]
    goals: Goals
    policy: Policy
    relevance: np.ndarray | None
    stated: frozenset[str]
    silent: np.ndarray | None
    timings: list[float] = field(default_factory=list)

    @property
    def plain_relevance(self) -> np.ndarray | None:
        """The relevance DOE reads outside the steps that need one (Policy.relevance_in_doe)."""
        return self.relevance if self.policy.relevance_in_doe else None


def plan_support(graph: Hypergraph, terminals: Sequence[int | str], grounding: Grounding,
                 relevance: np.ndarray | None, policy: Policy = PAPER, *,
                 config: DOEConfig | None = None, goals: Goals = Goals.ANY,
                 stated: Collection[str] = (), asked: Sequence[int] | None = None,
                 timings: list[float] | None = None) -> SupportPlan:
    """The support graph(s) of ``terminals`` under ``policy`` (module doc).

    ``relevance``: per tool of ``graph``, its relevance to the request (None: the steps that
    need one do not run); ``stated``: the bare names of the values the user stated (the
    stated-value repairs read them); ``asked``: the tools the request asks for — when given,
    a write tool outside them is never a producer (:attr:`Hypergraph.unprompted_writers`);
    ``timings``: receives the milliseconds of every DOE run."""
    silent = None
    if asked is not None:
        silent = graph.unprompted_writers.copy()
        silent[list(asked)] = False
    ids = tuple(graph.tool(t).id if isinstance(t, str) else t for t in terminals)
    run = _Run(graph, ids, goals, policy, relevance, frozenset(stated), silent,
               timings if timings is not None else [])
    cfg = config or DOEConfig()
    plan = deficit_oriented_expansion(run, grounding, run.plain_relevance, cfg)
    if policy.open_world and not plan.ok:
        plan = open_world_producers(run, plan, grounding)
    if not plan.tools:
        return plan
    if policy.release_contested:
        plan = release_contested(run, plan, grounding)
    if policy.favour_claimants:
        plan = favour_claimants(run, plan, grounding)
    if policy.offer_claimants:
        plan = offer_claimants(run, plan, grounding)
    if policy.attach_claimants:
        plan = attach_claimants(run, plan, grounding)
    return plan


def deficit_oriented_expansion(run: _Run, grounding: Grounding, relevance: np.ndarray | None,
                               config: DOEConfig,
                               offering: Collection[int] = ()) -> SupportPlan:
    """DOE for each terminal (Definitions 5-6) and Support Graph Selection: per terminal its
    complete graphs in selection order, and the best of all (``chosen``)."""
    results: list[DOEResult] = []
    ranked: list[tuple[SupportGraph, ...]] = []
    independent = run.goals is Goals.ALL and run.policy.independent_goals
    for terminal in run.terminals:
        own = relevance
        if relevance is not None and independent:
            own = goal_relevance(relevance, list(run.terminals), terminal)
        started = time.perf_counter()
        result = expand(run.graph, terminal, grounding, config, relevance=own,
                        offering=offering, silent=run.silent)
        run.timings.append((time.perf_counter() - started) * 1000)
        results.append(result)
        ranked.append(tuple(rank_support_graphs(result.complete, own, config.relevance_weight,
                                                config.size_cost)))
    complete = [g for r in results for g in r.complete]
    best = rank_support_graphs(complete, relevance, config.relevance_weight, config.size_cost)
    return SupportPlan(run.goals, run.terminals, tuple(results), tuple(ranked),
                       best[0] if best else None, config)


def open_config(config: DOEConfig) -> DOEConfig:
    """``config`` with open-world producers from reading tools, unless it has its own
    open-world weight (ours; :data:`~hyperplan.plan.doe.OPEN_WORLD_WEIGHT`)."""
    if config.open_world_weight:
        return config
    return replace(config, open_world_weight=OPEN_WORLD_WEIGHT, open_world_reads_only=True)


def open_world_producers(run: _Run, plan: SupportPlan, grounding: Grounding) -> SupportPlan:
    """Ours: an unsatisfiable ``plan`` planned again with open-world producers picked by the
    relevance (with a configuration that has an open-world weight, DOE already did this)."""
    if run.relevance is None or plan.config.open_world_weight:
        return plan
    retry = deficit_oriented_expansion(run, grounding, run.relevance, open_config(plan.config))
    return _kept(retry, "open_world_producers") if retry.ok else plan


def release_contested(run: _Run, plan: SupportPlan, grounding: Grounding) -> SupportPlan:
    """Ours: when ``plan`` leaves a stated value unused, DOE again with the plan's inputs
    released that share a stated name with a claimant of that value
    (:func:`~hyperplan.plan.stated.release_unused`)."""
    released = release_unused(run.graph, plan.tools, run.stated, grounding)
    if released is None:
        return plan
    retry = deficit_oriented_expansion(run, released, run.plain_relevance, plan.config)
    return _better(run, plan, retry, "release_contested")


def favour_claimants(run: _Run, plan: SupportPlan, grounding: Grounding) -> SupportPlan:
    """Ours: when ``plan`` still leaves stated values unused, DOE again with the contested
    inputs released and the relevance of the best claimant of each value raised by
    :data:`~hyperplan.plan.stated.CLAIMANT_BONUS`."""
    wanted = _claimants(run, plan)
    if run.relevance is None or not wanted:
        return plan
    released = release_unused(run.graph, plan.tools, run.stated, grounding) or grounding
    retry = deficit_oriented_expansion(run, released,
                                       favour(run.relevance, wanted, CLAIMANT_BONUS), plan.config)
    return _better(run, plan, retry, "favour_claimants")


def offer_claimants(run: _Run, plan: SupportPlan, grounding: Grounding) -> SupportPlan:
    """Ours: the best claimants of the values ``plan`` still leaves unused are favoured and
    offer their outputs open-world (no inferred link may lead from the call a value was
    stated for); the new plan must also keep every tool of ``plan`` that takes a stated value
    (:func:`~hyperplan.plan.stated.keeps_takers`)."""
    wanted = _claimants(run, plan)
    if run.relevance is None or not wanted:
        return plan
    retry = deficit_oriented_expansion(run, grounding,
                                       favour(run.relevance, wanted, CLAIMANT_BONUS),
                                       open_config(plan.config), offering=wanted)
    if not keeps_takers(run.graph, plan.tools, retry.tools, run.stated):
        return plan
    return _better(run, plan, retry, "offer_claimants")


def attach_claimants(run: _Run, plan: SupportPlan, grounding: Grounding) -> SupportPlan:
    """Ours: the claimants of values still unused that can join the plan as they are
    (:func:`~hyperplan.plan.stated.attachable_claimants`: a call that feeds the plan through an
    input no schema or link names, such as an optional ``business_id``)."""
    if run.relevance is None:
        return plan
    added = attachable_claimants(run.graph, plan.tools, run.stated, grounding, run.relevance)
    if run.policy.reading_claimants_only:
        writes = write_tools(run.graph)
        added = {t for t in added if not writes[t]}
    if not added:
        return plan
    return replace(plan, attached=plan.attached | added, via=(*plan.via, "attach_claimants"))


def _claimants(run: _Run, plan: SupportPlan) -> set[int]:
    """The best claimants of the stated values ``plan`` leaves unused (none without a
    relevance), without the writing ones under ``Policy.reading_claimants_only``."""
    if run.relevance is None or not run.stated:
        return set()
    wanted = best_claimants(run.graph, plan.tools, run.stated, run.relevance)
    if wanted and run.policy.reading_claimants_only:
        writes = write_tools(run.graph)
        wanted = {t for t in wanted if not writes[t]}
    return wanted


def _better(run: _Run, plan: SupportPlan, retry: SupportPlan, step: str) -> SupportPlan:
    """``retry`` (marked as found by ``step``) when it uses more stated values than ``plan``
    (:func:`~hyperplan.plan.stated.uses_more`; an empty retry never does), else ``plan``."""
    if retry.tools and uses_more(run.graph, retry.tools, plan.tools, run.stated):
        return _kept(replace(retry, attached=plan.attached, via=plan.via), step)
    return plan


def _kept(plan: SupportPlan, step: str) -> SupportPlan:
    return replace(plan, via=(*plan.via, step))
