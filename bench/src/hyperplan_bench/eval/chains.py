"""Producer-chain benchmark: can DOE find the tools a task's gold calls use?

For each task, the terminal tools are the gold calls whose outputs no other call consumes; the
known values are the literal arguments of the gold calls, given as parameter names without
saying which tool they belong to (:func:`hyperplan.plan.grounding.ground`, rule 2). DOE runs
for each terminal over the graph built from the suite's whole tool pool (never from the gold
calls) and the chosen support graphs are united. DOE gets the cosine of each tool's text to
the task text as its relevance (producer ranking, beam ranking and support-graph selection,
:func:`hyperplan.plan.doe.expand`); while one of several independent terminals is planned, the
others' relevance is 0 (:func:`hyperplan.plan.doe.goal_relevance`; τ²'s terminals, its write
actions, feed each other and keep theirs). DOE trusts links of weight >= ``LINK_RETENTION``,
falling back to weaker inferred links and open-world producers (any tool's output, chosen by
that relevance; :func:`hyperplan.plan.doe.expand`) only for a terminal that is otherwise
unsatisfiable. The stated-value repairs are those of the planner the agent runs
(:func:`hyperplan.plan.support.plan_support`, policy :data:`hyperplan.plan.support.CHAINS`):
when the answer leaves a stated value unused, DOE runs again with the plan's inputs released
that share a stated name with the tool the value was probably stated for, then, if values are
still unused, with that tool favoured, and last with it also offering its outputs open-world,
never displacing a tool that takes a stated value; a claimant that takes a still unused value
as a required input and has all its inputs then joins the plan as it is
(:func:`plan_terminals`, :mod:`hyperplan.plan.stated`). ``exact`` is the fraction of
tasks whose predicted tool set equals the gold call tools; producer precision and recall
compare the non-terminal tools, summed over tasks. ``doe_agent_policy`` scores the same
function under the agent's own policy (:data:`hyperplan.plan.support.AGENT`: Support Graph
Selection without the request relevance and no attached claimants; each terminal planned as
its own goal, as the agent plans each sub-goal).

Baselines on the same graph and grounding: ``all_producers`` (the unpruned backward closure
over producers of every ungrounded required input) and ``semantic_topk`` (the paper's
Variant 2: the K tools whose descriptions are closest to the task text, plus the terminals).
Each method's size knob is also swept (DOE's n best support graphs per terminal, K, the
closure's depth) into ``operating_points``, and ``equal_recall`` compares DOE with each
baseline where their recalls meet (:mod:`hyperplan_bench.eval.operating_points`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.graph.build import build_graph
from hyperplan.graph.links import LinkConfig, TextEmbedder
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.text import name_tokens
from hyperplan.plan.doe import OPEN_WORLD_WEIGHT, DOEConfig
from hyperplan.plan.grounding import Grounding, ground
from hyperplan.plan.support import AGENT as AGENT_POLICY
from hyperplan.plan.support import CHAINS as CHAINS_POLICY
from hyperplan.plan.support import Goals, Policy, plan_support
from hyperplan_bench.eval.links import load_suite, split_tasks
from hyperplan_bench.eval.operating_points import (
    CLOSURE_DEPTHS,
    DOE_ALTERNATIVES,
    SEMANTIC_KS,
    equal_recall_comparison,
)
from hyperplan_bench.importers.gold import GoldTask


def terminals_of(task: GoldTask) -> list[str]:
    """The task's own terminals when the benchmark defines them (τ²: the write actions), else
    the tools of the gold calls whose outputs no other call consumes."""
    if task.terminals:
        return list(task.terminals)
    producers = {f.producer for f in task.flows}
    return list(dict.fromkeys(c.tool for c in task.calls if c.tool not in producers))


def known_names(task: GoldTask) -> set[str]:
    return {name for call in task.calls for name, _ in call.literals}


@dataclass
class _Tally:
    tasks: int = 0
    exact: int = 0
    unsatisfiable: int = 0
    hits: int = 0
    predicted: int = 0
    gold: int = 0
    ms: list[float] = field(default_factory=list)

    def add(self, predicted: set[str], gold_tools: set[str], terminals: set[str],
            satisfiable: bool = True) -> None:
        self.tasks += 1
        self.exact += predicted == gold_tools
        self.unsatisfiable += not satisfiable
        pred_p, gold_p = predicted - terminals, gold_tools - terminals
        self.hits += len(pred_p & gold_p)
        self.predicted += len(pred_p)
        self.gold += len(gold_p)

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "exact": round(self.exact / max(self.tasks, 1), 4),
            "producer_recall": round(self.hits / self.gold, 4) if self.gold else 1.0,
            "producer_precision": round(self.hits / self.predicted, 4) if self.predicted else 1.0,
            "unsatisfiable": round(self.unsatisfiable / max(self.tasks, 1), 4),
        }
        if self.ms:
            result["ms_p50"] = round(float(np.percentile(self.ms, 50)), 3)
            result["ms_p99"] = round(float(np.percentile(self.ms, 99)), 3)
        return result


# Link policy of the chains benchmark, chosen on the NesTools dev split: DOE trusts links of
# weight >= LINK_RETENTION and, for a terminal that is unsatisfiable with those, falls back to
# every inferred link of weight >= LINK_FALLBACK (missing links: a weak link beats no plan)
# together with open-world producers offering any output at OPEN_WORLD x type fit, ranked by
# their relevance to the task (chosen on the NESTFUL dev split, NesTools dev unchanged).
LINK_RETENTION = 0.5
LINK_FALLBACK = 0.1
OPEN_WORLD = OPEN_WORLD_WEIGHT


def chain_links(config: DOEConfig) -> LinkConfig:
    """The link inference of the chains graph: every link down to DOE's fallback weight."""
    floor = config.fallback_link_weight
    base = LinkConfig()
    if floor is None or floor >= base.min_weight:
        return base
    return replace(base, min_weight=floor)


def plan_terminals(graph: Hypergraph, terminals: list[str], known: set[str],
                   grounding: Grounding, config: DOEConfig, timings: list[float],
                   relevance: np.ndarray | None = None, alternatives: int = 1,
                   independent: bool = True, policy: Policy = CHAINS_POLICY,
                   ) -> tuple[list[set[str]], bool]:
    """The planner the agent shares (:func:`hyperplan.plan.support.plan_support`) on one
    task: every terminal wanted (``Goals.ALL``), the stated values ``known``; per n =
    1..``alternatives``, the union over terminals of each terminal's n best support graphs
    (n = 1 is DOE's answer, larger n trade precision for recall; an unsatisfiable terminal
    contributes itself alone), and whether every terminal was satisfiable. With
    ``independent`` terminals (no terminal consumes another's output, as when terminals are
    the calls whose outputs nothing consumes) each one's DOE reads
    :func:`~hyperplan.plan.doe.goal_relevance` (``Policy.independent_goals``)."""
    policy = replace(policy, independent_goals=policy.independent_goals and independent)
    if not config.open_world_weight:  # the benchmark's --open-world none: no open world at all
        policy = replace(policy, open_world=False, offer_claimants=False)
    plan = plan_support(graph, terminals, grounding, relevance, policy, config=config,
                        goals=Goals.ALL, stated=known, timings=timings)
    unions = [{graph.tools[t].name for t in tools} for tools in plan.union(alternatives)]
    return unions, plan.ok


def backward_closure(graph: Hypergraph, terminals: list[str], grounding: Grounding,
                     max_depth: int = 8, min_weight: float = 0.0) -> set[str]:
    """The ``all_producers`` baseline: every producer (through a link of weight at least
    ``min_weight``) of every ungrounded required input, recursively up to ``max_depth``
    hops."""
    seen = {graph.tool_index[t] for t in terminals}
    frontier = set(seen)
    prod = graph.producer_matrix
    for _ in range(max_depth):
        rows = [r for t in frontier for r in graph.tools[t].required if not grounding.grounded[r]]
        block = prod[rows] if rows else None
        found = (set(block.indices[block.data >= min_weight].tolist()) if block is not None
                 else set())
        frontier = found - seen
        if not frontier:
            break
        seen |= frontier
    return {graph.tools[t].name for t in seen}


class SemanticRanker:
    """Cosine of the task text against tool texts (``name words: description``)."""

    def __init__(self, graph: Hypergraph, embedder: TextEmbedder | None) -> None:
        self.embedder = embedder
        texts = [f"{' '.join(name_tokens(t.name))}: {t.description}" for t in graph.tools]
        self.vectors = embedder.embed(texts) if embedder is not None else None
        self.names = [t.name for t in graph.tools]

    def scores(self, text: str) -> np.ndarray | None:
        if self.vectors is None or self.embedder is None:
            return None
        return np.asarray(self.vectors @ self.embedder.embed([text])[0], dtype=np.float64)

    def top(self, text: str, k: int) -> list[str]:
        return self.ranking(self.scores(text), k)

    def ranking(self, scores: np.ndarray | None, k: int) -> list[str]:
        """The ``k`` best tool names by ``scores`` (:meth:`scores`; none without them)."""
        if scores is None:
            return []
        return [self.names[i] for i in np.argsort(-scores, kind="stable")[:k]]


def evaluate_chains(
    suite: str,
    data: str | Path,
    *,
    embedder: TextEmbedder | None,
    config: DOEConfig | None = None,
    semantic_k: int = 5,
    link_config: LinkConfig | None = None,
    split: str = "all",
    progress: Callable[[str, int, int], None] | None = None,
    link_retention: float = LINK_RETENTION,
    link_fallback: float | None = LINK_FALLBACK,
    open_world: float | None = OPEN_WORLD,
    learn_from: str | None = None,
) -> dict[str, Any]:
    """Run the chains benchmark; returns the JSON contract of ``hyperplan eval chains``.

    The graph keeps every inferred link of weight >= ``link_fallback`` (unless ``link_config``
    is given); DOE runs with ``min_link_weight = link_retention``,
    ``fallback_link_weight = link_fallback`` and ``open_world_weight = open_world`` (these
    override ``config``), and the ``all_producers`` baseline follows links >=
    ``link_retention``. With ``learn_from`` (a split other than ``split``) the graph first
    learns the gold flows of that split's tasks (:mod:`hyperplan_bench.eval.learning`)."""
    from hyperplan_bench.eval.learning import check_learning_split, learned

    check_learning_split(learn_from, split)
    n_learned = 0
    started = time.perf_counter()
    cfg = replace(config or DOEConfig(), min_link_weight=link_retention,
                  fallback_link_weight=link_fallback, open_world_weight=open_world)
    tallies = {"doe": _Tally(), "all_producers": _Tally(), "semantic_topk": _Tally(),
               "doe_agent_policy": _Tally()}
    curves = _Curves()
    for catalog, tasks in load_suite(suite, data).parts:
        graph = build_graph(catalog, embedder=embedder, config=link_config or chain_links(cfg),
                            progress=progress)
        if learn_from is not None:
            graph, used = learned(graph, split_tasks(tasks, learn_from))
            n_learned += used
        ranker = SemanticRanker(graph, embedder)
        _run_tasks(graph, split_tasks(tasks, split), ranker, cfg, semantic_k, tallies, curves)
    return {
        "suite": suite,
        **({"domain": str(data)} if suite == "tau2" else {}),
        **_scores(tallies, curves),
        "split": split,
        "learned_from": learn_from,
        "learned_flows": n_learned,
        "doe_config": _config_doc(cfg),
        "embedder": getattr(embedder, "name", None),
        "seconds": round(time.perf_counter() - started, 2),
    }


def _scores(tallies: dict[str, _Tally], curves: _Curves) -> dict[str, Any]:
    """The headline (DOE's tally), every method's tally and the swept operating points."""
    doe = tallies["doe"].summary()
    methods = {name: tally.summary() for name, tally in tallies.items()}
    return {
        "n_tasks": tallies["doe"].tasks,
        "exact": doe["exact"],
        "producer_recall": doe["producer_recall"],
        "producer_precision": doe["producer_precision"],
        "unsatisfiable": doe["unsatisfiable"],
        "doe_ms_p50": doe.get("ms_p50", 0.0),
        "doe_ms_p99": doe.get("ms_p99", 0.0),
        "methods": methods,
        "operating_points": curves.points(),
        "equal_recall": curves.comparison(methods),
    }


def _config_doc(cfg: DOEConfig) -> dict[str, Any]:
    return {"top_k": cfg.top_k, "beam_width": cfg.beam_width, "max_depth": cfg.max_depth,
            "relevance_weight": cfg.relevance_weight, "extra_depth": cfg.extra_depth,
            "size_cost": cfg.size_cost, "min_link_weight": cfg.min_link_weight,
            "fallback_link_weight": cfg.fallback_link_weight,
            "open_world_weight": cfg.open_world_weight}


@dataclass
class _Curves:
    """The swept operating points (:mod:`hyperplan_bench.eval.operating_points`): one tally per
    knob value and method."""

    doe: dict[int, _Tally] = field(default_factory=lambda: _tallies(DOE_ALTERNATIVES))
    semantic_topk: dict[int, _Tally] = field(default_factory=lambda: _tallies(SEMANTIC_KS))
    all_producers: dict[int, _Tally] = field(default_factory=lambda: _tallies(CLOSURE_DEPTHS))

    def points(self) -> dict[str, list[dict[str, Any]]]:
        return {"doe": _points(self.doe, "n"), "semantic_topk": _points(self.semantic_topk, "k"),
                "all_producers": _points(self.all_producers, "depth")}

    def comparison(self, methods: dict[str, dict[str, Any]]) -> dict[str, Any]:
        points = self.points()
        return {name: equal_recall_comparison(points["doe"], methods[name], points[name], knob)
                for name, knob in (("semantic_topk", "k"), ("all_producers", "depth"))}


def _tallies(knobs: Sequence[int]) -> dict[int, _Tally]:
    return {k: _Tally() for k in knobs}


def _points(tallies: dict[int, _Tally], knob: str) -> list[dict[str, Any]]:
    return [{knob: k, **tally.summary()} for k, tally in tallies.items()]


def _run_tasks(graph: Hypergraph, tasks: Sequence[GoldTask], ranker: SemanticRanker,
               cfg: DOEConfig, semantic_k: int, tallies: dict[str, _Tally],
               curves: _Curves) -> None:
    for task in tasks:
        terminals = [t for t in terminals_of(task) if t in graph.tool_index]
        if terminals and {c.tool for c in task.calls} <= set(graph.tool_index):
            _score_task(graph, task, terminals, ranker, cfg, semantic_k, tallies, curves)


def _score_task(graph: Hypergraph, task: GoldTask, terminals: list[str],
                ranker: SemanticRanker, cfg: DOEConfig, semantic_k: int,
                tallies: dict[str, _Tally], curves: _Curves) -> None:
    """DOE and both baselines on one task: the headline tallies and every operating point."""
    gold_tools = {c.tool for c in task.calls}
    known = known_names(task)
    grounding = ground(graph, known)
    term_set = set(terminals)

    def add(tally: _Tally, predicted: set[str], ok: bool = True) -> None:
        tally.add(predicted, gold_tools, term_set, ok)

    relevance = ranker.scores(task.text)
    doe, ok = plan_terminals(graph, terminals, known, grounding, cfg, tallies["doe"].ms,
                             relevance, max(DOE_ALTERNATIVES), independent=not task.terminals)
    add(tallies["doe"], doe[0], ok)
    agent, agent_ok = plan_terminals(graph, terminals, known, grounding, cfg,
                                     tallies["doe_agent_policy"].ms, relevance,
                                     independent=not task.terminals, policy=AGENT_POLICY)
    add(tallies["doe_agent_policy"], agent[0], agent_ok)
    for n, tally in curves.doe.items():
        add(tally, doe[n - 1], ok)
    add(tallies["all_producers"], backward_closure(graph, terminals, grounding, cfg.max_depth,
                                                   cfg.min_link_weight))
    for depth, tally in curves.all_producers.items():
        add(tally, backward_closure(graph, terminals, grounding, depth, cfg.min_link_weight))
    ranking = ranker.ranking(relevance, max(semantic_k, *SEMANTIC_KS))
    add(tallies["semantic_topk"], set(ranking[:semantic_k]) | term_set)
    for k, tally in curves.semantic_topk.items():
        add(tally, set(ranking[:k]) | term_set)
