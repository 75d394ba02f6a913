"""LLM-free, dependency-aware tool pre-selection for any agent (HyperAgent: the Tool Context
Graph of "Task-Level Planning" and Deficit-Oriented Expansion of "Tool-Level Planning",
conditioned on the agent state of Definition 4).

    from hyperplan.select import build_selector

    selector = build_selector(["python:hyperplan.examples.bookstore"])
    session = selector.session("cancel my order of Dune")
    picked = session.select(budget=10)      # ranked tools, why each, DOE's chain, tokens
    session.observe("find_orders", {"title": "Dune"}, {"orders": [{"order_id": 7}]})
    picked = session.select()               # producers of what is now held drop out

Importing this package is cheap (the numeric stack loads on first use), so a host agent's
start is not slowed by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.select.model import ChainStep, Reason, SelectedTool, Selection

if TYPE_CHECKING:
    from hyperplan.catalog import Catalog
    from hyperplan.embed.base import Embedder
    from hyperplan.graph.annotations import Annotations
    from hyperplan.llm.types import LLM
    from hyperplan.select.cache import Progress
    from hyperplan.select.rank import ChainPlacement
    from hyperplan.select.selector import SelectConfig, Selector
    from hyperplan.select.session import Session

__all__ = ["ChainPlacement", "ChainStep", "Reason", "SelectConfig", "SelectedTool", "Selection",
           "Selector", "Session", "build_selector"]


def build_selector(sources: Sequence[str | Catalog], *, embedder: str | Embedder = "auto",
                   cache_dir: str | Path | None = "default", config: SelectConfig | None = None,
                   allow_unsafe_tools: bool = False,
                   progress: Progress | None = None,
                   annotations: str | Path | Annotations | None = None,
                   llm: str | LLM | None = None, llm_model: str | None = None) -> Selector:
    """A :class:`Selector` over the tools of ``sources`` (``KIND:LOCATION`` strings as
    ``hyperplan graph build`` takes them, e.g. ``mcp-server:CMD``, ``openapi:FILE``,
    ``python:MODULE``, ``openai:FILE``; or catalogs), merged in order. The hypergraph is read
    from ``cache_dir`` when it was built before for the same tools, embedder and annotations
    (``"default"``: :func:`~hyperplan.select.cache.default_cache_dir`; None: no cache), with
    the outputs earlier sessions observed (:mod:`hyperplan.select.observed`).

    ``annotations`` adds inferred nodes (an annotation file, as ``hyperplan graph annotate``
    writes, or the mapping itself); ``llm`` (an OpenAI-compatible base URL, with
    ``llm_model``, or an :class:`~hyperplan.llm.LLM`) asks a model for every tool's outputs,
    preconditions and effects (:mod:`hyperplan.llm.annotate`, answers cached per tool)."""
    from hyperplan.embed import get_embedder
    from hyperplan.select.cache import (
        cached_build,
        default_cache_dir,
        entry_path,
        learned_flows,
        load_catalogs,
    )
    from hyperplan.select.selector import Selector

    catalog = load_catalogs(sources, allow_unsafe_tools=allow_unsafe_tools)
    given = _annotations(catalog, annotations, llm, llm_model, progress)
    emb = get_embedder(embedder) if isinstance(embedder, str) else embedder
    where = default_cache_dir() if cache_dir == "default" else \
        (Path(cache_dir) if cache_dir is not None else None)
    graph, _ = cached_build(catalog, emb, where, progress, annotations=given)
    entry = entry_path(where, catalog, emb.name, given) if where is not None else None
    selector = Selector(catalog, graph, emb, config, entry=entry)
    if entry is not None:
        selector.learn(learned_flows(entry), persist=False)  # what earlier sessions taught
    return selector


def _annotations(catalog: Catalog, annotations: str | Path | Annotations | None,
                 llm: str | LLM | None, llm_model: str | None,
                 progress: Progress | None) -> Annotations | None:
    """The annotations ``build_selector`` builds with: the file's or mapping's, plus the
    model's when ``llm`` is given (the LLM layer is imported only then)."""
    from hyperplan.graph.annotations import load_annotations
    from hyperplan.select.observed import combine_annotations

    given = load_annotations(annotations) if isinstance(annotations, str | Path) \
        else annotations
    if llm is None:
        return given
    from hyperplan.llm.annotate import annotate_catalog, client_for

    client = client_for(llm, model=llm_model) if isinstance(llm, str) else llm
    asked = annotate_catalog(catalog, client, progress=progress).annotations
    return combine_annotations(given, asked) or None


def __getattr__(name: str) -> Any:
    """The heavier names load on first use (PEP 562)."""
    if name in ("Selector", "SelectConfig"):
        from hyperplan.select import selector

        return getattr(selector, name)
    if name == "ChainPlacement":
        from hyperplan.select.rank import ChainPlacement

        return ChainPlacement
    if name == "Session":
        from hyperplan.select.session import Session

        return Session
    raise AttributeError(f"module 'hyperplan.select' has no attribute {name!r}")
