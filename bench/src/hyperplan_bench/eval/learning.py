"""Learning links from use, measured: the gold data flows of one split's tasks are taken as
observed flows (what sessions record in use, :mod:`hyperplan.select.flows`) and strengthen the
graph (:func:`~hyperplan.graph.overrides.strengthen_from_traces`) before the *other* split is
scored. ``hyperplan eval links|chains --learn-from dev --split heldout`` reports the heldout
numbers of the learned graph; the same command without ``--learn-from`` gives the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from hyperplan.errors import HyperplanError
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.overrides import ObservedFlow, strengthen_from_traces
from hyperplan_bench.importers.gold import GoldTask

LEARNING_SPLITS = ("dev", "heldout")
RATE = 0.5  # the rate a session's learning uses (hyperplan.select.selector.LEARNING_RATE)


def check_learning_split(learn_from: str | None, split: str) -> None:
    """Refuse to score tasks the graph learned from: ``learn_from`` must be a split other
    than the scored one (so never ``all`` on either side)."""
    if learn_from is None:
        return
    if learn_from not in LEARNING_SPLITS:
        raise HyperplanError(f"--learn-from must be dev or heldout, got {learn_from!r}")
    if split in (learn_from, "all"):
        raise HyperplanError(f"--learn-from {learn_from} scores the tasks it learned from with "
                             f"--split {split}; score the other split")


def gold_flows(tasks: Sequence[GoldTask]) -> list[ObservedFlow]:
    """The tasks' gold data flows as observed flows (each once)."""
    seen: dict[ObservedFlow, None] = {}
    for task in tasks:
        for f in task.flows:
            seen.setdefault(ObservedFlow(f.producer, f.output_path, f.consumer, f.input_param))
    return list(seen)


def learned(graph: Hypergraph, tasks: Sequence[GoldTask], rate: float = RATE
            ) -> tuple[Hypergraph, int]:
    """``graph`` strengthened by the gold flows of ``tasks`` that name its nodes, and how
    many flows were used."""
    from hyperplan.select.flows import known_flows

    kept = known_flows(graph, gold_flows(tasks))
    return (strengthen_from_traces(graph, kept, rate=rate) if kept else graph), len(kept)
