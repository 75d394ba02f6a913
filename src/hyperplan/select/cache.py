"""Building a :class:`~hyperplan.select.selector.Selector` once and keeping it on disk.

The cache key is a hash of the merged catalog (every tool's name, description and schemas, in
order), the embedder's name, the link inference settings and the cache format, so a changed
tool, embedder or setting builds anew and nothing stale is ever read. Each entry is a
directory written under a temporary name and renamed into place, so a reader sees a whole
entry or none. Embeddings are cached by the embedder itself
(:class:`~hyperplan.embed.CachedEmbedder`), so a warm start reads them instead of computing.

The cache is private to its user: directories it creates are mode 0700 and its files 0600
(an entry found with wider modes, e.g. written by an older version, is tightened when read;
so are the default location's own ``hyperplan/selectors`` directories). A directory the user
named is never changed. An entry stores the graph: tool names, descriptions, parameters,
scalar metadata and the catalog's ``source`` label, as the catalog carries it (the gateway
gives a server's name there, never its command line or environment). Temporary directories
of a build killed while writing are removed by a later store.

Annotations (inferred nodes from a file or a model, :mod:`hyperplan.graph.annotations`) are
part of the key: a graph built with them is never read for one built without. Output schemas
learned from observed results (:mod:`hyperplan.select.observed`) are kept in the entry beside
the graph (``observed.json``, like the learned flows); the entry records which of them its
graph was built with (``built.json``), and a graph that lacks some is rebuilt in place, the
side files kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hyperplan.catalog import Catalog, merge_catalogs
from hyperplan.embed.base import Embedder
from hyperplan.errors import GraphError, HyperplanError
from hyperplan.graph.links import LinkConfig

if TYPE_CHECKING:
    from hyperplan.graph.annotations import Annotations
    from hyperplan.graph.model import Hypergraph
    from hyperplan.graph.overrides import ObservedFlow

CACHE_FORMAT = 1
DIR_MODE = 0o700
FILE_MODE = 0o600
STALE_BUILD_SECONDS = 3600.0  # a ".building-" directory this old belongs to a killed build
FLOWS_FILE = "flows.jsonl"  # flows learned from use, kept beside the entry's graph
OBSERVED_FILE = "observed.json"  # output schemas learned from results (select.observed)
BUILT_FILE = "built.json"  # which observed outputs the entry's graph was built with
SIDE_FILES = (FLOWS_FILE, OBSERVED_FILE)  # kept when an entry's graph is rebuilt
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
    order; a name two sources define is one :class:`~hyperplan.errors.CatalogError`. Strings
    load through the tool-source registry (:func:`hyperplan.tool_sources.load_catalog`, the
    one import of the wiring above the core, made when a source is named)."""
    from hyperplan.tool_sources import SourceOptions, load_catalog, tag_server

    if not sources:
        raise HyperplanError("no tool source given")
    opts = SourceOptions(allow_unsafe_tools=allow_unsafe_tools)
    catalogs = [s if isinstance(s, Catalog) else load_catalog(s, opts) for s in sources]
    labels = [s if isinstance(s, str) else (s.source or f"catalog {i + 1}")
              for i, s in enumerate(sources)]
    if len(catalogs) == 1:
        return catalogs[0]
    return merge_catalogs([tag_server(c, label) for c, label in zip(catalogs, labels, strict=True)],
                          labels=labels)


def annotations_digest(annotations: Annotations | None) -> str:
    """A hash of ``annotations``' content ("" for none): what a cache key and an entry's
    ``built.json`` record of them."""
    if not annotations or not any(annotations.values()):
        return ""
    from hyperplan.graph.annotations import annotations_doc

    text = json.dumps(annotations_doc(annotations), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_key(catalog: Catalog, embedder_name: str, links: LinkConfig,
              annotations: Annotations | None = None) -> str:
    """The hash that names a cache entry (module doc)."""
    digest = hashlib.sha256()
    from hyperplan.graph.infer import RULES_VERSION

    settings = {"format": CACHE_FORMAT, "embedder": embedder_name,
                "links": links.as_dict(), "rules": RULES_VERSION}
    annotated = annotations_digest(annotations)
    if annotated:  # absent otherwise: entries built without annotations keep their names
        settings["annotations"] = annotated
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for tool in catalog.tools:
        digest.update(tool.model_dump_json(exclude={"source"}).encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def cached_build(catalog: Catalog, embedder: Embedder, cache_dir: Path | None,
                 progress: Progress | None = None, *,
                 annotations: Annotations | None = None) -> tuple[Hypergraph, bool]:
    """The hypergraph of ``catalog`` (with ``annotations``' inferred nodes) and whether it
    came from the cache: read from ``cache_dir`` when an entry for it exists and was built
    with every output learned into it, else built (link inference with ``embedder``) and
    stored there (None: no cache)."""
    from hyperplan.graph.build import build_graph
    from hyperplan.graph.io import load_graph
    from hyperplan.select.observed import combine_annotations, read_observed

    links = LinkConfig()
    if cache_dir is None:
        return build_graph(catalog, embedder=embedder, config=links, progress=progress,
                           annotations=annotations), False
    entry = entry_path(cache_dir, catalog, embedder.name, annotations)
    observed = read_observed(entry / OBSERVED_FILE)
    stamp = annotations_digest(observed)
    if (entry / "graph.json").is_file() and built_with(entry) == stamp:
        _tighten(entry)
        try:
            graph = load_graph(entry / "graph.json")
            if [t.name for t in graph.tools] == catalog.names():
                return graph, True
        except GraphError:
            pass  # a damaged entry is rebuilt below
    merged = combine_annotations(annotations, observed)
    graph = build_graph(catalog, embedder=embedder, config=links, progress=progress,
                        annotations=merged or None)
    _store(entry, graph, stamp)
    return graph, False


def is_cached(cache_dir: Path, catalog: Catalog, embedder_name: str,
              annotations: Annotations | None = None) -> bool:
    """Whether :func:`cached_build` would read the graph from ``cache_dir`` (an entry whose
    graph was built with every output learned into it)."""
    from hyperplan.select.observed import read_observed

    entry = entry_path(cache_dir, catalog, embedder_name, annotations)
    return (entry / "graph.json").is_file() and \
        built_with(entry) == annotations_digest(read_observed(entry / OBSERVED_FILE))


def built_with(entry: Path) -> str:
    """The digest of the observed outputs the entry's graph was built with ("" for none,
    and for entries written before they were recorded)."""
    try:
        doc = json.loads((entry / BUILT_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return ""
    value = doc.get("observed") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else ""


def entry_path(cache_dir: Path, catalog: Catalog, embedder_name: str,
               annotations: Annotations | None = None) -> Path:
    """The cache entry of ``catalog`` built with ``embedder_name`` and ``annotations`` (it
    may not exist yet)."""
    return cache_dir / cache_key(catalog, embedder_name, LinkConfig(), annotations)


def learned_flows(entry: Path) -> list[ObservedFlow]:
    """The flows learned into ``entry`` (``flows.jsonl``; none when it has no such file)."""
    from hyperplan.select.flows import read_flows

    path = entry / FLOWS_FILE
    return read_flows(path) if path.is_file() else []


def _store(entry: Path, graph: Hypergraph, observed: str = "") -> None:
    """Write the entry under a temporary name (a 0700 directory, 0600 files), then rename it
    into place (a concurrent writer's identical entry wins; either is whole). The side files
    of an entry rebuilt in place (learned flows and outputs) are kept; ``observed`` is the
    digest of the learned outputs the graph was built with."""
    from hyperplan.graph.io import save_graph

    try:
        private_dirs(entry.parent)
    except OSError:
        return  # a cache that cannot be written is no error
    _remove_stale_builds(entry.parent)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=entry.parent))  # mode 0700
    try:
        save_graph(graph, tmp / "graph.json")
        if observed:
            (tmp / BUILT_FILE).write_text(json.dumps({"observed": observed}), encoding="utf-8")
        for name in SIDE_FILES:
            if (entry / name).is_file() and not (entry / name).is_symlink():
                shutil.copyfile(entry / name, tmp / name)
        _tighten(tmp)
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a cache that cannot be written is no error


def private_dirs(path: Path, default: Path | None = None) -> None:
    """Create ``path`` and its missing parents with mode 0700; of those that exist, only the
    default location's own directories are tightened (module doc; ``default``: that
    location, :func:`default_cache_dir` unless given)."""
    from hyperplan.graph.safe_paths import make_private_dirs

    make_private_dirs(path, DIR_MODE)
    default = default or default_cache_dir()
    if path == default:
        for own in (default, default.parent):
            _chmod(own, DIR_MODE)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a 0600 file, through a temporary sibling renamed over it
    (a reader sees the old file or the new one, whole)."""
    descriptor, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # 0600
    try:
        with open(descriptor, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _tighten(entry: Path) -> None:
    """Mode 0700 for the entry directory, 0600 for its files (best effort)."""
    _chmod(entry, DIR_MODE)
    try:
        children = list(entry.iterdir())
    except OSError:
        return
    for child in children:
        if child.is_file() and not child.is_symlink():
            _chmod(child, FILE_MODE)


def _chmod(path: Path, mode: int) -> None:
    try:
        if path.stat().st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except OSError:
        pass  # not ours to change (another user's, or gone): reading still works


def _remove_stale_builds(cache_dir: Path) -> None:
    """Remove the temporary directories of builds killed while writing (older than
    :data:`STALE_BUILD_SECONDS`; a live build writes its entry in seconds)."""
    cutoff = time.time() - STALE_BUILD_SECONDS
    try:
        leftovers = [p for p in cache_dir.glob(".building-*") if p.stat().st_mtime < cutoff]
    except OSError:
        return
    for leftover in leftovers:
        shutil.rmtree(leftover, ignore_errors=True)
