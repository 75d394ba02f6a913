"""A warm start reads the index vectors and token counts kept in the cache entry; stale or
damaged files are ignored and written again, never trusted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hyperplan.catalog import Catalog, build_catalog, make_tool
from hyperplan.embed import HashingEmbedder
from hyperplan.select import build_selector
from hyperplan.select.derived import TOKENS_FILE, VECTORS_FILE, VECTORS_META


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed(texts)


def _catalog() -> Catalog:
    def obj(name: str) -> dict[str, object]:
        return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}

    return build_catalog([
        make_tool(name="find_order", description="Find an order by its number.",
                  input_schema=obj("number"), output_schema=obj("order_id")),
        make_tool(name="cancel_order", description="Cancel an order.",
                  input_schema=obj("order_id"), output_schema=obj("ok")),
        make_tool(name="get_weather", description="Get the weather of a city.",
                  input_schema=obj("city"), output_schema=obj("forecast")),
    ], source="orders")


def _warm(cache: Path) -> tuple[CountingEmbedder, list[str], int]:
    embedder = CountingEmbedder()
    selector = build_selector([_catalog()], embedder=embedder, cache_dir=cache)
    picked = selector.select("cancel my order number 12", budget=3)
    return embedder, picked.names, selector.all_tokens


def _entry(cache: Path) -> Path:
    return next(p for p in cache.iterdir() if not p.name.startswith("."))


def test_warm_start_reads_vectors_and_tokens(tmp_path: Path) -> None:
    cold, names, tokens = _warm(tmp_path)
    entry = _entry(tmp_path)
    assert (entry / VECTORS_FILE).is_file() and (entry / TOKENS_FILE).is_file()
    warm, warm_names, warm_tokens = _warm(tmp_path)
    assert (warm_names, warm_tokens) == (names, tokens)
    assert warm.texts < cold.texts  # only the request's phrases were embedded
    stored = np.load(entry / VECTORS_FILE)
    assert stored.dtype == np.float32 and stored.shape[0] > 3


def test_damaged_or_stale_files_are_recomputed(tmp_path: Path) -> None:
    cold, names, tokens = _warm(tmp_path)
    entry = _entry(tmp_path)
    meta = json.loads((entry / VECTORS_META).read_text())
    for damage in (
        lambda: (entry / VECTORS_FILE).write_bytes(b"not numpy"),
        lambda: np.save(entry / VECTORS_FILE, np.full((2, 4), np.nan, dtype=np.float32)),
        lambda: np.save(entry / VECTORS_FILE, np.array([{"x": 1}], dtype=object),
                        allow_pickle=True),
        lambda: (entry / VECTORS_META).write_text(json.dumps({**meta, "texts": "0" * 64})),
        lambda: (entry / VECTORS_META).write_text(json.dumps({**meta, "embedder": "other"})),
    ):
        damage()
        again, again_names, _ = _warm(tmp_path)
        assert again_names == names and again.texts == cold.texts  # recomputed in full
    for bad in ({"tokenizer": "other", "tokens": [1, 2, 3]}, {"tokens": [-1, 2, 3]}, "[1]"):
        body = bad if isinstance(bad, str) else json.dumps(
            {**json.loads((entry / TOKENS_FILE).read_text()), **bad})
        (entry / TOKENS_FILE).write_text(body)
        assert _warm(tmp_path)[2] == tokens
