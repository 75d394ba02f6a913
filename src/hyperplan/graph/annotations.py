"""Schema nodes a catalog does not declare: outputs, preconditions and effects added with their
evidence (HyperAgent paper, "Hypergraph construction": expert annotations plus extraction of
effect and condition nodes; Definition 1's V_O, V_F and condition nodes).

An :class:`InferredNode` is one such node of one tool; :func:`hyperplan.graph.infer.infer_nodes`
derives them by rule from names and descriptions, ``hyperplan graph annotate`` asks a model
(evidence ``llm``) and a running gateway records what results held (``observed``). Sources
other than rules come as :data:`Annotations` (tool name -> nodes), saved as JSON beside a
graph (:func:`save_annotations`, :func:`load_annotations`).

:func:`merge_nodes` decides what a tool keeps: a declared node always wins; of the inferred
nodes with the same (kind, path), the most confident one; and an output inferred from the name
or description is dropped once the tool has declared or observed outputs (the catalog or the
results are better evidence than a guess from the text).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import known_type
from hyperplan.errors import CatalogError
from hyperplan.graph.model import Evidence, NodeKind

FORMAT = "hyperplan.annotations"
VERSION = 1

#: Declared outputs that name nothing (a bare return value, a list of scalars): they leave
#: room for the outputs a description or a name says the value holds.
_NAMELESS = frozenset({"result", "[]"})
#: Evidence that describes a tool's real outputs: once present, text guesses are dropped.
_FIRM_OUTPUTS = frozenset({Evidence.DECLARED, Evidence.OBSERVED, Evidence.LLM})


@dataclass(frozen=True, slots=True)
class InferredNode:
    """An output, precondition or effect node of one tool that its catalog does not declare.

    ``path`` is an output path (``ticket_id``, ``items[].id``) or a state predicate
    (``device.bluetooth.enabled``); ``confidence`` in (0, 1] scales the links it takes part
    in."""

    kind: NodeKind
    path: str
    type: str = "any"
    description: str = ""
    evidence: Evidence = Evidence.NAME
    confidence: float = 0.5

    def __post_init__(self) -> None:
        if self.kind is NodeKind.INPUT:
            raise ValueError("an inferred node is an output, a precondition or an effect")
        if not self.path.strip():
            raise ValueError("an inferred node needs a path")
        if not (0.0 < self.confidence <= 1.0) or math.isnan(self.confidence):
            raise ValueError(f"confidence must be in (0, 1], got {self.confidence!r}")


#: Inferred nodes per tool name (an annotation file's content).
Annotations = Mapping[str, Sequence[InferredNode]]


def merge_nodes(declared: Iterable[tuple[NodeKind, str]],
                *sources: Iterable[InferredNode], firm: bool | None = None) -> list[InferredNode]:
    """The inferred nodes a tool keeps, in first-seen order (module doc): none whose (kind,
    path) is declared; no ``name``/``description`` outputs when the tool has declared outputs
    (``firm``; by default: any but a bare nameless ``result``) or any observed or model-given
    one; of those left sharing a (kind, path), the most confident (the first on ties)."""
    taken = set(declared)
    nodes = [n for source in sources for n in source if (n.kind, n.path) not in taken]
    if firm is None:
        firm = any(kind is NodeKind.OUTPUT and path not in _NAMELESS for kind, path in taken)
    firm = firm or any(n.kind is NodeKind.OUTPUT and n.evidence in _FIRM_OUTPUTS for n in nodes)
    best: dict[tuple[NodeKind, str], InferredNode] = {}
    for node in nodes:
        if firm and node.kind is NodeKind.OUTPUT and node.evidence not in _FIRM_OUTPUTS:
            continue
        held = best.get((node.kind, node.path))
        if held is None or node.confidence > held.confidence:
            best[(node.kind, node.path)] = node
    return list(best.values())


# ----------------------------------------------------------------------------- files
def annotations_doc(annotations: Annotations) -> dict[str, Any]:
    """The JSON document of ``annotations`` (tools in name order)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "tools": {
            name: [{"kind": n.kind.value, "path": n.path, "type": n.type,
                    "description": n.description, "evidence": n.evidence.value,
                    "confidence": n.confidence} for n in nodes]
            for name, nodes in sorted(annotations.items())
        },
    }


def save_annotations(annotations: Annotations, path: str | Path) -> Path:
    """Write ``annotations`` as JSON to ``path`` (through a temporary file)."""
    from hyperplan.graph.safe_paths import write_text

    target = Path(path)
    write_text(target, json.dumps(annotations_doc(annotations), indent=1), error=CatalogError)
    return target


def load_annotations(path: str | Path) -> dict[str, tuple[InferredNode, ...]]:
    """Read an annotation file; every problem is one :class:`CatalogError` naming the file,
    the tool and the field."""
    where = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"cannot read annotations: {exc}", file=where) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CatalogError(f"not a {FORMAT} file", file=where)
    tools = doc.get("tools")
    if not isinstance(tools, dict):
        raise CatalogError("'tools' must be an object of tool name -> nodes", file=where,
                           field="tools")
    return {str(name): parse_nodes(raw, file=where, tool=str(name))
            for name, raw in tools.items()}


_KINDS = {k.value: k for k in NodeKind if k is not NodeKind.INPUT}
_EVIDENCE = {e.value: e for e in Evidence}


def parse_nodes(raw: Any, *, file: str | None = None, tool: str | None = None,
                evidence: Evidence | None = None) -> tuple[InferredNode, ...]:
    """Nodes from their JSON form (a list of objects with ``kind``, ``path`` and optionally
    ``type``, ``description``, ``evidence``, ``confidence``); ``evidence``, when given,
    overrides what the objects say (a model's answer is ``llm`` whatever it claims)."""
    if not isinstance(raw, list):
        raise CatalogError("nodes must be a list", file=file, tool=tool)
    return tuple(_parse_node(item, i, file, tool, evidence) for i, item in enumerate(raw))


def _parse_node(item: Any, i: int, file: str | None, tool: str | None,
                evidence: Evidence | None) -> InferredNode:
    def bad(field: str, msg: str) -> CatalogError:
        return CatalogError(msg, file=file, tool=tool, field=f"[{i}].{field}")

    if not isinstance(item, dict):
        raise bad("", "a node must be an object")
    kind = _KINDS.get(str(item.get("kind", "")))
    if kind is None:
        raise bad("kind", f"kind must be one of {', '.join(_KINDS)}, got {item.get('kind')!r}")
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        raise bad("path", "path must be a non-empty string")
    said = _EVIDENCE.get(str(item.get("evidence", "")), Evidence.LLM)
    confidence = item.get("confidence", 0.5)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) \
            or not 0.0 < float(confidence) <= 1.0:
        raise bad("confidence", f"confidence must be a number in (0, 1], got {confidence!r}")
    return InferredNode(kind, path.strip(), known_type(item.get("type")) or "any",
                        str(item.get("description") or ""), evidence or said,
                        float(confidence))
