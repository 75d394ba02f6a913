"""The :class:`Embedder` protocol and vector helpers shared by every backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["ClosesOnExit", "Embedder", "FloatMatrix", "check_texts", "cosine_matrix",
           "l2_normalize"]

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` is a stable identifier of the backend *and* model (it is part of cache keys, so it
    changes whenever the vectors would). ``embed`` returns an array of shape ``(len(texts), dim)``
    whose rows have unit norm; texts that are empty or only whitespace may give all-zero rows.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix: ...


class ClosesOnExit:
    """A base for an embedder holding a resource (a connection, a client): ``with embedder:``
    calls its ``close`` on leaving."""

    def close(self) -> None:
        """Release the resource (a later use may open it again)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, rejecting a bare string (which would embed each character)."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
    return out


def l2_normalize(x: npt.ArrayLike) -> FloatMatrix:
    """Rows of ``x`` scaled to unit L2 norm (all-zero rows stay zero), as float32."""
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    out: FloatMatrix = np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)
    return out


def cosine_matrix(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatMatrix:
    """Cosine similarity of every row of ``a`` with every row of ``b``: shape ``(len(a), len(b))``.

    1-D inputs count as a single row. Rows need not be normalised; an all-zero row scores 0.
    """
    a_n = l2_normalize(a)
    b_n = l2_normalize(b)
    if a_n.shape[1] != b_n.shape[1]:
        raise ValueError(f"dimension mismatch: {a_n.shape[1]} vs {b_n.shape[1]}")
    out: FloatMatrix = (a_n @ b_n.T).astype(np.float32, copy=False)
    return out
