"""Link-inference benchmark: inferred dependency links vs. the data flows of gold calls.

Each task is scored over its own tools only: an inferred port link between two of the task's
tools (producer output -> consumer input, effect links excluded) that no gold flow uses is a
false positive; a gold flow the graph lacks is a false negative. A gold flow on the whole
output (``$var3$``) is matched by a link from any output path of the producer; an unresolved
gold path is matched by a link from a path with the same last segment. Counts are summed
over tasks (micro-averaged precision, recall and F1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog
from hyperplan.errors import HyperplanError
from hyperplan.graph.build import build_graph
from hyperplan.graph.links import LinkConfig, TextEmbedder
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.text import path_segments
from hyperplan_bench.eval.registry import GOLD_FLOW_SUITES
from hyperplan_bench.importers.gold import GoldFlow, GoldTask

Port = tuple[str, str, str, str]  # producer, output path, consumer, input param

#: The suites :func:`load_suite` reads (``eval links`` and ``eval chains``).
SUITES = GOLD_FLOW_SUITES  # the chains and links suites (the registry's table)

# Weight at which an inferred link counts as predicted; chosen on the NesTools dev split
# (every 5th task), see docs/benchmarks.md.
DEFAULT_THRESHOLD = 0.7


class PrecisionRecall:
    """Micro-averaged precision, recall and F1 of counted links: a subclass says which of its
    counts are which (:meth:`counts`)."""

    def counts(self) -> tuple[int, int, int, int]:
        """(predicted links that are right, predicted links, reference links found,
        reference links)."""
        raise NotImplementedError

    @property
    def precision(self) -> float:
        right, predicted, _, _ = self.counts()
        return right / predicted if predicted else 0.0

    @property
    def recall(self) -> float:
        _, _, found, reference = self.counts()
        return found / reference if reference else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class LinkScores(PrecisionRecall):
    n_tasks: int
    gold_links: int
    predicted_links: int
    true_positives: int
    matched_gold: int
    same_tool_gold: int

    def counts(self) -> tuple[int, int, int, int]:
        return self.true_positives, self.predicted_links, self.matched_gold, self.gold_links


def predicted_ports(graph: Hypergraph, tools: Iterable[str], threshold: float) -> set[Port]:
    """Inferred output->input port links between distinct tools of ``tools``."""
    ids = {graph.tool_index[t] for t in tools if t in graph.tool_index}
    ports: set[Port] = set()
    for tid in ids:
        for v in graph.tools[tid].inputs:
            if graph.nodes[v].kind is not NodeKind.INPUT:
                continue
            for link in graph.links_into(v):
                src = graph.nodes[link.source]
                if link.weight >= threshold and src.tool in ids and src.tool != tid:
                    ports.add((graph.tools[src.tool].name, src.path,
                               graph.tools[tid].name, graph.nodes[v].path))
    return ports


def _matches(flow: GoldFlow, port: Port) -> bool:
    producer, path, consumer, param = port
    if (producer, consumer, param) != (flow.producer, flow.consumer, flow.input_param):
        return False
    if flow.output_path in ("", path):
        return True
    gold_leaf, leaf = path_segments(flow.output_path), path_segments(path)
    return bool(gold_leaf and leaf) and gold_leaf[-1] == leaf[-1] and "." not in flow.output_path


def score_task(graph: Hypergraph, task: GoldTask, threshold: float) -> tuple[int, int, int, int]:
    """(predicted, true positives, gold flows, matched gold flows) for one task."""
    predicted = predicted_ports(graph, task.tools, threshold)
    gold = set(task.flows)
    true_pos = sum(1 for port in predicted if any(_matches(f, port) for f in gold))
    matched = sum(1 for f in gold if any(_matches(f, port) for port in predicted))
    return len(predicted), true_pos, len(gold), matched


def score_links(graph: Hypergraph, tasks: Sequence[GoldTask], threshold: float) -> LinkScores:
    totals = [0, 0, 0, 0]
    same_tool = 0
    for task in tasks:
        for k, value in enumerate(score_task(graph, task, threshold)):
            totals[k] += value
        same_tool += len({f for f in task.flows if f.producer == f.consumer})
    return LinkScores(len(tasks), totals[2], totals[0], totals[1], totals[3], same_tool)


@dataclass(frozen=True)
class SuiteData:
    """The catalogs and gold tasks of one link suite (one catalog per spec file)."""

    parts: tuple[tuple[Catalog, tuple[GoldTask, ...]], ...]


def load_suite(suite: str, data: str | Path) -> SuiteData:
    """Catalog(s) and gold tasks of ``suite`` (one of :data:`SUITES`) from ``data`` (for
    ``tau2``: the domain, ``airline`` | ``retail`` | ``telecom``).

    NESTFUL: a ``*-data.json`` file or a directory searched for them (spec beside each).
    NesTools: the ``*.jsonl`` task file (catalog = union of the tasks' APIs).
    Seal-Tools: the release directory or its query file (``dev.jsonl``); catalog = the whole
    ``tool.jsonl`` beside it, each query's tools = its called APIs
    (:mod:`hyperplan_bench.importers.sealtools`).
    """
    path = Path(data)
    if suite == "nestools":
        from hyperplan_bench.importers.nestools import load_nestools, load_nestools_tasks

        return SuiteData(((load_nestools(path), tuple(load_nestools_tasks(path))),))
    if suite == "sealtools":
        from hyperplan_bench.importers.sealtools import (
            load_sealtools,
            load_sealtools_tasks,
            query_file,
        )

        pool = load_sealtools(query_file(path).parent)
        return SuiteData(((pool, tuple(load_sealtools_tasks(path, tools=pool))),))
    if suite == "nestful":
        from hyperplan_bench.importers.nestful import load_nestful, load_nestful_tasks

        files = sorted(path.rglob("*-data.json")) if path.is_dir() else [path]
        if not files:
            raise HyperplanError(f"{path}: no NESTFUL *-data.json files found")
        parts = []
        for file in files:
            spec = file.with_name(file.name.replace("-data", "-spec"))
            parts.append((load_nestful(spec), tuple(load_nestful_tasks(file, spec))))
        return SuiteData(tuple(parts))
    if suite == "appworld":
        return SuiteData((_appworld_part(path),))
    if suite == "tau2":
        from hyperplan_bench.importers.tau2 import load_tau2_catalog, load_tau2_gold

        domain = str(data)  # tasks without a write action have no terminal: left out
        tasks = tuple(t for t in load_tau2_gold(domain) if t.terminals)
        return SuiteData(((load_tau2_catalog(domain), tasks),))
    raise HyperplanError(f"unknown suite {suite!r}; expected "
                         f"{', '.join(repr(s) for s in SUITES[:-1])} or {SUITES[-1]!r}")


def _appworld_part(path: Path) -> tuple[Catalog, tuple[GoldTask, ...]]:
    """AppWorld's catalog (``api_docs``) and train tasks, each with its gold APIs as its tools
    and no data flows (the data has none): scored by ``--strip-outputs`` only."""
    from hyperplan_bench.importers.appworld import load_appworld, load_appworld_tasks

    docs = path / "api_docs" if (path / "api_docs").is_dir() else path
    tasks_file = docs.parent / "tasks_train.jsonl"
    catalog = load_appworld(docs)
    tasks = tuple(GoldTask(t.id, t.instruction, tuple(dict.fromkeys(t.gold_apis)), ())
                  for t in load_appworld_tasks(tasks_file))
    return catalog, tasks


def split_tasks(tasks: Sequence[GoldTask], split: str) -> tuple[GoldTask, ...]:
    """``dev`` = every 5th task (used to choose :class:`LinkConfig` defaults), ``heldout`` =
    the others, ``all`` = every task."""
    if split == "all":
        return tuple(tasks)
    if split not in ("dev", "heldout"):
        raise HyperplanError(f"unknown split {split!r}; expected all, dev or heldout")
    dev = split == "dev"
    return tuple(t for k, t in enumerate(tasks) if (k % 5 == 0) == dev)


def evaluate_links(
    suite: str,
    data: str | Path,
    *,
    embedder: TextEmbedder | None,
    config: LinkConfig | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    split: str = "all",
    thresholds: Sequence[float] = (),
    progress: Callable[[str, int, int], None] | None = None,
    learn_from: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON contract of ``hyperplan eval links``. With
    ``learn_from`` (a split other than ``split``) the graph first learns the gold flows of
    that split's tasks (:mod:`hyperplan_bench.eval.learning`). The same suites with their outputs
    stripped: :func:`hyperplan_bench.eval.stripped.evaluate_stripped_suite`."""
    from hyperplan_bench.eval.learning import check_learning_split

    check_learning_split(learn_from, split)
    if suite == "appworld":
        raise HyperplanError("appworld has no gold data flows: it is scored with "
                             "--strip-outputs only (against its typed links)")
    started = time.perf_counter()
    levels = sorted({threshold, *thresholds})
    scored = _score_levels(load_suite(suite, data), levels, embedder, config or LinkConfig(),
                           split, learn_from, progress)
    main = scored.by_level[threshold]
    result: dict[str, Any] = {
        "suite": suite,
        "n_tasks": main.n_tasks,
        "gold_links": main.gold_links,
        "precision": round(main.precision, 4),
        "recall": round(main.recall, 4),
        "f1": round(main.f1, 4),
        "seconds": round(time.perf_counter() - started, 2),
        "split": split,
        "learned_from": learn_from,
        "learned_flows": scored.n_learned,
        "n_tools": scored.n_tools,
        "predicted_links": main.predicted_links,
        "same_tool_gold_links": main.same_tool_gold,
        "threshold": threshold,
        "embedder": getattr(embedder, "name", None),
    }
    if thresholds:
        result["sweep"] = [
            {"threshold": t, "precision": round(s.precision, 4), "recall": round(s.recall, 4),
             "f1": round(s.f1, 4)}
            for t, s in scored.by_level.items()
        ]
    return result


@dataclass(frozen=True)
class LevelScores:
    """:class:`LinkScores` of a suite at each threshold, its tools and the gold flows its
    graphs learned."""

    by_level: dict[float, LinkScores]
    n_tools: int
    n_learned: int


def _score_levels(suite_data: SuiteData, levels: Sequence[float],
                  embedder: TextEmbedder | None, cfg: LinkConfig, split: str,
                  learn_from: str | None, progress: Callable[[str, int, int], None] | None,
                  ) -> LevelScores:
    """Score ``split``'s tasks of every part of ``suite_data`` at each of ``levels`` (sorted),
    each part's graph built once at the lowest level (after learning ``learn_from``'s flows
    when given)."""
    from hyperplan_bench.eval.learning import learned

    totals = {t: [0, 0, 0, 0, 0, 0] for t in levels}
    n_tools = n_learned = 0
    for catalog, tasks in suite_data.parts:
        # build once at the lowest level; each level filters by weight
        build_cfg = replace(cfg, min_weight=min(levels[0], cfg.min_weight))
        graph = build_graph(catalog, embedder=embedder, config=build_cfg, progress=progress)
        if learn_from is not None:
            graph, used = learned(graph, split_tasks(tasks, learn_from))
            n_learned += used
        n_tools += graph.n_tools
        chosen = split_tasks(tasks, split)
        for t in levels:
            s = score_links(graph, chosen, t)
            for k, v in enumerate((s.n_tasks, s.gold_links, s.predicted_links,
                                   s.true_positives, s.matched_gold, s.same_tool_gold)):
                totals[t][k] += v
    return LevelScores({t: LinkScores(*totals[t]) for t in levels}, n_tools, n_learned)
