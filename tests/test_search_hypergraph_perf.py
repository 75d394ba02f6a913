"""The hypergraph's bookkeeping shortcuts (issue 5) keep its statistics bit for bit.

:meth:`TrajectoryHypergraph.observe` fuses Psi and the update, keys edges by the verdict's own
decision sets and finds each pooled record through v's node; this pins, with ``repr`` equality of
the numbers (so even the sign of a zero counts), that it gives exactly what a plain replay of the
observations in order gives: the incremental edge means, per (v, y) the count and score sum, per
node the objective-mean sum, and every prior under every aggregator, interleaved with prior reads
(the cache) and on edge cases (repeated edges, -0.0 and out-of-range scores,
non-dict mappings in the verdict, empty decision sets, objectives without one)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from hyperplan.search.env import Objective, Verdict
from hyperplan.search.trajectory_hypergraph import (
    AGGREGATORS,
    GLOBAL,
    TrajectoryHypergraph,
    extract,
)

Rollout = tuple[list[Hashable], Verdict]
OBJECTIVES = [Objective(f"g{i}") for i in range(5)]
DECISIONS = [("slot", d, part, f"R{k}") for d in range(2) for part in ("a", "b") for k in range(3)]


def _rollouts(seed: int, count: int = 60) -> list[Rollout]:
    rng = random.Random(seed)
    scores = (-0.0, 0.0, 1.0, 0.25, -0.5, 1.5)  # -0.0 and clipping included
    out: list[Rollout] = []
    for _ in range(count):
        recorded = rng.sample(DECISIONS, rng.randint(1, 6))
        subsets: dict[str, frozenset[Hashable]] = {}
        for g in OBJECTIVES[:4]:  # g4 never has a subset: C(tau)
            subsets[g.id] = frozenset(v for v in recorded if rng.random() < 0.5)
        given = {g.id: rng.choice(scores) if rng.random() < 0.5 else rng.random()
                 for g in OBJECTIVES if rng.random() < 0.8}
        reward = rng.choice(scores) if rng.random() < 0.3 else rng.random()
        # fresh equal tuples, as an environment builds them for each rollout
        fresh: list[Hashable] = [tuple(v) for v in recorded]
        if rng.random() < 0.3:  # any Mapping, not only a dict
            out.append((fresh, Verdict(reward, False, MappingProxyType(given),
                                          MappingProxyType(subsets))))
        else:
            out.append((fresh, Verdict(reward, False, given, subsets)))
    return out


def _plain_replay(rollouts: Sequence[Rollout]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Psi, then each observation in order: the incremental edge mean, and per v in S its
    count + 1, sum + r and (objective labels) objective-mean sum + new mean - old mean."""
    edges: dict[tuple[frozenset[Hashable], str], tuple[int, float]] = {}
    pooled: dict[Hashable, dict[str, tuple[float, float]]] = {}
    obj_sum: dict[Hashable, float] = {}
    obj_labels: dict[Hashable, int] = {}
    for recorded, verdict in rollouts:
        for decisions, label, score in extract(recorded, verdict, OBJECTIVES):
            n_e, q_e = edges.get((decisions, label), (0, 0.0))
            edges[(decisions, label)] = (n_e + 1, q_e + (score - q_e) / (n_e + 1))
            for v in decisions:
                records = pooled.setdefault(v, {})
                obj_sum.setdefault(v, 0.0)
                obj_labels.setdefault(v, 0)
                old = records.get(label)
                if old is None:
                    records[label] = (1.0, score)
                    if label != GLOBAL:
                        obj_labels[v] += 1
                        obj_sum[v] += score
                    continue
                n, total = old
                records[label] = (n + 1.0, total + score)
                if label != GLOBAL:
                    obj_sum[v] += (total + score) / (n + 1.0) - total / n
    nodes = {v: {"pooled": records, "obj_sum": obj_sum[v], "obj_labels": obj_labels[v]}
             for v, records in pooled.items()}
    return dict(edges), nodes


def _stats(hg: TrajectoryHypergraph) -> tuple[dict[Any, Any], dict[Any, Any]]:
    edges = {k: (e.n, e.mean) for k, e in hg.edges.items()}
    nodes = {v: {"pooled": {y: (p.count, p.total) for y, p in s.by_label.items()},
                 "obj_sum": s.obj_mean_sum, "obj_labels": s.obj_labels}
             for v, s in hg.nodes.items()}
    return edges, nodes


def _assert_same(got: tuple[dict[Any, Any], dict[Any, Any]],
                 want: tuple[dict[Any, Any], dict[Any, Any]]) -> None:
    """The same edges, the same nodes in the same order, and per key the same values bit for
    bit (``repr`` of the values only: a frozenset's repr follows its table layout, which a
    copy may change). Edges are kept label by label, so only their set is compared."""
    (edges, nodes), (want_edges, want_nodes) = got, want
    assert edges.keys() == want_edges.keys()
    assert [repr(edges[k]) for k in want_edges] == [repr(want_edges[k]) for k in want_edges]
    assert list(nodes) == list(want_nodes)
    assert [repr(nodes[k]) for k in nodes] == [repr(want_nodes[k]) for k in nodes]


def _uncached_priors(hg: TrajectoryHypergraph, agg: str, ids: Sequence[Hashable | None]
                     ) -> list[float]:
    """prior(v) computed afresh from v's statistics (Agg, clipped), bypassing the cache."""
    out: list[float] = []
    for v in ids:
        if v is None:
            out.append(-1.0)
            continue
        node = hg.nodes.get(v)
        x = 0.0 if node is None else AGGREGATORS[agg](node)
        out.append(0.0 if x < 0.0 else (1.0 if x > 1.0 else x))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_observe_keeps_the_plain_statistics_bit_for_bit(seed: int) -> None:
    rollouts = _rollouts(seed)
    hg = TrajectoryHypergraph()
    for recorded, verdict in rollouts:
        hg.observe(recorded, verdict, OBJECTIVES)
    assert hg.rollouts == len(rollouts)
    assert any(e.n > 1 for e in hg.edges.values())  # repeated edges are exercised
    _assert_same(_stats(hg), _plain_replay(rollouts))


@pytest.mark.parametrize("agg", sorted(AGGREGATORS))
def test_observe_and_update_give_the_same_priors_bit_for_bit(agg: str) -> None:
    fused, plain = TrajectoryHypergraph(agg), TrajectoryHypergraph(agg)
    probe = [*DECISIONS, ("never", "seen"), None]
    for i, (recorded, verdict) in enumerate(_rollouts(7, 80)):
        fused.observe(recorded, verdict, OBJECTIVES)
        plain.update(extract(recorded, verdict, OBJECTIVES))
        if i % 3:  # reads between some rollouts only: cached priors must go stale
            assert repr(fused.priors_of(probe)) == repr(plain.priors_of(probe))
            assert repr(fused.priors_of(probe)) == repr(_uncached_priors(fused, agg, probe))
    _assert_same(_stats(fused), _stats(plain))
    assert list(fused.nodes) == list(plain.nodes) and list(fused.edges) == list(plain.edges)
    assert repr([fused.prior(v) for v in DECISIONS]) == repr(plain.priors_of(DECISIONS))
    for v in DECISIONS:
        assert set(fused.incident(v)) == set(plain.incident(v))


def test_a_verdict_frozenset_keys_its_edge_uncopied() -> None:
    subset = frozenset({("a", 1), ("b", 2)})
    hg = TrajectoryHypergraph()
    hg.observe([("a", 1), ("b", 2), ("c", 3)],
               Verdict(0.5, False, {"g0": 0.25}, {"g0": subset}), OBJECTIVES[:1])
    [key] = [k for k in hg.edges if k[1] == "g0"]
    assert key[0] is subset
    edge = hg.edge([("b", 2), ("a", 1)], "g0")
    assert edge is not None and (edge.n, edge.mean) == (1, 0.25)
