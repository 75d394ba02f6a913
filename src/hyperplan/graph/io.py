"""Save and load a hypergraph: a versioned JSON file (tools, nodes, metadata) plus a sibling
``.npz`` file with the link arrays and the producer matrix A_prod, so a graph is built once
and reused."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
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
    arrays = _load_matrices(json_path, matrices)
    n_in = sum(1 for n in nodes if n.kind.input_side)
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


def _load_matrices(json_path: Path, matrices: dict[str, Any]) -> dict[str, np.ndarray]:
    npz_path = json_path.parent / str(matrices.get("file", ""))
    try:
        raw = npz_path.read_bytes()
    except OSError:
        raise GraphError(f"{json_path}: matrix file {npz_path} is missing") from None
    if hashlib.sha256(raw).hexdigest() != matrices.get("sha256"):
        raise GraphError(f"{json_path}: matrix file {npz_path} does not match this graph")
    with np.load(npz_path) as data:
        arrays = {k: data[k] for k in data.files}
    if arrays["link_source"].shape[0] != matrices.get("n_links"):
        raise GraphError(f"{json_path}: link count mismatch in {npz_path}")
    return arrays
