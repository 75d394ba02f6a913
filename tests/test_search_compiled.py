"""The optional compiled search core (setup.py): which build is loaded, and that the module
list setup.py compiles is the one :func:`hyperplan.search.compiled_core` checks. The compiled
build itself runs every ``tests/test_search_*.py`` in CI (``.ci/run``) with
``HYPERPLAN_EXPECT_COMPILED=1``, so the golden fingerprints pin it to the same decisions."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest

from hyperplan.search import COMPILED_MODULES, compiled_core
from hyperplan.search.common import SearchBase, SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.policies import RandomPolicy
from hyperplan_bench.eval.treesearch.bench import bench_bookkeeping
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def _setup_search_core() -> tuple[str, ...]:
    tree = ast.parse(SETUP.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SEARCH_CORE":
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return value
    raise AssertionError("setup.py defines no SEARCH_CORE")


def test_setup_compiles_the_modules_compiled_core_checks() -> None:
    assert _setup_search_core() == COMPILED_MODULES


def test_loaded_build_is_the_expected_one() -> None:
    expected = os.environ.get("HYPERPLAN_EXPECT_COMPILED") == "1"
    assert compiled_core() is expected


def test_bench_reports_the_build() -> None:
    out = bench_bookkeeping(tasks=1, budget=8, widen=0.0)
    assert out["compiled"] is compiled_core()
    assert out["hypermcts"]["us_per_iter_median"] > 0


@pytest.mark.skipif(compiled_core(), reason="the compiled build has no .py of its own loaded")
def test_pure_build_loads_the_sources() -> None:
    from hyperplan.search import mcts

    assert str(mcts.__file__).endswith("mcts.py")


def test_bench_runs_the_generated_suites_with_repeats() -> None:
    out = bench_bookkeeping(suite="shopping", tasks=2, budget=8, repeat=2, seed=1)
    assert out["suite"] == "shopping" and out["repeat"] == 2 and out["seed"] == 1
    for method in ("hypermcts", "uct"):
        assert out[method]["us_per_iter_median"] > 0


def test_bench_rejects_unknown_suites_and_repeats() -> None:
    with pytest.raises(ValueError, match="bench suite"):
        bench_bookkeeping(suite="chess", tasks=1, budget=4)
    with pytest.raises(ValueError, match="repeat"):
        bench_bookkeeping(tasks=1, budget=4, repeat=0)


class _Named(SearchBase):
    """An interpreted subclass naming its method by class attribute."""

    method = "named"

    def run(self) -> SearchResult:
        return self.result(0.0)


class _Renamed(_Named):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.method = "renamed"


def test_an_interpreted_subclass_names_its_method_in_either_build() -> None:
    env = ToyShopEnv(0, 2, 3)
    assert _Named(env, RandomPolicy(), MCTSConfig(budget=1)).run().method == "named"
    assert _Renamed(env, RandomPolicy(), MCTSConfig(budget=1)).run().method == "renamed"
