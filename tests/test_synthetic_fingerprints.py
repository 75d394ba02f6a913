"""The synthetic generators (:mod:`hyperplan_bench.synthetic`) give the same data bit for bit: the
SHA-256 of one catalog, one hypergraph and one embedding matrix at a fixed seed, as computed
before the generators moved out of ``hyperplan_bench.eval``."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from hyperplan_bench.synthetic import RandomWordEmbedder, synthetic_catalog, synthetic_hypergraph

CATALOG_300_SEED_3 = "6066fc1ae8c279f7a8b10080cb3a99d5ea0912a8057ea351f14a5020aa284931"
HYPERGRAPH_500_SEED_3 = "efbe8c31105f4eb9ff44fce82c9629fd9cfdd1e7bbaef1f858a56f8bdbeb28e9"
EMBEDDING_D16_SEED_3 = "46989eaaefc3c875dafd1a4f6805d58ebd18f4cbd1638e71b23a7a816985cd60"


def _sha(doc: object) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def test_catalog_fingerprint():
    catalog = synthetic_catalog(300, seed=3)
    assert _sha([t.model_dump() for t in catalog.tools]) == CATALOG_300_SEED_3


def test_hypergraph_fingerprint():
    g = synthetic_hypergraph(500, seed=3)
    doc = {
        "tools": [[t.name, t.description, list(t.inputs), list(t.required), list(t.outputs),
                   dict(t.metadata)] for t in g.tools],
        "nodes": [[n.tool, n.kind.value, n.path, n.type, n.description, n.required]
                  for n in g.nodes],
        "links": [[lk.source, lk.target, float(lk.weight), lk.evidence] for lk in g.links()],
    }
    assert _sha(doc) == HYPERGRAPH_500_SEED_3


def test_embedder_fingerprint():
    texts = ["find the order id", "show playlist songs", "order"]
    vectors = RandomWordEmbedder(dim=16, seed=3).embed(texts)
    assert hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).hexdigest() == \
        EMBEDDING_D16_SEED_3
