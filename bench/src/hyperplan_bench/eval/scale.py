"""Synthetic Tool-Schema Hypergraphs of up to millions of tools, and what ``hyperplan bench
scale`` measures on them: build time and memory, DOE latency and Tool Context Graph latency.

:func:`~hyperplan_bench.synthetic.synthetic_hypergraph` draws the graphs (their shape is
described there) directly as arrays; this module embeds, samples requests and times them,
by default with :class:`~hyperplan_bench.synthetic.RandomWordEmbedder` (a bag of pseudo-random word
vectors, ~20x faster than the hashing embedder).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hyperplan.embed.base import Embedder
from hyperplan.graph.model import Hypergraph
from hyperplan.plan.doe import DOEConfig, expand
from hyperplan.plan.grounding import Grounding
from hyperplan_bench.eval.isolated import rss_mb
from hyperplan_bench.synthetic.embedder import DEFAULT_DIM, RandomWordEmbedder
from hyperplan_bench.synthetic.hypergraph import synthetic_hypergraph
from hyperplan_bench.synthetic.words import TOOLS_PER_APP

__all__ = [
    "DEFAULT_DIM",
    "degree_stats",
    "measure_scale",
    "scale_embedder",
    "synthetic_requests",
]

Progress = Callable[[str, int, int], None]
IntArray = npt.NDArray[np.int64]


def degree_stats(graph: Hypergraph) -> dict[str, float]:
    """Median / p99 / max of the in-degree of input nodes (links into each), the out-degree of
    output nodes (links out of each) and the producers per input (non-zeros of A_prod rows)."""
    n_in = graph.n_input_nodes
    ins = np.bincount(graph.link_target, minlength=n_in)[:n_in]
    outs = np.bincount(graph.link_source, minlength=graph.n_nodes)[n_in:]
    stats: dict[str, float] = {}
    for name, values in (("in_degree", ins), ("out_degree", outs)):
        if values.size:
            stats[f"{name}_median"] = float(np.median(values))
            stats[f"{name}_p99"] = float(np.percentile(values, 99))
            stats[f"{name}_max"] = int(values.max())
    stats["links_per_tool"] = round(graph.n_links / max(graph.n_tools, 1), 2)
    return stats


def scale_embedder(spec: str, dim: int = DEFAULT_DIM) -> Embedder:
    """``words`` (:class:`RandomWordEmbedder`) or ``hashing`` (lexical feature hashing; ~10K
    texts/s, so only for small sizes), both with ``dim`` dimensions."""
    if spec == "words":
        return RandomWordEmbedder(dim)
    if spec == "hashing":
        from hyperplan.embed.hashing import HashingEmbedder

        return HashingEmbedder(dim)
    raise ValueError(f"unknown scale embedder {spec!r}: use words or hashing")


@dataclass(frozen=True)
class SyntheticRequest:
    """A generated request and the tools it names (for the context graph's hit rate)."""

    text: str
    tools: tuple[int, ...]


def synthetic_requests(graph: Hypergraph, count: int, seed: int = 0) -> list[SyntheticRequest]:
    """``count`` requests of one or two operations over tools of one app, e.g. "Search
    playlists in Zenmar, then update the playlist amount."."""
    rng = np.random.default_rng([seed, 0x2E0])
    candidates = [t.id for t in graph.tools if not t.name.endswith(".login")] if count else []
    requests: list[SyntheticRequest] = []
    for _ in range(count if candidates else 0):
        first = int(candidates[rng.integers(len(candidates))])
        chosen = [first]
        app_lo = first - first % TOOLS_PER_APP
        if rng.random() < 0.5:
            other = app_lo + int(rng.integers(1, TOOLS_PER_APP))
            if other < graph.n_tools and other != first:
                chosen.append(other)
        clauses = []
        for t in chosen:
            tool = graph.tools[t]
            brand, action = tool.name.split(".", 1)
            verb, _, obj = action.partition("_")
            outputs = [graph.nodes[o].path.split(".")[-1] for o in tool.outputs
                       if graph.nodes[o].kind.value == "out"]
            field = outputs[int(rng.integers(len(outputs)))] if outputs else ""
            detail = f" {field.replace('_', ' ')}" if field and not field.endswith("_id") else ""
            clauses.append(f"{verb} the {obj.replace('_', ' ')}{detail} in {brand.capitalize()}")
        text = ", then ".join(clauses)
        requests.append(SyntheticRequest(text[0].upper() + text[1:] + ".", tuple(chosen)))
    return requests


def _percentiles(values_ms: list[float]) -> tuple[float | None, float | None]:
    if not values_ms:
        return None, None
    p50, p99 = np.percentile(np.asarray(values_ms), [50, 99])
    return round(float(p50), 3), round(float(p99), 3)


def measure_doe(graph: Hypergraph, terminals: int = 200, grounded: float = 0.3,
                seed: int = 0, config: DOEConfig | None = None) -> dict[str, Any]:
    """DOE latency: :func:`~hyperplan.plan.doe.expand` for ``terminals`` random terminal tools,
    each with a fresh random grounding of a ``grounded`` fraction of all input-side nodes
    (drawn outside the timer). Two untimed warm-up runs come first. ``doe_searched`` is the
    fraction of terminals with an ungrounded required input (the others return at once) and
    ``doe_searched_ms_p50`` the median over those alone."""
    rng = np.random.default_rng([seed, 0xD0E])
    count = min(terminals, graph.n_tools)
    chosen: list[int] = rng.choice(graph.n_tools, size=count, replace=False).tolist()
    cfg = config or DOEConfig()
    times: list[float] = []
    searched: list[float] = []  # terminals with an ungrounded required input
    complete, sizes, expansions = 0, [], []
    for k, terminal in enumerate([*chosen[:2], *chosen]):
        vector = rng.random(graph.n_input_nodes) < grounded
        vector.setflags(write=False)
        state = Grounding(vector)
        started = time.perf_counter()
        result = expand(graph, terminal, state, cfg)
        elapsed = (time.perf_counter() - started) * 1000
        if k < min(2, count):
            continue
        times.append(elapsed)
        expansions.append(result.expansions)
        if result.expansions or not result.ok:
            searched.append(elapsed)
        if result.ok:
            complete += 1
            sizes.append(len(result.complete[0].tools))
    p50, p99 = _percentiles(times)
    return {
        "doe_terminals": len(times),
        "doe_ms_p50": p50,
        "doe_ms_p99": p99,
        "doe_ms_max": round(max(times), 3) if times else None,
        "doe_searched": round(len(searched) / len(times), 4) if times else None,
        "doe_searched_ms_p50": _percentiles(searched)[0],
        "doe_complete": round(complete / len(times), 4) if times else None,
        "doe_mean_tools": round(float(np.mean(sizes)), 2) if sizes else None,
        "doe_mean_expansions": round(float(np.mean(expansions)), 2) if expansions else None,
    }


def measure_context(graph: Hypergraph, embedder: Embedder, requests: int = 50, seed: int = 0,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Tool Context Graph latency: build a :class:`~hyperplan.retrieve.GraphIndex`, then time
    :func:`~hyperplan.retrieve.extract_with_vectors` (default config) for ``requests``
    generated requests; interpreting and embedding each request happens outside the timer."""
    from hyperplan.retrieve import (
        ContextGraphConfig,
        GraphIndex,
        embed_interpretation,
        extract_with_vectors,
        interpret_request,
    )

    report = progress or (lambda stage, done, total: None)
    report("context index", 0, 1)
    started = time.perf_counter()
    index = GraphIndex(graph, embedder)
    index_seconds = time.perf_counter() - started
    cfg = ContextGraphConfig()
    times, found, kept = [], 0, []
    queries = synthetic_requests(graph, requests, seed)
    for k, request in enumerate([*queries[:2], *queries]):
        interp = interpret_request(request.text)
        vectors = embed_interpretation(interp, embedder)
        started = time.perf_counter()
        context = extract_with_vectors(index, interp, vectors, cfg)
        elapsed = (time.perf_counter() - started) * 1000
        if k < min(2, len(queries)):
            continue
        times.append(elapsed)
        kept.append(len(context.tools))
        found += set(request.tools) <= set(context.tool_ids)
        report("context graph", len(times), len(queries))
    p50, p99 = _percentiles(times)
    return {
        "index_seconds": round(index_seconds, 3),
        "context_requests": len(times),
        "context_ms_p50": p50,
        "context_ms_p99": p99,
        "context_tools_mean": round(float(np.mean(kept)), 2) if kept else None,
        "context_found": round(found / len(times), 4) if times else None,
    }


def measure_scale(n_tools: int, seed: int = 0, embedder: str = "words",
                  progress: Progress | None = None, *, dim: int = DEFAULT_DIM,
                  terminals: int = 200, requests: int = 50, grounded: float = 0.3,
                  freeze_gc: bool = True) -> dict[str, Any]:
    """One size of ``bench scale`` in this process (everything but ``peak_rss_mb``): build
    the synthetic graph and A_prod, time DOE, then build the retrieval index and time the
    context graph (``requests=0`` skips it).

    With ``freeze_gc`` the graph's millions of objects are moved out of the cyclic garbage
    collector's generations (:func:`gc.freeze`) once built, as a long-running planner would:
    otherwise an occasional full collection walks them all inside a timed call."""
    report = progress or (lambda stage, done, total: None)
    report("generate + build", 0, 1)
    rss_before = rss_mb()
    begun = started = time.perf_counter()
    graph = synthetic_hypergraph(n_tools, seed)
    build_seconds = time.perf_counter() - started
    report("producer matrix", 0, 1)
    started = time.perf_counter()
    prod = graph.producer_matrix
    aprod_seconds = time.perf_counter() - started
    if freeze_gc:
        gc.collect()
        gc.freeze()
    run: dict[str, Any] = {
        "tools": graph.n_tools,
        "nodes": graph.n_nodes,
        "links": graph.n_links,
        "build_seconds": round(build_seconds, 3),
        "aprod_seconds": round(aprod_seconds, 3),
        "aprod_nnz": int(prod.nnz),
        "graph_rss_mb": round(rss_mb() - rss_before, 1),
        **degree_stats(graph),
    }
    report("DOE", 0, 1)
    run.update(measure_doe(graph, terminals, grounded, seed))
    if requests > 0:
        text_embedder = scale_embedder(embedder, dim)
        run["embedder"] = text_embedder.name
        run.update(measure_context(graph, text_embedder, requests, seed, report))
    run["seconds"] = round(time.perf_counter() - begun, 3)
    return run
