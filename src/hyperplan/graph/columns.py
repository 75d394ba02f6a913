"""The Tool-Schema Hypergraph from column arrays (for graphs with millions of nodes and links):
:func:`from_arrays` (``Hypergraph.from_arrays``) and :func:`with_link_columns` (a graph's link
set replaced by link inference's columns), validated and deduplicated with numpy, each step
one small function.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hyperplan.errors import GraphError
from hyperplan.graph.elements import Link, NodeKind, SchemaNode, ToolEdge, frozen_array

if TYPE_CHECKING:
    from hyperplan.graph.model import Hypergraph

    LinkColumns = tuple[np.ndarray | Sequence[int], np.ndarray | Sequence[int],
                        np.ndarray | Sequence[float], Sequence[str] | str]


def from_arrays(
    cls: type[Hypergraph],
    *,
    node_kind: np.ndarray | Sequence[str],
    node_tool: np.ndarray | Sequence[int],
    node_path: Sequence[str],
    tool_name: Sequence[str],
    link_source: np.ndarray | Sequence[int] = (),
    link_target: np.ndarray | Sequence[int] = (),
    link_weight: np.ndarray | Sequence[float] = (),
    node_type: Sequence[str] | str = "any",
    node_description: Sequence[str] | str = "",
    node_required: np.ndarray | Sequence[bool] | bool = False,
    tool_description: Sequence[str] | str = "",
    tool_metadata: Sequence[Mapping[str, Any]] | None = None,
    link_evidence: Sequence[str] | str = "",
    metadata: Mapping[str, Any] | None = None,
) -> Hypergraph:
    """The graph ``cls.from_parts`` would build, from column arrays, validated and
    deduplicated with numpy (for graphs with millions of nodes and links).

    Node ``i`` has kind ``node_kind[i]`` (a :class:`NodeKind`, its value, or an integer
    code 0-3 in the order in, pre, out, eff), owner ``node_tool[i]`` and ``node_path[i]``;
    ``node_type``/``node_description``/``node_required`` are per node or one value for all.
    Tool ``j`` is named ``tool_name[j]``; its I(e) / O(e) are the input-side / output-side
    nodes it owns in id order and its required inputs those of them with ``node_required``
    (as :func:`hyperplan.graph.build.structure_from_catalog` numbers them). Links are
    ``link_source[k] -> link_target[k]`` with ``link_weight[k]`` and ``link_evidence[k]``
    (or one evidence string for all). The same checks as ``from_parts`` raise the same
    :class:`GraphError`; duplicate links keep the highest weight (the first on ties), sorted
    by (target, source). ``tools[j].metadata`` is ``tool_metadata[j]`` (a fresh empty dict
    by default; the mapping is not copied, so tools may share one). Each step is one of the
    module's private helpers, from :func:`_node_kind_codes` to :func:`_nodes_and_tools`.
    """
    codes = _node_kind_codes(node_kind)
    n, m = int(codes.size), len(tool_name)
    owner = np.asarray(node_tool, dtype=np.int64).reshape(-1)
    paths = _expand_column(node_path, n, "node_path")
    types = _expand_column(node_type, n, "node_type")
    descriptions = _expand_column(node_description, n, "node_description")
    required = _node_required_flags(node_required, n)
    input_side = codes <= 1
    n_in = _check_node_columns(input_side, owner, m)
    src, tgt, weight, evidence = _kept_links(
        (link_source, link_target, link_weight, link_evidence), input_side)
    nodes, tools = _nodes_and_tools(
        codes, owner, paths, types, descriptions, required, input_side,
        tool_name=tool_name, tool_description=tool_description, tool_metadata=tool_metadata,
    )
    graph = cls(nodes=nodes, tools=tools, link_source=src, link_target=tgt, link_weight=weight,
                link_evidence=evidence, n_input_nodes=n_in, metadata=dict(metadata or {}))
    graph.__dict__["node_tool"] = frozen_array(owner.copy())  # the cached_property's value
    return graph


def with_link_columns(
    graph: Hypergraph,
    columns: tuple[np.ndarray, np.ndarray, np.ndarray, Sequence[str]],
    metadata: Mapping[str, Any],
) -> Hypergraph:
    """``graph.with_links`` for links given as columns (source, target, weight, evidence: link
    inference's output), without a :class:`Link` per link: the same checks, deduplication and
    order (:func:`_kept_links`)."""
    src, tgt, weight, evidence = _kept_links(
        columns, np.arange(graph.n_nodes) < graph.n_input_nodes)
    return type(graph)(
        nodes=graph.nodes, tools=graph.tools, link_source=src, link_target=tgt,
        link_weight=weight, link_evidence=evidence, n_input_nodes=graph.n_input_nodes,
        metadata={**graph.metadata, **metadata},
    )


def _kept_links(
    columns: LinkColumns, input_side: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """The links to keep of ``columns`` (source, target, weight, evidence or one evidence
    string for all), checked (:func:`_check_link_columns`), deduplicated (the highest weight,
    the first of equal ones) and sorted by (target, source): frozen arrays and evidence."""
    source, target, weight, evidence = columns
    src, tgt, w = _link_columns(source, target, weight)
    listed = _expand_column(evidence, int(src.size), "link_evidence")
    _check_link_columns(src, tgt, w, listed, input_side)
    order = _deduplicated_link_order(src, tgt, w)
    return (frozen_array(src[order]), frozen_array(tgt[order]), frozen_array(w[order]),
            _kept_link_evidence(evidence, listed, order))


# ----------------------------------------------------------------- the steps
def _node_kind_codes(node_kind: np.ndarray | Sequence[str]) -> np.ndarray:
    """``node_kind`` as a flat int8 array of codes 0-3 (in, pre, out, eff): members and values
    of :class:`NodeKind` are looked up, integer codes are range-checked."""
    codes = np.asarray(node_kind)
    kinds = tuple(NodeKind)
    if codes.size and codes.dtype.kind not in "iu":
        values, inverse = np.unique(codes.astype(str), return_inverse=True)
        lookup = {k.value: i for i, k in enumerate(kinds)}
        unknown = [v for v in values.tolist() if v not in lookup]
        if unknown:
            raise GraphError(f"unknown node kind {unknown[0]!r}")
        codes = np.asarray([lookup[v] for v in values.tolist()], dtype=np.int8)[inverse]
    codes = codes.reshape(-1)
    if codes.size and (codes.min() < 0 or codes.max() >= len(kinds)):
        raise GraphError(f"node kind codes must be 0..{len(kinds) - 1}")
    return codes.astype(np.int8)


def _expand_column(values: Any, size: int, what: str) -> Sequence[Any]:
    """A column of ``size`` entries as a list: a single str or bool repeated, otherwise the
    entries of ``values`` (a GraphError naming ``what`` when their number is not ``size``)."""
    if isinstance(values, str | bool):
        return list(itertools.repeat(values, size))
    listed = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if len(listed) != size:
        raise GraphError(f"{what} has {len(listed)} entries for {size}")
    return listed


def _node_required_flags(
    node_required: np.ndarray | Sequence[bool] | bool, n_nodes: int
) -> np.ndarray:
    """``node_required`` as a flat bool array with one flag per node (one bool for all)."""
    if isinstance(node_required, bool | np.bool_):
        return np.full(n_nodes, bool(node_required))
    required = np.asarray(node_required, dtype=bool).reshape(-1)
    if required.size != n_nodes:
        raise GraphError(f"node_required has {required.size} entries for {n_nodes}")
    return required


def _check_node_columns(input_side: np.ndarray, owner: np.ndarray, n_tools: int) -> int:
    """``Hypergraph.from_parts``' node checks on columns: ``owner`` must have one tool id per
    node; then the first node whose tool is unknown or whose input side is out of order
    raises. Returns the number of input-side nodes."""
    n = int(input_side.size)
    if owner.size != n:
        raise GraphError(f"node_tool has {owner.size} entries for {n}")
    n_in = int(input_side.sum())
    bad_tool = (owner < 0) | (owner >= n_tools)
    outputs_at = np.flatnonzero(~input_side)
    first_output = int(outputs_at[0]) if outputs_at.size else n
    out_of_order = input_side & (np.arange(n) > first_output)
    first = np.flatnonzero(bad_tool | out_of_order)
    if first.size:
        i = int(first[0])
        if bad_tool[i]:
            raise GraphError(f"node {i} names unknown tool id {int(owner[i])}")
        raise GraphError("input-side nodes must precede output-side nodes")
    return n_in


def _link_columns(
    link_source: np.ndarray | Sequence[int],
    link_target: np.ndarray | Sequence[int],
    link_weight: np.ndarray | Sequence[float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The link columns as flat int64 / int64 / float64 arrays of one length."""
    src = np.asarray(link_source, dtype=np.int64).reshape(-1)
    tgt = np.asarray(link_target, dtype=np.int64).reshape(-1)
    weight = np.asarray(link_weight, dtype=np.float64).reshape(-1)
    if not src.size == tgt.size == weight.size:
        raise GraphError(f"link arrays differ in length: {src.size}, {tgt.size}, "
                         f"{weight.size}")
    return src, tgt, weight


def _check_link_columns(
    src: np.ndarray,
    tgt: np.ndarray,
    weight: np.ndarray,
    evidence: Sequence[Any],
    input_side: np.ndarray,
) -> None:
    """``Hypergraph.from_parts``' link checks on columns: the first bad link raises the first
    of its failures in the order range, direction, weight."""
    n = int(input_side.size)
    in_range = (src >= 0) & (src < n) & (tgt >= 0) & (tgt < n)
    direction = np.zeros(src.size, dtype=bool)
    direction[in_range] = ~input_side[src[in_range]] & input_side[tgt[in_range]]
    weight_ok = (weight > 0.0) & (weight <= 1.0)
    bad_links = np.flatnonzero(~(in_range & direction & weight_ok))
    if bad_links.size:
        k = int(bad_links[0])
        link = Link(int(src[k]), int(tgt[k]), float(weight[k]), evidence[k])
        if not in_range[k]:
            raise GraphError(f"link {link} names a node outside 0..{n - 1}")
        if not direction[k]:
            raise GraphError(f"link {link} must go from an output/effect to an input node")
        raise GraphError(f"link {link} weight must be in (0, 1]")


def _deduplicated_link_order(src: np.ndarray, tgt: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Indices of the links to keep, sorted by (target, source): of duplicate (source, target)
    links the highest weight, the first of equal ones."""
    order = np.lexsort((np.arange(src.size), -weight, src, tgt))
    s_sorted, t_sorted = src[order], tgt[order]
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = (s_sorted[1:] != s_sorted[:-1]) | (t_sorted[1:] != t_sorted[:-1])
    return order[keep]


def _kept_link_evidence(
    link_evidence: Sequence[str] | str, evidence: Sequence[Any], order: np.ndarray
) -> tuple[str, ...]:
    """The evidence of the kept links ``order`` (one string for all stays that string)."""
    if isinstance(link_evidence, str):
        return (link_evidence,) * int(order.size)
    return tuple(evidence[k] for k in order.tolist())


def _group_by_tool(ids: np.ndarray, owner: np.ndarray, n_tools: int) -> tuple[list[int], list[int]]:
    """``ids`` grouped by owning tool (id order kept) and the group offsets."""
    ids = ids[np.argsort(owner[ids], kind="stable")]
    counts = np.bincount(owner[ids], minlength=n_tools)
    return ids.tolist(), [0, *np.cumsum(counts).tolist()]


def _nodes_and_tools(
    codes: np.ndarray,
    owner: np.ndarray,
    paths: Sequence[Any],
    types: Sequence[Any],
    descriptions: Sequence[Any],
    required: np.ndarray,
    input_side: np.ndarray,
    *,
    tool_name: Sequence[str],
    tool_description: Sequence[str] | str,
    tool_metadata: Sequence[Mapping[str, Any]] | None,
) -> tuple[tuple[SchemaNode, ...], tuple[ToolEdge, ...]]:
    """The SchemaNode and ToolEdge tuples of :meth:`Hypergraph.from_arrays`, each tool's
    inputs, outputs and required inputs its nodes in id order; created with the cyclic garbage
    collector paused (and restored to its previous state)."""
    m = len(tool_name)
    ins, in_ptr = _group_by_tool(np.flatnonzero(input_side), owner, m)
    outs, out_ptr = _group_by_tool(np.flatnonzero(~input_side), owner, m)
    reqs, req_ptr = _group_by_tool(np.flatnonzero(input_side & required), owner, m)
    names = _expand_column(tool_name, m, "tool_name")
    tool_texts = _expand_column(tool_description, m, "tool_description")
    metas = (_expand_column(tool_metadata, m, "tool_metadata") if tool_metadata is not None
             else [{} for _ in range(m)])
    kinds = tuple(NodeKind)
    # millions of new objects and no garbage: the cyclic collector would only rescan them
    collecting = gc.isenabled()
    gc.disable()
    try:
        nodes = tuple(map(SchemaNode, range(len(codes)), map(kinds.__getitem__, codes.tolist()),
                          owner.tolist(), paths, types, descriptions, required.tolist()))
        tools = tuple(
            ToolEdge(j, names[j], tool_texts[j], tuple(ins[in_ptr[j]:in_ptr[j + 1]]),
                     tuple(outs[out_ptr[j]:out_ptr[j + 1]]),
                     tuple(reqs[req_ptr[j]:req_ptr[j + 1]]), metas[j])
            for j in range(m)
        )
    finally:
        if collecting:
            gc.enable()
    return nodes, tools
