"""The synthetic Tool-Schema Hypergraphs of ``hyperplan bench scale`` (up to millions of tools).

:func:`synthetic_hypergraph` draws a graph directly as arrays and builds it with
:meth:`Hypergraph.from_arrays` -- there is no catalog and no link inference (inference at 1M
tools does not fit this machine; ``bench links`` measures it up to 100K tools). Shape, per tool:

* apps of :data:`~hyperplan_bench.synthetic.words.TOOLS_PER_APP` tools (brand names from syllables),
  each with a ``login`` (two optional inputs, an ``access_token`` output and the effect
  ``<brand>.authenticated``) and tools ``<brand>.<verb>_<entity>`` over 5 entities of the app
  drawn Zipf-like from the entity words of :mod:`hyperplan_bench.synthetic.words`;
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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hyperplan.graph.model import Hypergraph
from hyperplan_bench.synthetic.words import SYLLABLES, TOOLS_PER_APP, entity_names, plural

__all__ = ["MAX_IN_DEGREE", "synthetic_hypergraph"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

MAX_IN_DEGREE = 64  # LinkConfig.max_links_per_input
_ENTITIES_PER_APP = 5
_VERBS = ("search", "show", "create", "update", "delete", "list", "export", "share")
_PLURAL_VERBS = frozenset({"search", "list"})
_STATES = ("authenticated", "verified", "connected", "checkout_open")
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


def _brand(app: int) -> str:
    """A unique pronounceable app name per index: base-24 syllables, at least two."""
    parts, k = [], app + len(SYLLABLES)  # k >= 24: two syllables or more
    while k:
        k, digit = divmod(k, len(SYLLABLES))
        parts.append(SYLLABLES[digit])
    return "".join(reversed(parts))


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


@dataclass(frozen=True, slots=True)
class _ToolLayout:
    """Where each tool sits: its app (``TOOLS_PER_APP`` consecutive tools), verb and entity."""

    ids: IntArray  # 0..n_tools-1
    app: IntArray
    verb: IntArray  # index into _VERBS
    login: BoolArray  # the first tool of every app
    entity: IntArray  # index into the entity pool
    n_apps: int


@dataclass(frozen=True, slots=True)
class _PortCounts:
    """What each tool has: port counts, precondition/effect flags and states, and the first
    of its attributes."""

    n_req: IntArray  # required inputs
    n_opt: IntArray  # optional inputs
    n_out: IntArray  # outputs (effects not counted)
    has_pre: BoolArray
    has_eff: BoolArray
    pre_state: IntArray  # index into _STATES
    eff_state: IntArray
    attr_offset: IntArray  # index into _ATTRIBUTES of the tool's first attribute port


@dataclass(frozen=True, slots=True)
class _NodeColumns:
    """The schema nodes, input side (inputs, then the precondition) of every tool first, then
    the output side (outputs, then the effect): owner and position within its tool's side,
    and the columns :meth:`Hypergraph.from_arrays` takes."""

    in_tool: IntArray  # owner of each input-side node
    in_pos: IntArray  # its position among its tool's input-side nodes
    out_tool: IntArray  # owner of each output-side node
    out_pos: IntArray
    is_pre: BoolArray  # per input-side node
    is_eff: BoolArray  # per output-side node
    n_input_nodes: int
    out_start: IntArray  # per tool: node id of its first output
    kind: npt.NDArray[np.int8]  # 0-3: in, pre, out, eff
    tool: IntArray
    required: BoolArray


@dataclass(frozen=True, slots=True)
class _NameCodes:
    """An integer code per node from which its path, description and type follow; equal
    codes give equal strings (see :func:`_strings`)."""

    in_attr: IntArray  # per input-side node: the _ATTRIBUTES index it would use
    in_code: IntArray  # < 0: login inputs; < n_attr: an attribute; else n_attr + entity (id)
    out_attr: IntArray  # per output-side node: an _ATTRIBUTES index, or n_attr for the id
    out_code: IntArray  # (entity * 2 + listing) * (n_attr + 1) + out_attr; -1: access_token
    pre_code: IntArray  # per input-side node: app * len(_STATES) + pre_state
    eff_code: IntArray  # per output-side node: app * len(_STATES) + eff_state


def _draw_app_entities(rng: np.random.Generator, n_apps: int, pool: Sequence[str]) -> IntArray:
    """The ``_ENTITIES_PER_APP`` distinct entities of every app, drawn Zipf-like from the pool
    (P(i) ~ 1/(i + 1)): one row per app."""
    weights = 1.0 / np.arange(1, len(pool) + 1)
    weights /= weights.sum()
    app_entities: IntArray = np.stack([
        rng.choice(len(pool), _ENTITIES_PER_APP, replace=False, p=weights)
        for _ in range(n_apps)]) if n_apps else np.zeros((0, 5), np.int64)
    return app_entities


def _draw_tool_layout(rng: np.random.Generator, n_tools: int,
                      pool: Sequence[str]) -> _ToolLayout:
    """Tools in apps of ``TOOLS_PER_APP``, the first a login, the others cycling through the
    verbs, each run of ``len(_VERBS)`` on one of the app's entities."""
    n = n_tools
    tool_ids = np.arange(n, dtype=np.int64)
    app = tool_ids // TOOLS_PER_APP
    slot = tool_ids % TOOLS_PER_APP
    n_apps = int(app[-1]) + 1 if n else 0
    login = slot == 0
    verb = slot % len(_VERBS)
    app_entities = _draw_app_entities(rng, n_apps, pool)
    entity = app_entities[app, slot // len(_VERBS)] if n else np.zeros(0, np.int64)
    return _ToolLayout(ids=tool_ids, app=app, verb=verb, login=login, entity=entity,
                       n_apps=n_apps)


def _draw_port_counts(rng: np.random.Generator, n_tools: int, login: BoolArray) -> _PortCounts:
    """0-4 required inputs (mean 2.05), 0-2 optional (mean 0.85), 1-6 outputs (mean 3.0), a
    precondition and an effect with probability 0.12 each (preconditions on the app's first
    state with probability 0.6); a login has two optional inputs, one output and the effect
    ``<brand>.authenticated``."""
    n = n_tools
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
    return _PortCounts(n_req=n_req, n_opt=n_opt, n_out=n_out, has_pre=has_pre,
                       has_eff=has_eff, pre_state=pre_state, eff_state=eff_state,
                       attr_offset=attr_offset)


def _node_columns(tool_ids: IntArray, ports: _PortCounts) -> _NodeColumns:
    """Node ids from the port counts: every tool's inputs (required first) and precondition,
    then every tool's outputs and effect; inputs are required if among the first ``n_req``,
    preconditions always."""
    n_ports_in = ports.n_req + ports.n_opt
    n_side_in = n_ports_in + ports.has_pre
    n_side_out = ports.n_out + ports.has_eff
    in_start = np.cumsum(n_side_in) - n_side_in
    n_input_nodes = int(n_side_in.sum())
    out_start = n_input_nodes + np.cumsum(n_side_out) - n_side_out

    in_tool = np.repeat(tool_ids, n_side_in)
    in_pos = np.arange(n_input_nodes) - np.repeat(in_start, n_side_in)
    out_tool = np.repeat(tool_ids, n_side_out)
    out_pos = np.arange(out_tool.size) - np.repeat(out_start - n_input_nodes, n_side_out)
    is_pre = in_pos >= n_ports_in[in_tool]
    is_eff = out_pos >= ports.n_out[out_tool]
    node_kind = np.concatenate([np.where(is_pre, 1, 0), np.where(is_eff, 3, 2)]).astype(np.int8)
    node_tool = np.concatenate([in_tool, out_tool])
    node_required = np.concatenate([(in_pos < ports.n_req[in_tool]) | is_pre,
                                    np.zeros(out_tool.size, dtype=bool)])
    return _NodeColumns(in_tool=in_tool, in_pos=in_pos, out_tool=out_tool, out_pos=out_pos,
                        is_pre=is_pre, is_eff=is_eff, n_input_nodes=n_input_nodes,
                        out_start=out_start, kind=node_kind, tool=node_tool,
                        required=node_required)


def _name_codes(tools: _ToolLayout, ports: _PortCounts, nodes: _NodeColumns) -> _NameCodes:
    """A code per port, one string per distinct code: inputs take consecutive attributes from
    the tool's offset (the entity's id first for verbs on one entity, username and password
    for a login); outputs the entity's id first, then attributes (``<entities>[].`` paths for
    search and list, ``access_token`` for a login); states are per app."""
    n_attr = len(_ATTRIBUTES)
    in_tool, in_pos, out_tool, out_pos = nodes.in_tool, nodes.in_pos, nodes.out_tool, nodes.out_pos
    entity, login = tools.entity, tools.login
    id_first = np.isin(tools.verb, [1, 3, 4, 6, 7])  # show/update/delete/export/share take the id
    in_attr = (ports.attr_offset[in_tool] + in_pos) % n_attr
    in_code = np.where((in_pos == 0) & id_first[in_tool], n_attr + entity[in_tool], in_attr)
    in_code = np.where(login[in_tool], -1 - in_pos, in_code)  # username, password
    out_attr = np.where(out_pos == 0, n_attr, (ports.attr_offset[out_tool] + out_pos) % n_attr)
    listing = np.isin(tools.verb[out_tool], [0, 5])
    out_code = (entity[out_tool] * 2 + listing) * (n_attr + 1) + out_attr
    out_code = np.where(login[out_tool], -1, out_code)  # access_token
    pre_code = tools.app[in_tool] * len(_STATES) + ports.pre_state[in_tool]
    eff_code = tools.app[out_tool] * len(_STATES) + ports.eff_state[out_tool]
    return _NameCodes(in_attr=in_attr, in_code=in_code, out_attr=out_attr, out_code=out_code,
                      pre_code=pre_code, eff_code=eff_code)


def _input_path(code: int, pool: Sequence[str]) -> str:
    """The parameter name of an input code (:class:`_NameCodes`)."""
    n_attr = len(_ATTRIBUTES)
    if code < 0:
        return ("username", "password")[-1 - code]
    return _ATTRIBUTES[code][0] if code < n_attr else f"{pool[code - n_attr]}_id"


def _input_text(code: int, pool: Sequence[str]) -> str:
    """The description of an input code."""
    n_attr = len(_ATTRIBUTES)
    if code < 0:
        return ("User name to log in with.", "Password of the account.")[-1 - code]
    if code < n_attr:
        return f"The {_ATTRIBUTES[code][0].replace('_', ' ')} to set or filter by."
    return f"Id of the {pool[code - n_attr].replace('_', ' ')}."


def _output_path(code: int, pool: Sequence[str]) -> str:
    """The output path of an output code: ``<entity>.<field>`` or ``<entities>[].<field>``."""
    n_attr = len(_ATTRIBUTES)
    if code < 0:
        return "access_token"
    rest, attr = divmod(code, n_attr + 1)
    ent, many = divmod(rest, 2)
    word = pool[ent]
    field = f"{word}_id" if attr == n_attr else _ATTRIBUTES[attr][0]
    return f"{plural(word)}[].{field}" if many else f"{word}.{field}"


def _output_text(code: int, pool: Sequence[str]) -> str:
    """The description of an output code."""
    n_attr = len(_ATTRIBUTES)
    if code < 0:
        return "Access token for the other tools of the app."
    rest, attr = divmod(code, n_attr + 1)
    words = pool[rest // 2].replace("_", " ")
    if attr == n_attr:
        return f"Unique identifier of the {words}."
    return f"{_ATTRIBUTES[attr][0].replace('_', ' ').capitalize()} of the {words}."


def _state_predicate(code: int) -> str:
    """``<brand>.<state>`` of a state code ``app * len(_STATES) + state``."""
    return f"{_brand(code // len(_STATES))}.{_STATES[code % len(_STATES)]}"


def _node_paths_and_descriptions(nodes: _NodeColumns, codes: _NameCodes,
                                 pool: Sequence[str]) -> tuple[list[str], list[str]]:
    """Path and description of every node, input side then output side; preconditions and
    effects are named by their state predicate."""
    in_keys = np.where(nodes.is_pre, -100 - codes.pre_code, codes.in_code)  # states <= -100
    in_paths = _strings(in_keys, lambda c: _state_predicate(-100 - c) if c <= -100
                        else _input_path(c, pool))
    in_texts = _strings(in_keys, lambda c: f"precondition: {_state_predicate(-100 - c)}"
                        if c <= -100 else _input_text(c, pool))
    big = 1 << 40  # effect codes above every port code
    out_keys = np.where(nodes.is_eff, big + codes.eff_code, codes.out_code)
    out_paths = _strings(out_keys, lambda c: _state_predicate(c - big) if c >= big
                         else _output_path(c, pool))
    out_texts = _strings(out_keys, lambda c: f"effect: {_state_predicate(c - big)}"
                         if c >= big else _output_text(c, pool))
    return in_paths + out_paths, in_texts + out_texts


def _node_types(tools: _ToolLayout, nodes: _NodeColumns, codes: _NameCodes) -> list[str]:
    """The JSON type of every node: an attribute's type; ``string`` for ids, login inputs and
    the access token; ``boolean`` for preconditions and effects."""
    n_attr = len(_ATTRIBUTES)
    in_code, out_pos = codes.in_code, nodes.out_pos
    attr_types = [t for _, t in _ATTRIBUTES]
    in_types = np.where(nodes.is_pre, -2,
                        np.where((in_code >= n_attr) | (in_code < 0), -1, codes.in_attr))
    out_types = np.where(nodes.is_eff, -2,
                         np.where((out_pos == 0) | tools.login[nodes.out_tool], -1,
                                  codes.out_attr))
    type_names = {-2: "boolean", -1: "string"} | dict(enumerate(attr_types))
    return _strings(np.concatenate([in_types, out_types]), type_names.__getitem__)


def _tool_names_and_descriptions(tools: _ToolLayout, brands: Sequence[str],
                                 pool: Sequence[str]) -> tuple[list[str], list[str]]:
    """``<brand>.login`` or ``<brand>.<verb>_<entity>`` (plural entity for search and list)
    and a description from :data:`_TOOL_DESCRIPTIONS`, per tool."""
    tool_name, tool_text = [], []
    for t, a, v, e in zip(tools.ids.tolist(), tools.app.tolist(), tools.verb.tolist(),
                          tools.entity.tolist(), strict=True):
        brand = brands[a]
        if t % TOOLS_PER_APP == 0:
            tool_name.append(f"{brand}.login")
            tool_text.append(f"Log in to {brand} and get an access token.")
            continue
        word = pool[e]
        name = plural(word) if _VERBS[v] in _PLURAL_VERBS else word
        tool_name.append(f"{brand}.{_VERBS[v]}_{name}")
        tool_text.append(_TOOL_DESCRIPTIONS[_VERBS[v]].format(
            w=word.replace("_", " "), p=plural(word).replace("_", " "), b=brand))
    return tool_name, tool_text


def _draw_in_degrees(rng: np.random.Generator, n_ports: int) -> IntArray:
    """Producers per input port: 0 with probability ``_NO_PRODUCER``, else drawn from the power
    law P(k) ~ k^-``_IN_DEGREE_EXPONENT`` on 1..``MAX_IN_DEGREE``."""
    k_range = np.arange(1, MAX_IN_DEGREE + 1)
    law = k_range ** -_IN_DEGREE_EXPONENT
    degree: IntArray = rng.choice(k_range, size=n_ports, p=law / law.sum())
    degree[rng.random(n_ports) < _NO_PRODUCER] = 0
    return degree


def _draw_local_sources(rng: np.random.Generator, target_tool: IntArray, tools: _ToolLayout,
                        ports: _PortCounts, nodes: _NodeColumns) -> IntArray:
    """Per link, an output of another tool of the target's app: tool offset floor(size * u^3)
    within the app (its first tools far more often; the next tool if that is the target's
    own), then one of that tool's outputs uniformly."""
    n = tools.ids.size
    app_start = tools.app[target_tool] * TOOLS_PER_APP
    app_size = np.minimum(app_start + TOOLS_PER_APP, n) - app_start
    offset = np.floor(app_size * rng.random(target_tool.size) ** 3).astype(np.int64)
    source_tool = app_start + offset
    source_tool = np.where(source_tool == target_tool,
                           app_start + (offset + 1) % np.maximum(app_size, 1), source_tool)
    source: IntArray = nodes.out_start[source_tool] + np.floor(
        rng.random(target_tool.size) * ports.n_out[source_tool]).astype(np.int64)
    return source


def _with_popular_sources(rng: np.random.Generator, local: BoolArray, local_source: IntArray,
                          outputs: IntArray) -> IntArray:
    """``local_source`` where ``local``, elsewhere an output from a global popularity ranking
    (a random permutation of all outputs) at rank floor(n_outputs * u^2): preferential
    attachment."""
    popular = rng.permutation(outputs)
    rank = np.floor(outputs.size * rng.random(local.size) ** 2).astype(np.int64)
    source: IntArray = np.where(local, local_source, popular[np.minimum(rank, outputs.size - 1)]
                                if outputs.size else local_source)
    return source


def _draw_port_links(rng: np.random.Generator, tools: _ToolLayout, ports: _PortCounts,
                     nodes: _NodeColumns) -> tuple[IntArray, IntArray, FloatArray]:
    """Output -> input links (source, target, weight): power-law in-degree (none into login
    inputs), each link local (same app) with probability ``_LOCAL`` or globally popular,
    weight 1 - 0.7 u^2; links within one tool are dropped."""
    input_ports = np.flatnonzero(~nodes.is_pre)  # input nodes (not preconditions)
    degree = _draw_in_degrees(rng, input_ports.size)
    degree[tools.login[nodes.in_tool[input_ports]]] = 0  # username and password come from the user
    target = np.repeat(input_ports, degree)
    target_tool = nodes.in_tool[target]
    local = rng.random(target.size) < _LOCAL
    local_source = _draw_local_sources(rng, target_tool, tools, ports, nodes)
    outputs = np.flatnonzero(~nodes.is_eff) + nodes.n_input_nodes
    source = _with_popular_sources(rng, local, local_source, outputs)
    weight = 1.0 - 0.7 * rng.random(target.size) ** 2
    keep = nodes.tool[source] != target_tool  # also drops local links of one-tool apps
    return source[keep], target[keep], weight[keep]


def _effect_links(nodes: _NodeColumns, codes: _NameCodes) -> tuple[IntArray, IntArray]:
    """Effect -> precondition links (source, target) of the same app and state, between
    different tools."""
    n_input_nodes = nodes.n_input_nodes
    pre_nodes = np.flatnonzero(nodes.is_pre)
    eff_nodes = np.flatnonzero(nodes.is_eff) + n_input_nodes
    eff_key = codes.eff_code[eff_nodes - n_input_nodes]
    by_key = np.argsort(eff_key, kind="stable")
    eff_sorted, keys_sorted = eff_nodes[by_key], eff_key[by_key]
    pre_key = codes.pre_code[pre_nodes]
    lo = np.searchsorted(keys_sorted, pre_key, "left")
    hi = np.searchsorted(keys_sorted, pre_key, "right")
    e_source = eff_sorted[_ranges(lo, hi - lo)]
    e_target = np.repeat(pre_nodes, hi - lo)
    own = nodes.tool[e_source] != nodes.tool[e_target]
    return e_source[own], e_target[own]


def synthetic_hypergraph(n_tools: int, seed: int = 0) -> Hypergraph:
    """A deterministic synthetic Tool-Schema Hypergraph of exactly ``n_tools`` tools (module
    doc), built from arrays. The same ``(n_tools, seed)`` gives the same graph in any
    process. Its one generator is drawn from by :func:`_draw_tool_layout`,
    :func:`_draw_port_counts` and :func:`_draw_port_links`, in that order; names
    (:func:`_name_codes`) and effect links (:func:`_effect_links`) are not random."""
    if n_tools < 0:
        raise ValueError(f"n_tools must be >= 0, got {n_tools}")
    rng = np.random.default_rng([seed, 0x5CA1E])
    pool = entity_names()
    tools = _draw_tool_layout(rng, n_tools, pool)
    ports = _draw_port_counts(rng, n_tools, tools.login)
    nodes = _node_columns(tools.ids, ports)
    codes = _name_codes(tools, ports, nodes)
    node_path, node_description = _node_paths_and_descriptions(nodes, codes, pool)
    brands = [_brand(a) for a in range(tools.n_apps)]
    tool_name, tool_description = _tool_names_and_descriptions(tools, brands, pool)
    app_meta = [{"app": b} for b in brands]  # one dict per app, shared by its tools
    source, target, weight = _draw_port_links(rng, tools, ports, nodes)
    e_source, e_target = _effect_links(nodes, codes)
    return Hypergraph.from_arrays(
        node_kind=nodes.kind,
        node_tool=nodes.tool,
        node_path=node_path,
        node_type=_node_types(tools, nodes, codes),
        node_description=node_description,
        node_required=nodes.required,
        tool_name=tool_name,
        tool_description=tool_description,
        tool_metadata=[app_meta[a] for a in tools.app.tolist()],
        link_source=np.concatenate([source, e_source]),
        link_target=np.concatenate([target, e_target]),
        link_weight=np.concatenate([weight, np.ones(e_source.size)]),
        link_evidence=["synthetic"] * int(source.size) + ["effect"] * int(e_source.size),
        metadata={"source": "hyperplan_bench.eval.scale.synthetic_hypergraph", "seed": seed,
                  "n_tools": n_tools},
    )
