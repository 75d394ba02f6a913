"""Building a :class:`~hyperplan.select.selector.Selector` once and keeping it on disk.

The cache key is a hash of the merged catalog (every tool's name, description and schemas, in
order), the embedder's name, the link inference settings and the cache format, so a changed
tool, embedder or setting builds anew and nothing stale is ever read. Each entry is a
directory written under a temporary name and renamed into place, so a reader sees a whole
entry or none. Embeddings are cached by the embedder itself
(:class:`~hyperplan.embed.CachedEmbedder`), so a warm start reads them instead of computing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hyperplan.catalog import Catalog, merge_catalogs
from hyperplan.embed.base import Embedder
from hyperplan.errors import GraphError, HyperplanError
from hyperplan.graph.links import LinkConfig

if TYPE_CHECKING:
    from hyperplan.graph.model import Hypergraph
    from hyperplan.graph.overrides import ObservedFlow

CACHE_FORMAT = 1
FLOWS_FILE = "flows.jsonl"  # flows learned from use, kept beside the entry's graph
Progress = Callable[[str, int, int], None]


def default_cache_dir() -> Path:
    """``$HYPERPLAN_CACHE_DIR/selectors``, else ``~/.cache/hyperplan/selectors``
    (``$XDG_CACHE_HOME`` replaces ``~/.cache``)."""
    root = os.environ.get("HYPERPLAN_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "selectors"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "hyperplan" / "selectors"


def load_catalogs(sources: Sequence[str | Catalog], *,
                  allow_unsafe_tools: bool = False) -> Catalog:
    """One catalog from several sources (``KIND:LOCATION`` strings or catalogs), merged in
    order; a name two sources define is one :class:`~hyperplan.errors.CatalogError`."""
    from hyperplan.sources import load_source

    if not sources:
        raise HyperplanError("no tool source given")
    catalogs = [s if isinstance(s, Catalog)
                else load_source(s, allow_unsafe_tools=allow_unsafe_tools) for s in sources]
    labels = [s if isinstance(s, str) else (s.source or f"catalog {i + 1}")
              for i, s in enumerate(sources)]
    return catalogs[0] if len(catalogs) == 1 else merge_catalogs(catalogs, labels=labels)


def cache_key(catalog: Catalog, embedder_name: str, links: LinkConfig) -> str:
    """The hash that names a cache entry (module doc)."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"format": CACHE_FORMAT, "embedder": embedder_name,
                              "links": links.as_dict()}, sort_keys=True).encode())
    for tool in catalog.tools:
        digest.update(tool.model_dump_json(exclude={"source"}).encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def cached_build(catalog: Catalog, embedder: Embedder, cache_dir: Path | None,
                 progress: Progress | None = None) -> tuple[Hypergraph, bool]:
    """The hypergraph of ``catalog`` and whether it came from the cache: read from
    ``cache_dir`` when an entry for it exists, else built (link inference with ``embedder``)
    and stored there (None: no cache)."""
    from hyperplan.graph.build import build_graph
    from hyperplan.graph.io import load_graph

    links = LinkConfig()
    if cache_dir is None:
        return build_graph(catalog, embedder=embedder, config=links, progress=progress), False
    entry = entry_path(cache_dir, catalog, embedder.name)
    if (entry / "graph.json").is_file():
        try:
            graph = load_graph(entry / "graph.json")
            if [t.name for t in graph.tools] == catalog.names():
                return graph, True
        except GraphError:
            pass  # a damaged entry is rebuilt below
    graph = build_graph(catalog, embedder=embedder, config=links, progress=progress)
    _store(entry, graph)
    return graph, False


def entry_path(cache_dir: Path, catalog: Catalog, embedder_name: str) -> Path:
    """The cache entry of ``catalog`` built with ``embedder_name`` (it may not exist yet)."""
    return cache_dir / cache_key(catalog, embedder_name, LinkConfig())


def learned_flows(entry: Path) -> list[ObservedFlow]:
    """The flows learned into ``entry`` (``flows.jsonl``; none when it has no such file)."""
    from hyperplan.select.flows import read_flows

    path = entry / FLOWS_FILE
    return read_flows(path) if path.is_file() else []


def _store(entry: Path, graph: Hypergraph) -> None:
    """Write the entry under a temporary name, then rename it into place (a concurrent
    writer's identical entry wins; either is whole)."""
    from hyperplan.graph.io import save_graph

    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=entry.parent))
    try:
        save_graph(graph, tmp / "graph.json")
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a cache that cannot be written is no error
