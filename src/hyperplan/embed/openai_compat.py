"""Embeddings from any OpenAI-compatible ``/embeddings`` HTTP endpoint."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from hyperplan.embed.base import ClosesOnExit, FloatMatrix, check_texts, l2_normalize
from hyperplan.errors import EmbeddingError
from hyperplan.secrets import redact_cut

__all__ = ["DEFAULT_BASE_URL", "OpenAIEmbedder", "openai_configured"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = ("HYPERPLAN_EMBED_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV = ("HYPERPLAN_EMBED_API_KEY", "OPENAI_API_KEY")
MAX_ATTEMPTS = 4
_MAX_DELAY = 30.0
_BODY_CHARS = 300  # of an error body quoted in an EmbeddingError (after redaction)
_BODY_WINDOW = 65536  # of an error body read: past it no cut at _BODY_CHARS can reach


def _first_env(names: Sequence[str]) -> str | None:
    for env_name in names:
        value = os.environ.get(env_name, "").strip()
        if value:
            return value
    return None


def openai_configured() -> bool:
    """Whether an endpoint or key for :class:`OpenAIEmbedder` is set in the environment."""
    return _first_env(BASE_URL_ENV) is not None or _first_env(API_KEY_ENV) is not None


def _public_url(url: str) -> str:
    """``url`` without user info, query or fragment (safe to show in names and messages)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class OpenAIEmbedder(ClosesOnExit):
    """Vectors from ``POST {base_url}/embeddings`` (OpenAI API or any compatible server).

    ``base_url`` defaults to ``$HYPERPLAN_EMBED_BASE_URL``, then ``$OPENAI_BASE_URL``, then the
    OpenAI API; ``api_key`` to ``$HYPERPLAN_EMBED_API_KEY``, then ``$OPENAI_API_KEY`` (no
    ``Authorization`` header when there is none, as local servers need none). Requests carry at
    most ``batch_size`` texts; 429, 5xx and connection/timeouts are retried up to
    :data:`MAX_ATTEMPTS` attempts with exponential backoff (honouring ``Retry-After``). ``dim``
    is learned from the first response (reading it before any ``embed`` sends one probe
    request). Rows are L2-normalised; empty texts are not sent and give zero rows. The API key
    never appears in exception messages, ``repr`` or logs.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        timeout: float = 30,
        *,
        retry_delay: float = 0.5,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model = model
        url = (base_url or _first_env(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        if urlsplit(url).scheme not in ("http", "https"):
            raise EmbeddingError(f"base URL must be http(s): {_public_url(url)!r}")
        self._url = url
        self.base_url = _public_url(url)
        key = api_key if api_key is not None else _first_env(API_KEY_ENV)
        self._api_key = key.strip() if key else None
        self.batch_size = batch_size
        self.timeout = timeout
        self.retry_delay = retry_delay
        self._dim: int | None = None
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"openai:{self.model}@{self.base_url}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, api_key={key})"

    def close(self) -> None:
        """Close the HTTP connection pool (a later ``embed`` opens a new one)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        todo = [i for i, text in enumerate(items) if text.strip()]
        chunks: list[tuple[list[int], FloatMatrix]] = []
        for start in range(0, len(todo), self.batch_size):
            idx = todo[start : start + self.batch_size]
            chunks.append((idx, self._request([items[i] for i in idx])))
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for idx, vectors in chunks:
            out[idx] = vectors
        return out

    # -- HTTP -------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as exc:
                    raise EmbeddingError(
                        "OpenAIEmbedder needs httpx: pip install 'httpx>=0.27'"
                    ) from exc
                headers = {"Content-Type": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(timeout=self.timeout, headers=headers)
            return self._client

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), _MAX_DELAY)
            except ValueError:
                pass
        delay = self.retry_delay * (2 ** (attempt - 1))
        return float(min(delay * (1 + 0.1 * random.random()), _MAX_DELAY))

    def _request(self, batch: list[str]) -> FloatMatrix:
        import httpx

        client = self._get_client()
        endpoint = f"{self._url}/embeddings"
        where = f"{self.base_url}/embeddings"
        payload = {"model": self.model, "input": batch}
        problem = ""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            retry_after: str | None = None
            try:
                response = client.post(endpoint, json=payload)
            except httpx.TransportError as exc:
                problem = self._scrub(f"{type(exc).__name__}: {exc}")
            else:
                if response.status_code == 200:
                    return self._parse(response, len(batch), where)
                body = redact_cut(self._scrub(response.text[:_BODY_WINDOW].strip()),
                                  _BODY_CHARS)  # redacted, then cut
                problem = f"HTTP {response.status_code}: {body}"
                status = response.status_code
                if status != 429 and not 500 <= status < 600:
                    raise EmbeddingError(f"{where} (model {self.model!r}) failed: {problem}")
                retry_after = response.headers.get("retry-after")
            if attempt < MAX_ATTEMPTS:
                delay = self._backoff(attempt, retry_after)
                log.warning(
                    "%s attempt %d/%d failed (%s); retrying in %.2fs",
                    where,
                    attempt,
                    MAX_ATTEMPTS,
                    problem,
                    delay,
                )
                time.sleep(delay)
        raise EmbeddingError(
            f"{where} (model {self.model!r}) failed after {MAX_ATTEMPTS} attempts: {problem}"
        )

    def _parse(self, response: Any, expected: int, where: str) -> FloatMatrix:
        try:
            data = response.json()["data"]
            rows = sorted(data, key=lambda item: int(item["index"]))
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise EmbeddingError(
                f"{where}: malformed embeddings response ({type(exc).__name__}: "
                f"{redact_cut(self._scrub(str(exc)), 200)})"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"{where}: expected {expected} embeddings, got an array of shape {matrix.shape}"
            )
        if [int(row["index"]) for row in rows] != list(range(expected)):
            raise EmbeddingError(f"{where}: response indices are not 0..{expected - 1}")
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"{where}: response contains non-finite values")
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        elif matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"{where}: dimension changed from {self._dim} to {matrix.shape[1]}"
            )
        return l2_normalize(matrix)
