"""Recording a search's environment and policy calls and replaying them
(hyperplan_bench.eval.treesearch.replay): the replayed search takes exactly the recorded decisions,
and a
replay that strays from the log is an error, not a silent wrong answer."""

from __future__ import annotations

import pytest

from hyperplan.search.baselines import uct
from hyperplan.search.common import SearchResult
from hyperplan.search.mcts import HyperMCTS, MCTSConfig
from hyperplan.search.policies import RandomPolicy, make_policy
from hyperplan_bench.eval.treesearch.bench import bench_bookkeeping
from hyperplan_bench.eval.treesearch.replay import Recorder, ReplayError, replay_env, replay_policy
from hyperplan_bench.eval.treesearch.runner import load_tasks
from hyperplan_bench.eval.treesearch.toy import ToyShopEnv


def _fingerprint(result: SearchResult) -> tuple[object, ...]:
    return tuple(a.key for a in result.actions), result.rollouts, tuple(result.rewards)


def test_replayed_hypermcts_takes_the_recorded_decisions_on_a_generated_suite() -> None:
    env = load_tasks("travel", 1, 7)[0]
    config = MCTSConfig(budget=12)
    recorder = Recorder(env, make_policy("heuristic"))
    recorded = HyperMCTS(*recorder.wrapped(), config, 3).run()
    direct = HyperMCTS(env, make_policy("heuristic"), config, 3).run()
    assert _fingerprint(recorded) == _fingerprint(direct)  # recording changes nothing
    assert recorder.env_log.calls and recorder.policy_log.calls
    for _ in range(2):  # each replay starts from the first logged call
        replayed = HyperMCTS(replay_env(recorder), replay_policy(recorder), config, 3).run()
        assert _fingerprint(replayed) == _fingerprint(recorded)
        assert replayed.verdict == recorded.verdict


def test_replay_that_strays_from_the_log_raises() -> None:
    recorder = Recorder(ToyShopEnv(0, 3, 4), RandomPolicy())
    uct(*recorder.wrapped(), MCTSConfig(budget=6, early_stop=False), 0)
    with pytest.raises(ReplayError, match="replay asked for"):  # a longer search runs out
        uct(replay_env(recorder), replay_policy(recorder),
            MCTSConfig(budget=12, early_stop=False), 0)
    with pytest.raises(ReplayError, match="no hints"):
        replay_env(recorder).hint(ToyShopEnv(0, 3, 4).decisions()[0])


def test_isolated_bench_reports_replayed_runs() -> None:
    out = bench_bookkeeping(suite="shopping", tasks=2, budget=8, repeat=2, seed=1, isolate=True)
    assert out["isolate"] is True
    for method in ("hypermcts", "uct"):
        assert out[method]["us_per_iter_median"] > 0.0
