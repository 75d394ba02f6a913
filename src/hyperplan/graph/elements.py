"""The elements of the Tool-Schema Hypergraph H = (V, E, D) (HyperAgent paper, Preliminaries):
schema nodes V (:class:`SchemaNode`, of a :class:`NodeKind`), tool hyperedges E
(:class:`ToolEdge`) and dependency links D (:class:`Link`), all frozen.
:class:`~hyperplan.graph.model.Hypergraph` holds them; the modules beside it compute from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class NodeKind(StrEnum):
    """Kinds of schema node. ``INPUT``/``PRECONDITION`` form V_I, ``OUTPUT``/``EFFECT`` V_O."""

    INPUT = "in"
    PRECONDITION = "pre"
    OUTPUT = "out"
    EFFECT = "eff"

    @property
    def input_side(self) -> bool:
        return self in (NodeKind.INPUT, NodeKind.PRECONDITION)


class Evidence(StrEnum):
    """Where a schema node comes from. ``DECLARED``: the catalog says so (a schema, a declared
    effect, an HTTP method). The others are inferred where a catalog is silent (the paper's
    "Hypergraph construction" extracts them with annotators and GPT-4o): ``DESCRIPTION`` (the
    tool's text: "Returns the cart id"), ``NAME`` (the tool's or a parameter's name:
    ``get_system_timezone`` -> timezone), ``OBSERVED`` (structured results seen at run time)
    and ``LLM`` (a model's structured annotation, ``hyperplan graph annotate``)."""

    DECLARED = "declared"
    DESCRIPTION = "description"
    NAME = "name"
    OBSERVED = "observed"
    LLM = "llm"


@dataclass(frozen=True, slots=True)
class SchemaNode:
    """A schema node: ``path`` is a parameter name, an output path (``songs[].id``) or a
    state predicate (``spotify.authenticated``) for effects and preconditions. ``evidence``
    says where it comes from and ``confidence`` (in (0, 1], 1 for declared nodes) how far it
    is believed: it scales the weight of the links it takes part in."""

    id: int
    kind: NodeKind
    tool: int
    path: str
    type: str = "any"
    description: str = ""
    required: bool = False
    evidence: Evidence = Evidence.DECLARED
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class ToolEdge:
    """A tool hyperedge e: I(e) = ``inputs`` (incl. preconditions), O(e) = ``outputs``
    (incl. effects). ``required`` ⊆ inputs are the inputs a call cannot do without."""

    id: int
    name: str
    description: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    required: tuple[int, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Link:
    """A dependency link D(source, target) = weight from an output/effect node to an
    input/precondition node, with the evidence that produced it."""

    source: int
    target: int
    weight: float
    evidence: str = ""


def node_key(tool_name: str, kind: NodeKind, path: str) -> str:
    """The external name of a node, e.g. ``spotify.login:out:access_token``."""
    return f"{tool_name}:{kind.value}:{path}"


def frozen_array(array: np.ndarray) -> np.ndarray:
    """``array`` made read only (the graph's arrays are never written after construction)."""
    array.setflags(write=False)
    return array
