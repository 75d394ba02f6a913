"""Output schemas learned from the structured results a tool actually returned (issue 37,
item 1: "observed" outputs; HyperAgent's output nodes V_O of Definition 1 where a catalog
declares none).

Most MCP servers declare no ``outputSchema`` (or only a ``result`` wrapper), so the
hypergraph has no output nodes to link from. When a session (:meth:`~hyperplan.select.Session.
observe`, which every result the gateway forwards goes through) sees a structured result of
such a tool, :func:`result_paths` reads its shape: the top-level keys and one level below
(nested objects and the items of arrays), each with its JSON type; a result that is JSON
text is parsed first. :class:`ObservedOutputs` keeps these per tool as
:class:`~hyperplan.graph.annotations.InferredNode` outputs with evidence ``observed`` in the
selector's cache entry (``observed.json``, beside the graph like the learned flows), and the
next :func:`~hyperplan.select.build_selector` (or gateway start) over the same catalog builds
its graph with them (:func:`hyperplan.select.cache.cached_build`).

Only names and types are kept, never values (a value may be a secret); the file is bounded
(:data:`MAX_KEYS` paths per tool, :data:`MAX_TOOLS` tools) and private (0600, like the rest
of the cache).
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.catalog import ToolSpec
from hyperplan.errors import CatalogError
from hyperplan.graph.annotations import Annotations, InferredNode, annotations_doc, parse_nodes
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.graph.text import NAMELESS_OUTPUTS

if TYPE_CHECKING:
    from hyperplan.select.selector import Selector

MAX_KEYS = 32  # output paths learned per tool
MAX_TOOLS = 500  # tools with learned outputs per cache entry
MAX_TEXT_CHARS = 1_000_000  # a longer text result is not parsed
MAX_ITEMS = 5  # array items read for the fields of their objects
#: What was seen in a result is near-declared evidence: above every text rule
#: (``graph.infer_outputs`` goes up to 0.95), short of a declaration (1.0).
CONFIDENCE = 0.97
_NAME_CHARS = 64  # a longer key is no field name (a map keyed by data)


def needs_outputs(tool: ToolSpec) -> bool:
    """Whether ``tool`` declares no named outputs: no output schema, or one that is only a
    bare value (``result``, ``[]``)."""
    from hyperplan.graph.schema_paths import output_fields

    if tool.output_schema is None:
        return True
    try:
        fields = output_fields(tool.output_schema, where=tool.name)
    except Exception:  # an odd schema: the graph declares what it could read of it
        return False
    return all(f.path in NAMELESS_OUTPUTS for f in fields)


def structured(value: Any) -> Any:
    """``value`` as a JSON structure: a text holding a JSON object or array is parsed (an
    MCP tool's result is often its JSON as text), anything else is returned as it is."""
    if isinstance(value, str) and len(value) <= MAX_TEXT_CHARS:
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


def result_paths(value: Any) -> list[tuple[str, str]]:
    """The output paths of one result with their JSON types (module doc): ``ticket_id``,
    ``owner.email``, ``items`` and ``items[].id``; for a top-level array, ``[].id``. At most
    :data:`MAX_KEYS`; none for a scalar or a text that is no JSON structure."""
    paths: dict[str, str] = {}
    for path, kind in _paths(structured(value)):
        if path not in paths and len(paths) >= MAX_KEYS:
            break
        if paths.get(path, "any") == "any":  # a null seen first takes the type seen later
            paths[path] = kind
    return list(paths.items())


def _paths(value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if _field_name(key):
                yield key, json_type(item)
                yield from ((f"{key}{sub}", kind) for sub, kind in _below(item))
    elif isinstance(value, list):
        yield from _below(value)


def _below(value: Any) -> Iterator[tuple[str, str]]:
    """One level below ``value``: ``.key`` of an object, ``[].key`` of an array's objects."""
    if isinstance(value, dict):
        yield from ((f".{k}", json_type(v)) for k, v in value.items() if _field_name(k))
    elif isinstance(value, list):
        for item in value[:MAX_ITEMS]:
            if isinstance(item, dict):
                yield from ((f"[].{k}", json_type(v)) for k, v in item.items()
                            if _field_name(k))


def _field_name(key: Any) -> bool:
    return isinstance(key, str) and 0 < len(key) <= _NAME_CHARS and key.strip() == key \
        and not any(c in key for c in ".[]") and key.isprintable()


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (``any`` for null)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "any"


# ----------------------------------------------------------------------------- the store
def read_observed(path: Path) -> dict[str, tuple[InferredNode, ...]]:
    """The learned outputs in ``path`` (none when it is missing or damaged: it is a cache)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        tools = doc["tools"]
        return {str(name): parse_nodes(raw, file=str(path), tool=str(name),
                                       evidence=Evidence.OBSERVED)
                for name, raw in list(tools.items())[:MAX_TOOLS]}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
            AttributeError, CatalogError):
        return {}


def combine_annotations(*sources: Annotations | None) -> dict[str, tuple[InferredNode, ...]]:
    """Several sources of annotations as one (each tool's nodes in source order;
    :func:`~hyperplan.graph.annotations.merge_nodes` keeps the best of a (kind, path))."""
    combined: dict[str, list[InferredNode]] = {}
    for source in sources:
        for name, nodes in (source or {}).items():
            combined.setdefault(name, []).extend(nodes)
    return {name: tuple(nodes) for name, nodes in combined.items() if nodes}


class ObservedOutputs:
    """The outputs learned for one selector's tools, kept in ``path`` (None: learned in
    memory only). Thread-safe; the file is rewritten only when something new was learned."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.learned: dict[str, dict[str, str]] = {}  # tool -> path -> type
        self._lock = threading.Lock()
        if path is not None:
            for name, nodes in read_observed(path).items():
                self.learned[name] = {n.path: n.type for n in nodes if n.kind is NodeKind.OUTPUT}

    def record(self, tool: str, value: Any) -> bool:
        """Learn the output paths of one result of ``tool``; True when any was new (and the
        file was rewritten)."""
        found = result_paths(value)
        if not found:
            return False
        with self._lock:
            known = self.learned.get(tool)
            if known is None and len(self.learned) >= MAX_TOOLS:
                return False
            known = self.learned.setdefault(tool, {})
            new = [(p, t) for p, t in found if p not in known][:MAX_KEYS - len(known)]
            for path, kind in new:
                known[path] = kind
            if new and self.path is not None:
                self._write()
            return bool(new)

    def annotations(self) -> dict[str, tuple[InferredNode, ...]]:
        """What was learned, as annotations (evidence ``observed``)."""
        with self._lock:
            return {name: _nodes(paths) for name, paths in self.learned.items() if paths}

    def _write(self) -> None:
        """Merge with what another process wrote meanwhile, then replace the file."""
        from hyperplan.select.cache import write_private

        assert self.path is not None
        for name, nodes in read_observed(self.path).items():
            if name in self.learned or len(self.learned) < MAX_TOOLS:
                mine = self.learned.setdefault(name, {})
                for node in nodes:
                    if len(mine) < MAX_KEYS:
                        mine.setdefault(node.path, node.type)
        doc = annotations_doc({name: _nodes(paths) for name, paths in self.learned.items()})
        with contextlib.suppress(OSError):  # a cache that cannot be written is no error
            write_private(self.path, json.dumps(doc, indent=1))


def _nodes(paths: Mapping[str, str]) -> tuple[InferredNode, ...]:
    return tuple(InferredNode(NodeKind.OUTPUT, path, kind, "seen in a result",
                              Evidence.OBSERVED, CONFIDENCE)
                 for path, kind in paths.items())


_STORES: weakref.WeakKeyDictionary[Selector, ObservedOutputs] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def store_of(selector: Selector) -> ObservedOutputs:
    """The learned-outputs store of ``selector``: in its cache entry when it has one."""
    from hyperplan.select.cache import OBSERVED_FILE

    with _STORES_LOCK:
        store = _STORES.get(selector)
        if store is None:
            entry = selector.entry
            where = entry / OBSERVED_FILE if entry is not None and entry.is_dir() else None
            store = _STORES[selector] = ObservedOutputs(where)
        return store


def observe_result(selector: Selector, tool: str, value: Any) -> Any:
    """Learn the outputs of one successful result of ``tool`` when its catalog declares none
    (module doc), and return the result as the session should ground it (JSON text parsed,
    so the learned paths find their values); other tools' results are returned unchanged."""
    try:
        spec = selector.tool(tool)
    except KeyError:
        return value
    if not needs_outputs(spec):
        return value
    parsed = structured(value)
    store_of(selector).record(tool, parsed)
    return parsed


def learned_nodes(selector: Selector) -> Mapping[str, Sequence[InferredNode]]:
    """What ``selector``'s sessions learned so far (for tests and diagnostics)."""
    return store_of(selector).annotations()
