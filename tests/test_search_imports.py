"""The deterministic core does not load the LLM stack: importing the search algorithm, the
graph, DOE and retrieval leaves the OpenAI SDK (and, for the search, the whole LLM layer)
unimported. Each import runs in a fresh interpreter, so modules other tests loaded do not
count."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE = ("hyperplan.search.mcts", "hyperplan.graph", "hyperplan.plan.doe", "hyperplan.retrieve")


def _loaded(module: str) -> list[str]:
    code = (f"import json, sys, {module}; "
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m == 'openai' or m.startswith(('openai.', 'hyperplan.llm')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", CORE)
def test_core_import_does_not_load_openai(module: str) -> None:
    loaded = _loaded(module)
    assert "openai" not in loaded, f"{module} imports the OpenAI SDK"


@pytest.mark.parametrize("module", ["hyperplan.search.mcts", "hyperplan.search.baselines",
                                    "hyperplan.search"])
def test_search_core_does_not_load_the_llm_layer(module: str) -> None:
    assert _loaded(module) == [], f"{module} imports the LLM layer"


def test_the_old_trajectory_hypergraph_module_still_resolves_with_a_warning() -> None:
    """``hyperplan.search.hypergraph`` was renamed ``trajectory_hypergraph`` ("Hypergraph" alone
    is the Tool-Schema Hypergraph): its names are the same objects, read with a warning."""
    from hyperplan.search import trajectory_hypergraph

    with pytest.warns(DeprecationWarning, match="renamed hyperplan.search.trajectory_hypergraph"):
        from hyperplan.search.hypergraph import TrajectoryHypergraph
    assert TrajectoryHypergraph is trajectory_hypergraph.TrajectoryHypergraph
    with pytest.raises(AttributeError, match="trajectory_hypergraph"):
        from hyperplan.search import hypergraph

        _ = hypergraph.NoSuchName
