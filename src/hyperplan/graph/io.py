"""Save and load a hypergraph: a versioned JSON file (tools, nodes, metadata) plus a sibling
``.npz`` file with the link arrays and the producer matrix A_prod, so a graph is built once
and reused.

**The pair.** ``X.json`` keeps its matrices in ``X.npz``, any other name ``Y`` in ``Y.npz``
(:func:`matrix_path`); the JSON records the matrix file's name and SHA-256, and a reader uses
only the recorded name, so graphs saved by any earlier version still load. Because ``out/s``
and ``out/s.json`` would both keep their matrices in ``out/s.npz``, writing refuses a target
that holds the matrices of another saved graph (and a JSON target named like an ``.npz`` that
is one): two outputs never share a matrix file. The ``.npz`` is written first, then the JSON,
each through a temporary file renamed over the old one. A save that fails with an error
(a full disk) puts the old ``.npz`` back, so the old pair still loads; a reader that meets a
new ``.npz`` beside an old JSON (a build still running, or one killed between the two
renames) gets one line saying the ``.npz`` does not belong to this graph, never a mismatched
pair.

**Outputs** (fault item 8 of docs/benchmarks.md, "Runtime trust under faults"): a target that
exists and is not a regular file (a device, a fifo, a directory, a link to one) is refused
before anything is written, as is a target that is one of the ``protect``-ed source files
(:func:`check_output`, :mod:`hyperplan.graph.safe_paths`).

**Inputs** (item 7): graph files are untrusted. The JSON must be a regular file; every field
is type-checked (node kinds are :class:`NodeKind` values, ids are integers), node and tool ids
are in range, input-side nodes come first, a tool lists only nodes it owns on the right side
(inputs and required inputs input-side, outputs output-side), tool names are unique. The
matrix file must be a bare name beside the graph and is read as
:mod:`hyperplan.graph.matrix_file` describes. Every problem is one :class:`GraphError` naming
the file and the field; the checks are vectorised, so loading stays O(size).
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from hyperplan.errors import GraphError
from hyperplan.graph.matrix_file import Matrices, MatrixCounts, read_matrices
from hyperplan.graph.model import Evidence, Hypergraph, NodeKind, SchemaNode, ToolEdge
from hyperplan.graph.safe_paths import atomic_write, check_output_path, read_regular, write_text

FORMAT = "hyperplan.graph"
VERSION = 1
_KINDS = {k.value: k for k in NodeKind}
_INPUT_SIDE = {k.value: k.input_side for k in NodeKind}


def matrix_path(json_path: str | Path) -> Path:
    """The ``.npz`` file a graph JSON file is saved with (module doc)."""
    p = Path(json_path)
    return p.with_suffix(".npz") if p.suffix == ".json" else Path(f"{p}.npz")


# ----------------------------------------------------------------------------- writing
def save_graph(graph: Hypergraph, path: str | Path) -> tuple[Path, Path]:
    """Write ``path`` (JSON) and its ``.npz`` as a pair (module doc); refuses, before writing
    anything, what :func:`check_output` refuses. The garbage collector is paused meanwhile,
    as in :func:`load_graph`."""
    json_path, npz_path = Path(path), matrix_path(path)
    check_output(json_path)
    with _collector_paused():
        return _save(graph, json_path, npz_path)


def _save(graph: Hypergraph, json_path: Path, npz_path: Path) -> tuple[Path, Path]:
    evidence = sorted(set(graph.link_evidence))
    npz = _npz_bytes(graph, {e: i for i, e in enumerate(evidence)})
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "matrices": {  # first after the version: check_output finds it in the file's head
            "file": npz_path.name,
            "sha256": hashlib.sha256(npz).hexdigest(),
            "n_links": graph.n_links,
            "evidence": evidence,
        },
        "metadata": dict(graph.metadata),
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "inputs": list(t.inputs),
                "outputs": list(t.outputs),
                "required": list(t.required),
                "metadata": dict(t.metadata),
            }
            for t in graph.tools
        ],
        "nodes": [
            [n.kind.value, n.tool, n.path, n.type, n.description, n.required]
            for n in graph.nodes
        ],
        "inferred": [[n.id, n.evidence.value, n.confidence] for n in graph.nodes
                     if n.evidence is not Evidence.DECLARED or n.confidence != 1.0],
    }
    text = json.dumps(doc)
    existed = npz_path.exists()
    backup = _hard_link_beside(npz_path) if existed else None
    try:
        atomic_write(npz_path, lambda fh: _put(fh, npz), error=GraphError)
        write_text(json_path, text, error=GraphError)
    except BaseException:
        _restore(npz_path, backup, existed)
        raise
    if backup is not None:
        backup.unlink(missing_ok=True)
    return json_path, npz_path


def _put(fh: BinaryIO, data: bytes) -> None:
    fh.write(data)


def _hard_link_beside(path: Path) -> Path | None:
    """A hidden hard link to the current ``path`` (so a failed save can put the old matrix
    file back), or ``None`` when there is no such file or the file system refuses."""
    link = path.parent / f".{path.name}.{os.urandom(6).hex()}.old"
    try:
        os.link(path, link)
    except OSError:
        return None
    return link


def _restore(npz_path: Path, backup: Path | None, existed: bool) -> None:
    """After a failed save: the old matrix file back in place (the old JSON was not
    replaced, so the old pair is whole again), or no new matrix file left behind."""
    try:
        if backup is not None:
            os.replace(backup, npz_path)
        elif not existed:
            npz_path.unlink(missing_ok=True)
    except OSError:
        pass  # the error being raised says what failed; a load would catch a mismatch


def _npz_bytes(graph: Hypergraph, code: dict[str, int]) -> bytes:
    prod = graph.producer_matrix
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        link_source=graph.link_source,
        link_target=graph.link_target,
        link_weight=graph.link_weight,
        link_evidence=np.array([code[e] for e in graph.link_evidence], dtype=np.int32),
        prod_data=prod.data,
        prod_indices=prod.indices,
        prod_indptr=prod.indptr,
    )
    return buffer.getvalue()


def check_output(path: str | Path, *, protect: Sequence[Path] = ()) -> None:
    """Refuse to write the graph ``path`` and its ``.npz`` when either exists and is not a
    regular file, is one of the ``protect`` files (the source catalog) or inside a protected
    directory, or holds the matrices of another saved graph (module doc)."""
    json_path, npz_path = Path(path), matrix_path(path)
    for target in (json_path, npz_path):
        check_output_path(target, protect, error=GraphError)
    for target in (npz_path, json_path):
        if target.suffix != ".npz":
            continue
        for owner in (target.with_suffix(".json"), target.with_suffix("")):
            if owner != json_path and recorded_matrix_name(owner) == target.name:
                raise GraphError(f"{target}: holds the matrices of the graph {owner}; writing "
                                 f"{json_path} would break it: choose another -o")


_MATRIX_FILE = re.compile(rb'"matrices"\s*:\s*\{\s*"file"\s*:\s*("(?:[^"\\]|\\.)*")')


def recorded_matrix_name(json_path: Path) -> str | None:
    """The matrix file name a saved graph records, or ``None`` when ``json_path`` is no
    readable regular hyperplan graph file. Reads only the head of files this version wrote
    (their ``matrices`` come first); older ones are parsed whole."""
    try:
        fd = os.open(json_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(1 << 16)
        if FORMAT.encode() not in head:
            return None
        found = _MATRIX_FILE.search(head)
        try:
            if found:
                name = json.loads(found.group(1))
            else:
                doc = json.loads(head + fh.read())
                name = doc["matrices"]["file"] if doc.get("format") == FORMAT else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
    return name if isinstance(name, str) else None


# ----------------------------------------------------------------------------- reading
def load_graph(path: str | Path) -> Hypergraph:
    """Load a graph written by :func:`save_graph`, checked as the module doc says; a wrong
    format or version, a missing or mismatched ``.npz`` or any bad field is a
    :class:`GraphError` naming the file (and the field).

    The cyclic garbage collector is paused meanwhile: decoding and building a graph makes
    millions of objects and no cyclic garbage, and its passes over them took about 40% of
    the load of a 100K-tool graph."""
    with _collector_paused():
        return _load(Path(path))


@contextmanager
def _collector_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _load(json_path: Path) -> Hypergraph:
    doc = _read_document(json_path)
    raw_tools = doc.get("tools")
    if not isinstance(raw_tools, list):
        raise _corrupt(json_path, "tools", "missing or not a list")
    nodes, owner, input_side = _nodes(json_path, doc.get("nodes"), len(raw_tools))
    tools = _tools(json_path, raw_tools, owner, input_side)
    nodes = _with_evidence(json_path, nodes, doc.get("inferred", []))
    name, sha256, n_links, evidence = _matrices_section(json_path, doc.get("matrices"))
    metadata = doc.get("metadata", {})
    if not isinstance(metadata, dict):
        raise _corrupt(json_path, "metadata", "not an object")
    n_in = int(input_side.sum())
    counts = MatrixCounts(n_links, len(nodes), n_in, len(tools), len(evidence))
    m: Matrices = read_matrices(json_path, json_path.parent / name, sha256, counts)
    graph = Hypergraph(
        nodes=nodes,
        tools=tools,
        link_source=m.link_source,
        link_target=m.link_target,
        link_weight=m.link_weight,
        link_evidence=tuple(map(evidence.__getitem__, m.link_evidence.tolist())),
        n_input_nodes=n_in,
        metadata=metadata,
    )
    graph.__dict__["producer_matrix"] = m.producer  # A_prod is stored, not rebuilt
    graph.__dict__["node_tool"] = _frozen(owner)
    return graph


def _read_document(json_path: Path) -> dict[str, Any]:
    try:
        raw = read_regular(json_path, lambda size: None, what="graph file", error=GraphError)
        doc = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise GraphError(f"{json_path}: graph file not found") from None
    except UnicodeDecodeError:
        raise GraphError(f"{json_path}: not a hyperplan graph file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise GraphError(f"{json_path}: malformed JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise GraphError(f"{json_path}: malformed JSON (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphError(f"{json_path}: not a hyperplan graph file")
    if doc.get("version") != VERSION:
        raise GraphError(
            f"{json_path}: graph format version {doc.get('version')} is not supported "
            f"(this hyperplan reads version {VERSION}); rebuild it with `hyperplan graph build`"
        )
    return doc


def _corrupt(where: Path, field: str, why: str) -> GraphError:
    return GraphError(f"{where}: corrupt graph file: field {field!r}: {why}")


def _bad(where: Path, field: str, why: str) -> GraphError:
    return GraphError(f"{where}: field {field!r}: {why}")


def _first_not(values: Sequence[Any], ok: Callable[[Any], bool]) -> int:
    """Index of the first value ``ok`` refuses, -1 if none."""
    return next((i for i, v in enumerate(values) if not ok(v)), -1)


def _of_type(values: Sequence[Any], kind: type) -> Callable[[Any], bool] | None:
    """``None`` when every value is exactly of type ``kind`` (a C-speed pass), else the test
    to find the first that is not."""
    if set(map(type, values)) <= {kind}:
        return None
    return lambda v: type(v) is kind


def _column(where: Path, values: Sequence[Any], kind: type, field: str, what: str) -> None:
    test = _of_type(values, kind)
    if test is not None:
        i = _first_not(values, test)
        raise _corrupt(where, field.format(i), f"{what} must be a {kind.__name__}, got "
                       f"{values[i]!r:.60}")


def _nodes(where: Path, raw: Any,
           n_tools: int) -> tuple[tuple[SchemaNode, ...], np.ndarray, np.ndarray]:
    """The nodes of ``doc["nodes"]`` with each node's owning tool (checked to be one of the
    ``n_tools``) and whether it is input-side (input-side nodes checked to come first)."""
    if not isinstance(raw, list):
        raise _corrupt(where, "nodes", "missing or not a list")
    bad = _first_not(raw, lambda r: type(r) is list and len(r) == 6) \
        if set(map(type, raw)) - {list} or set(map(len, raw)) - {6} else -1
    if bad >= 0:
        raise _corrupt(where, f"nodes[{bad}]", "not a list [kind, tool, path, type, "
                       "description, required]")
    kinds, owners, paths, types, texts, required = (list(map(itemgetter(i), raw))
                                                    for i in range(6))  # zip(*raw) is slower
    _column(where, kinds, str, "nodes[{}]", "kind")
    if not set(kinds) <= _KINDS.keys():
        i = _first_not(kinds, _KINDS.__contains__)
        raise _corrupt(where, f"nodes[{i}]", f"kind {kinds[i]!r:.40} is not one of "
                       f"{', '.join(_KINDS)}")
    _column(where, owners, int, "nodes[{}]", "tool id")
    for column, what in ((paths, "path"), (types, "type"), (texts, "description")):
        _column(where, column, str, "nodes[{}]", what)
    _column(where, required, bool, "nodes[{}]", "required")
    owner = _int_array(owners)
    bad_owner = np.flatnonzero((owner < 0) | (owner >= n_tools))
    if bad_owner.size:
        i = int(bad_owner[0])
        raise _bad(where, f"nodes[{i}]", f"tool id {owners[i]} out of range (graph has "
                   f"{n_tools} tools)")
    return _node_tuple(kinds, owners, paths, types, texts, required), owner, \
        _input_side(where, kinds)


_EVIDENCE = {e.value: e for e in Evidence}


def _with_evidence(where: Path, nodes: tuple[SchemaNode, ...],
                   raw: Any) -> tuple[SchemaNode, ...]:
    """``nodes`` with the evidence and confidence of ``doc["inferred"]`` (``[id, evidence,
    confidence]`` per node that is not declared with confidence 1; absent in files of
    earlier versions, whose nodes are all declared)."""
    if not isinstance(raw, list):
        raise _corrupt(where, "inferred", "not a list")
    if not raw:
        return nodes
    out = list(nodes)
    for i, item in enumerate(raw):
        ok = (type(item) is list and len(item) == 3 and type(item[0]) is int
              and 0 <= item[0] < len(out) and item[1] in _EVIDENCE
              and type(item[2]) in (int, float) and 0.0 < item[2] <= 1.0)
        if not ok:
            raise _corrupt(where, f"inferred[{i}]", "not [node id, evidence, confidence in "
                           "(0, 1]]")
        out[item[0]] = replace(out[item[0]], evidence=_EVIDENCE[item[1]],
                               confidence=float(item[2]))
    return tuple(out)


def _int_array(values: Sequence[int]) -> np.ndarray:
    """``values`` as int64; integers beyond int64 (out of every range) become -1."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array([v if -(1 << 63) <= v < 1 << 63 else -1 for v in values],
                        dtype=np.int64)


def _input_side(where: Path, kinds: Sequence[str]) -> np.ndarray:
    side = np.fromiter(map(_INPUT_SIDE.__getitem__, kinds), dtype=bool, count=len(kinds))
    n_in = int(side.sum())
    if not side[:n_in].all():
        first_output = int(np.argmin(side))
        i = first_output + int(np.argmax(side[first_output:]))
        raise _bad(where, f"nodes[{i}]", "an input-side node after an output-side node "
                   "(input-side nodes come first)")
    return side


def _node_tuple(kinds: Sequence[str], *columns: Sequence[Any]) -> tuple[SchemaNode, ...]:
    return tuple(map(SchemaNode, range(len(kinds)), map(_KINDS.__getitem__, kinds), *columns))


def _tools(where: Path, raw: Any, owner: np.ndarray,
           input_side: np.ndarray) -> tuple[ToolEdge, ...]:
    """The tools of ``doc["tools"]``, every listed node id checked (module doc)."""
    test = _of_type(raw, dict)
    if test is not None:
        raise _corrupt(where, f"tools[{_first_not(raw, test)}]", "not an object")
    names = _tool_field(where, raw, "name", str)
    texts = _tool_field(where, raw, "description", str)
    lists = {key: _tool_field(where, raw, key, list) for key in ("inputs", "outputs",
                                                                  "required")}
    metas = [t.get("metadata", {}) for t in raw]
    _column(where, metas, dict, "tools[{}].metadata", "metadata")
    m = len(raw)
    _check_tool_ids(where, names, lists, owner, input_side)
    if len(set(names)) != m:
        _repeated_name(where, names)
    edges = (map(tuple, lists[key]) for key in ("inputs", "outputs", "required"))
    return tuple(map(ToolEdge, range(m), names, texts, *edges, metas))


def _repeated_name(where: Path, names: list[str]) -> None:
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen:
            raise _corrupt(where, f"tools[{j}].name", f"{name!r:.80} is also the name of "
                           f"tools[{seen[name]}]")
        seen[name] = j


def _tool_field(where: Path, raw: list[dict[str, Any]], key: str, kind: type) -> list[Any]:
    try:
        values = list(map(itemgetter(key), raw))
    except KeyError:
        j = _first_not(raw, lambda t: key in t)
        raise _corrupt(where, f"tools[{j}].{key}", "missing") from None
    _column(where, values, kind, f"tools[{{}}].{key}", key)
    return values


def _check_tool_ids(where: Path, names: list[str], lists: dict[str, list[list[Any]]],
                    owner: np.ndarray, input_side: np.ndarray) -> None:
    """Each tool's ``inputs``, ``outputs`` and ``required`` are ids of nodes it owns, on the
    input side (outputs: the output side). The first problem in tool order (then field
    order) raises."""
    problems = []
    for rank, (key, want_input) in enumerate((("inputs", True), ("outputs", False),
                                              ("required", True))):
        found = _first_bad_id(lists[key], owner, input_side, want_input, names)
        if found is not None:
            tool, why = found
            problems.append((tool, rank, f"tools[{tool}].{key}", why))
    if problems:
        _, _, field, why = min(problems)
        raise _bad(where, field, why)


def _first_bad_id(lists: list[list[Any]], owner: np.ndarray, input_side: np.ndarray,
                  want_input: bool, names: list[str]) -> tuple[int, str] | None:
    """(tool, why) of the first bad id in ``lists`` (one list of node ids per tool)."""
    flat = list(chain.from_iterable(lists))
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    tool_of = np.repeat(np.arange(len(lists)), lengths)
    test = _of_type(flat, int)
    if test is not None:
        k = _first_not(flat, test)
        return int(tool_of[k]), f"node id {flat[k]!r:.40} is not an integer"
    n = owner.size
    ids = _int_array(flat)
    out_of_range = (ids < 0) | (ids >= n)
    safe = np.where(out_of_range, 0, ids)
    wrong_owner = ~out_of_range & (owner[safe] != tool_of)
    wrong_side = ~out_of_range & (input_side[safe] != want_input)
    bad = np.flatnonzero(out_of_range | wrong_owner | wrong_side)
    if not bad.size:
        return None
    k = int(bad[0])
    v = int(flat[k])
    if out_of_range[k]:
        why = f"node id {v} out of range (graph has {n} nodes)"
    elif wrong_owner[k]:
        why = f"node id {v} belongs to tool {int(owner[v])} ({names[int(owner[v])]!r}), " \
              "not to this tool"
    else:
        why = f"node id {v} is {'an output' if want_input else 'an input'}-side node"
    return int(tool_of[k]), why


def _matrices_section(where: Path, raw: Any) -> tuple[str, str, int, list[str]]:
    """The checked ``matrices`` entry: a bare file name beside the graph, its SHA-256, the
    number of links and the evidence labels."""
    if not isinstance(raw, dict):
        raise _corrupt(where, "matrices", "missing or not an object")
    name = raw.get("file")
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\x00" in name):
        raise _bad(where, "matrices.file", f"{name!r:.80} is not a bare file name beside the "
                   "graph")
    sha256 = raw.get("sha256")
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise _corrupt(where, "matrices.sha256", "missing or not a SHA-256 hex digest")
    n_links = raw.get("n_links")
    if type(n_links) is not int or n_links < 0:
        raise _bad(where, "matrices.n_links", f"{n_links!r:.40} is not a count")
    evidence = raw.get("evidence")
    if not isinstance(evidence, list):
        raise _corrupt(where, "matrices.evidence", "missing or not a list")
    _column(where, evidence, str, "matrices.evidence[{}]", "evidence label")
    return name, sha256, n_links, evidence


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
