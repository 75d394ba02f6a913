"""Catalog -> Tool-Schema Hypergraph (HyperAgent paper, HyperGraph Construction).

Each tool becomes a hyperedge from its input-schema and precondition nodes to its
output-schema and effect nodes; dependency links are inferred (:mod:`hyperplan.graph.links`)
and user overrides applied (:mod:`hyperplan.graph.overrides`).
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.errors import OverrideError
from hyperplan.graph.annotations import Annotations, InferredNode, merge_nodes
from hyperplan.graph.columns import with_link_columns
from hyperplan.graph.infer import infer_nodes
from hyperplan.graph.infer_conditions import catalog_conditions, merged
from hyperplan.graph.links import LinkConfig, TextEmbedder, inferred_link_columns
from hyperplan.graph.model import Evidence, Hypergraph, NodeKind, SchemaNode, ToolEdge
from hyperplan.graph.schema_paths import (
    MAX_OUTPUT_PATHS,
    SchemaField,
    SchemaWarning,
    input_fields,
    output_fields,
)
from hyperplan.graph.text import NAMELESS_OUTPUTS, listed, name_tokens, returns_clause

Progress = Callable[[str, int, int], None]

#: Confidence an inferred precondition needs to be required (:func:`_inferred_field`).
REQUIRED_CONFIDENCE = 0.7


@dataclass(frozen=True)
class _PendingNode:
    kind: NodeKind
    tool: int
    field: SchemaField
    evidence: Evidence = Evidence.DECLARED
    confidence: float = 1.0


def _tool_nodes(tool_id: int, tool: ToolSpec, oversized: list[tuple[str, int]],
                annotated: Sequence[InferredNode] = ()) -> list[_PendingNode]:
    """The declared nodes of ``tool`` (schemas, declared preconditions and effects), then the
    inferred ones (:func:`~hyperplan.graph.infer.infer_nodes` and ``annotated``) it keeps
    (:func:`~hyperplan.graph.annotations.merge_nodes`)."""
    ins = input_fields(tool.input_schema)
    outs = output_fields(tool.output_schema, where=tool.name, oversized=oversized)
    pending = [_PendingNode(NodeKind.INPUT, tool_id, f) for f in ins]
    pending += [_PendingNode(NodeKind.PRECONDITION, tool_id, _predicate(NodeKind.PRECONDITION,
                                                                       p, tool))
                for p in dict.fromkeys(tool.preconditions)]
    pending += [_PendingNode(NodeKind.OUTPUT, tool_id, _described(f, tool)) for f in outs]
    pending += [_PendingNode(NodeKind.EFFECT, tool_id, _predicate(NodeKind.EFFECT, p, tool))
                for p in dict.fromkeys(tool.effects)]
    declared = [(p.kind, p.field.path) for p in pending]
    # a declared output is firm unless it is a bare value nothing describes
    firm = any(p.kind is NodeKind.OUTPUT and (p.field.path not in NAMELESS_OUTPUTS
                                              or p.field.description) for p in pending)
    kept = merge_nodes(declared, infer_nodes(tool, ins, outs), annotated, firm=firm)
    pending += [_PendingNode(n.kind, tool_id, _inferred_field(n, tool), n.evidence,
                             n.confidence) for n in kept]
    return pending


def _predicate(kind: NodeKind, path: str, tool: ToolSpec, said: str = "") -> SchemaField:
    """The field of a precondition or effect predicate (required, for a precondition)."""
    if kind is NodeKind.PRECONDITION:
        return SchemaField(path, "boolean", said or f"precondition: {path}", required=True)
    return SchemaField(path, "boolean", said or f"effect: {path}: {tool.description}".strip())


def _inferred_field(node: InferredNode, tool: ToolSpec) -> SchemaField:
    """The field of an inferred node; an inferred precondition is required only when it is
    believed (confidence at least :data:`REQUIRED_CONFIDENCE`): DOE must satisfy a required
    one, so a guess stays optional (shown, linked, never demanded)."""
    if node.kind is NodeKind.OUTPUT:
        return SchemaField(node.path, node.type, node.description)
    field = _predicate(node.kind, node.path, tool, node.description)
    if node.kind is NodeKind.PRECONDITION and node.confidence < REQUIRED_CONFIDENCE:
        return replace(field, required=False)
    return field


def _described(field: SchemaField, tool: ToolSpec) -> SchemaField:
    """A bare return value (``result``, ``[]``) that its schema does not describe (no
    description, or only its own name, as MCP servers' ``{"result": ...}`` wrappers titled
    "Result") takes the "returns X" clause of the tool's description, if any: link inference
    knows such an output by its description only (``links._output_features``)."""
    if field.path not in NAMELESS_OUTPUTS or (
            field.description and name_tokens(field.description) != name_tokens(field.path)):
        return field
    said = returns_clause(tool.description)
    return replace(field, description=said) if said else field


def _warn_oversized(oversized: list[tuple[str, int]]) -> None:
    """One warning for every output schema cut to its first :data:`MAX_OUTPUT_PATHS` paths."""
    if not oversized:
        return
    ranked = sorted(oversized, key=lambda item: -item[1])
    shown = listed(f"{name} ({n})" for name, n in ranked)
    tools = "1 tool's output schema has" if len(ranked) == 1 else \
        f"{len(ranked)} tools' output schemas have"
    warnings.warn(f"{tools} more than {MAX_OUTPUT_PATHS} paths, kept the first "
                  f"{MAX_OUTPUT_PATHS} of each: {shown}", SchemaWarning, stacklevel=3)


def structure_from_catalog(catalog: Catalog, annotations: Annotations | None = None,
                           ) -> tuple[list[SchemaNode], list[ToolEdge]]:
    """Nodes and hyperedges of a catalog, input-side nodes numbered first (no links yet);
    ``annotations`` adds inferred nodes per tool name (:mod:`hyperplan.graph.annotations`)."""
    oversized: list[tuple[str, int]] = []
    extra = merged(catalog_conditions(catalog), annotations or {})
    pending = [p for tid, tool in enumerate(catalog.tools)
               for p in _tool_nodes(tid, tool, oversized, extra.get(tool.name, ()))]
    _warn_oversized(oversized)
    pending.sort(key=lambda p: not p.kind.input_side)  # stable: keeps tool order per side
    nodes = [
        SchemaNode(i, p.kind, p.tool, p.field.path, p.field.type, p.field.description,
                   p.field.required, p.evidence, p.confidence)
        for i, p in enumerate(pending)
    ]
    inputs: dict[int, list[int]] = {t: [] for t in range(len(catalog.tools))}
    outputs: dict[int, list[int]] = {t: [] for t in range(len(catalog.tools))}
    for node in nodes:
        (inputs if node.kind.input_side else outputs)[node.tool].append(node.id)
    tools = [
        ToolEdge(
            id=tid,
            name=spec.name,
            description=spec.description,
            inputs=tuple(inputs[tid]),
            outputs=tuple(outputs[tid]),
            required=tuple(v for v in inputs[tid] if nodes[v].required),
            metadata=_edge_metadata(spec),
        )
        for tid, spec in enumerate(catalog.tools)
    ]
    return nodes, tools


def _edge_metadata(spec: ToolSpec) -> dict[str, Any]:
    meta = {k: v for k, v in spec.metadata.items() if isinstance(v, str | int | float | bool)}
    if spec.source:
        meta["source"] = spec.source
    return meta


def build_graph(
    catalog: Catalog,
    *,
    embedder: TextEmbedder | None = None,
    config: LinkConfig | None = None,
    overrides: str | Path | None = None,
    progress: Progress | None = None,
    annotations: Annotations | None = None,
) -> Hypergraph:
    """Build the hypergraph of ``catalog``: structure (declared nodes, and the outputs,
    preconditions and effects inferred where the catalog is silent, plus ``annotations``:
    :mod:`hyperplan.graph.annotations`), inferred links, overrides.

    ``embedder`` gives the description-similarity evidence (None: names and types only).
    """
    started = time.perf_counter()
    with _collector_paused():
        graph = _linked_graph(catalog, embedder, config, progress, annotations)
    if overrides is not None:
        from hyperplan.graph.overrides import apply_overrides, load_overrides

        rules = load_overrides(overrides)  # its errors name the file already
        try:
            graph = apply_overrides(graph, rules)
        except OverrideError as exc:
            raise OverrideError(f"{overrides}: {exc}") from None
    elapsed = time.perf_counter() - started
    return replace(graph, metadata={**graph.metadata, "build_seconds": round(elapsed, 3)})


def _linked_graph(catalog: Catalog, embedder: TextEmbedder | None, config: LinkConfig | None,
                  progress: Progress | None, annotations: Annotations | None) -> Hypergraph:
    """Structure and inferred links of ``catalog`` (no overrides)."""
    nodes, tools = structure_from_catalog(catalog, annotations)
    skeleton = Hypergraph.from_parts(nodes, tools, [])
    columns = inferred_link_columns(skeleton, embedder=embedder, config=config,
                                    progress=progress)
    return with_link_columns(skeleton, columns, {
        "source": catalog.source,
        "embedder": getattr(embedder, "name", None),
        "link_config": (config or LinkConfig()).as_dict(),
    })


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (restored to its previous state): a build creates
    hundreds of thousands of objects and no cyclic garbage, and each collection would only
    rescan them."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
