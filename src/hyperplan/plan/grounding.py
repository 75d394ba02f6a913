"""Grounding: which input-schema nodes the current agent state already satisfies.

The agent state S = (C, R, I) of Definition 4 (HyperAgent) binds schema nodes to values and
records achieved effects. DOE only needs to know which input-side nodes are grounded; this
module derives that as a boolean vector over V_I from plain bindings, so the deterministic core
does not depend on the runtime's state class.

Rules (documented, in order):

1. a bound input node key (``tool:in:param``) grounds that node;
2. a bare parameter name (``query``) grounds every input node with that name — a known value
   the user gave without saying which tool it is for;
3. a bound output node key (``tool:out:path``, a value a previous call returned) grounds every
   input it links to with weight at least ``min_weight``;
4. an achieved effect predicate (``spotify.authenticated``) grounds every precondition node with
   that predicate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hyperplan.graph.model import Hypergraph


@dataclass(frozen=True, eq=False)
class Grounding:
    """A read-only boolean vector over the input-side nodes: ``grounded[r]`` is True when the
    state satisfies input node r."""

    grounded: np.ndarray

    def __contains__(self, node: int) -> bool:
        return bool(self.grounded[node])

    @property
    def count(self) -> int:
        return int(self.grounded.sum())


def empty_grounding(graph: Hypergraph) -> Grounding:
    vector = np.zeros(graph.n_input_nodes, dtype=bool)
    vector.setflags(write=False)
    return Grounding(vector)


def ground(
    graph: Hypergraph,
    values: Iterable[str] | dict[str, Any] = (),
    effects: Iterable[str] = (),
    *,
    min_weight: float = 0.0,
) -> Grounding:
    """The grounding of a state that binds ``values`` (node keys or bare parameter names; a
    mapping's keys are used) and has achieved ``effects`` (rules 1–4 of the module doc).
    Names that match nothing are ignored: a state may know more than the graph."""
    vector = np.zeros(graph.n_input_nodes, dtype=bool)
    by_name = graph.inputs_by_name
    for key in values:
        node_id = graph.node_index.get(key)
        if node_id is None:
            vector[by_name.get(key, [])] = True
            continue
        node = graph.nodes[node_id]
        if node.kind.input_side:
            vector[node_id] = True
        else:
            vector[_linked_inputs(graph, node_id, min_weight)] = True
    preconditions = graph.preconditions_by_path
    for effect in set(effects):
        vector[preconditions.get(effect, [])] = True
    vector.setflags(write=False)
    return Grounding(vector)


def _linked_inputs(graph: Hypergraph, output_node: int, min_weight: float) -> np.ndarray:
    """Input nodes the output node links to with weight at least ``min_weight``."""
    matrix = graph.link_matrix
    lo, hi = matrix.indptr[output_node], matrix.indptr[output_node + 1]
    return np.asarray(matrix.indices[lo:hi][matrix.data[lo:hi] >= min_weight])
