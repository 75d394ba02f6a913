"""The matrix file of a saved graph (the ``.npz`` beside its JSON), read as untrusted input
(fault item 7 of docs/benchmarks.md, "Runtime trust under faults").

What is accepted, so that a hostile or damaged file is one :class:`GraphError` naming the file
and the field, never an exception from numpy, scipy or zlib, an ``IndexError`` later, a huge
allocation or a hang:

* a regular file (opened without blocking, checked after opening) of at most
  :func:`size_bound` bytes: 64 bytes per link, node and tool the JSON declares plus 1 MiB (a
  saved graph needs about 40 per link and 8 per node before compression), never more than
  :data:`MAX_MATRIX_BYTES` (4 GiB) whatever the JSON says;
* whose SHA-256 is the one the JSON records (the pair was written together; see
  :func:`hyperplan.graph.io.save_graph`);
* a zip of stored or deflated ``.npy`` members whose declared sizes add up to at most
  :data:`MAX_EXPANSION` times the file (64; real graphs compress 2-10 times) and
  :func:`size_bound`; each member is parsed here, its header first (a 1-D array of integers
  or floats, never an object array: nothing is unpickled), its length checked against the
  JSON's counts before its data is read;
* whose arrays are consistent: node ids in range and on the right side (links go from an
  output or effect node to an input or precondition node, sorted by target), weights finite in
  (0, 1], evidence codes in range, and A_prod a canonical CSR matrix of (input nodes x tools)
  (``indptr`` of the right length from 0 and monotone, its last entry the number of entries,
  column indices in range and increasing within each row, values finite in (0, 1]).

Every check is a vectorised numpy pass, O(size of the file).
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import scipy.sparse as sp

from hyperplan.errors import GraphError
from hyperplan.graph.safe_paths import read_regular
from hyperplan.secrets import redact_cut

MAX_MATRIX_BYTES = 4 << 30
"""Absolute ceiling on a matrix file, whatever counts its JSON declares."""
MAX_EXPANSION = 64
"""At most this many bytes of arrays per byte of matrix file (a zip bomb is refused)."""
SLACK_BYTES = 1 << 20
_INT_ARRAYS = ("link_source", "link_target", "link_evidence", "prod_indices", "prod_indptr")
_FLOAT_ARRAYS = ("link_weight", "prod_data")
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, KeyError,
                NotImplementedError, RuntimeError, struct.error, OverflowError, SyntaxError)


@dataclass(frozen=True, slots=True)
class MatrixCounts:
    """What the graph JSON says its matrix file holds: the declared number of links, the
    nodes (the first ``n_input`` of them input-side), the tools and the evidence labels."""

    n_links: int
    n_nodes: int
    n_input: int
    n_tools: int
    n_evidence: int


@dataclass(frozen=True, slots=True)
class Matrices:
    """The validated arrays of a matrix file (read-only); ``producer`` is A_prod."""

    link_source: np.ndarray
    link_target: np.ndarray
    link_weight: np.ndarray
    link_evidence: np.ndarray
    producer: sp.csr_matrix


def size_bound(n_links: int, n_items: int) -> int:
    """The largest matrix file a graph of ``n_links`` links and ``n_items`` nodes and tools
    may have (module doc)."""
    return min(MAX_MATRIX_BYTES, 64 * (n_links + n_items) + SLACK_BYTES)


def read_matrices(json_path: Path, npz_path: Path, sha256: str,
                  counts: MatrixCounts) -> Matrices:
    """The arrays of ``npz_path``, the matrix file the graph ``json_path`` names, checked as
    the module doc says."""
    bound = size_bound(counts.n_links, counts.n_nodes + counts.n_tools)

    def too_big(size: int) -> str | None:
        return None if size <= bound else (
            f"{size} bytes, more than a graph of {counts.n_links} links can need ({bound}); "
            "refusing to read it")

    try:
        raw = read_regular(npz_path, too_big, what="matrix file", error=GraphError)
    except FileNotFoundError:
        raise GraphError(f"{json_path}: matrix file {npz_path} is missing") from None
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise GraphError(f"{json_path}: matrix file {npz_path} does not match it: the .npz "
                         "does not belong to this graph (rewritten by another build?)")
    arrays = _unpack(json_path, npz_path, raw, counts)
    return _checked(npz_path, arrays, counts)


def _unpack(json_path: Path, npz_path: Path, raw: bytes,
            counts: MatrixCounts) -> dict[str, np.ndarray]:
    """The seven arrays of the zip ``raw``, each header checked before its data is read."""
    budget = min(MAX_EXPANSION * len(raw) + SLACK_BYTES,
                 size_bound(counts.n_links, counts.n_nodes + counts.n_tools))
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            members = {info.filename: info for info in zf.infolist()}
            wanted = [_member_info(npz_path, members, key) for key in (*_INT_ARRAYS,
                                                                        *_FLOAT_ARRAYS)]
            declared = sum(info.file_size for info in wanted)
            if declared > budget:
                raise GraphError(f"{npz_path}: its arrays would take {declared} bytes, more "
                                 f"than a file of {len(raw)} bytes for {counts.n_links} links "
                                 f"can hold ({budget}); refusing to read it")
            return {info.filename[:-4]: _read_npy(json_path, npz_path, zf, info, counts)
                    for info in wanted}
    except _READ_ERRORS as exc:
        text = redact_cut(" ".join(str(exc).split()), 120)
        raise GraphError(f"{npz_path}: unreadable matrix file ({type(exc).__name__}: "
                         f"{text})") from None


def _member_info(npz_path: Path, members: dict[str, zipfile.ZipInfo],
                 key: str) -> zipfile.ZipInfo:
    info = members.get(f"{key}.npy")
    if info is None:
        raise GraphError(f"{npz_path}: field {key!r} is missing")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or \
            info.flag_bits & 0x1:
        raise GraphError(f"{npz_path}: field {key!r}: stored with compression method "
                         f"{info.compress_type}{' and encrypted' if info.flag_bits & 1 else ''}"
                         "; only stored or deflated members are read")
    return info


def _max_length(key: str, counts: MatrixCounts) -> tuple[int, bool]:
    """The length the array ``key`` must have (``exact``) or may have at most."""
    if key == "prod_indptr":
        return counts.n_input + 1, True
    if key in ("prod_indices", "prod_data"):
        return counts.n_links, False  # A_prod has at most one entry per link
    return counts.n_links, True


def _read_npy(json_path: Path, npz_path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo,
              counts: MatrixCounts) -> np.ndarray:
    key = info.filename[:-4]
    with zf.open(info) as fh:
        shape, dtype = _npy_header(npz_path, key, fh)
        if len(shape) != 1:
            raise _bad(npz_path, key, f"expected a 1-D array, got shape {shape}")
        length, exact = _max_length(key, counts)
        if key.startswith("link_") and shape[0] != length:
            raise GraphError(f"{json_path}: field 'matrices.n_links': link count mismatch: "
                             f"it declares {length} links, {npz_path} holds {shape[0]}")
        if shape[0] > length or (exact and shape[0] != length):
            raise _bad(npz_path, key, f"{shape[0]} entries, expected "
                       f"{'' if exact else 'at most '}{length}")
        nbytes = shape[0] * dtype.itemsize
        data = fh.read(nbytes)
        if len(data) != nbytes:
            raise _bad(npz_path, key, f"truncated: {len(data)} of {nbytes} bytes")
        if fh.read(1):  # also makes zipfile check the member's CRC
            raise _bad(npz_path, key, "data after the array")
    array = np.frombuffer(data, dtype=dtype)
    return array if dtype.isnative else array.astype(dtype.newbyteorder("="))


def _npy_header(npz_path: Path, key: str, fh: IO[bytes]) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of an ``.npy`` stream; object (pickled) and record dtypes refused."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise _bad(npz_path, key, f".npy format version {version} is not read")
    if dtype.hasobject:
        raise _bad(npz_path, key, "an object array (pickled data); refused: only integer "
                   "or float arrays are read")
    want = "iu" if key in _INT_ARRAYS else "f"
    if dtype.kind not in want or dtype.itemsize > 8 or dtype.fields is not None:
        kind = "an integer" if want == "iu" else "a float"
        raise _bad(npz_path, key, f"expected {kind} array, got {dtype}")
    return tuple(shape), dtype


def _checked(npz_path: Path, a: dict[str, np.ndarray], counts: MatrixCounts) -> Matrices:
    """Ranges, sides, order and finiteness of the arrays (module doc), in canonical dtypes."""
    n, n_in = counts.n_nodes, counts.n_input
    _in_range(npz_path, "link_source", a["link_source"], n, "node id", f"graph has {n} nodes")
    _in_range(npz_path, "link_target", a["link_target"], n, "node id", f"graph has {n} nodes")
    src = a["link_source"].astype(np.int64, copy=False)  # in range, so exact
    tgt = a["link_target"].astype(np.int64, copy=False)
    if src.size and int(src.min()) < n_in:
        raise _bad(npz_path, "link_source", f"node id {int(src.min())} is an input-side node; "
                   "links start at an output or effect node")
    if tgt.size and int(tgt.max()) >= n_in:
        raise _bad(npz_path, "link_target", f"node id {int(tgt.max())} is not an input-side "
                   "node; links end at an input or precondition node")
    if tgt.size > 1 and bool((tgt[1:] < tgt[:-1]).any()):
        raise _bad(npz_path, "link_target", "links are not sorted by target node")
    weight = a["link_weight"].astype(np.float64, copy=False)
    _weights(npz_path, "link_weight", weight)
    evidence = a["link_evidence"]
    _in_range(npz_path, "link_evidence", evidence, counts.n_evidence, "evidence code",
              f"graph has {counts.n_evidence} evidence labels")
    return Matrices(_ro(src), _ro(tgt), _ro(weight), evidence,
                    _producer(npz_path, a, n_in, counts.n_tools))


def _producer(npz_path: Path, a: dict[str, np.ndarray], n_in: int,
              n_tools: int) -> sp.csr_matrix:
    """A_prod from its CSR arrays, checked to be canonical (so scipy never re-sorts it)."""
    indptr, indices = a["prod_indptr"], a["prod_indices"]
    nnz = indices.shape[0]
    if int(indptr[0]) != 0 or bool((indptr[1:] < indptr[:-1]).any()) \
            or int(indptr[-1]) != nnz or a["prod_data"].shape[0] != nnz:
        raise _bad(npz_path, "prod_indptr", f"not a valid CSR row index for {n_in} input "
                   f"nodes and {nnz} entries")
    _in_range(npz_path, "prod_indices", indices, n_tools, "tool id",
              f"graph has {n_tools} tools")
    index_type = np.int32 if indptr.dtype == indices.dtype == np.int32 else np.int64
    indptr = indptr.astype(index_type, copy=False)  # both in range now, so exact
    indices = indices.astype(index_type, copy=False)
    data = a["prod_data"].astype(np.float64, copy=False)
    if nnz > 1:
        row_start = np.zeros(nnz, dtype=bool)
        row_start[indptr[:-1][indptr[:-1] < nnz]] = True
        if bool(((indices[1:] <= indices[:-1]) & ~row_start[1:]).any()):
            raise _bad(npz_path, "prod_indices", "tool ids not increasing within a row")
    _weights(npz_path, "prod_data", data)
    prod = sp.csr_matrix((_ro(data), _ro(indices), _ro(indptr)), shape=(n_in, n_tools))
    prod.has_sorted_indices = True
    prod.has_canonical_format = True
    return prod


def _weights(npz_path: Path, key: str, values: np.ndarray) -> None:
    if values.size and not (np.isfinite(values).all() and values.min() > 0
                            and values.max() <= 1):
        raise _bad(npz_path, key, "weights must be finite and in (0, 1]")


def _in_range(where: Path, key: str, ids: np.ndarray, limit: int, what: str,
              context: str) -> None:
    if ids.size:
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= limit:
            raise _bad(where, key, f"{what} {low if low < 0 else high} out of range ({context})")


def _bad(where: Path, key: str, why: str) -> GraphError:
    return GraphError(f"{where}: field {key!r}: {why}")


def _ro(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
