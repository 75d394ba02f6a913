"""DOE against its baselines at equal recall (hyperplan_bench.eval.operating_points), on hand-made
operating points whose answers can be read off directly."""

from __future__ import annotations

from typing import Any

from hyperplan_bench.eval.operating_points import equal_recall_comparison


def _pt(knob: str, value: int, precision: float, recall: float) -> dict[str, Any]:
    return {knob: value, "producer_precision": precision, "producer_recall": recall}


DOE = [_pt("n", 1, 0.9, 0.70), _pt("n", 2, 0.6, 0.80), _pt("n", 3, 0.5, 0.85)]


def test_doe_widened_to_the_baseline_recall_and_baseline_at_doe_recall() -> None:
    semantic = [_pt("k", 1, 0.8, 0.40), _pt("k", 2, 0.6, 0.72), _pt("k", 3, 0.65, 0.75),
                _pt("k", 5, 0.3, 0.80)]
    got = equal_recall_comparison(DOE, semantic[-1], semantic, "k")
    # the fewest alternatives reaching recall 0.80 is n = 2, more precise than 0.3
    assert got["doe_at_baseline_recall"] == {"n": 2, "producer_precision": 0.6,
                                             "producer_recall": 0.80, "doe_more_precise": True}
    # among the points with recall >= DOE's 0.70, k = 3 is the most precise (0.65 < 0.9)
    assert got["baseline_at_doe_recall"] == {"k": 3, "producer_precision": 0.65,
                                             "producer_recall": 0.75, "doe_more_precise": True}


def test_unreachable_recall_gives_none_and_a_more_precise_baseline_wins() -> None:
    closure = [_pt("depth", 1, 0.95, 0.75), _pt("depth", 8, 0.01, 0.95)]
    got = equal_recall_comparison(DOE, closure[-1], closure, "depth")
    assert got["doe_at_baseline_recall"] is None  # no DOE point reaches 0.95
    assert got["baseline_at_doe_recall"]["depth"] == 1
    assert got["baseline_at_doe_recall"]["doe_more_precise"] is False  # 0.9 < 0.95
    low = [_pt("depth", 1, 0.5, 0.3)]
    assert equal_recall_comparison(DOE, low[0], low, "depth")["baseline_at_doe_recall"] is None
