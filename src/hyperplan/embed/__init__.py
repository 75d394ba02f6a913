"""Text embeddings and keyword retrieval for tool descriptions.

Backends: :class:`MiniLMEmbedder` (all-MiniLM-L6-v2, int8 ONNX, offline, packaged weights),
:class:`HashingEmbedder` (lexical, no model), :class:`OpenAIEmbedder` (any OpenAI-compatible
endpoint); :class:`CachedEmbedder` adds a disk cache and :class:`BM25Index` keyword search.
Use :func:`get_embedder` to pick one by name.
"""

from __future__ import annotations

import warnings

from hyperplan.embed.base import Embedder, cosine_matrix, l2_normalize
from hyperplan.embed.bm25 import BM25Index
from hyperplan.embed.cache import CachedEmbedder, default_cache_dir
from hyperplan.embed.hashing import HashingEmbedder
from hyperplan.embed.minilm import INSTALL_HINT, MiniLMEmbedder, minilm_available
from hyperplan.embed.openai_compat import OpenAIEmbedder, openai_configured
from hyperplan.embed.text import tokenize
from hyperplan.errors import EmbeddingError

__all__ = [
    "BM25Index",
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "available_embedders",
    "cosine_matrix",
    "default_cache_dir",
    "get_embedder",
    "l2_normalize",
    "tokenize",
]

SPECS = ("auto", "minilm", "hashing", "hashing:<dim>", "openai:<model>")


def available_embedders() -> dict[str, bool]:
    """Which backends can be used here: ``minilm`` (assets installed), ``hashing`` (always),
    ``openai`` (an endpoint or API key is set in the environment)."""
    return {
        "minilm": minilm_available(),
        "hashing": True,
        "openai": openai_configured(),
    }


def get_embedder(spec: str = "auto", *, cache: bool = True) -> Embedder:
    """The embedder named by ``spec``.

    ``"minilm"``, ``"hashing"`` (or ``"hashing:<dim>"``), ``"openai:<model>"`` (endpoint and
    key from the environment, see :class:`OpenAIEmbedder`), or ``"auto"``: MiniLM when its
    assets are installed, else :class:`HashingEmbedder` with a warning saying how to install
    MiniLM. With ``cache=True`` model-backed embedders are wrapped in :class:`CachedEmbedder`
    (the hashing embedder is cheaper than a cache lookup and is never wrapped).
    Raises :class:`EmbeddingError` for an unknown spec or a backend that is not installed.
    """
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    inner: Embedder
    if kind == "auto" and not arg:
        if not minilm_available():
            warnings.warn(
                "MiniLM embedding assets are not installed; falling back to the lexical "
                f"HashingEmbedder, which does not match synonyms. Install MiniLM with: "
                f"{INSTALL_HINT}",
                RuntimeWarning,
                stacklevel=2,
            )
            return HashingEmbedder()
        inner = MiniLMEmbedder()
    elif kind == "minilm" and not arg:
        inner = MiniLMEmbedder()
    elif kind == "hashing":
        if not arg:
            return HashingEmbedder()
        try:
            return HashingEmbedder(dim=int(arg))
        except ValueError:
            raise EmbeddingError(
                f"bad embedder spec {spec!r}: dim must be a positive integer"
            ) from None
    elif kind == "openai" and arg.strip():
        inner = OpenAIEmbedder(arg.strip())
    else:
        raise EmbeddingError(f"unknown embedder spec {spec!r}; expected one of {', '.join(SPECS)}")
    return CachedEmbedder(inner) if cache else inner
