"""What ``hyperplan bench links`` measures: link inference on a synthetic catalog of a given
size (:func:`~hyperplan_bench.synthetic.synthetic_catalog`), with nodes, links, candidate pairs,
build time and how many required id inputs got a link from a producer of their own app.

Each size runs in a fresh process (:func:`hyperplan_bench.eval.isolated.run_isolated`), which adds
its peak RSS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from hyperplan.graph.build import build_graph
from hyperplan.graph.links import TextEmbedder
from hyperplan_bench.synthetic import (
    id_inputs_with_producer,
    synthetic_catalog,
    synthetic_expectations,
)

Progress = Callable[[str, int, int], None]  # as hyperplan_bench.eval.isolated's

__all__ = ["measure_links", "text_embedder"]


def text_embedder(spec: str) -> TextEmbedder | None:
    """``none``: no description similarity; anything else goes to
    :func:`~hyperplan.embed.get_embedder`."""
    if spec.lower() == "none":
        return None
    from hyperplan.embed import get_embedder

    return get_embedder(spec)


@contextmanager
def _counting_candidates() -> Iterator[list[int]]:
    """Count candidate pairs by wrapping link inference's private ``_candidate_pairs``
    (instrumentation only; nothing is counted if that function goes away or changes)."""
    from hyperplan.graph import links

    namespace = vars(links)
    original = namespace.get("_candidate_pairs")
    counts: list[int] = []
    if not callable(original):
        yield counts
        return

    def counting(*args: Any, **kwargs: Any) -> Any:
        pairs = original(*args, **kwargs)
        with suppress(TypeError, AttributeError, IndexError, KeyError):
            counts.append(int(pairs[0].size))
        return pairs

    namespace["_candidate_pairs"] = counting
    try:
        yield counts
    finally:
        namespace["_candidate_pairs"] = original


def measure_links(n_tools: int, seed: int = 0, embedder: str = "hashing",
                  progress: Progress | None = None, *,
                  resolve_embedder: Callable[[str], TextEmbedder | None] = text_embedder,
                  ) -> dict[str, Any]:
    """Build the graph of a synthetic catalog in this process and describe the run
    (everything but ``peak_rss_mb``). ``resolve_embedder`` turns the ``embedder`` spec into
    the embedder (the command line passes its own, which prints warnings as lines)."""
    report = progress or (lambda stage, done, total: None)
    report("catalog", 0, 1)
    started = time.perf_counter()
    catalog = synthetic_catalog(n_tools, seed)
    catalog_seconds = time.perf_counter() - started
    text = resolve_embedder(embedder)
    report("structure", 0, 1)
    with _counting_candidates() as counts:
        started = time.perf_counter()
        graph = build_graph(catalog, embedder=text, progress=report)
        seconds = time.perf_counter() - started
    report("checking id inputs", 0, 1)
    expectations = synthetic_expectations(catalog)
    satisfied = id_inputs_with_producer(graph, expectations)
    run: dict[str, Any] = {"tools": graph.n_tools, "nodes": graph.n_nodes,
                           "links": graph.n_links}
    if counts:
        run["candidate_pairs"] = sum(counts)
    run["seconds"] = round(seconds, 3)
    run["catalog_seconds"] = round(catalog_seconds, 3)
    run["id_inputs"] = len(expectations)
    run["id_inputs_with_producer"] = (
        round(satisfied / len(expectations), 4) if expectations else None)
    return run
