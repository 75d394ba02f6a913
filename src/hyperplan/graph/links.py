"""Automatic dependency links D(v_o, v_i) = w (seed 000, Preliminaries; HyperGraph Construction).

The paper takes links from an expert-annotated graph (In-N-Out). We infer them:

1. **Candidates by blocking** (sub-quadratic): an (output, input) pair is scored only if the two
   share a canonical key (``song_id`` <- ``songs[].id``), a name token, or a description token
   (an input description that mentions the output's name, or two descriptions sharing a word).
   A token found in more than ``max_block`` outputs only pairs nodes of the same namespace
   (app), and credential keys always do; so each input meets a bounded number of outputs per
   token and candidates grow linearly with the catalog. One sparse product per evidence kind.
2. **Scoring** each candidate (vectorised over all pairs):
   ``s = max(key, w_name·jaccard + w_desc·desc + w_mention·mention) · type · namespace``
   where ``key`` is the strength of a shared canonical key, ``jaccard`` the overlap of name
   tokens, ``desc`` the rescaled cosine of description embeddings, ``mention`` whether the
   input description names the output field, ``type`` a JSON-type compatibility factor and
   ``namespace`` a penalty for crossing apps (credentials never cross apps).
3. **Selection**: links with ``s >= min_weight``, at most ``max_links_per_input`` per input.

Effects link to preconditions with the same predicate at weight 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from hyperplan.graph.effects import credential_scope, is_credential
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode
from hyperplan.graph.text import (
    NAMELESS_OUTPUTS,
    input_keys,
    name_tokens,
    output_keys,
    path_segments,
    singular,
    text_tokens,
)


class TextEmbedder(Protocol):
    """Anything that maps texts to L2-normalised row vectors."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LinkConfig:
    """Parameters of link inference. The weights and ``min_weight`` were chosen on the NesTools
    dev split (every 5th task) only; see docs/benchmarks.md."""

    min_weight: float = 0.5
    w_name: float = 0.5
    w_desc: float = 0.6
    w_mention: float = 0.25
    name_containment: float = 0.5
    desc_low: float = 0.3
    desc_high: float = 0.8
    cross_namespace: float = 0.9
    max_block: int = 256
    max_links_per_input: int = 64
    best_output_per_producer: bool = True
    best_input_per_consumer: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Progress = Callable[[str, int, int], None]

_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null", "any")
_T = {t: i for i, t in enumerate(_TYPES)}


def _type_table() -> np.ndarray:
    """compat[out_type, in_type] in [0, 1] for scalar (non-collected) outputs."""
    table = np.full((len(_TYPES), len(_TYPES)), 0.3)
    for t in _TYPES:
        table[_T[t], _T[t]] = 1.0
        table[_T["any"], _T[t]] = table[_T[t], _T["any"]] = 0.9
        table[_T["null"], _T[t]] = table[_T[t], _T["null"]] = 0.9
    for scalar in ("integer", "number", "boolean"):
        table[_T[scalar], _T["string"]] = 0.8
        table[_T["string"], _T[scalar]] = 0.7
    table[_T["integer"], _T["number"]] = 1.0
    table[_T["number"], _T["integer"]] = 0.8
    for t in ("string", "integer", "number", "boolean", "object"):
        table[_T[t], _T["array"]] = 0.7  # wrap a single value into a list
        table[_T["array"], _T[t]] = 0.7  # pick an element of a list
    table[_T["boolean"], _T["integer"]] = table[_T["integer"], _T["boolean"]] = 0.3
    return table


_TYPE_COMPAT = _type_table()


def type_compatibility(out_type: str, in_type: str, collected: bool = False) -> float:
    """How well a value of ``out_type`` fits an input of ``in_type``; ``collected`` outputs
    live inside an array (``songs[].id``) and fit array inputs as a whole list."""
    if collected and in_type == "array":
        return 1.0
    return float(_TYPE_COMPAT[_T.get(out_type, _T["any"]), _T.get(in_type, _T["any"])])


def type_codes(types: Sequence[str]) -> np.ndarray:
    """Row indices of JSON type names into the compatibility table (unknown: ``any``)."""
    return np.array([_T.get(t, _T["any"]) for t in types], dtype=np.int64)


def type_fit(out_codes: np.ndarray, collected: np.ndarray, in_type: str) -> np.ndarray:
    """:func:`type_compatibility` of many outputs (``type_codes``, ``collected`` flags) to
    one input type, vectorised."""
    fit = _TYPE_COMPAT[out_codes, _T.get(in_type, _T["any"])]
    return np.where(collected, 1.0, fit) if in_type == "array" else fit


# --------------------------------------------------------------------------- features


@dataclass
class _Side:
    """Per-node features of one side (inputs or outputs) as arrays and sparse matrices."""

    ids: np.ndarray
    keys: sp.csr_matrix  # canonical keys, weighted by strength
    names: sp.csr_matrix  # name tokens (binary)
    descs: sp.csr_matrix  # description tokens (binary)
    types: np.ndarray
    tools: np.ndarray
    spaces: np.ndarray
    texts: list[str]


class _Vocab:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def matrix(self, rows: list[dict[str, float]]) -> sp.csr_matrix:
        indptr, indices, data = [0], [], []
        for row in rows:
            for tok, val in row.items():
                indices.append(self.index.setdefault(tok, len(self.index)))
                data.append(val)
            indptr.append(len(indices))
        return sp.csr_matrix(
            (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), indptr),
            shape=(len(rows), len(self.index)),
        )


def _tool_short(graph: Hypergraph, node: SchemaNode) -> str:
    """The entity that qualifies a root generic output (``id`` -> ``song_id``): the tool's
    ``metadata["entity"]`` when its importer knows it (OpenAPI: the path's resource), else
    the tool name without its namespace (``spotify.show_song`` -> ``show_song``)."""
    tool = graph.tools[node.tool]
    entity = tool.metadata.get("entity")
    if isinstance(entity, str) and entity:
        return entity
    return tool.name.rsplit(".", 1)[-1]


def _namespace(graph: Hypergraph, node: SchemaNode) -> str:
    tool = graph.tools[node.tool]
    app = tool.metadata.get("app")
    if isinstance(app, str) and app:
        return app
    return tool.name.split(".", 1)[0] if "." in tool.name else ""


def _input_features(graph: Hypergraph, node: SchemaNode) -> tuple[dict[str, float], ...]:
    keys = input_keys(node.path)
    names = {singular(t): 1.0 for t in name_tokens(node.path)}
    descs = {singular(t): 1.0 for t in text_tokens(node.description)}
    return keys, names, descs


def _output_features(graph: Hypergraph, node: SchemaNode) -> tuple[dict[str, float], ...]:
    """Canonical keys, name tokens and description tokens of an output. An output with no name
    of its own (a bare return value: ``result``, or ``[]`` for a list of scalars) is known by
    its description, so its content words are its name tokens ("The id of the cart" ->
    cart, id), and it is found and scored like a named output."""
    keys = output_keys(node.path, entity_hint=_tool_short(graph, node))
    descs = {singular(t): 1.0 for t in text_tokens(node.description)}
    if node.path in NAMELESS_OUTPUTS and descs:
        return keys, dict(descs), descs
    segments = path_segments(node.path)
    leaf = name_tokens(segments[-1]) if segments else ()
    parent = name_tokens(segments[-2]) if len(segments) > 1 else ()
    names = {singular(t): 1.0 for t in (*parent[-1:], *leaf)}
    return keys, names, descs


def _side(graph: Hypergraph, nodes: list[SchemaNode], vocabs: tuple[_Vocab, ...],
          output: bool) -> _Side:
    feats = [(_output_features if output else _input_features)(graph, n) for n in nodes]
    keys_v, names_v, descs_v = vocabs
    spaces = [_namespace(graph, n) for n in nodes]
    if not output:  # a credential input names its own namespace: file_system_access_token
        scopes = [credential_scope(n.path) for n in nodes]
        spaces = [scope or space for scope, space in zip(scopes, spaces, strict=True)]
    return _Side(
        ids=np.array([n.id for n in nodes], dtype=np.int64),
        keys=keys_v.matrix([f[0] for f in feats]),
        names=names_v.matrix([f[1] for f in feats]),
        descs=descs_v.matrix([f[2] for f in feats]),
        types=np.array([_T.get(n.type, _T["any"]) for n in nodes], dtype=np.int64),
        tools=np.array([n.tool for n in nodes], dtype=np.int64),
        spaces=np.array(spaces, dtype=object),
        texts=[_node_text(n) for n in nodes],
    )


def _node_text(node: SchemaNode) -> str:
    words = " ".join(name_tokens(node.path))
    return f"{words}: {node.description}" if node.description else words


def _widen(side: _Side, n_cols: tuple[int, int, int]) -> None:
    """Give both sides' matrices the final vocabulary widths."""
    n = side.ids.size
    side.keys.resize((n, n_cols[0]))
    side.names.resize((n, n_cols[1]))
    side.descs.resize((n, n_cols[2]))


# --------------------------------------------------------------------------- candidates


def _binary(matrix: sp.csr_matrix) -> sp.csr_matrix:
    return (matrix > 0).astype(np.float64).tocsr()


def _rekey_by_space(matrix: sp.csr_matrix, cols: np.ndarray, space: np.ndarray,
                    n_spaces: int) -> sp.csr_matrix:
    """Columns ``cols`` of ``matrix`` re-keyed as (token, namespace of the row)."""
    sub = matrix[:, cols].tocoo()
    keyed = sub.col.astype(np.int64) * n_spaces + space[sub.row]
    return sp.csr_matrix((np.ones(sub.nnz), (sub.row, keyed)),
                         shape=(matrix.shape[0], cols.size * n_spaces))


def _block_pattern(m_in: sp.csr_matrix, m_out: sp.csr_matrix, spaces: tuple[np.ndarray, ...],
                   cap: int, local_only: np.ndarray | None = None) -> sp.csr_matrix:
    """Pairs sharing a token. A token found in at most ``cap`` outputs pairs globally; a larger
    block (and any ``local_only`` token, e.g. a credential) pairs only nodes of the same
    namespace, and is dropped if still larger than ``cap`` there. Each input therefore meets
    at most ``cap`` outputs per token: candidate counts grow linearly with the catalog."""
    s_in, s_out, n_spaces = spaces[0], spaces[1], int(spaces[2][0])
    m_in, m_out = _binary(m_in), _binary(m_out)
    local = np.diff(m_out.tocsc().indptr) > cap
    if local_only is not None:
        local |= local_only
    pattern = (m_in @ sp.diags((~local).astype(np.float64))) @ m_out.T
    cols = np.flatnonzero(local)
    if cols.size:
        li = _rekey_by_space(m_in, cols, s_in, n_spaces)
        lo = _rekey_by_space(m_out, cols, s_out, n_spaces)
        small = sp.diags((np.diff(lo.tocsc().indptr) <= cap).astype(np.float64))
        pattern = pattern + (li @ small) @ lo.T
    return pattern.tocsr()


def _space_ids(ins: _Side, outs: _Side) -> tuple[np.ndarray, ...]:
    names, codes = np.unique(np.concatenate([ins.spaces, outs.spaces]).astype(str),
                             return_inverse=True)
    codes = codes.astype(np.int64)
    return codes[: ins.ids.size], codes[ins.ids.size:], np.array([max(names.size, 1)])


def _candidate_pairs(ins: _Side, outs: _Side, cfg: LinkConfig,
                     credential_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (into ``ins``, ``outs``) of every pair sharing a blocking key: a canonical
    key (credentials only within their namespace), a name token, an input-description token
    naming the output, or a description token."""
    spaces = _space_ids(ins, outs)
    cap = cfg.max_block
    pattern = _block_pattern(ins.keys, outs.keys, spaces, cap, credential_keys)
    pattern = pattern + _block_pattern(ins.names, outs.names, spaces, cap)
    pattern = pattern + _block_pattern(ins.descs, outs.names, spaces, cap)
    pattern = pattern + _block_pattern(ins.descs, outs.descs, spaces, cap)
    coo = pattern.tocoo()
    a, b = coo.row.astype(np.int64), coo.col.astype(np.int64)
    different_tool = ins.tools[a] != outs.tools[b]
    return a[different_tool], b[different_tool]


def _rowwise(x: sp.csr_matrix, y: sp.csr_matrix, a: np.ndarray, b: np.ndarray,
             reduce_max: bool = False) -> np.ndarray:
    """Per pair k: sum (or max) over columns of x[a_k] * y[b_k]."""
    prod = x[a].multiply(y[b]).tocsr()
    if reduce_max:
        return np.asarray(prod.max(axis=1).todense()).ravel()
    return np.asarray(prod.sum(axis=1)).ravel()


def _pair_scores(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray, key: np.ndarray,
                 cos: np.ndarray, cfg: LinkConfig, collected: np.ndarray,
                 credential: np.ndarray) -> np.ndarray:
    inter = _rowwise(ins.names, outs.names, a, b)
    size_in = np.asarray(ins.names.sum(axis=1)).ravel()[a]
    size_out = np.asarray(outs.names.sum(axis=1)).ravel()[b]
    jaccard = inter / np.maximum(size_in + size_out - inter, 1.0)
    containment = inter / np.maximum(np.minimum(size_in, size_out), 1.0)
    names = (1.0 - cfg.name_containment) * jaccard + cfg.name_containment * containment
    leaf_mentioned = _rowwise(ins.descs, outs.names, a, b)
    mention = (leaf_mentioned >= np.maximum(size_out, 1.0)).astype(np.float64)
    desc = np.clip((cos - cfg.desc_low) / (cfg.desc_high - cfg.desc_low), 0.0, 1.0)
    score = np.maximum(key, cfg.w_name * names + cfg.w_desc * desc + cfg.w_mention * mention)
    types = _TYPE_COMPAT[outs.types[b], ins.types[a]]
    types = np.where(collected[b] & (ins.types[a] == _T["array"]), 1.0, types)
    same_space = (ins.spaces[a] == outs.spaces[b]) | (ins.spaces[a] == "") | (outs.spaces[b] == "")
    space = np.where(same_space, 1.0, np.where(credential[a], 0.0, cfg.cross_namespace))
    return np.asarray(np.minimum(score, 1.0) * types * space, dtype=np.float64)


def _cosines(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray,
             embedder: TextEmbedder | None, chunk: int = 200_000) -> np.ndarray:
    """Cosine of the description embeddings of each pair, computed once per distinct
    (input text, output text) pair."""
    if embedder is None or a.size == 0:
        return np.zeros(a.size)
    texts: dict[str, int] = {}
    in_code = np.array([texts.setdefault(t, len(texts)) for t in ins.texts], dtype=np.int64)
    out_code = np.array([texts.setdefault(t, len(texts)) for t in outs.texts], dtype=np.int64)
    pair_code = in_code[a] * len(texts) + out_code[b]
    unique_pairs, inverse = np.unique(pair_code, return_inverse=True)
    ta, tb = unique_pairs // len(texts), unique_pairs % len(texts)
    used = np.unique(np.concatenate([ta, tb]))
    table = list(texts)
    vectors = embedder.embed([table[k] for k in used.tolist()])
    row = np.full(len(texts), -1, dtype=np.int64)
    row[used] = np.arange(used.size)
    cos = np.empty(unique_pairs.size)
    for lo in range(0, unique_pairs.size, chunk):
        hi = min(lo + chunk, unique_pairs.size)
        cos[lo:hi] = np.einsum("ij,ij->i", vectors[row[ta[lo:hi]]], vectors[row[tb[lo:hi]]])
    return np.asarray(cos[inverse])


def _best_in_groups(first: np.ndarray, second: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Mask keeping, in each (first, second) group, the pairs with the group's top score."""
    if score.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((-score, second, first))
    f, s, sc = first[order], second[order], score[order]
    start = np.r_[True, (f[1:] != f[:-1]) | (s[1:] != s[:-1])]
    group_best = np.maximum.accumulate(np.where(start, np.arange(sc.size), 0))
    keep_sorted = sc >= sc[group_best] - 1e-9
    keep = np.empty_like(keep_sorted)
    keep[order] = keep_sorted
    return keep


def _select(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray, score: np.ndarray,
            cfg: LinkConfig) -> list[Link]:
    """Threshold, then one port per tool pair (an input takes its value from one output of a
    given producer; optionally an output feeds one input of a given consumer), then top-M."""
    keep = score >= cfg.min_weight
    a, b, score = a[keep], b[keep], score[keep]
    if cfg.best_output_per_producer:
        keep = _best_in_groups(a, outs.tools[b], score)
        a, b, score = a[keep], b[keep], score[keep]
    if cfg.best_input_per_consumer:
        keep = _best_in_groups(b, ins.tools[a], score)
        a, b, score = a[keep], b[keep], score[keep]
    order = np.lexsort((outs.ids[b], -score, a))
    a, b, score = a[order], b[order], score[order]
    starts = np.r_[0, np.flatnonzero(a[1:] != a[:-1]) + 1] if a.size else np.array([], int)
    rank = np.arange(a.size) - np.repeat(starts, np.diff(np.r_[starts, a.size]))
    keep = rank < cfg.max_links_per_input
    return [
        Link(int(outs.ids[j]), int(ins.ids[i]), float(w), "inferred")
        for i, j, w in zip(a[keep], b[keep], score[keep], strict=True)
    ]


def _effect_links(graph: Hypergraph) -> list[Link]:
    needs: dict[str, list[int]] = {}
    for node in graph.nodes:
        if node.kind is NodeKind.PRECONDITION:
            needs.setdefault(node.path, []).append(node.id)
    return [
        Link(node.id, target, 1.0, "effect")
        for node in graph.nodes
        if node.kind is NodeKind.EFFECT
        for target in needs.get(node.path, [])
        if graph.nodes[target].tool != node.tool
    ]


def infer_links(graph: Hypergraph, *, embedder: TextEmbedder | None = None,
                config: LinkConfig | None = None, progress: Progress | None = None) -> list[Link]:
    """Infer the dependency links of ``graph`` (its own links are ignored)."""
    cfg = config or LinkConfig()
    report = progress or (lambda stage, done, total: None)
    in_nodes = [n for n in graph.nodes if n.kind is NodeKind.INPUT]
    out_nodes = [n for n in graph.nodes if n.kind is NodeKind.OUTPUT]
    if not in_nodes or not out_nodes:
        return _effect_links(graph)
    report("features", 0, 4)
    tokens = _Vocab()  # names and descriptions share one token space (for mentions)
    vocabs = (_Vocab(), tokens, tokens)
    ins = _side(graph, in_nodes, vocabs, output=False)
    outs = _side(graph, out_nodes, vocabs, output=True)
    widths = (len(vocabs[0].index), len(vocabs[1].index), len(vocabs[2].index))
    _widen(ins, widths)
    _widen(outs, widths)
    report("candidates", 1, 4)
    key_names = sorted(vocabs[0].index, key=vocabs[0].index.__getitem__)
    credential_keys = np.array([is_credential(k) for k in key_names], dtype=bool)
    a, b = _candidate_pairs(ins, outs, cfg, credential_keys)
    report("embeddings", 2, 4)
    key = np.minimum(_rowwise(ins.keys, outs.keys, a, b), 1.0)
    cos = np.zeros(a.size)  # a full canonical-key match scores 1 whatever the descriptions say
    need = np.flatnonzero(key < 1.0)
    cos[need] = _cosines(ins, outs, a[need], b[need], embedder)
    report("scoring", 3, 4)
    collected = np.array(["[]" in n.path for n in out_nodes], dtype=bool)
    credential = np.array([is_credential(n.path) for n in in_nodes], dtype=bool)
    score = _pair_scores(ins, outs, a, b, key, cos, cfg, collected, credential)
    links = _select(ins, outs, a, b, score, cfg) + _effect_links(graph)
    report("done", 4, 4)
    return links
