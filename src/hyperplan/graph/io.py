"""Save and load a hypergraph: a versioned JSON file (tools, nodes, metadata) plus a sibling
``.npz`` file with the link arrays and the producer matrix A_prod, so a graph is built once
and reused.

Graph files are input like any other (issue 22, item 7): the matrix file must be a bare file
name beside the graph, a regular file no larger than :func:`_size_bound` allows, loaded
without pickles, and every node id, tool id, evidence code and weight is checked at load; a
problem is one :class:`GraphError` naming the file and the field. Writing refuses a target
that exists and is not a regular file, and a matrix file that belongs to another graph
(:func:`check_output`)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hyperplan.errors import GraphError
from hyperplan.graph.model import Hypergraph, NodeKind, SchemaNode, ToolEdge

FORMAT = "hyperplan.graph"
VERSION = 1


def matrix_path(json_path: str | Path) -> Path:
    """The ``.npz`` file that belongs to a graph JSON file."""
    p = Path(json_path)
    return p.with_suffix(".npz") if p.suffix == ".json" else Path(f"{p}.npz")


def _atomic_write(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_graph(graph: Hypergraph, path: str | Path) -> tuple[Path, Path]:
    """Write ``path`` (JSON) and its ``.npz``; both are replaced atomically."""
    json_path, npz_path = Path(path), matrix_path(path)
    evidence = sorted(set(graph.link_evidence))
    code = {e: i for i, e in enumerate(evidence)}
    prod = graph.producer_matrix

    def write_npz(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(
                fh,
                link_source=graph.link_source,
                link_target=graph.link_target,
                link_weight=graph.link_weight,
                link_evidence=np.array([code[e] for e in graph.link_evidence], dtype=np.int32),
                prod_data=prod.data,
                prod_indices=prod.indices,
                prod_indptr=prod.indptr,
            )

    _atomic_write(npz_path, write_npz)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": dict(graph.metadata),
        "matrices": {
            "file": npz_path.name,
            "sha256": hashlib.sha256(npz_path.read_bytes()).hexdigest(),
            "n_links": graph.n_links,
            "evidence": evidence,
        },
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
    }
    _atomic_write(json_path, lambda tmp: Path(tmp).write_text(json.dumps(doc), "utf-8"))
    return json_path, npz_path


def check_output(path: str | Path, *, protect: tuple[Path, ...] = ()) -> None:
    """Refuse to write the graph ``path`` (and its ``.npz``) when either exists and is not a
    regular file (a device, a fifo, a directory), when either is one of the ``protect`` files
    (the source catalog) or inside a protected directory, or when the ``.npz`` belongs to
    another saved graph (``out/s`` and ``out/s.json`` would share ``out/s.npz``)."""
    json_path, npz_path = Path(path), matrix_path(path)
    for target in (json_path, npz_path):
        if (target.exists() or target.is_symlink()) and not target.is_file():
            raise GraphError(f"{target}: exists and is not a regular file; refusing to "
                             "replace it")
        resolved = target.resolve()
        for guarded in protect:
            g = guarded.resolve()
            if resolved == g or (g.is_dir() and g in resolved.parents):
                raise GraphError(f"{target}: is (or is inside) the source {guarded}; "
                                 "refusing to overwrite it: choose another -o")
    for other in {npz_path.with_suffix(".json"), npz_path.with_suffix("")} - {json_path}:
        if other.is_file() and _matrix_name(other) == npz_path.name:
            raise GraphError(f"{npz_path}: holds the matrices of the graph {other}; writing "
                             f"{json_path} would break it: choose another -o")


def _matrix_name(json_path: Path) -> str | None:
    try:
        with json_path.open("rb") as fh:
            head = fh.read(1 << 20)
        doc = json.loads(head) if len(head) < (1 << 20) else None
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and doc.get("format") == FORMAT:
        return str((doc.get("matrices") or {}).get("file"))
    return None


def load_graph(path: str | Path) -> Hypergraph:
    """Load a graph written by :func:`save_graph`; a wrong format or version, a missing or
    mismatched ``.npz`` is a :class:`GraphError` naming the file."""
    json_path = Path(path)
    try:
        doc = json.loads(json_path.read_text("utf-8"))
    except FileNotFoundError:
        raise GraphError(f"{json_path}: graph file not found") from None
    except OSError as exc:
        raise GraphError(f"{json_path}: cannot read graph file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise GraphError(f"{json_path}: not a hyperplan graph file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise GraphError(f"{json_path}: malformed JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphError(f"{json_path}: not a hyperplan graph file")
    if doc.get("version") != VERSION:
        raise GraphError(
            f"{json_path}: graph format version {doc.get('version')} is not supported "
            f"(this hyperplan reads version {VERSION}); rebuild it with `hyperplan graph build`"
        )
    try:
        nodes = tuple(
            SchemaNode(i, NodeKind(k), int(t), str(p), str(ty), str(d), bool(r))
            for i, (k, t, p, ty, d, r) in enumerate(doc["nodes"])
        )
        tools = tuple(
            ToolEdge(j, t["name"], t["description"], tuple(t["inputs"]), tuple(t["outputs"]),
                     tuple(t["required"]), t.get("metadata", {}))
            for j, t in enumerate(doc["tools"])
        )
        matrices = doc["matrices"]
        evidence = list(matrices["evidence"])
    except (KeyError, ValueError, TypeError) as exc:
        raise GraphError(f"{json_path}: corrupt graph file ({exc!r})") from None
    _check_ids(json_path, nodes, tools)
    arrays = _load_matrices(json_path, matrices, len(nodes) + len(tools))
    n_in = sum(1 for n in nodes if n.kind.input_side)
    _check_arrays(matrix_path_of(json_path, matrices), arrays, len(nodes), len(tools), n_in,
                  len(evidence))
    try:
        graph = Hypergraph(
            nodes=nodes,
            tools=tools,
            link_source=_ro(arrays["link_source"]),
            link_target=_ro(arrays["link_target"]),
            link_weight=_ro(arrays["link_weight"]),
            link_evidence=tuple(evidence[c] for c in arrays["link_evidence"].tolist()),
            n_input_nodes=n_in,
            metadata=doc.get("metadata", {}),
        )
        prod = sp.csr_matrix(
            (arrays["prod_data"], arrays["prod_indices"], arrays["prod_indptr"]),
            shape=(n_in, len(tools)),
        )
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise GraphError(f"{json_path}: corrupt graph file ({exc})") from None
    graph.__dict__["producer_matrix"] = prod  # A_prod is stored, not rebuilt
    return graph


def _ro(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


MAX_MATRIX_BYTES = 4 << 30  # absolute ceiling of a matrix file, whatever the JSON says
_INT_ARRAYS = ("link_source", "link_target", "link_evidence", "prod_indices", "prod_indptr")
_FLOAT_ARRAYS = ("link_weight", "prod_data")


def matrix_path_of(json_path: Path, matrices: dict[str, Any]) -> Path:
    """The matrix file a graph JSON names; only a bare file name beside it is accepted."""
    name = matrices.get("file")
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\x00" in name):
        raise GraphError(f"{json_path}: field 'matrices.file': {name!r} is not a bare file "
                         "name beside the graph")
    return json_path.parent / name


def _size_bound(n_links: int, n_items: int) -> int:
    """Generous bound on a matrix file: 64 bytes per link, node and tool, plus 1 MiB."""
    return min(MAX_MATRIX_BYTES, 64 * (n_links + n_items) + (1 << 20))


def _load_matrices(json_path: Path, matrices: dict[str, Any],
                   n_items: int) -> dict[str, np.ndarray]:
    npz_path = matrix_path_of(json_path, matrices)
    n_links = matrices.get("n_links")
    if not isinstance(n_links, int) or n_links < 0:
        raise GraphError(f"{json_path}: field 'matrices.n_links': {n_links!r} is not a count")
    try:
        info = os.stat(npz_path)
    except OSError:
        raise GraphError(f"{json_path}: matrix file {npz_path} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise GraphError(f"{npz_path}: field 'matrices.file': not a regular file")
    if info.st_size > _size_bound(n_links, n_items):
        raise GraphError(f"{npz_path}: {info.st_size} bytes, more than a graph of {n_links} "
                         f"links can need ({_size_bound(n_links, n_items)}); refusing to read it")
    with open(npz_path, "rb") as fh:
        raw = fh.read(info.st_size + 1)
    if hashlib.sha256(raw).hexdigest() != matrices.get("sha256"):
        raise GraphError(f"{json_path}: matrix file {npz_path} does not match this graph")
    try:
        with np.load(npz_path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (ValueError, OSError, EOFError, KeyError, zlib.error, zipfile.BadZipFile) as exc:
        raise GraphError(f"{npz_path}: unreadable matrix file ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})") from None
    missing = [k for k in (*_INT_ARRAYS, *_FLOAT_ARRAYS) if k not in arrays]
    if missing:
        raise GraphError(f"{npz_path}: field {missing[0]!r} is missing")
    if arrays["link_source"].shape[0] != n_links:
        raise GraphError(f"{json_path}: link count mismatch in {npz_path}")
    return arrays


def _bad(where: Path, field: str, why: str) -> GraphError:
    return GraphError(f"{where}: field {field!r}: {why}")


def _check_ids(json_path: Path, nodes: tuple[SchemaNode, ...],
               tools: tuple[ToolEdge, ...]) -> None:
    """Every tool's input and output ids name a node; every node's tool names a tool."""
    n_nodes, n_tools = len(nodes), len(tools)
    for t in tools:
        for field, ids in (("inputs", t.inputs), ("outputs", t.outputs)):
            bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < n_nodes]
            if bad:
                raise _bad(json_path, f"tools[{t.id}].{field}",
                           f"node id {bad[0]!r} out of range (graph has {n_nodes} nodes)")
    bad_nodes = [n for n in nodes if not -1 <= n.tool < n_tools]
    if bad_nodes:
        raise _bad(json_path, f"nodes[{bad_nodes[0].id}]",
                   f"tool id {bad_nodes[0].tool} out of range (graph has {n_tools} tools)")


def _check_arrays(npz_path: Path, a: dict[str, np.ndarray], n_nodes: int, n_tools: int,
                  n_in: int, n_evidence: int) -> None:
    """Dtypes, shapes, ranges and finiteness of the stored arrays (module doc)."""
    for key in _INT_ARRAYS:
        if a[key].ndim != 1 or a[key].dtype.kind not in "iu":
            raise _bad(npz_path, key, f"expected a 1-D integer array, got {a[key].dtype}")
    for key in _FLOAT_ARRAYS:
        if a[key].ndim != 1 or a[key].dtype.kind != "f":
            raise _bad(npz_path, key, f"expected a 1-D float array, got {a[key].dtype}")
    n_links = a["link_source"].shape[0]
    for key in ("link_target", "link_weight", "link_evidence"):
        if a[key].shape[0] != n_links:
            raise _bad(npz_path, key, f"{a[key].shape[0]} entries for {n_links} links")
    _in_range(npz_path, "link_source", a["link_source"], n_nodes, "node")
    _in_range(npz_path, "link_target", a["link_target"], n_nodes, "node")
    _in_range(npz_path, "link_evidence", a["link_evidence"], n_evidence, "evidence code")
    weights = a["link_weight"]
    if weights.size and (not np.isfinite(weights).all() or weights.min() < 0
                         or weights.max() > 1):
        raise _bad(npz_path, "link_weight", "weights must be finite and in [0, 1]")
    indptr, indices, data = a["prod_indptr"], a["prod_indices"], a["prod_data"]
    if (indptr.shape[0] != n_in + 1 or (indptr.size and indptr[0] != 0)
            or (np.diff(indptr) < 0).any() or int(indptr[-1]) != indices.shape[0]
            or data.shape[0] != indices.shape[0]):
        raise _bad(npz_path, "prod_indptr", "not a valid CSR row index for "
                   f"{n_in} input nodes")
    _in_range(npz_path, "prod_indices", indices, n_tools, "tool")
    if data.size and not np.isfinite(data).all():
        raise _bad(npz_path, "prod_data", "values must be finite")


def _in_range(where: Path, field: str, ids: np.ndarray, limit: int, what: str) -> None:
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= limit):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise _bad(where, field, f"{what} id {bad} out of range (graph has {limit})")
