"""Automatic dependency links D(v_o, v_i) = w (HyperAgent paper, Preliminaries; HyperGraph
Construction).

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

Every score is scaled by the confidence of its two nodes (1 for declared nodes; inferred ones
carry their own, :mod:`hyperplan.graph.annotations`). Effects link to preconditions with the
same predicate at the product of their confidences (1 when both are declared).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from hyperplan.graph.effects import credential_scope, is_credential
from hyperplan.graph.field_roles import (
    GENERIC_WORDS,
    ID_WORDS,
    FieldRole,
    field_role,
    leaf_key,
    role_suffixes,
)
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

# Candidate pairs whose evidence is gathered per step: the row products of a step take tens
# of megabytes, not the whole catalog's.
PAIR_CHUNK = 1 << 17
# Strength a canonical key needs to link on its own across namespaces or into an identifier:
# the whole name or its plural (text.input_keys / output_keys), not a generic leaf alone.
SPECIFIC_KEY = 0.95
# Strength of a role suffix (field_roles.role_suffixes): the output holds exactly the kind of
# value the input takes (receiver_email <- contacts[].email), below a key of the same name.
ROLE_KEY = 0.8
# Pairs of embeddings gathered per step of the cosines: a few megabytes, which stay in cache.
COSINE_CHUNK = 1024

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
    name_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # name tokens per node
    credential: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # inputs
    space_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    unspaced: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # space ""
    confidence: np.ndarray = field(default_factory=lambda: np.ones(0))  # of each node
    generic: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # inputs
    identifier: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # inputs
    nameless: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # outputs
    # role suffixes of inputs, leaf keys of outputs (field_roles), over one vocabulary
    kinds: sp.csr_matrix = field(default_factory=lambda: sp.csr_matrix((0, 0)))
    # inputs: the name tokens that name an entity (not generic, not an identifier word)
    entities: sp.csr_matrix = field(default_factory=lambda: sp.csr_matrix((0, 0)))
    servers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # or ""


class _Vocab:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def matrix(self, rows: list[dict[str, float]]) -> sp.csr_matrix:
        """One row per dict, a column per token (numbered in order of first appearance)."""
        index = self.index
        indices = [index.setdefault(tok, len(index)) for row in rows for tok in row]
        data = [val for row in rows for val in row.values()]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(row) for row in rows], out=indptr[1:])
        return sp.csr_matrix(
            (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), indptr),
            shape=(len(rows), len(index)),
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
    """The namespace of a node's tool: its app (``metadata["app"]``), the prefix of a dotted
    name, the server it came from (``metadata["server"]``, set when a gateway or selector
    merges several sources) or its API resource (``metadata["entity"]``, OpenAPI); ``""``
    when none is known (then it shares every namespace)."""
    tool = graph.tools[node.tool]
    app = tool.metadata.get("app")
    if isinstance(app, str) and app:
        return app
    if "." in tool.name:
        return tool.name.split(".", 1)[0]
    for key in ("server", "entity"):
        found = tool.metadata.get(key)
        if isinstance(found, str) and found:
            return found
    return ""


def _server(graph: Hypergraph, node: SchemaNode) -> str:
    """The server (source) a node's tool came from when several were merged, else ``""``."""
    server = graph.tools[node.tool].metadata.get("server")
    return server if isinstance(server, str) else ""


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
    keys = _with_single_ids(output_keys(node.path, entity_hint=_tool_short(graph, node)))
    descs = {singular(t): 1.0 for t in text_tokens(node.description)}
    if node.path in NAMELESS_OUTPUTS and descs:
        return keys, dict(descs), descs
    segments = path_segments(node.path)
    leaf = name_tokens(segments[-1]) if segments else ()
    parent = name_tokens(segments[-2]) if len(segments) > 1 else ()
    names = {singular(t): 1.0 for t in (*parent[-1:], *leaf)}
    return keys, names, descs


def _with_single_ids(keys: dict[str, float]) -> dict[str, float]:
    """``keys`` plus, for a list of identifiers (``song_ids``), the key of one of them
    (``song_id``, at the strength of a plural): each element feeds an input of that name."""
    extra = {}
    for key, strength in keys.items():
        head, _, last = key.rpartition("_")
        if head and last.endswith("s") and singular(last) in ID_WORDS and singular(last) != last:
            extra[f"{head}_{singular(last)}"] = min(strength, SPECIFIC_KEY)
    return {**extra, **keys} if extra else keys


def _node_features(graph: Hypergraph, nodes: list[SchemaNode],
                   output: bool) -> list[tuple[dict[str, float], ...]]:
    """:func:`_output_features` or :func:`_input_features` of each node, computed once per
    distinct (path, description, entity): catalogs repeat fields (an OpenAPI document's
    ``owner.login`` in every response). The dicts are shared, read only."""
    features = _output_features if output else _input_features
    memo: dict[tuple[str, str, str], tuple[dict[str, float], ...]] = {}
    out = []
    for node in nodes:
        key = (node.path, node.description, _tool_short(graph, node) if output else "")
        found = memo.get(key)
        if found is None:
            found = memo[key] = features(graph, node)
        out.append(found)
    return out


def _side(graph: Hypergraph, nodes: list[SchemaNode], vocabs: tuple[_Vocab, ...],
          output: bool) -> _Side:
    feats = _node_features(graph, nodes, output)
    keys_v, names_v, descs_v, kinds_v = vocabs
    spaces = [_namespace(graph, n) for n in nodes]
    scope_of = lru_cache(maxsize=None)(credential_scope)
    scopes = [None] * len(nodes) if output else [scope_of(n.path) for n in nodes]
    if not output:  # a credential input names its own namespace: file_system_access_token
        spaces = [scope or space for scope, space in zip(scopes, spaces, strict=True)]
    names = names_v.matrix([f[1] for f in feats])
    return _Side(
        ids=np.array([n.id for n in nodes], dtype=np.int64),
        keys=keys_v.matrix([f[0] for f in feats]),
        names=names,
        descs=descs_v.matrix([f[2] for f in feats]),
        types=np.array([_T.get(n.type, _T["any"]) for n in nodes], dtype=np.int64),
        tools=np.array([n.tool for n in nodes], dtype=np.int64),
        spaces=np.array(spaces, dtype=object),
        texts=[_node_text(n) for n in nodes],
        name_sizes=np.asarray(names.sum(axis=1)).ravel(),
        credential=np.array([scope is not None for scope in scopes], dtype=bool),
        confidence=np.array([n.confidence for n in nodes], dtype=np.float64),
        generic=np.array([not output and field_role(n.path) is FieldRole.GENERIC
                          for n in nodes], dtype=bool),
        identifier=np.array([not output and field_role(n.path) is FieldRole.IDENTIFIER
                             for n in nodes], dtype=bool),
        nameless=np.array([output and n.path in NAMELESS_OUTPUTS for n in nodes], dtype=bool),
        kinds=kinds_v.matrix([{leaf_key(n.path): 1.0} if output
                              else dict.fromkeys(role_suffixes(n.path), 1.0) for n in nodes]),
        servers=np.array([_server(graph, n) for n in nodes], dtype=object),
    )


def _node_text(node: SchemaNode) -> str:
    words = " ".join(name_tokens(node.path))
    return f"{words}: {node.description}" if node.description else words


def _widen(side: _Side, n_cols: tuple[int, ...]) -> None:
    """Give both sides' matrices the final vocabulary widths."""
    n = side.ids.size
    side.keys.resize((n, n_cols[0]))
    side.names.resize((n, n_cols[1]))
    side.descs.resize((n, n_cols[2]))
    side.kinds.resize((n, n_cols[3]))


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


def _code_spaces(ins: _Side, outs: _Side) -> None:
    """Number the namespaces of both sides (``space_codes``) and flag the empty one."""
    _, codes = np.unique(np.concatenate([ins.spaces, outs.spaces]).astype(str),
                             return_inverse=True)
    codes = codes.astype(np.int64)
    ins.space_codes, outs.space_codes = codes[: ins.ids.size], codes[ins.ids.size:]
    ins.unspaced, outs.unspaced = ins.spaces == "", outs.spaces == ""


def _space_ids(ins: _Side, outs: _Side) -> tuple[np.ndarray, ...]:
    n_spaces = max(int(ins.space_codes.max(initial=-1)), int(outs.space_codes.max(initial=-1)))
    return ins.space_codes, outs.space_codes, np.array([max(n_spaces + 1, 1)])


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


def _row_sums(x: sp.csr_matrix, y: sp.csr_matrix) -> np.ndarray:
    """Per row k: sum over columns of x[k] * y[k] (x and y are rows gathered per pair)."""
    return np.asarray(x.multiply(y).sum(axis=1)).ravel()


@dataclass
class _Evidence:
    """The evidence of candidate pairs that does not depend on the description embeddings,
    one entry per pair (rows ``a`` of the inputs, ``b`` of the outputs): the terms of
    ``s = max(key, w_name·names + w_desc·desc + w_mention·mention) · type · namespace``
    except ``desc``, kept apart so that ``s`` is evaluated in the same order whatever the
    cosine."""

    a: np.ndarray
    b: np.ndarray
    key: np.ndarray
    named: np.ndarray  # w_name · names
    mentioned: np.ndarray  # w_mention · mention
    types: np.ndarray
    space: np.ndarray
    key_only: np.ndarray  # pairs scored by their canonical key alone (field_roles)

    def take(self, mask: np.ndarray) -> _Evidence:
        return _Evidence(*(getattr(self, f.name)[mask] for f in fields(self)))

    def score(self, desc_term: np.ndarray | float) -> np.ndarray:
        """``s`` of every pair given ``w_desc · desc`` (per pair, or one value for all)."""
        blend = np.where(self.key_only, 0.0, self.named + desc_term + self.mentioned)
        score = np.maximum(self.key, blend)
        return np.asarray(np.minimum(score, 1.0) * self.types * self.space, dtype=np.float64)


def _evidence(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray, cfg: LinkConfig,
              collected: np.ndarray, credential: np.ndarray) -> _Evidence:
    """:class:`_Evidence` of the pairs ``(a, b)``: canonical key strength, name overlap
    (``jaccard`` blended with containment), whether the input description names the output
    field (``mention``), JSON-type compatibility and the namespace factor (credentials never
    cross namespaces)."""
    key = np.minimum(_row_sums(ins.keys[a], outs.keys[b]), 1.0)
    out_names = outs.names[b]
    inter = _row_sums(ins.names[a], out_names)
    size_in, size_out = ins.name_sizes[a], outs.name_sizes[b]
    jaccard = inter / np.maximum(size_in + size_out - inter, 1.0)
    containment = inter / np.maximum(np.minimum(size_in, size_out), 1.0)
    names = (1.0 - cfg.name_containment) * jaccard + cfg.name_containment * containment
    leaf_mentioned = _row_sums(ins.descs[a], out_names)
    mention = (leaf_mentioned >= np.maximum(size_out, 1.0)).astype(np.float64)
    types = _TYPE_COMPAT[outs.types[b], ins.types[a]]
    types = np.where(collected[b] & (ins.types[a] == _T["array"]), 1.0, types)
    s_in, s_out = ins.space_codes[a], outs.space_codes[b]
    same_space = (s_in == s_out) | ins.unspaced[a] | outs.unspaced[b]
    space = np.where(same_space, 1.0, np.where(credential[a], 0.0, cfg.cross_namespace))
    # junk-free links (field_roles): an identifier, and any pair across namespaces, links on
    # a specific canonical key only (or a role suffix: receiver_email <- contacts[].email);
    # a generic input on its name inside its namespace, on the very same name across them
    whole_name = (inter >= size_in) & outs.nameless[b]  # "returns the cart id" -> cart_id
    kind = _row_sums(ins.kinds[a], outs.kinds[b]) > 0
    # an identifier and an output of the same entity (water_id <- water_source_id) in one
    # namespace: names count; of another entity (tv_id <- movie id): the key alone
    same_entity = same_space & (_row_sums(ins.entities[a], out_names) > 0)
    key_only = ((ins.identifier[a] & ~whole_name & ~same_entity) | ~same_space) & ~kind
    key = np.where(key_only & (key < SPECIFIC_KEY), 0.0, key)
    key = np.where(kind, np.maximum(key, ROLE_KEY), key)
    named_here = same_space & ((key > 0) | (names > 0))
    s_a, s_b = ins.servers[a], outs.servers[b]
    two_servers = (s_a != s_b) & (s_a != "") & (s_b != "")  # a server is no app: no word
    space = np.where(ins.generic[a] & ((~named_here & (key < 1.0)) | two_servers), 0.0, space)
    return _Evidence(a, b, key, cfg.w_name * names, cfg.w_mention * mention, types, space,
                     key_only)


def _rescaled(cos: np.ndarray, cfg: LinkConfig) -> np.ndarray:
    """``desc``: the cosine of two description embeddings mapped linearly from
    [desc_low, desc_high] onto [0, 1] and clipped."""
    return np.clip((cos - cfg.desc_low) / (cfg.desc_high - cfg.desc_low), 0.0, 1.0)


@dataclass
class _Reachable:
    """The pairs of one chunk of candidates that can reach ``min_weight``: their evidence, their
    score ``s`` without the descriptions (``desc = 0``; final unless listed in ``need``) and the
    pairs whose score depends on the description cosine (indices into ``evidence``)."""

    evidence: _Evidence
    score: np.ndarray
    need: np.ndarray


def _reachable(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray, cfg: LinkConfig,
               collected: np.ndarray, credential: np.ndarray) -> _Reachable:
    """:class:`_Reachable` of the pairs ``(a, b)``. ``s`` grows with ``desc`` (every operation
    is monotone), so a pair whose ``s`` at ``desc = 1`` is below ``min_weight`` can never be
    linked, and a pair whose ``s`` is the same at ``desc = 0`` and ``desc = 1`` (or whose
    canonical key matches fully: it scores 1 whatever the descriptions say) needs no cosine."""
    ev = _evidence(ins, outs, a, b, cfg, collected, credential)
    high, low = ev.score(cfg.w_desc * 1.0), ev.score(cfg.w_desc * 0.0)
    reachable = high >= cfg.min_weight
    need = (ev.key < 1.0) & (high != low)
    return _Reachable(ev.take(reachable), low[reachable], np.flatnonzero(need[reachable]))


def _reachable_parts(ins: _Side, outs: _Side, a: np.ndarray, b: np.ndarray, cfg: LinkConfig,
                     collected: np.ndarray) -> list[_Reachable]:
    """:func:`_reachable` of the candidate pairs :data:`PAIR_CHUNK` at a time (bounded
    memory)."""
    step = PAIR_CHUNK
    return [_reachable(ins, outs, a[lo:lo + step], b[lo:lo + step], cfg, collected,
                       ins.credential) for lo in range(0, a.size, step)]


def _linkable(parts: list[_Reachable], cfg: LinkConfig) -> tuple[np.ndarray, ...]:
    """Rows (into the inputs, the outputs) and score ``s`` of the pairs with
    ``s >= min_weight``."""
    kept = [(p.evidence.a[keep], p.evidence.b[keep], p.score[keep])
            for p in parts for keep in [p.score >= cfg.min_weight]]
    if not kept:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    return tuple(np.concatenate([k[i] for k in kept]) for i in range(3))


def _scored_pairs(ins: _Side, outs: _Side, cfg: LinkConfig, credential_keys: np.ndarray,
                  embedder: TextEmbedder | None, collected: np.ndarray,
                  report: Progress) -> tuple[np.ndarray, ...]:
    """Steps 1 and 2: the candidate pairs with ``s >= min_weight``, as rows into ``ins`` and
    ``outs`` and their score. Only the texts of pairs whose score depends on them are
    embedded."""
    report("candidates", 1, 4)
    a, b = _candidate_pairs(ins, outs, cfg, credential_keys)
    report("embeddings", 2, 4)
    parts = _reachable_parts(ins, outs, a, b, cfg, collected)
    del a, b  # what is left of them is in the parts
    if embedder is not None:
        _add_description_similarity(ins, outs, parts, embedder, cfg)
    return _linkable(parts, cfg)


def _add_description_similarity(ins: _Side, outs: _Side, parts: list[_Reachable],
                                embedder: TextEmbedder, cfg: LinkConfig) -> None:
    """Score the pairs that ``need`` it with ``desc``, the rescaled cosine of their
    description embeddings (``_node_text``), computed once per distinct pair of texts."""
    texts: dict[str, int] = {}
    in_code = np.array([texts.setdefault(t, len(texts)) for t in ins.texts], dtype=np.int64)
    out_code = np.array([texts.setdefault(t, len(texts)) for t in outs.texts], dtype=np.int64)
    n = len(texts)
    if not parts:  # no candidate pair can reach min_weight: nothing to embed
        return
    codes = np.concatenate([in_code[p.evidence.a[p.need]] * n + out_code[p.evidence.b[p.need]]
                            for p in parts])
    if codes.size == 0:
        return
    unique_pairs, inverse = np.unique(codes, return_inverse=True)
    del codes
    cos = _text_pair_cosines(unique_pairs // n, unique_pairs % n, list(texts), embedder)
    offset = 0
    for p in parts:
        part_cos = cos[inverse[offset:offset + p.need.size]].astype(np.float64)
        offset += p.need.size
        p.score[p.need] = p.evidence.take(p.need).score(cfg.w_desc * _rescaled(part_cos, cfg))


def _text_pair_cosines(first: np.ndarray, second: np.ndarray, table: list[str],
                       embedder: TextEmbedder) -> np.ndarray:
    """Cosine of the embeddings of texts ``table[first[k]]`` and ``table[second[k]]``, in the
    embeddings' own precision; each text used is embedded once, and rows are gathered
    :data:`COSINE_CHUNK` pairs at a time (they stay small and in cache)."""
    chunk = COSINE_CHUNK
    used = np.unique(np.concatenate([first, second]))
    vectors = np.asarray(embedder.embed([table[k] for k in used.tolist()]))
    row = np.full(len(table), -1, dtype=np.int64)
    row[used] = np.arange(used.size)
    ra, rb = row[first], row[second]
    cos = np.empty(first.size, dtype=vectors.dtype)
    for lo in range(0, first.size, chunk):
        hi = min(lo + chunk, first.size)
        cos[lo:hi] = np.einsum("ij,ij->i", vectors[ra[lo:hi]], vectors[rb[lo:hi]])
    return cos


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
            cfg: LinkConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scale by the confidence of both nodes (an inferred output's links are worth what the
    output is), threshold, then one port per tool pair (an input takes its value from one
    output of a given producer; optionally an output feeds one input of a given consumer),
    then top-M. Returns the links' source and target node ids and weights."""
    score = score * outs.confidence[b] * ins.confidence[a]
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
    return outs.ids[b[keep]], ins.ids[a[keep]], score[keep]


def _effect_links(graph: Hypergraph) -> list[Link]:
    needs: dict[str, list[int]] = {}
    for node in graph.nodes:
        if node.kind is NodeKind.PRECONDITION:
            needs.setdefault(node.path, []).append(node.id)
    return [
        Link(node.id, target, node.confidence * graph.nodes[target].confidence, "effect")
        for node in graph.nodes
        if node.kind is NodeKind.EFFECT
        for target in needs.get(node.path, [])
        if graph.nodes[target].tool != node.tool
    ]


def _features(graph: Hypergraph, in_nodes: list[SchemaNode],
              out_nodes: list[SchemaNode]) -> tuple[_Side, _Side, np.ndarray]:
    """Both sides' features over shared vocabularies, and which canonical keys are
    credentials."""
    tokens = _Vocab()  # names and descriptions share one token space (for mentions)
    vocabs = (_Vocab(), tokens, tokens, _Vocab())
    ins = _side(graph, in_nodes, vocabs, output=False)
    outs = _side(graph, out_nodes, vocabs, output=True)
    widths = tuple(len(v.index) for v in vocabs)
    _widen(ins, widths)
    _widen(outs, widths)
    _code_spaces(ins, outs)
    words = sorted(tokens.index, key=tokens.index.__getitem__)
    naming = np.array([w not in GENERIC_WORDS and w not in ID_WORDS for w in words], dtype=float)
    ins.entities = (ins.names @ sp.diags(naming)).tocsr()
    key_names = sorted(vocabs[0].index, key=vocabs[0].index.__getitem__)
    credential_keys = np.array([is_credential(k) for k in key_names], dtype=bool)
    return ins, outs, credential_keys


def inferred_link_columns(
    graph: Hypergraph, *, embedder: TextEmbedder | None = None,
    config: LinkConfig | None = None, progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """:func:`infer_links` as columns: source and target node ids, weights and evidence."""
    cfg = config or LinkConfig()
    report = progress or (lambda stage, done, total: None)
    in_nodes = [n for n in graph.nodes if n.kind is NodeKind.INPUT
                and field_role(n.path) is not FieldRole.CONTROL]  # set by the user
    out_nodes = [n for n in graph.nodes if n.kind is NodeKind.OUTPUT]
    effects = _effect_links(graph)
    if not in_nodes or not out_nodes:
        src, tgt, weight = (np.zeros(0, dtype=np.int64),) * 2 + (np.zeros(0),)
    else:
        report("features", 0, 4)
        ins, outs, credential_keys = _features(graph, in_nodes, out_nodes)
        collected = np.array(["[]" in n.path for n in out_nodes], dtype=bool)
        a, b, score = _scored_pairs(ins, outs, cfg, credential_keys, embedder, collected,
                                    report)
        report("scoring", 3, 4)
        src, tgt, weight = _select(ins, outs, a, b, score, cfg)
        report("done", 4, 4)
    n = src.size
    return (np.concatenate([src, np.array([lk.source for lk in effects], dtype=np.int64)]),
            np.concatenate([tgt, np.array([lk.target for lk in effects], dtype=np.int64)]),
            np.concatenate([weight, np.array([lk.weight for lk in effects])]),
            ("inferred",) * n + ("effect",) * len(effects))


def infer_links(graph: Hypergraph, *, embedder: TextEmbedder | None = None,
                config: LinkConfig | None = None, progress: Progress | None = None) -> list[Link]:
    """Infer the dependency links of ``graph`` (its own links are ignored)."""
    src, tgt, weight, evidence = inferred_link_columns(
        graph, embedder=embedder, config=config, progress=progress)
    return [Link(s, t, w, e) for s, t, w, e in
            zip(src.tolist(), tgt.tolist(), weight.tolist(), evidence, strict=True)]
