"""The Tool-Schema Hypergraph H = (V, E, D) (HyperAgent paper, Preliminaries).

* V = V_I ∪ V_O ∪ V_F: schema nodes owned by one tool each. Input-side nodes (input schemas
  and preconditions) always come first, so node id ``r < n_input_nodes`` is also the row of r
  in the producer matrix A_prod.
* E: tools as directed hyperedges I(e) -> O(e) (outputs and effects).
* D ⊆ V_O × V_I: weighted port-level dependency links D(v_o, v_i) = w, w in (0, 1].

The graph is immutable after construction: integer ids inside, names at the edges.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from hyperplan.errors import GraphError


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


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Hypergraph:
    """An immutable Tool-Schema Hypergraph. Build it with :func:`hyperplan.graph.build`
    or :meth:`from_parts`; load it with :func:`hyperplan.graph.io.load_graph`."""

    nodes: tuple[SchemaNode, ...]
    tools: tuple[ToolEdge, ...]
    link_source: np.ndarray
    link_target: np.ndarray
    link_weight: np.ndarray
    link_evidence: tuple[str, ...]
    n_input_nodes: int
    metadata: Mapping[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_parts(
        cls,
        nodes: Sequence[SchemaNode],
        tools: Sequence[ToolEdge],
        links: Iterable[Link],
        metadata: Mapping[str, Any] | None = None,
    ) -> Hypergraph:
        """Validate and freeze. Nodes must be numbered 0..n-1 with input-side nodes first;
        links must go from an output-side to an input-side node of different tools or the
        same tool, with weight in (0, 1]. Duplicate links keep the highest weight."""
        nodes, tools = tuple(nodes), tuple(tools)
        n_in = _check_nodes(nodes, tools)
        best: dict[tuple[int, int], Link] = {}
        for link in links:
            _check_link(link, nodes)
            key = (link.source, link.target)
            if key not in best or link.weight > best[key].weight:
                best[key] = link
        ordered = sorted(best.values(), key=lambda lk: (lk.target, lk.source))
        return cls(
            nodes=nodes,
            tools=tools,
            link_source=_frozen(np.array([lk.source for lk in ordered], dtype=np.int64)),
            link_target=_frozen(np.array([lk.target for lk in ordered], dtype=np.int64)),
            link_weight=_frozen(np.array([lk.weight for lk in ordered], dtype=np.float64)),
            link_evidence=tuple(lk.evidence for lk in ordered),
            n_input_nodes=n_in,
            metadata=dict(metadata or {}),
        )

    @classmethod
    def from_arrays(
        cls,
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
        """The graph :meth:`from_parts` would build, from column arrays, validated and
        deduplicated with numpy (for graphs with millions of nodes and links).

        Node ``i`` has kind ``node_kind[i]`` (a :class:`NodeKind`, its value, or an integer
        code 0-3 in the order in, pre, out, eff), owner ``node_tool[i]`` and ``node_path[i]``;
        ``node_type``/``node_description``/``node_required`` are per node or one value for all.
        Tool ``j`` is named ``tool_name[j]``; its I(e) / O(e) are the input-side / output-side
        nodes it owns in id order and its required inputs those of them with ``node_required``
        (as :func:`hyperplan.graph.build.structure_from_catalog` numbers them). Links are
        ``link_source[k] -> link_target[k]`` with ``link_weight[k]`` and ``link_evidence[k]``
        (or one evidence string for all). The same checks as :meth:`from_parts` raise the same
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
        src, tgt, weight = _link_columns(link_source, link_target, link_weight)
        evidence = _expand_column(link_evidence, int(src.size), "link_evidence")
        _check_link_columns(src, tgt, weight, evidence, input_side)
        order = _deduplicated_link_order(src, tgt, weight)
        kept_evidence = _kept_link_evidence(link_evidence, evidence, order)
        nodes, tools = _nodes_and_tools(
            codes, owner, paths, types, descriptions, required, input_side,
            tool_name=tool_name, tool_description=tool_description, tool_metadata=tool_metadata,
        )
        graph = cls(
            nodes=nodes,
            tools=tools,
            link_source=_frozen(src[order]),
            link_target=_frozen(tgt[order]),
            link_weight=_frozen(weight[order]),
            link_evidence=kept_evidence,
            n_input_nodes=n_in,
            metadata=dict(metadata or {}),
        )
        graph.__dict__["node_tool"] = _frozen(owner.copy())  # the cached_property's value
        return graph

    # ----------------------------------------------------------------- sizes and lookups
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_tools(self) -> int:
        return len(self.tools)

    @property
    def n_links(self) -> int:
        return int(self.link_source.shape[0])

    @cached_property
    def tool_index(self) -> dict[str, int]:
        return {t.name: t.id for t in self.tools}

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {self.node_name(n.id): n.id for n in self.nodes}

    @cached_property
    def inputs_by_name(self) -> dict[str, list[int]]:
        """The input nodes (not preconditions) of every tool, by bare parameter name (read
        only: computed once per graph)."""
        index: dict[str, list[int]] = {}
        for node in self.nodes[: self.n_input_nodes]:
            if node.kind is NodeKind.INPUT:
                index.setdefault(node.path, []).append(node.id)
        return index

    @cached_property
    def preconditions_by_path(self) -> dict[str, list[int]]:
        """The precondition nodes by effect predicate (read only: computed once per graph)."""
        index: dict[str, list[int]] = {}
        for node in self.nodes[: self.n_input_nodes]:
            if node.kind is NodeKind.PRECONDITION:
                index.setdefault(node.path, []).append(node.id)
        return index

    def tool(self, name_or_id: str | int) -> ToolEdge:
        if isinstance(name_or_id, int):
            return self.tools[name_or_id]
        try:
            return self.tools[self.tool_index[name_or_id]]
        except KeyError:
            raise GraphError(f"unknown tool {name_or_id!r}") from None

    def node(self, name_or_id: str | int) -> SchemaNode:
        if isinstance(name_or_id, int):
            return self.nodes[name_or_id]
        try:
            return self.nodes[self.node_index[name_or_id]]
        except KeyError:
            raise GraphError(f"unknown schema node {name_or_id!r}") from None

    def node_name(self, node_id: int) -> str:
        node = self.nodes[node_id]
        return node_key(self.tools[node.tool].name, node.kind, node.path)

    @cached_property
    def node_tool(self) -> np.ndarray:
        """Owning tool id of every node, as an array."""
        return _frozen(np.array([n.tool for n in self.nodes], dtype=np.int64))

    @cached_property
    def writing_tools(self) -> np.ndarray:
        """Per tool, whether it writes: it has the state-change effect ``<tool>.done``
        (:func:`hyperplan.graph.effects.write_tools`); read only, computed once per graph."""
        writes = np.zeros(self.n_tools, dtype=bool)
        for node in self.nodes[self.n_input_nodes:]:
            if node.kind is NodeKind.EFFECT and node.path == f"{self.tools[node.tool].name}.done":
                writes[node.tool] = True
        return _frozen(writes)

    @cached_property
    def authenticating_tools(self) -> np.ndarray:
        """Per tool, whether it authenticates: it has an effect ``<ns>.authenticated`` (a
        login, a token endpoint); read only, computed once per graph."""
        auth = np.zeros(self.n_tools, dtype=bool)
        for node in self.nodes[self.n_input_nodes:]:
            if node.kind is NodeKind.EFFECT and (node.path == "authenticated"
                                                 or node.path.endswith(".authenticated")):
                auth[node.tool] = True
        return _frozen(auth)

    @cached_property
    def unprompted_writers(self) -> np.ndarray:
        """Per tool, whether it writes and is no login (:attr:`writing_tools` less
        :attr:`authenticating_tools`): such a tool changes the world, so it is proposed as
        the producer of another tool's input only when the request itself asks for it
        (HyperAgent's effect nodes; the rule is ours, issue 37: "a destructive or write tool
        is never proposed as a producer unless the request asks for that effect")."""
        return _frozen(self.writing_tools & ~self.authenticating_tools)

    def links(self) -> Iterator[Link]:
        for k in range(self.n_links):
            yield Link(
                int(self.link_source[k]),
                int(self.link_target[k]),
                float(self.link_weight[k]),
                self.link_evidence[k],
            )

    # ----------------------------------------------------------------- matrices
    @cached_property
    def link_matrix(self) -> sp.csr_matrix:
        """D as a sparse |V| x |V| matrix, D[v_o, v_i] = w."""
        n = self.n_nodes
        return sp.csr_matrix(
            (self.link_weight, (self.link_source, self.link_target)), shape=(n, n)
        )

    @cached_property
    def producer_matrix(self) -> sp.csr_matrix:
        """A_prod ∈ R^{|V_I| x |E|}, A_prod(r, e) = ρ(e, r) = max_{o ∈ O(e)} W(o, r)
        (Definition 5, Eq. 3)."""
        rows = self.link_target
        cols = self.node_tool[self.link_source] if self.n_links else self.link_source
        return _max_sparse(rows, cols, self.link_weight, (self.n_input_nodes, self.n_tools))

    @cached_property
    def support_by_tool(self) -> sp.csc_matrix:
        """A_prod in CSC form: column e lists the input nodes tool e supports."""
        return self.producer_matrix.tocsc()

    def support(self, tool: int, input_node: int) -> float:
        """ρ(e, r) of Definition 5."""
        return float(self.producer_matrix[input_node, tool])

    # ----------------------------------------------------------------- neighbours (Def. 1)
    def producers_of(self, input_node: int) -> list[tuple[int, float]]:
        """Tools e with ρ(e, r) > 0 for input node r, strongest first."""
        row = self.producer_matrix.getrow(input_node)
        pairs = sorted(zip(row.indices.tolist(), row.data.tolist(), strict=True),
                       key=lambda p: (-p[1], p[0]))
        return [(int(e), float(w)) for e, w in pairs]

    def upstream(self, tool: int) -> set[int]:
        """Nbr^-(e): tools with an output linked to an input of ``tool`` (Definition 1)."""
        inputs = list(self.tools[tool].inputs)
        if not inputs:
            return set()
        return set(self.producer_matrix[inputs].indices.tolist())

    def downstream(self, tool: int) -> set[int]:
        """Nbr^+(e): tools with an input linked from an output of ``tool`` (Definition 1)."""
        col = self.support_by_tool.getcol(tool)
        return {int(self.nodes[r].tool) for r in col.indices.tolist()}

    def links_into(self, input_node: int) -> list[Link]:
        lo, hi = np.searchsorted(self.link_target, [input_node, input_node + 1])
        return [
            Link(int(self.link_source[k]), input_node, float(self.link_weight[k]),
                 self.link_evidence[k])
            for k in range(int(lo), int(hi))
        ]

    # ----------------------------------------------------------------- subhypergraphs
    def induce(self, tool_ids: Iterable[int]) -> Hypergraph:
        """The subhypergraph induced by tools E_S: V_S = ∪ V(e), D_S = links inside V_S
        (HyperAgent paper, Preliminaries). Ids are renumbered; names are preserved."""
        keep = sorted(set(tool_ids))
        tool_map = {old: new for new, old in enumerate(keep)}
        old_nodes = [n for n in self.nodes if n.tool in tool_map]
        old_nodes.sort(key=lambda n: (not n.kind.input_side, n.id))
        node_map = {n.id: new for new, n in enumerate(old_nodes)}
        nodes = [
            SchemaNode(node_map[n.id], n.kind, tool_map[n.tool], n.path, n.type,
                       n.description, n.required, n.evidence, n.confidence)
            for n in old_nodes
        ]
        tools = []
        for old in keep:
            t = self.tools[old]
            tools.append(ToolEdge(
                tool_map[old], t.name, t.description,
                tuple(node_map[i] for i in t.inputs), tuple(node_map[o] for o in t.outputs),
                tuple(node_map[r] for r in t.required), t.metadata,
            ))
        kept_tool = np.zeros(self.n_tools, dtype=bool)
        kept_tool[keep] = True
        inside = np.flatnonzero(kept_tool[self.node_tool[self.link_source]]
                                & kept_tool[self.node_tool[self.link_target]])
        links = [
            Link(node_map[int(self.link_source[k])], node_map[int(self.link_target[k])],
                 float(self.link_weight[k]), self.link_evidence[k])
            for k in inside.tolist()
        ]
        return Hypergraph.from_parts(nodes, tools, links, self.metadata)

    def with_links(self, links: Iterable[Link], **metadata: Any) -> Hypergraph:
        """A new graph with the same nodes and tools and the given link set."""
        return Hypergraph.from_parts(self.nodes, self.tools, links,
                                     {**self.metadata, **metadata})

    def _with_link_columns(
        self,
        columns: tuple[np.ndarray, np.ndarray, np.ndarray, Sequence[str]],
        metadata: Mapping[str, Any],
    ) -> Hypergraph:
        """:meth:`with_links` for links given as columns (source, target, weight, evidence:
        link inference's output), without a :class:`Link` per link: the same checks
        (:func:`_check_link_columns`), deduplication (the highest weight, the first of equal
        ones) and order (target, source)."""
        source, target, weight, evidence = columns
        src, tgt, w = _link_columns(source, target, weight)
        listed = _expand_column(evidence, int(src.size), "link_evidence")
        _check_link_columns(src, tgt, w, listed, np.arange(self.n_nodes) < self.n_input_nodes)
        order = _deduplicated_link_order(src, tgt, w)
        return Hypergraph(
            nodes=self.nodes,
            tools=self.tools,
            link_source=_frozen(src[order]),
            link_target=_frozen(tgt[order]),
            link_weight=_frozen(w[order]),
            link_evidence=tuple(listed[k] for k in order.tolist()),
            n_input_nodes=self.n_input_nodes,
            metadata={**self.metadata, **metadata},
        )


def _max_sparse(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]
) -> sp.csr_matrix:
    """CSR matrix keeping the maximum of duplicate (row, col) entries (not their sum)."""
    if rows.size == 0:
        return sp.csr_matrix(shape, dtype=np.float64)
    order = np.lexsort((-vals, cols, rows))
    r, c, v = rows[order], cols[order], vals[order]
    first = np.ones(r.size, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    return sp.csr_matrix((v[first], (r[first], c[first])), shape=shape)


def _check_nodes(nodes: tuple[SchemaNode, ...], tools: tuple[ToolEdge, ...]) -> int:
    n_in = 0
    for i, node in enumerate(nodes):
        if node.id != i:
            raise GraphError(f"node ids must be 0..n-1 in order; got {node.id} at {i}")
        if not 0 <= node.tool < len(tools):
            raise GraphError(f"node {i} names unknown tool id {node.tool}")
        if node.kind.input_side:
            if i != n_in:
                raise GraphError("input-side nodes must precede output-side nodes")
            n_in += 1
    for j, tool in enumerate(tools):
        if tool.id != j:
            raise GraphError(f"tool ids must be 0..m-1 in order; got {tool.id} at {j}")
        for v in (*tool.inputs, *tool.outputs):
            if not 0 <= v < len(nodes):
                raise GraphError(f"tool {tool.name!r} lists node {v} outside 0..{len(nodes) - 1}")
            if nodes[v].tool != j:
                raise GraphError(f"tool {tool.name!r} lists node {v} owned by another tool")
    return n_in


def _check_link(link: Link, nodes: tuple[SchemaNode, ...]) -> None:
    n = len(nodes)
    if not (0 <= link.source < n and 0 <= link.target < n):
        raise GraphError(f"link {link} names a node outside 0..{n - 1}")
    if nodes[link.source].kind.input_side or not nodes[link.target].kind.input_side:
        raise GraphError(f"link {link} must go from an output/effect to an input node")
    if not 0.0 < link.weight <= 1.0:
        raise GraphError(f"link {link} weight must be in (0, 1]")


# ----------------------------------------------------------------- Hypergraph.from_arrays steps
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
    """:func:`_check_nodes` on columns: ``owner`` must have one tool id per node; then the first
    node whose tool is unknown or whose input side is out of order raises. Returns the number
    of input-side nodes."""
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
    """:func:`_check_link` on columns: the first bad link raises the first of its failures in
    the order range, direction, weight."""
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
