"""Typed catalogs with their outputs stripped: the catalogs users mostly have (most MCP servers
declare no ``outputSchema``), made from suites whose typed outputs give a silver reference.

``strip_outputs`` keeps each tool's name, description and input schema and drops what it
declares about its results (output schema, effects, preconditions), so every output,
precondition and effect of the graph built from it is inferred
(:mod:`hyperplan.graph.infer`). The links of the same suite's typed catalog are the silver
reference the stripped graph's links are scored against (``eval links --strip-outputs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import HyperplanError
from hyperplan.graph.build import build_graph
from hyperplan.graph.links import LinkConfig, TextEmbedder
from hyperplan.graph.model import Evidence, Hypergraph, NodeKind
from hyperplan_bench.eval.links import (
    DEFAULT_THRESHOLD,
    LinkScores,
    PrecisionRecall,
    load_suite,
    predicted_ports,
    score_links,
    split_tasks,
)
from hyperplan_bench.importers.gold import GoldTask


def strip_tool(tool: ToolSpec) -> ToolSpec:
    """``tool`` without its output schema, declared effects and preconditions."""
    return tool.model_copy(update={"output_schema": None, "effects": (), "preconditions": ()})


def strip_outputs(catalog: Catalog) -> Catalog:
    """``catalog`` with every tool :func:`strip_tool`-ped (names and order unchanged)."""
    return Catalog(tools=tuple(strip_tool(t) for t in catalog.tools),
                   source=catalog.source)


# ----------------------------------------------------------------------------- the benchmark
#: A link at the level the silver reference is matched: (producer tool, consumer tool,
#: consumer input). Output paths differ by construction (the stripped graph's outputs are
#: inferred, the typed graph's declared), so they are not compared.
ToolPort = tuple[str, str, str]


@dataclass(frozen=True)
class SilverScores(PrecisionRecall):
    """Stripped-graph links against the typed graph's links (a silver reference: the typed
    catalog's inferred links, not gold data flows), micro-averaged."""

    typed_links: int
    stripped_links: int
    true_positives: int

    def counts(self) -> tuple[int, int, int, int]:
        return self.true_positives, self.stripped_links, self.true_positives, self.typed_links

    def __add__(self, other: SilverScores) -> SilverScores:
        return SilverScores(self.typed_links + other.typed_links,
                            self.stripped_links + other.stripped_links,
                            self.true_positives + other.true_positives)

    def as_dict(self) -> dict[str, Any]:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4),
                "f1": round(self.f1, 4), "typed_links": self.typed_links,
                "stripped_links": self.stripped_links, "true_positives": self.true_positives}


def tool_ports(graph: Hypergraph, tools: Iterable[str], threshold: float) -> set[ToolPort]:
    """The output->input links of weight >= ``threshold`` between distinct tools of
    ``tools``, at the (producer, consumer, input) level."""
    return {(p, c, i) for p, _, c, i in predicted_ports(graph, tools, threshold)}


def catalog_ports(graph: Hypergraph, threshold: float, split: str) -> set[ToolPort]:
    """Every output->input link of ``graph`` of weight >= ``threshold`` (effect links left
    out) whose consumer is in ``split``: ``dev`` = tools at positions 0, 5, 10... of the
    catalog, ``heldout`` = the others, ``all`` = every tool."""
    ports: set[ToolPort] = set()
    nodes, tools = graph.nodes, graph.tools
    for k in range(graph.n_links):
        if graph.link_weight[k] < threshold:
            continue
        out, into = nodes[int(graph.link_source[k])], nodes[int(graph.link_target[k])]
        if into.kind is not NodeKind.INPUT or out.tool == into.tool \
                or not _in_split(into.tool, split):
            continue
        ports.add((tools[out.tool].name, tools[into.tool].name, into.path))
    return ports


def _in_split(position: int, split: str) -> bool:
    return split == "all" or (position % 5 == 0) == (split == "dev")


def silver(typed: set[ToolPort], stripped: set[ToolPort]) -> SilverScores:
    return SilverScores(len(typed), len(stripped), len(typed & stripped))


def score_stripped(typed: Hypergraph, stripped: Hypergraph, tasks: Sequence[GoldTask],
                   threshold: float) -> SilverScores:
    """:class:`SilverScores` summed over ``tasks``, each over its own tools (as the gold-flow
    benchmark scores them)."""
    total = SilverScores(0, 0, 0)
    for task in tasks:
        total += silver(tool_ports(typed, task.tools, threshold),
                        tool_ports(stripped, task.tools, threshold))
    return total


def evaluate_stripped_links(
    parts: Sequence[tuple[Catalog, Sequence[GoldTask]]],
    *,
    embedder: TextEmbedder | None,
    config: LinkConfig | None,
    threshold: float,
    split: str,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """``eval links --strip-outputs``: per catalog, the typed graph and the graph of the same
    catalog :func:`strip_outputs`-ped; the stripped graph's links scored against the typed
    graph's (silver, :class:`SilverScores`) over each task's tools (``silver``) and over the
    whole catalog (``silver_catalog``, split by consumer tool), and against the gold data
    flows where the suite has them (``gold_stripped`` beside ``gold_typed``)."""
    by_task = by_catalog = SilverScores(0, 0, 0)
    gold_typed = gold_stripped = LinkScores(0, 0, 0, 0, 0, 0)
    inferred = 0
    for catalog, tasks in parts:
        typed = build_graph(catalog, embedder=embedder, config=config, progress=progress)
        bare = build_graph(strip_outputs(catalog), embedder=embedder, config=config,
                           progress=progress)
        inferred += sum(1 for n in bare.nodes if n.evidence is not Evidence.DECLARED)
        chosen = split_tasks(tasks, split)
        by_task += score_stripped(typed, bare, chosen, threshold)
        by_catalog += silver(catalog_ports(typed, threshold, split),
                             catalog_ports(bare, threshold, split))
        gold_typed = _add(gold_typed, score_links(typed, chosen, threshold))
        gold_stripped = _add(gold_stripped, score_links(bare, chosen, threshold))
    return {
        "reference": "silver: the links of the same suite's typed catalog (not gold flows), "
                     "matched at (producer tool, consumer tool, consumer input)",
        "silver": by_task.as_dict(),
        "silver_catalog": by_catalog.as_dict(),
        "gold_typed": _gold(gold_typed),
        "gold_stripped": _gold(gold_stripped),
        "inferred_nodes": inferred,
    }


def _add(a: LinkScores, b: LinkScores) -> LinkScores:
    return LinkScores(*(x + y for x, y in zip(
        (a.n_tasks, a.gold_links, a.predicted_links, a.true_positives, a.matched_gold,
         a.same_tool_gold),
        (b.n_tasks, b.gold_links, b.predicted_links, b.true_positives, b.matched_gold,
         b.same_tool_gold), strict=True)))


def _gold(s: LinkScores) -> dict[str, Any] | None:
    if not s.gold_links:
        return None  # the suite has no gold data flows (AppWorld: gold tools only)
    return {"precision": round(s.precision, 4), "recall": round(s.recall, 4),
            "f1": round(s.f1, 4), "gold_links": s.gold_links,
            "predicted_links": s.predicted_links}


def evaluate_stripped_suite(suite: str, data: str | Path, *, embedder: TextEmbedder | None,
                            config: LinkConfig | None = None,
                            threshold: float = DEFAULT_THRESHOLD, split: str = "all",
                            progress: Callable[[str, int, int], None] | None = None,
                            learn_from: str | None = None) -> dict[str, Any]:
    """``hyperplan eval links --strip-outputs``: the suite's catalogs lose their declared
    outputs, effects and preconditions, and the graph built from what is left is scored
    against the typed graph's links (a silver reference, :func:`evaluate_stripped_links`);
    the main ``precision``/``recall``/``f1`` are those over each task's tools."""
    if learn_from is not None:
        raise HyperplanError("--learn-from and --strip-outputs do not combine")
    started = time.perf_counter()
    parts = load_suite(suite, data).parts
    scores = evaluate_stripped_links(parts, embedder=embedder, config=config,
                                     threshold=threshold, split=split, progress=progress)
    main = scores["silver"]
    return {
        "suite": suite,
        "strip_outputs": True,
        "n_tasks": sum(len(split_tasks(tasks, split)) for _, tasks in parts),
        "precision": main["precision"],
        "recall": main["recall"],
        "f1": main["f1"],
        "seconds": round(time.perf_counter() - started, 2),
        "split": split,
        "n_tools": sum(len(catalog.tools) for catalog, _ in parts),
        "threshold": threshold,
        "embedder": getattr(embedder, "name", None),
        **scores,
    }
