"""Operating points of the producer-chain benchmark, and DOE against its baselines at equal
recall.

The target is DOE beating both DOE baselines "on precision at equal or better recall"
(docs/benchmarks.md, "Operating points: DOE against its baselines at equal recall"). At their
default settings the three methods sit at different recalls, so ``hyperplan eval chains`` also
sweeps one size knob per method, each trading precision for recall:

* DOE: the union of each terminal's n best support graphs (Support Graph Selection's order,
  :func:`hyperplan.plan.doe.rank_support_graphs`), n in :data:`DOE_ALTERNATIVES`; n = 1 is
  DOE's answer;
* semantic top-K (Variant 2): K in :data:`SEMANTIC_KS` (the headline row uses K = 5);
* all producers: the backward closure cut after d hops, d in :data:`CLOSURE_DEPTHS` (the
  headline row uses DOE's ``max_depth``).

:func:`equal_recall_comparison` reads two answers off those points for one baseline: the
least-widened DOE point whose recall reaches the baseline's headline recall (is DOE more
precise there?), and the baseline's most precise point whose recall reaches DOE's headline
recall (can the baseline match DOE's precision at DOE's recall?). A point is a mapping with
``producer_precision`` and ``producer_recall`` (the chains tally's summary) plus its knob.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DOE_ALTERNATIVES = (1, 2, 3, 4, 6, 8)
SEMANTIC_KS = (1, 2, 3, 4, 5, 6, 8, 10)
CLOSURE_DEPTHS = (1, 2, 3, 4, 6, 8)

Point = Mapping[str, Any]


def _reaches(point: Point, recall: float) -> bool:
    return float(point["producer_recall"]) >= recall


def _brief(point: Point, knob: str) -> dict[str, Any]:
    return {knob: point[knob], "producer_precision": point["producer_precision"],
            "producer_recall": point["producer_recall"]}


def equal_recall_comparison(doe: Sequence[Point], baseline_default: Point,
                            baseline: Sequence[Point], knob: str) -> dict[str, Any]:
    """DOE vs one baseline at equal or better recall (module doc). ``doe`` are DOE's points
    by increasing n (the first is DOE's answer), ``baseline_default`` the baseline's headline
    result, ``baseline`` its swept points, each carrying its ``knob`` value."""
    doe_answer = doe[0]
    target = float(baseline_default["producer_recall"])
    doe_there = next((p for p in doe if _reaches(p, target)), None)
    reaching = [p for p in baseline if _reaches(p, float(doe_answer["producer_recall"]))]
    base_there = max(reaching, key=lambda p: float(p["producer_precision"]), default=None)
    return {
        "doe_at_baseline_recall": None if doe_there is None else {
            **_brief(doe_there, "n"),
            "doe_more_precise": doe_there["producer_precision"]
            > baseline_default["producer_precision"],
        },
        "baseline_at_doe_recall": None if base_there is None else {
            **_brief(base_there, knob),
            "doe_more_precise": doe_answer["producer_precision"]
            > base_there["producer_precision"],
        },
    }
