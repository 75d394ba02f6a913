"""Ground-truth-ish data flows read back from a synthetic catalog.

:func:`synthetic_expectations` lists every required id input (``show_order.order_id``) with
the tools of the same app that output that id (``search_orders`` via ``orders[].order_id``,
``create_order`` ...); :func:`id_inputs_with_producer` counts how many of them received an
inferred link from one of those producers.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.schema_paths import output_fields
from hyperplan.graph.text import name_tokens, path_segments

__all__ = ["IdExpectation", "id_inputs_with_producer", "synthetic_expectations"]


@dataclass(frozen=True)
class IdExpectation:
    """A required id input (``app7.show_order`` / ``order_id``) and the other tools of the
    same app that output that id (``app7.search_orders``, ``app7.create_order`` ...)."""

    tool: str
    input: str
    producers: tuple[str, ...]


def _id_key(name: str) -> str | None:
    tokens = name_tokens(name)
    if len(tokens) >= 2 and tokens[-1] == "id":
        return "_".join(tokens)
    return None


def synthetic_expectations(catalog: Catalog) -> list[IdExpectation]:
    """Required id inputs with their same-app producers, read back from the catalog.

    An output produces ``order_id`` when its last path segment is ``order_id`` (or
    ``orderId``), at any depth (``orders[].order_id``, ``[].order.order_id``). Inputs with no
    producer in their app are left out.
    """
    by_app: dict[str, list[ToolSpec]] = {}
    for tool in catalog.tools:
        by_app.setdefault(str(tool.metadata.get("app", "")), []).append(tool)
    expectations = []
    for tools in by_app.values():
        producers: dict[str, list[str]] = {}
        for tool in tools:
            keys = set()
            for field in output_fields(tool.output_schema, where=tool.name):
                segments = path_segments(field.path)
                key = _id_key(segments[-1]) if segments else None
                if key:
                    keys.add(key)
            for key in sorted(keys):
                producers.setdefault(key, []).append(tool.name)
        for tool in tools:
            for name in tool.required_inputs:
                key = _id_key(name)
                found = tuple(p for p in producers.get(key or "", []) if p != tool.name)
                if found:
                    expectations.append(IdExpectation(tool.name, name, found))
    return expectations


def id_inputs_with_producer(graph: Hypergraph, expectations: list[IdExpectation]) -> int:
    """How many expected id inputs have an inferred link from one of their producers."""
    inputs: dict[tuple[int, str], int] = {
        (n.tool, n.path): n.id for n in graph.nodes if n.kind is NodeKind.INPUT
    }
    satisfied = 0
    for exp in expectations:
        tool = graph.tool_index.get(exp.tool)
        node = inputs.get((tool, exp.input)) if tool is not None else None
        if node is None:
            continue
        producers = {graph.tool_index[p] for p in exp.producers if p in graph.tool_index}
        if any(graph.nodes[lk.source].tool in producers for lk in graph.links_into(node)):
            satisfied += 1
    return satisfied
