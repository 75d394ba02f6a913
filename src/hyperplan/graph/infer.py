"""Rules that add the schema nodes a catalog does not declare (HyperAgent paper, "Hypergraph
construction"; Definition 1's condition and effect nodes), with their evidence
(:class:`~hyperplan.graph.model.Evidence`) and confidence.

:func:`infer_nodes` is what :func:`hyperplan.graph.build.build_graph` calls per tool; what it
returns is merged with the declared nodes and any annotation file
(:func:`hyperplan.graph.annotations.merge_nodes`).

The rules (:mod:`hyperplan.graph.effects` holds the word lists):

* **outputs** of a tool that declares none (:mod:`hyperplan.graph.infer_outputs`): from its
  description, its name or MCP title, the criteria a search echoes;
* **sign-in, toggles, validators** (:mod:`hyperplan.graph.infer_conditions`): the effects
  ``<ns>.authenticated``, ``X.enabled``, ``X.valid``; the preconditions that need them are
  per catalog (:func:`~hyperplan.graph.infer_conditions.catalog_conditions`);
* **credentials**: a required credential input (``access_token``, ``api_key``...) is the
  precondition ``<ns>.authenticated``; a credential among the outputs is that effect.
* **writes**: a tool that writes (MCP ``destructiveHint``; HTTP method POST/PUT/PATCH/DELETE;
  a name starting with a write verb, unless MCP ``readOnlyHint`` says it only reads) has the
  effect ``<tool>.done``.
"""

from __future__ import annotations

from collections.abc import Sequence

from hyperplan.catalog import ToolSpec
from hyperplan.graph.annotations import InferredNode
from hyperplan.graph.effects import (
    auth_predicate,
    credential_scope,
    is_credential,
    write_evidence,
)
from hyperplan.graph.infer_conditions import tool_conditions
from hyperplan.graph.infer_outputs import infer_outputs
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.graph.schema_paths import SchemaField
from hyperplan.graph.text import path_segments

#: Changes whenever a rule does, here or in link inference (:mod:`hyperplan.graph.links`,
#: :mod:`hyperplan.graph.field_roles`): caches of built graphs (:mod:`hyperplan.select.cache`)
#: are keyed by it, so a graph built under older rules is rebuilt.
RULES_VERSION = 5


def infer_nodes(tool: ToolSpec, inputs: Sequence[SchemaField],
                outputs: Sequence[SchemaField]) -> list[InferredNode]:
    """The outputs, preconditions and effects ``tool`` gets by rule (module doc), given its
    declared ``inputs`` and ``outputs``."""
    return [*infer_outputs(tool, inputs, outputs), *_credential_nodes(tool, inputs, outputs),
            *tool_conditions(tool), *_write_effects(tool)]


def _credential_nodes(tool: ToolSpec, inputs: Sequence[SchemaField],
                      outputs: Sequence[SchemaField]) -> list[InferredNode]:
    nodes = []
    for f in inputs:
        scope = credential_scope(f.path)
        if f.required and scope is not None:
            nodes.append(InferredNode(NodeKind.PRECONDITION, auth_predicate(tool, scope),
                                      "boolean", evidence=Evidence.NAME, confidence=1.0))
    if any(is_credential(segs[-1]) for f in outputs if (segs := path_segments(f.path))):
        nodes.append(InferredNode(NodeKind.EFFECT, auth_predicate(tool), "boolean",
                                  evidence=Evidence.NAME, confidence=1.0))
    return nodes


def _write_effects(tool: ToolSpec) -> list[InferredNode]:
    evidence = write_evidence(tool)
    if evidence is None:
        return []
    return [InferredNode(NodeKind.EFFECT, f"{tool.name}.done", "boolean",
                         evidence=evidence, confidence=1.0)]
