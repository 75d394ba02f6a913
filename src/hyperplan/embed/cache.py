"""A persistent, process-safe embedding cache in front of any :class:`Embedder`."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hyperplan.embed.base import ClosesOnExit, Embedder, FloatMatrix, check_texts
from hyperplan.errors import EmbeddingError

__all__ = ["CachedEmbedder", "default_cache_dir"]

DB_NAME = "embeddings.sqlite3"
# Uncached texts sent to the inner embedder per call: large, so that a model that sorts its
# input by length (MiniLM) batches texts of nearly equal length.
_CHUNK = 4096
# Computed vectors are committed at least this often (and when a call ends or fails), so an
# interrupted run keeps its progress: each commit rewrites the B-tree pages it touches into
# the WAL, and random keys touch most of them, so one commit per chunk would cost more than
# the inserts themselves.
_COMMIT_SECONDS = 10.0
_SQL_VARS = 10_000  # keys per SELECT ... IN (...), at most the connection's variable limit
# Page size of a new cache file: a 384-float vector (1.5 KB) fits in an 8 KB page of the
# WITHOUT ROWID B-tree, whereas a 4 KB page puts each one on an overflow page of its own.
_PAGE_SIZE = 8192


def _sanitise(name: str) -> str:
    """A directory name for ``name``: safe characters plus a short hash against collisions."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:80] or "embedder"
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def default_cache_dir(name: str) -> Path:
    """``$HYPERPLAN_CACHE_DIR/embeddings/<name>``, else ``~/.cache/hyperplan/embeddings/<name>``
    (``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set)."""
    root = os.environ.get("HYPERPLAN_CACHE_DIR")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "hyperplan"
    return base / "embeddings" / _sanitise(name)


class CachedEmbedder(ClosesOnExit):
    """``inner`` with a disk cache: the same ``name``, ``dim`` and ``embed``.

    Vectors are stored as float32 blobs in a SQLite file (WAL mode) under ``cache_dir``, keyed
    by ``sha256(inner.name + "\\0" + text)``, so several processes may share one cache and an
    interrupted run keeps what it had finished. Each call sends only the distinct texts not
    yet cached to ``inner``; entries of the wrong byte length are recomputed. If the cache
    cannot be opened, a warning is issued and every call goes straight to ``inner``.
    """

    def __init__(self, inner: Embedder, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.inner = inner
        self._name = inner.name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(inner.name)
        self.path = self.cache_dir / DB_NAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._dim: int | None = None
        self.hits = 0
        self.misses = 0
        try:
            self._conn = self._open()
        except (OSError, sqlite3.Error) as exc:
            warnings.warn(
                f"embedding cache disabled: cannot open {self.path}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )

    def _open(self) -> sqlite3.Connection:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # new files only; WAL fixes it
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            with conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings "
                    "(key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID"
                )
                conn.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        """The cached dimension when known (so e.g. a remote model needs no probe request)."""
        if self._dim is None:
            self._dim = self._meta_dim()
        if self._dim is None:
            self._dim = self.inner.dim
        return self._dim

    def _meta_dim(self) -> int | None:
        with self._lock:
            if self._conn is None:
                return None
            try:
                row = self._conn.execute(
                    "SELECT v FROM meta WHERE k = ?", (f"dim:{self._name}",)
                ).fetchone()
            except sqlite3.Error:
                return None
        try:
            return int(row[0]) if row else None
        except (TypeError, ValueError):
            return None

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache_dir={str(self.cache_dir)!r})"

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self._name}\0{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        if self._conn is None:
            return self.inner.embed(items)
        unique = list(dict.fromkeys(items))
        keys = [self._key(t) for t in unique]
        # A dimension known from this instance or the cache file; otherwise it is learned from
        # the first computed batch (so a remote model needs no extra probe request).
        dim = self._dim if self._dim is not None else self._meta_dim()
        found = self._lookup(keys, dim) if dim is not None else {}
        vectors: dict[str, npt.NDArray[np.float32]] = {}
        missing: list[int] = []
        for i, (text, key) in enumerate(zip(unique, keys, strict=True)):
            blob = found.get(key)
            if blob is None:
                missing.append(i)
            else:
                vectors[text] = np.frombuffer(blob, dtype="<f4")
        self.hits += len(unique) - len(missing)
        self.misses += len(missing)
        dim = self._compute(unique, keys, missing, dim, vectors)
        out = np.empty((len(items), dim if dim is not None else self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = vectors[text]
        return out

    def _compute(self, unique: list[str], keys: list[bytes], missing: list[int],
                 dim: int | None, vectors: dict[str, npt.NDArray[np.float32]]) -> int | None:
        """Embed ``unique[i]`` for each ``i`` in ``missing`` into ``vectors`` and store them,
        committing at least every :data:`_COMMIT_SECONDS` and before an error propagates.
        Returns the dimension (learned from the first chunk when ``dim`` is None)."""
        rows: list[tuple[bytes, bytes]] = []
        committed = time.monotonic()
        try:
            for start in range(0, len(missing), _CHUNK):
                chunk = missing[start : start + _CHUNK]
                computed = np.asarray(self.inner.embed([unique[i] for i in chunk]),
                                      dtype=np.float32)
                if dim is None and computed.ndim == 2:
                    dim = int(computed.shape[1])
                if computed.shape != (len(chunk), dim):
                    raise EmbeddingError(
                        f"{self._name} returned shape {computed.shape}, expected "
                        f"{(len(chunk), dim)}; if the model changed, delete {self.path}"
                    )
                assert dim is not None
                self._dim = dim
                for i, vec in zip(chunk, computed, strict=True):
                    vectors[unique[i]] = vec
                    rows.append((keys[i], vec.astype("<f4").tobytes()))
                if time.monotonic() - committed >= _COMMIT_SECONDS:
                    self._store(rows, dim)
                    rows, committed = [], time.monotonic()
        finally:
            if rows and dim is not None:
                self._store(rows, dim)
        return dim

    def _lookup(self, keys: list[bytes], dim: int) -> dict[bytes, bytes]:
        """Cached blobs of the right length (others count as missing and get overwritten)."""
        size = 4 * dim
        found: dict[bytes, bytes] = {}
        with self._lock:
            conn = self._conn
            if conn is None:
                return found
            try:
                step = min(_SQL_VARS, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
                for start in range(0, len(keys), step):
                    part = keys[start : start + step]
                    marks = ",".join("?" * len(part))
                    query = f"SELECT key, vec FROM embeddings WHERE key IN ({marks})"
                    for key, vec in conn.execute(query, part):
                        if isinstance(vec, bytes) and len(vec) == size:
                            found[bytes(key)] = vec
            except sqlite3.Error as exc:
                warnings.warn(
                    f"embedding cache read from {self.path} failed: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
        return found

    def _store(self, rows: list[tuple[bytes, bytes]], dim: int) -> None:
        with self._lock:
            if self._conn is None:
                return
            try:
                with self._conn:
                    self._conn.executemany(  # in key order: B-tree pages in sequence
                        "INSERT OR REPLACE INTO embeddings (key, vec) VALUES (?, ?)",
                        sorted(rows),
                    )
                    self._conn.execute(
                        "INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)",
                        (f"dim:{self._name}", str(dim)),
                    )
            except sqlite3.Error as exc:
                warnings.warn(
                    f"embedding cache write to {self.path} failed: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
