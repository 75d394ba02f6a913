"""Evaluation: benchmarks with stable JSON contracts (the commands under ``hyperplan eval``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan_bench.eval.chains import evaluate_chains
    from hyperplan_bench.eval.links import evaluate_links
    from hyperplan_bench.eval.preselect import evaluate_preselect
    from hyperplan_bench.eval.registry import SUITE_TABLE, SuiteInfo
    from hyperplan_bench.eval.retrieval import evaluate_retrieval

_EXPORTS = {
    "SUITE_TABLE": "registry",
    "SuiteInfo": "registry",
    "evaluate_chains": "chains",
    "evaluate_links": "links",
    "evaluate_preselect": "preselect",
    "evaluate_retrieval": "retrieval",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "SUITE_TABLE", "SuiteInfo", "evaluate_chains", "evaluate_links", "evaluate_preselect",
    "evaluate_retrieval",
]
