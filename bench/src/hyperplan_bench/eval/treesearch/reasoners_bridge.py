"""llm-reasoners' MCTS on our search environments, side by side with HyperMCTS and UCT
through a thin adapter (docs/benchmarks.md, "Beside llm-reasoners' MCTS").

llm-reasoners (PyPI ``llm-reasoners`` 1.0.2, package ``reasoners``) searches over immutable
states through a world model (``init_state``, ``step``, ``is_terminal``) and a search config
(``get_actions``, ``fast_reward``, ``reward``). The adapter maps them onto a
:class:`~hyperplan.search.env.SearchEnv`:

* a state is an environment snapshot plus the actions that led to it;
* ``get_actions`` = the policy's top-b proposals among all decisions (the same policy and rng
  stream as our searches; no commit-point branching, which is our design, not theirs);
* ``fast_reward`` = the environment's hint (the heuristic policy's guidance), cached from
  ``get_actions``; llm-reasoners uses it to order unvisited children and, through
  ``simulate_choice``, in its rollouts, where the adapter applies the heuristic policy's own
  rule (ε-random, else a softmax draw at the policy's temperature);
* ``step`` executes one action; a finished, dead-end or horizon-length history is verified
  there, which counts one evaluated trajectory of the budget exactly as in our searches, and
  the verifier's reward R(τ) is that step's reward (every other step's reward is 0, so
  llm-reasoners' cumulative ``sum`` reward equals R(τ)).

The loop calls llm-reasoners' own ``MCTS.iterate`` until B trajectories were evaluated (or a
perfect one was verified, like our early stop; at most 4·B iterations, since an iteration that
re-selects an evaluated leaf evaluates nothing). The answer is the best evaluated trajectory.
``us_per_iter`` is llm-reasoners' tree work plus this adapter per iteration, with environment
and policy time excluded, as for our methods.

Optional: ``reasoners`` imports torch and transformers at import time. Install with
``pip install torch==2.13.0 transformers`` then ``pip install --no-deps llm-reasoners==1.0.2``
(its declared dependencies pull GPU training stacks this comparison does not use).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.search.common import FAILED, SearchBase, SearchResult
from hyperplan.search.config import MCTSConfig
from hyperplan.search.env import Action, SearchEnv
from hyperplan.search.policies import HeuristicPolicy, Policy, _gumbel_top_k

MAX_ITERATIONS_PER_ROLLOUT = 4


def reasoners_module() -> Any:
    """The ``reasoners.algorithm`` module, or a clear error naming the install."""
    try:
        algorithm = importlib.import_module("reasoners.algorithm")
    except ImportError as exc:
        raise HyperplanError(
            "the llm-reasoners comparison needs the package 'reasoners': pip install "
            "torch==2.13.0 transformers && pip install --no-deps llm-reasoners==1.0.2 "
            f"({exc})") from None
    return algorithm


@dataclass(frozen=True)
class BridgeState:
    snapshot: Any
    actions: tuple[Action, ...]
    terminal: bool = False


class _WorldModel:
    def __init__(self, search: ReasonersMCTS) -> None:
        self.s = search

    def init_state(self) -> BridgeState:
        s = self.s
        s.env.reset()
        return BridgeState(s.env.snapshot(), ())

    def step(self, state: BridgeState, action: Action) -> tuple[BridgeState, dict[str, Any]]:
        s = self.s
        s.env.restore(state.snapshot)
        actions = (*state.actions, action)
        try:
            s.env.step(action)
            done = (s.env.is_terminal() or len(actions) >= s.horizon
                    or not s.env.decisions())
            verdict = s.env.verify() if done else None
            snapshot = s.env.snapshot()
        except Exception:  # a failed step ends the trajectory with the failed verdict
            s.failures += 1
            done, verdict, snapshot = True, FAILED, state.snapshot
        if not done or verdict is None:
            return BridgeState(snapshot, actions), {}
        s.record(actions, verdict)
        return BridgeState(snapshot, actions, True), {"terminal_reward": verdict.reward}

    def is_terminal(self, state: BridgeState) -> bool:
        return state.terminal


class _SearchConfig:
    def __init__(self, search: ReasonersMCTS) -> None:
        self.s = search
        self.hints: dict[tuple[int, str], float] = {}

    def get_actions(self, state: BridgeState) -> list[Action]:
        s = self.s
        s.env.restore(state.snapshot)
        decisions = s._decisions()
        if not decisions:
            return []
        proposed = s._propose(decisions, s.config.branching)
        t = perf_counter()  # the hints are the heuristic policy's scores: policy time
        for action in proposed:
            self.hints[(id(state), action.key)] = s.raw_env.hint(action)
        s.policy.seconds += perf_counter() - t
        return proposed

    def fast_reward(self, state: BridgeState, action: Action) -> tuple[float, dict[str, Any]]:
        return self.hints.pop((id(state), action.key), 0.5), {}

    def reward(self, state: BridgeState, action: Action,
               **aux: Any) -> tuple[float, dict[str, Any]]:
        return float(aux.get("terminal_reward", 0.0)), {}


class ReasonersMCTS(SearchBase):
    """llm-reasoners' MCTS (c as its exploration weight ``w_exp``, horizon as its depth limit)
    under our budget accounting (module doc)."""

    def __init__(
        self, env: SearchEnv, policy: Policy, config: MCTSConfig, seed: int = 0
    ) -> None:
        super().__init__(env, policy, config, seed)
        # set on the instance: a class attribute of a Python subclass does not reach the
        # attribute the compiled base class reads (setup.py, HYPERPLAN_COMPILE)
        self.method = "reasoners_mcts"

    def run(self) -> SearchResult:
        started = perf_counter()
        algorithm = reasoners_module()
        search = algorithm.MCTS(w_exp=self.config.c, depth_limit=self.horizon,
                                n_iters=self.config.budget, cum_reward=sum,
                                simulate_strategy=self._simulate_choice,
                                output_strategy="max_reward", uct_with_fast_reward=True,
                                disable_tqdm=True)
        search.world_model = _WorldModel(self)
        search.search_config = _SearchConfig(self)
        search.root = algorithm.MCTSNode(state=search.world_model.init_state(), action=None,
                                         parent=None, calc_q=search.calc_q)
        self.iterations = 0
        limit = MAX_ITERATIONS_PER_ROLLOUT * self.config.budget
        while not self.exhausted and self.iterations < limit:
            search.iterate(search.root)
            self.iterations += 1
        return self.result(started)

    def _simulate_choice(self, fast_rewards: Sequence[float]) -> int:
        """The heuristic policy's rollout rule over llm-reasoners' children (their hints)."""
        t = perf_counter()
        choice = rollout_index(self.raw_policy, list(fast_rewards), self.rng)
        self.policy.seconds += perf_counter() - t
        return choice


def rollout_index(policy: Policy, scores: list[float], rng: random.Random) -> int:
    """ε-random, else one softmax draw at the heuristic policy's temperature; the argmax for
    any other policy."""
    if not scores:
        return 0
    if isinstance(policy, HeuristicPolicy):
        if len(scores) > 1 and rng.random() < policy.epsilon:
            return rng.randrange(len(scores))
        return _gumbel_top_k(scores, 1, policy.temperature, rng)[0]
    return max(range(len(scores)), key=scores.__getitem__)


def reasoners_mcts(env: SearchEnv, policy: Policy, config: MCTSConfig,
                   seed: int = 0) -> SearchResult:
    """Run llm-reasoners' MCTS on ``env`` with our policy and budget."""
    return ReasonersMCTS(env, policy, config, seed).run()


def compare(tasks: Sequence[SearchEnv], config: MCTSConfig, *, seed: int = 0,
            methods: Sequence[str] = ("hypermcts", "uct"),
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """``methods`` (ours) and llm-reasoners' MCTS on the same tasks, policy and budget; the
    JSON object of ``hyperplan eval mcts`` with ``reasoners_mcts`` added and the paired
    differences of each of ours against it."""
    from hyperplan.search.policies import make_policy
    from hyperplan_bench.eval.treesearch.runner import METHOD_FUNCS, MethodRuns, paired_diff
    from hyperplan_bench.eval.treesearch.runner import task_seed as run_seed

    reasoners_module()
    started = perf_counter()
    runs: dict[str, list[SearchResult]] = {m: [] for m in (*methods, "reasoners_mcts")}
    for i, env in enumerate(tasks):
        for name in methods:
            runs[name].append(METHOD_FUNCS[name](env, make_policy("heuristic"), config,
                                                 run_seed(seed, i)))
        runs["reasoners_mcts"].append(reasoners_mcts(env, make_policy("heuristic"), config,
                                                     run_seed(seed, i)))
        if progress is not None:
            progress(f"task {i + 1}/{len(tasks)}", i + 1, len(tasks))
    theirs = [float(r.success) for r in runs["reasoners_mcts"]]
    return {
        "n_tasks": len(tasks), "budget": config.budget, "branching": config.branching,
        "lam": config.lam, "c": config.c,
        "methods": {name: MethodRuns(rs).summary() for name, rs in runs.items()},
        "paired": {f"{name}_minus_reasoners_mcts": paired_diff(
            [float(r.success) for r in runs[name]], theirs) for name in methods},
        "seconds": perf_counter() - started,
    }
