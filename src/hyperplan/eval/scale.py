"""Synthetic Tool-Schema Hypergraphs of up to millions of tools, and what ``hyperplan bench
scale`` measures on them: build time and memory, DOE latency and Tool Context Graph latency.

:func:`synthetic_hypergraph` draws a graph directly as arrays and builds it with
:meth:`Hypergraph.from_arrays` -- there is no catalog and no link inference (inference at 1M
tools does not fit this machine; ``bench links`` measures it up to 100K tools). Shape, per tool:

* apps of :data:`~hyperplan.eval.synthetic.TOOLS_PER_APP` tools (brand names from syllables),
  each with a ``login`` (two optional inputs, an ``access_token`` output and the effect
  ``<brand>.authenticated``) and tools ``<brand>.<verb>_<entity>`` over 5 entities of the app
  drawn Zipf-like from the entity words of :mod:`hyperplan.eval.synthetic`;
* 0-4 required inputs (mean 2.05), 0-2 optional inputs (mean 0.85), 1-6 outputs (mean 3.0);
  12% of tools have a precondition and 12% an effect, on one of 4 states of their app, and
  every effect links to every precondition of the same app and state (weight 1);
* port links: an input has no producer with probability 0.15 (a value only the user can give),
  else an in-degree drawn from a power law P(k) ~ k^-1.6 on 1..64 (64 = the
  ``max_links_per_input`` of link inference). Each link comes with probability 0.75 from an
  output of another tool of the same app, its first tools (login, then show and create of its
  main entity) far more often (offset = floor(size * u^3)), and otherwise from a global
  popularity ranking of all
  outputs (rank = floor(n_outputs * u^2): preferential attachment, so the most popular
  outputs feed ~sqrt(n) inputs -- about 1,800 at 1M tools -- while the median output feeds
  two). Duplicate (output, input) pairs collapse, so an input ends with 3.6 producers on
  average (median 1, max ~55). Weights are 1 - 0.7 u^2, in [0.3, 1] (median 0.85; 14% are
  below the 0.5 that retrieval follows).

That gives about 10.5 links per tool. Real graphs span a wide range: AppWorld's inferred graph
(``out/appworld.json``) has 37.6 links per tool (in-degree mean 9.3, median 1, capped at 64;
weights 0.5-1, median 0.87), the inferred synthetic catalog of ``bench links`` 18 per tool at
100K tools, and NesTools' chains are far sparser. 5-20 per tool is the realistic band for
catalogs whose links are inferred with a threshold; 10.5 is in it and keeps the 1M-tool graph
(10.5M links) within this machine's memory. Names and descriptions come from word lists so
that a :class:`~hyperplan.retrieve.GraphIndex` can be built; links are drawn
independently of the names.

:class:`RandomWordEmbedder` is the embedder for scale runs: a fixed pseudo-random unit vector
per word and the normalised sum per text (bag of words). It is ~20x faster (~200K texts/s)
than :class:`~hyperplan.embed.HashingEmbedder` (~10K texts/s, i.e. 12 minutes for the 7M tool and
node texts of 1M tools) and its dimension is a parameter: GraphIndex keeps a float32 vector per
node, and 6M nodes x 512 dims (the hashing default) alone is 12 GB.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from hyperplan.embed.base import Embedder, FloatMatrix
from hyperplan.eval.synthetic import ADJECTIVES, BASE_ENTITIES, MODIFIERS, TOOLS_PER_APP
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.text import singular
from hyperplan.plan.doe import DOEConfig, expand
from hyperplan.plan.grounding import Grounding

__all__ = [
    "DEFAULT_DIM",
    "RandomWordEmbedder",
    "degree_stats",
    "measure_scale",
    "scale_embedder",
    "synthetic_hypergraph",
    "synthetic_requests",
]

Progress = Callable[[str, int, int], None]
IntArray = npt.NDArray[np.int64]

DEFAULT_DIM = 64
MAX_IN_DEGREE = 64  # LinkConfig.max_links_per_input
_ENTITIES_PER_APP = 5
_VERBS = ("search", "show", "create", "update", "delete", "list", "export", "share")
_PLURAL_VERBS = frozenset({"search", "list"})
_STATES = ("authenticated", "verified", "connected", "checkout_open")
_SYLLABLES = (
    "zen", "tri", "lo", "qua", "vex", "mar", "nor", "pix", "cal", "dro", "fin", "ly", "sto",
    "ra", "bel", "kin", "tor", "vi", "sa", "mo", "plu", "ex", "gra", "ni",
)
# (field, JSON type); inputs use the bare field, outputs "<entity>.<field>"
_ATTRIBUTES = (
    ("name", "string"), ("title", "string"), ("status", "string"), ("amount", "number"),
    ("quantity", "integer"), ("email", "string"), ("address", "string"), ("rating", "number"),
    ("url", "string"), ("price", "number"), ("language", "string"), ("location", "string"),
    ("due_date", "string"), ("priority", "integer"), ("tags", "array"), ("notes", "string"),
    ("color", "string"), ("created_at", "string"), ("owner_email", "string"),
    ("page_limit", "integer"), ("query", "string"), ("is_public", "boolean"),
    ("currency", "string"), ("description", "string"),
)
_TOOL_DESCRIPTIONS = {
    "search": "Search {p} in {b} by keyword, newest first.",
    "show": "Show the details of one {w}.",
    "create": "Create a new {w} and return its id.",
    "update": "Update fields of an existing {w}.",
    "delete": "Delete a {w} permanently.",
    "list": "List the {p} of the current {b} user.",
    "export": "Export a {w} as a file.",
    "share": "Share a {w} with another {b} user.",
}
# the in-degree law of port links, and the mixture of local and global producers
_NO_PRODUCER = 0.15
_IN_DEGREE_EXPONENT = 1.6
_LOCAL = 0.75


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    return word + "es" if word.endswith(("s", "x", "ch", "sh")) else word + "s"


def _brand(app: int) -> str:
    """A unique pronounceable app name per index: base-24 syllables, at least two."""
    parts, k = [], app + len(_SYLLABLES)  # k >= 24: two syllables or more
    while k:
        k, digit = divmod(k, len(_SYLLABLES))
        parts.append(_SYLLABLES[digit])
    return "".join(reversed(parts))


def _entity_pool() -> list[str]:
    """Entity names (snake_case) from common to rare."""
    combos = [f"{b}_{m}" for b in BASE_ENTITIES for m in MODIFIERS if b != m]
    combos += [f"{a}_{b}" for a in ADJECTIVES for b in BASE_ENTITIES]
    return list(BASE_ENTITIES) + combos


def _ranges(starts: IntArray, counts: IntArray) -> IntArray:
    """Concatenation of ``arange(s, s + c)`` for every (s, c), vectorised."""
    total = int(counts.sum())
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + offsets


def _strings(codes: IntArray, make: Callable[[int], str]) -> list[str]:
    """``[make(c) for c in codes]`` with one string object per distinct code."""
    unique, inverse = np.unique(codes, return_inverse=True)
    table = [make(int(c)) for c in unique.tolist()]
    return [table[i] for i in inverse.tolist()]


def synthetic_hypergraph(n_tools: int, seed: int = 0) -> Hypergraph:
    """A deterministic synthetic Tool-Schema Hypergraph of exactly ``n_tools`` tools (module
    doc), built from arrays. The same ``(n_tools, seed)`` gives the same graph in any
    process."""
    if n_tools < 0:
        raise ValueError(f"n_tools must be >= 0, got {n_tools}")
    rng = np.random.default_rng([seed, 0x5CA1E])
    n = n_tools
    tool_ids = np.arange(n, dtype=np.int64)
    app = tool_ids // TOOLS_PER_APP
    slot = tool_ids % TOOLS_PER_APP
    n_apps = int(app[-1]) + 1 if n else 0
    login = slot == 0
    verb = slot % len(_VERBS)
    pool = _entity_pool()
    weights = 1.0 / np.arange(1, len(pool) + 1)
    weights /= weights.sum()
    app_entities = np.stack([rng.choice(len(pool), _ENTITIES_PER_APP, replace=False, p=weights)
                             for _ in range(n_apps)]) if n_apps else np.zeros((0, 5), np.int64)
    entity = app_entities[app, slot // len(_VERBS)] if n else np.zeros(0, np.int64)

    # ---- ports per tool
    n_req = rng.choice(5, size=n, p=[0.10, 0.25, 0.30, 0.20, 0.15])
    n_opt = rng.choice(3, size=n, p=[0.40, 0.35, 0.25])
    n_out = 1 + rng.choice(6, size=n, p=[0.20, 0.25, 0.20, 0.15, 0.10, 0.10])
    has_pre = rng.random(n) < 0.12
    has_eff = rng.random(n) < 0.12
    pre_state = np.where(rng.random(n) < 0.6, 0, rng.integers(1, len(_STATES), n))
    eff_state = rng.integers(1, len(_STATES), n)
    attr_offset = rng.integers(0, len(_ATTRIBUTES), n)
    n_req[login], n_opt[login], n_out[login] = 0, 2, 1
    has_pre[login], has_eff[login], eff_state[login] = False, True, 0
    n_ports_in = n_req + n_opt
    n_side_in = n_ports_in + has_pre
    n_side_out = n_out + has_eff
    in_start = np.cumsum(n_side_in) - n_side_in
    n_input_nodes = int(n_side_in.sum())
    out_start = n_input_nodes + np.cumsum(n_side_out) - n_side_out

    in_tool = np.repeat(tool_ids, n_side_in)
    in_pos = np.arange(n_input_nodes) - np.repeat(in_start, n_side_in)
    out_tool = np.repeat(tool_ids, n_side_out)
    out_pos = np.arange(out_tool.size) - np.repeat(out_start - n_input_nodes, n_side_out)
    is_pre = in_pos >= n_ports_in[in_tool]
    is_eff = out_pos >= n_out[out_tool]
    node_kind = np.concatenate([np.where(is_pre, 1, 0), np.where(is_eff, 3, 2)]).astype(np.int8)
    node_tool = np.concatenate([in_tool, out_tool])
    node_required = np.concatenate([(in_pos < n_req[in_tool]) | is_pre,
                                    np.zeros(out_tool.size, dtype=bool)])

    # ---- names: a code per port, one string per distinct code
    n_attr = len(_ATTRIBUTES)
    id_first = np.isin(verb, [1, 3, 4, 6, 7])  # show/update/delete/export/share take the id
    in_attr = (attr_offset[in_tool] + in_pos) % n_attr
    in_code = np.where((in_pos == 0) & id_first[in_tool], n_attr + entity[in_tool], in_attr)
    in_code = np.where(login[in_tool], -1 - in_pos, in_code)  # username, password
    out_attr = np.where(out_pos == 0, n_attr, (attr_offset[out_tool] + out_pos) % n_attr)
    listing = np.isin(verb[out_tool], [0, 5])
    out_code = (entity[out_tool] * 2 + listing) * (n_attr + 1) + out_attr
    out_code = np.where(login[out_tool], -1, out_code)  # access_token
    pre_code = app[in_tool] * len(_STATES) + pre_state[in_tool]
    eff_code = app[out_tool] * len(_STATES) + eff_state[out_tool]

    def in_path(code: int) -> str:
        if code < 0:
            return ("username", "password")[-1 - code]
        return _ATTRIBUTES[code][0] if code < n_attr else f"{pool[code - n_attr]}_id"

    def in_text(code: int) -> str:
        if code < 0:
            return ("User name to log in with.", "Password of the account.")[-1 - code]
        if code < n_attr:
            return f"The {_ATTRIBUTES[code][0].replace('_', ' ')} to set or filter by."
        return f"Id of the {pool[code - n_attr].replace('_', ' ')}."

    def out_path(code: int) -> str:
        if code < 0:
            return "access_token"
        rest, attr = divmod(code, n_attr + 1)
        ent, many = divmod(rest, 2)
        word = pool[ent]
        field = f"{word}_id" if attr == n_attr else _ATTRIBUTES[attr][0]
        return f"{_plural(word)}[].{field}" if many else f"{word}.{field}"

    def out_text(code: int) -> str:
        if code < 0:
            return "Access token for the other tools of the app."
        rest, attr = divmod(code, n_attr + 1)
        words = pool[rest // 2].replace("_", " ")
        if attr == n_attr:
            return f"Unique identifier of the {words}."
        return f"{_ATTRIBUTES[attr][0].replace('_', ' ').capitalize()} of the {words}."

    def state(code: int) -> str:
        return f"{_brand(code // len(_STATES))}.{_STATES[code % len(_STATES)]}"

    in_paths = _strings(np.where(is_pre, -100 - pre_code, in_code),
                        lambda c: state(-100 - c) if c <= -100 else in_path(c))
    in_texts = _strings(np.where(is_pre, -100 - pre_code, in_code),
                        lambda c: f"precondition: {state(-100 - c)}" if c <= -100
                        else in_text(c))
    big = 1 << 40  # effect codes above every port code
    out_paths = _strings(np.where(is_eff, big + eff_code, out_code),
                         lambda c: state(c - big) if c >= big else out_path(c))
    out_texts = _strings(np.where(is_eff, big + eff_code, out_code),
                         lambda c: f"effect: {state(c - big)}" if c >= big else out_text(c))
    attr_types = [t for _, t in _ATTRIBUTES]
    in_types = np.where(is_pre, -2, np.where((in_code >= n_attr) | (in_code < 0), -1, in_attr))
    out_types = np.where(is_eff, -2, np.where((out_pos == 0) | login[out_tool], -1, out_attr))
    type_names = {-2: "boolean", -1: "string"} | dict(enumerate(attr_types))
    node_type = _strings(np.concatenate([in_types, out_types]), type_names.__getitem__)

    brands = [_brand(a) for a in range(n_apps)]
    tool_name, tool_text = [], []
    for t, a, v, e in zip(tool_ids.tolist(), app.tolist(), verb.tolist(), entity.tolist(),
                          strict=True):
        brand = brands[a]
        if t % TOOLS_PER_APP == 0:
            tool_name.append(f"{brand}.login")
            tool_text.append(f"Log in to {brand} and get an access token.")
            continue
        word = pool[e]
        name = _plural(word) if _VERBS[v] in _PLURAL_VERBS else word
        tool_name.append(f"{brand}.{_VERBS[v]}_{name}")
        tool_text.append(_TOOL_DESCRIPTIONS[_VERBS[v]].format(
            w=word.replace("_", " "), p=_plural(word).replace("_", " "), b=brand))
    app_meta = [{"app": b} for b in brands]

    # ---- port links: power-law in-degree, local (same app) or globally popular producers
    ports = np.flatnonzero(~is_pre)  # input nodes (not preconditions)
    k_range = np.arange(1, MAX_IN_DEGREE + 1)
    law = k_range ** -_IN_DEGREE_EXPONENT
    degree = rng.choice(k_range, size=ports.size, p=law / law.sum())
    degree[rng.random(ports.size) < _NO_PRODUCER] = 0
    degree[login[in_tool[ports]]] = 0  # username and password come from the user
    target = np.repeat(ports, degree)
    target_tool = in_tool[target]
    local = rng.random(target.size) < _LOCAL
    app_start = app[target_tool] * TOOLS_PER_APP
    app_size = np.minimum(app_start + TOOLS_PER_APP, n) - app_start
    offset = np.floor(app_size * rng.random(target.size) ** 3).astype(np.int64)
    source_tool = app_start + offset
    source_tool = np.where(source_tool == target_tool,
                           app_start + (offset + 1) % np.maximum(app_size, 1), source_tool)
    source = out_start[source_tool] + np.floor(
        rng.random(target.size) * n_out[source_tool]).astype(np.int64)
    outputs = np.flatnonzero(~is_eff) + n_input_nodes
    popular = rng.permutation(outputs)
    rank = np.floor(outputs.size * rng.random(target.size) ** 2).astype(np.int64)
    source = np.where(local, source, popular[np.minimum(rank, outputs.size - 1)]
                      if outputs.size else source)
    weight = 1.0 - 0.7 * rng.random(target.size) ** 2
    keep = node_tool[source] != target_tool  # also drops local links of one-tool apps
    source, target, weight = source[keep], target[keep], weight[keep]

    # ---- effect -> precondition links of the same app and state
    pre_nodes = np.flatnonzero(is_pre)
    eff_nodes = np.flatnonzero(is_eff) + n_input_nodes
    eff_key = eff_code[eff_nodes - n_input_nodes]
    by_key = np.argsort(eff_key, kind="stable")
    eff_sorted, keys_sorted = eff_nodes[by_key], eff_key[by_key]
    pre_key = pre_code[pre_nodes]
    lo = np.searchsorted(keys_sorted, pre_key, "left")
    hi = np.searchsorted(keys_sorted, pre_key, "right")
    e_source = eff_sorted[_ranges(lo, hi - lo)]
    e_target = np.repeat(pre_nodes, hi - lo)
    own = node_tool[e_source] != node_tool[e_target]
    e_source, e_target = e_source[own], e_target[own]

    return Hypergraph.from_arrays(
        node_kind=node_kind,
        node_tool=node_tool,
        node_path=in_paths + out_paths,
        node_type=node_type,
        node_description=in_texts + out_texts,
        node_required=node_required,
        tool_name=tool_name,
        tool_description=tool_text,
        tool_metadata=[app_meta[a] for a in app.tolist()],
        link_source=np.concatenate([source, e_source]),
        link_target=np.concatenate([target, e_target]),
        link_weight=np.concatenate([weight, np.ones(e_source.size)]),
        link_evidence=["synthetic"] * int(source.size) + ["effect"] * int(e_source.size),
        metadata={"source": "hyperplan.eval.scale.synthetic_hypergraph", "seed": seed,
                  "n_tools": n_tools},
    )


def degree_stats(graph: Hypergraph) -> dict[str, float]:
    """Median / p99 / max of the in-degree of input nodes (links into each), the out-degree of
    output nodes (links out of each) and the producers per input (non-zeros of A_prod rows)."""
    n_in = graph.n_input_nodes
    ins = np.bincount(graph.link_target, minlength=n_in)[:n_in]
    outs = np.bincount(graph.link_source, minlength=graph.n_nodes)[n_in:]
    stats: dict[str, float] = {}
    for name, values in (("in_degree", ins), ("out_degree", outs)):
        if values.size:
            stats[f"{name}_median"] = float(np.median(values))
            stats[f"{name}_p99"] = float(np.percentile(values, 99))
            stats[f"{name}_max"] = int(values.max())
    stats["links_per_tool"] = round(graph.n_links / max(graph.n_tools, 1), 2)
    return stats


class RandomWordEmbedder:
    """A bag of pseudo-random word vectors: each word (a lower-cased run of ASCII letters and
    digits and non-ASCII characters, singularised) gets a fixed random unit vector seeded by
    its blake2b hash; a text is the L2-normalised sum of its words' vectors, so similarity is
    word overlap. Deterministic, no model, ~20x faster than the hashing embedder; meant for
    scale benchmarks only."""

    # bytes.translate table: ASCII letters, digits and UTF-8 bytes of non-ASCII characters
    # stay, every other byte becomes a space (tokenising in C, ~3x faster than a regex)
    _SPACES = bytes(c if c >= 128 or chr(c).isalnum() else 32
                    for c in range(256))
    _CHUNK = 65536

    def __init__(self, dim: int = DEFAULT_DIM, seed: int = 0) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim, self._seed = dim, seed
        self._ids: dict[bytes, int] = {}
        self._vectors = np.zeros((0, dim), dtype=np.float32)

    @property
    def name(self) -> str:
        return f"random-words-v1-d{self._dim}-s{self._seed}"

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, word: str) -> FloatMatrix:
        digest = hashlib.blake2b(f"{self._seed}:{word}".encode(), digest_size=8).digest()
        vec = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(self._dim)
        out: FloatMatrix = (vec / np.linalg.norm(vec)).astype(np.float32)
        return out

    def _word_id(self, token: bytes, new: list[str]) -> int:
        """The id of a word missing from the vocabulary a moment ago."""
        known = self._ids.get(token)
        if known is not None:  # added by an earlier occurrence in the same chunk
            return known
        base = singular(token.decode())
        key = base.encode()
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = self._vectors.shape[0] + len(new)
            new.append(base)
        self._ids[token] = i
        return i

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        table = self._SPACES
        for lo in range(0, len(texts), self._CHUNK):
            chunk = texts[lo:lo + self._CHUNK]
            tokens = [text.lower().encode().translate(table).split() for text in chunk]
            flat = list(itertools.chain.from_iterable(tokens))
            ids = list(map(self._ids.get, flat))  # the per-token work stays in C
            new: list[str] = []
            if None in ids:
                ids = [self._word_id(t, new) if i is None else i
                       for t, i in zip(flat, ids, strict=True)]
            if new:
                self._vectors = np.concatenate([self._vectors,
                                                np.stack([self._vector(w) for w in new])])
            counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            indptr = np.concatenate([[0], np.cumsum(counts)])
            indices = np.fromiter(ids, dtype=np.int64, count=len(ids))
            bag = sp.csr_matrix((np.ones(indices.size, dtype=np.float32), indices, indptr),
                                shape=(len(chunk), self._vectors.shape[0]))
            block = np.asarray(bag @ self._vectors, dtype=np.float32)
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            np.divide(block, norms, out=block, where=norms > 0)
            out[lo:lo + len(chunk)] = block
        return out


def scale_embedder(spec: str, dim: int = DEFAULT_DIM) -> Embedder:
    """``words`` (:class:`RandomWordEmbedder`) or ``hashing`` (lexical feature hashing; ~10K
    texts/s, so only for small sizes), both with ``dim`` dimensions."""
    if spec == "words":
        return RandomWordEmbedder(dim)
    if spec == "hashing":
        from hyperplan.embed.hashing import HashingEmbedder

        return HashingEmbedder(dim)
    raise ValueError(f"unknown scale embedder {spec!r}: use words or hashing")


@dataclass(frozen=True)
class SyntheticRequest:
    """A generated request and the tools it names (for the context graph's hit rate)."""

    text: str
    tools: tuple[int, ...]


def synthetic_requests(graph: Hypergraph, count: int, seed: int = 0) -> list[SyntheticRequest]:
    """``count`` requests of one or two operations over tools of one app, e.g. "Search
    playlists in Zenmar, then update the playlist amount."."""
    rng = np.random.default_rng([seed, 0x2E0])
    candidates = [t.id for t in graph.tools if not t.name.endswith(".login")] if count else []
    requests: list[SyntheticRequest] = []
    for _ in range(count if candidates else 0):
        first = int(candidates[rng.integers(len(candidates))])
        chosen = [first]
        app_lo = first - first % TOOLS_PER_APP
        if rng.random() < 0.5:
            other = app_lo + int(rng.integers(1, TOOLS_PER_APP))
            if other < graph.n_tools and other != first:
                chosen.append(other)
        clauses = []
        for t in chosen:
            tool = graph.tools[t]
            brand, action = tool.name.split(".", 1)
            verb, _, obj = action.partition("_")
            outputs = [graph.nodes[o].path.split(".")[-1] for o in tool.outputs
                       if graph.nodes[o].kind.value == "out"]
            field = outputs[int(rng.integers(len(outputs)))] if outputs else ""
            detail = f" {field.replace('_', ' ')}" if field and not field.endswith("_id") else ""
            clauses.append(f"{verb} the {obj.replace('_', ' ')}{detail} in {brand.capitalize()}")
        text = ", then ".join(clauses)
        requests.append(SyntheticRequest(text[0].upper() + text[1:] + ".", tuple(chosen)))
    return requests


def _percentiles(values_ms: list[float]) -> tuple[float | None, float | None]:
    if not values_ms:
        return None, None
    p50, p99 = np.percentile(np.asarray(values_ms), [50, 99])
    return round(float(p50), 3), round(float(p99), 3)


def _rss_mb() -> float:
    """Current resident set size in MB (Linux /proc; ru_maxrss elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return round(pages * resource.getpagesize() / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure_doe(graph: Hypergraph, terminals: int = 200, grounded: float = 0.3,
                seed: int = 0, config: DOEConfig | None = None) -> dict[str, Any]:
    """DOE latency: :func:`~hyperplan.plan.doe.expand` for ``terminals`` random terminal tools,
    each with a fresh random grounding of a ``grounded`` fraction of all input-side nodes
    (drawn outside the timer). Two untimed warm-up runs come first. ``doe_searched`` is the
    fraction of terminals with an ungrounded required input (the others return at once) and
    ``doe_searched_ms_p50`` the median over those alone."""
    rng = np.random.default_rng([seed, 0xD0E])
    count = min(terminals, graph.n_tools)
    chosen: list[int] = rng.choice(graph.n_tools, size=count, replace=False).tolist()
    cfg = config or DOEConfig()
    times: list[float] = []
    searched: list[float] = []  # terminals with an ungrounded required input
    complete, sizes, expansions = 0, [], []
    for k, terminal in enumerate([*chosen[:2], *chosen]):
        vector = rng.random(graph.n_input_nodes) < grounded
        vector.setflags(write=False)
        state = Grounding(vector)
        started = time.perf_counter()
        result = expand(graph, terminal, state, cfg)
        elapsed = (time.perf_counter() - started) * 1000
        if k < min(2, count):
            continue
        times.append(elapsed)
        expansions.append(result.expansions)
        if result.expansions or not result.ok:
            searched.append(elapsed)
        if result.ok:
            complete += 1
            sizes.append(len(result.complete[0].tools))
    p50, p99 = _percentiles(times)
    return {
        "doe_terminals": len(times),
        "doe_ms_p50": p50,
        "doe_ms_p99": p99,
        "doe_ms_max": round(max(times), 3) if times else None,
        "doe_searched": round(len(searched) / len(times), 4) if times else None,
        "doe_searched_ms_p50": _percentiles(searched)[0],
        "doe_complete": round(complete / len(times), 4) if times else None,
        "doe_mean_tools": round(float(np.mean(sizes)), 2) if sizes else None,
        "doe_mean_expansions": round(float(np.mean(expansions)), 2) if expansions else None,
    }


def measure_context(graph: Hypergraph, embedder: Embedder, requests: int = 50, seed: int = 0,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Tool Context Graph latency: build a :class:`~hyperplan.retrieve.GraphIndex`, then time
    :func:`~hyperplan.retrieve.extract_with_vectors` (default config) for ``requests``
    generated requests; interpreting and embedding each request happens outside the timer."""
    from hyperplan.retrieve import (
        ContextGraphConfig,
        GraphIndex,
        embed_interpretation,
        extract_with_vectors,
        interpret_request,
    )

    report = progress or (lambda stage, done, total: None)
    report("context index", 0, 1)
    started = time.perf_counter()
    index = GraphIndex(graph, embedder)
    index_seconds = time.perf_counter() - started
    cfg = ContextGraphConfig()
    times, found, kept = [], 0, []
    queries = synthetic_requests(graph, requests, seed)
    for k, request in enumerate([*queries[:2], *queries]):
        interp = interpret_request(request.text)
        vectors = embed_interpretation(interp, embedder)
        started = time.perf_counter()
        context = extract_with_vectors(index, interp, vectors, cfg)
        elapsed = (time.perf_counter() - started) * 1000
        if k < min(2, len(queries)):
            continue
        times.append(elapsed)
        kept.append(len(context.tools))
        found += set(request.tools) <= set(context.tool_ids)
        report("context graph", len(times), len(queries))
    p50, p99 = _percentiles(times)
    return {
        "index_seconds": round(index_seconds, 3),
        "context_requests": len(times),
        "context_ms_p50": p50,
        "context_ms_p99": p99,
        "context_tools_mean": round(float(np.mean(kept)), 2) if kept else None,
        "context_found": round(found / len(times), 4) if times else None,
    }


def measure_scale(n_tools: int, seed: int = 0, embedder: str = "words",
                  progress: Progress | None = None, *, dim: int = DEFAULT_DIM,
                  terminals: int = 200, requests: int = 50, grounded: float = 0.3,
                  freeze_gc: bool = True) -> dict[str, Any]:
    """One size of ``bench scale`` in this process (everything but ``peak_rss_mb``): build
    the synthetic graph and A_prod, time DOE, then build the retrieval index and time the
    context graph (``requests=0`` skips it).

    With ``freeze_gc`` the graph's millions of objects are moved out of the cyclic garbage
    collector's generations (:func:`gc.freeze`) once built, as a long-running planner would:
    otherwise an occasional full collection walks them all inside a timed call."""
    report = progress or (lambda stage, done, total: None)
    report("generate + build", 0, 1)
    rss_before = _rss_mb()
    begun = started = time.perf_counter()
    graph = synthetic_hypergraph(n_tools, seed)
    build_seconds = time.perf_counter() - started
    report("producer matrix", 0, 1)
    started = time.perf_counter()
    prod = graph.producer_matrix
    aprod_seconds = time.perf_counter() - started
    if freeze_gc:
        gc.collect()
        gc.freeze()
    run: dict[str, Any] = {
        "tools": graph.n_tools,
        "nodes": graph.n_nodes,
        "links": graph.n_links,
        "build_seconds": round(build_seconds, 3),
        "aprod_seconds": round(aprod_seconds, 3),
        "aprod_nnz": int(prod.nnz),
        "graph_rss_mb": round(_rss_mb() - rss_before, 1),
        **degree_stats(graph),
    }
    report("DOE", 0, 1)
    run.update(measure_doe(graph, terminals, grounded, seed))
    if requests > 0:
        text_embedder = scale_embedder(embedder, dim)
        run["embedder"] = text_embedder.name
        run.update(measure_context(graph, text_embedder, requests, seed, report))
    run["seconds"] = round(time.perf_counter() - begun, 3)
    return run
