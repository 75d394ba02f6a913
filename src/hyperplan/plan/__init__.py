"""Planning (HyperAgent): the Task DAG a planner proposes ("Task-Level Planning"), Deficit-Oriented
Expansion over the hypergraph ("Tool-Level Planning", Definitions 5-6) and the grounding of
the agent state (Definition 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.plan.doe import (
        DOEConfig,
        DOEResult,
        Resolution,
        Selection,
        SupportGraph,
        best_support_graph,
        expand,
        rank_support_graphs,
        select_support_graph,
    )
    from hyperplan.plan.grounding import Grounding, empty_grounding, ground
    from hyperplan.plan.planner import plan_dag
    from hyperplan.plan.taskdag import TaskDAG

_EXPORTS = {
    "DOEConfig": "doe",
    "DOEResult": "doe",
    "Grounding": "grounding",
    "Resolution": "doe",
    "Selection": "doe",
    "SupportGraph": "doe",
    "TaskDAG": "taskdag",
    "best_support_graph": "doe",
    "empty_grounding": "grounding",
    "expand": "doe",
    "ground": "grounding",
    "plan_dag": "planner",
    "rank_support_graphs": "doe",
    "select_support_graph": "doe",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "DOEConfig", "DOEResult", "Grounding", "Resolution", "Selection", "SupportGraph",
    "TaskDAG", "best_support_graph", "empty_grounding", "expand", "ground", "plan_dag",
    "rank_support_graphs", "select_support_graph",
]
