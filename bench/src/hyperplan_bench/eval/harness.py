"""Agent evaluation runs that survive: every (task, agent) pair runs in a worker
process with a fresh environment, its own budget, accounting and trace; the result is written
to the :class:`~hyperplan_bench.eval.store.RunStore` as soon as it finishes; a resumed run skips the
pairs already stored.

Agents: ``hyperagent`` (the full agent on the request; needs an LLM), ``hyperagent-goal``
(LLM-free on the task's structured goal), ``react``, ``planexec``, and the paper's ablations
``variant1`` (no context graph) and ``variant2`` (no support graphs). Same LLM, same tool runtime,
same limits for all. An agent that raises is recorded as status ``error`` with the message; the
harness itself never stops for one task, and a worker process that dies (``kill -9``, out of
memory) costs only the task it was running, which is reported and left to ``--resume``
(:mod:`hyperplan_bench.eval.workers`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from hyperplan.agents.protocol import AGENT_NAMES, LLM_FREE_AGENTS, make_agent
from hyperplan.errors import HyperplanError
from hyperplan.execute.agent import RunResult, RunStatus
from hyperplan.execute.events import ContextGraphShown, LLMCalled, RunFailed, TraceEvent
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.llm.budget import Accounting, Budget
from hyperplan.llm.types import LLM
from hyperplan.secrets import redact_cut
from hyperplan_bench.eval.agent_suites import EvalTask, SuiteSession, get_suite
from hyperplan_bench.eval.store import RunStore
from hyperplan_bench.eval.workers import Finished, WorkerLost, WorkersKeptDying, run_jobs

AGENTS = AGENT_NAMES


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation.

    suite, agents: the suite (:mod:`hyperplan_bench.eval.registry`) and the agents run on it.
    llm, model: ``none``, ``scripted`` or an endpoint's base URL, and its model.
    embedder: the embedder of the suite's graph and retrieval index.
    budget: per-task budget; workers: worker processes; limit: tasks at most.
    suite_options: passed to the suite (e.g. ``{"domain": "retail"}``).
    backend, ray_address: ``local`` (worker processes) or ``ray``; Ray's address (None: a
        local instance).
    """

    suite: str
    agents: tuple[str, ...]
    llm: str = "none"
    model: str = ""
    embedder: str = "hashing"
    budget: Budget = field(default_factory=lambda: Budget(max_calls=30, max_tool_calls=40,
                                                          max_wall_s=300.0))
    workers: int = 2
    limit: int | None = None
    suite_options: dict[str, Any] = field(default_factory=dict)  # e.g. {"domain": "retail"}
    backend: str = "local"  # "local" (worker processes) or "ray"
    ray_address: str | None = None  # None: start a local Ray instance

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["agents"] = list(self.agents)
        return out

    def check(self) -> None:
        unknown = [a for a in self.agents if a not in AGENTS]
        if unknown:
            raise HyperplanError(f"unknown agent(s) {unknown}; known: {', '.join(AGENTS)}")
        if self.backend not in ("local", "ray"):
            raise HyperplanError(f"unknown backend {self.backend!r}; expected local or ray")
        needs_llm = [a for a in self.agents if a not in LLM_FREE_AGENTS]
        if needs_llm and self.llm == "none":
            raise HyperplanError(f"agents {needs_llm} need --llm URL (an endpoint) or "
                                 "--scripted")


OutcomeStatus = RunStatus | Literal["error"]  # "error": the agent raised


@dataclass(frozen=True)
class TaskOutcome:
    task_id: str
    agent: str
    status: OutcomeStatus
    success: bool
    metrics: dict[str, Any]
    trace: list[dict[str, Any]]


_SESSIONS: dict[str, SuiteSession] = {}


def _session(cfg: EvalConfig) -> SuiteSession:
    key = repr((cfg.suite, cfg.embedder, sorted(cfg.suite_options.items())))
    if key not in _SESSIONS:
        _SESSIONS[key] = get_suite(cfg.suite, **cfg.suite_options).open(cfg.embedder)
    return _SESSIONS[key]


def _llm(cfg: EvalConfig, task: EvalTask, accounting: Accounting) -> LLM | None:
    if cfg.llm == "none":
        return None
    if cfg.llm == "scripted":
        from hyperplan_bench.eval.scripted import scripted_llm

        return scripted_llm(task, accounting)
    from hyperplan.connect import llm_from_options

    return llm_from_options(cfg.llm, cfg.model or None, accounting)


def run_one(cfg: EvalConfig, task: EvalTask, agent: str) -> TaskOutcome:
    """Run ``agent`` on ``task`` in a fresh environment (worker side)."""
    session = _session(cfg)
    runtime = session.start(task)
    accounting = Accounting(cfg.budget)
    tracer = TraceWriter()
    started = time.perf_counter()
    status: OutcomeStatus
    try:
        client = None if agent in LLM_FREE_AGENTS else _llm(cfg, task, accounting)
        ctx = RunContext(graph=session.graph, catalog=session.catalog, runtime=runtime,
                         accounting=accounting, tracer=tracer, config=AgentConfig(),
                         llm=TracedLLM(client, tracer) if client else None,
                         request=task.request, embedder=session.embedder,
                         index=session.index)
        result = make_agent(agent, session.embedder, session.index).run(ctx, task)
        status, message = result.status, result.message
    except Exception as exc:  # one broken task must not stop the run
        status, message = "error", f"{type(exc).__name__}: {exc}"
        tracer.emit(RunFailed(message=message, traceback=traceback.format_exc(limit=5)))
        result = None
    finally:
        runtime.close()
    success = session.check(task)
    metrics = _metrics(result, accounting, tracer.events, time.perf_counter() - started)
    metrics.update(message=redact_cut(message, 500), min_calls=task.min_calls,
                   scenario=task.scenario, category=_category(status, success, message))
    return TaskOutcome(task.id, agent, status, success, metrics, tracer.records)


def _metrics(result: RunResult | None, accounting: Accounting, events: list[TraceEvent],
             seconds: float) -> dict[str, Any]:
    totals = accounting.totals()
    # the context graph the planner was last shown (a window too small for the first one is
    # answered with a cut one, traced after it)
    context = next((e.tokens for e in reversed(events) if isinstance(e, ContextGraphShown)), 0)
    calls = [e for e in events if isinstance(e, LLMCalled)]
    planning = sum(1 for e in calls if e.component in ("planner", "refiner"))
    doc_tokens = context * planning + sum(e.tool_doc_tokens or 0 for e in calls)
    return {
        "tool_calls": result.tool_calls if result else 0,
        "llm_calls": totals.calls,
        "prompt_tokens": totals.prompt_tokens,
        "completion_tokens": totals.completion_tokens,
        "tool_doc_tokens": doc_tokens,
        "seconds": round(seconds, 3),
        "budget_exhausted": accounting.stopped is not None,
    }


def _category(status: OutcomeStatus, success: bool, message: str) -> str:
    """Failure category of a finished task (``ok`` when the checker passed)."""
    if success:
        return "ok"
    if status == "budget_exhausted":
        return "budget"
    if status == "blocked":
        return "ambiguous"
    if status == "error":
        return "error"
    if "plan" in message and "invalid" in message:
        return "invalid_plan"
    if status in ("failed", "partial"):
        return "execution_failed"
    return "checker_failed"


def pending_jobs(cfg: EvalConfig, done: set[tuple[str, str]]) -> list[tuple[EvalTask, str]]:
    tasks = get_suite(cfg.suite, **cfg.suite_options).tasks()[: cfg.limit]
    return [(t, a) for t in tasks for a in cfg.agents if (t.id, a) not in done]


class TaskRunsLost(HyperplanError):
    """Task runs of ``run_id`` that were not stored because their worker process died (or
    raised past :func:`run_one`), or because the run stopped after too many lost workers.
    Everything that finished is stored; ``--resume`` runs the rest."""

    def __init__(self, run_id: str, store: Path, lost: Sequence[tuple[str, str]],
                 stopped: WorkersKeptDying | None) -> None:
        self.run_id, self.lost, self.stopped = run_id, tuple(lost), stopped
        names = ", ".join(f"task {t} / agent {a}" for t, a in lost[:3])
        names += f" and {len(lost) - 3} more" if len(lost) > 3 else ""
        super().__init__(
            f"run {run_id}: " + (f"{stopped}; " if stopped else "")
            + (f"{len(lost)} task run{'s' * (len(lost) > 1)} not stored ({names}); "
               if lost else "")
            + f"every finished result is stored; `hyperplan eval run --resume {run_id} "
            f"--store {store}` runs the rest")


def run_eval(cfg: EvalConfig, store: RunStore, run_id: str,
             on_result: Callable[[TaskOutcome, int, int], None] | None = None,
             on_lost: Callable[[str], None] | None = None) -> int:
    """Run every pending (task, agent) of ``run_id`` and store each result as it finishes;
    returns how many ran. ``workers <= 1`` runs in this process. A worker process that dies
    costs only the task it was running: ``on_lost`` gets one line about it, the other tasks go
    on in a fresh pool, and :class:`TaskRunsLost` is raised at the end."""
    jobs = pending_jobs(cfg, store.done(run_id))
    finished = 0
    lost: list[tuple[str, str]] = []
    stopped: WorkersKeptDying | None = None
    try:
        for item in _execute(cfg, jobs):
            if isinstance(item, WorkerLost):
                lost.extend([item.key] if item.key else [])
                if on_lost is not None:
                    on_lost(item.describe(run_id))
                continue
            store.add_result(run_id, item.task_id, item.agent, status=item.status,
                             success=item.success, metrics=item.metrics, trace=item.trace)
            finished += 1
            if on_result is not None:
                on_result(item, finished, len(jobs))
    except WorkersKeptDying as exc:
        stopped = exc
    if lost or stopped is not None:
        raise TaskRunsLost(run_id, store.path, lost, stopped)
    return finished


def _execute(cfg: EvalConfig,
             jobs: Sequence[tuple[EvalTask, str]]) -> Iterator[TaskOutcome | WorkerLost]:
    if cfg.backend == "ray":
        yield from _execute_ray(cfg, jobs)
        return
    if cfg.workers <= 1:
        for task, agent in jobs:
            yield run_one(cfg, task, agent)
        return
    pool_jobs = [((task.id, agent), (cfg, task, agent)) for task, agent in jobs]
    for item in run_jobs(run_one, pool_jobs, cfg.workers):
        yield item.result if isinstance(item, Finished) else item


def _execute_ray(cfg: EvalConfig, jobs: Sequence[tuple[EvalTask, str]]) -> Iterator[TaskOutcome]:
    """The same jobs as Ray tasks (extra ``ray``): on ``cfg.ray_address``'s cluster, or on a
    local instance with ``cfg.workers`` CPUs. Results are yielded as they finish, so the
    caller stores each one at once exactly as with local processes."""
    try:
        import ray
    except ImportError:
        raise HyperplanError("--backend ray needs Ray: pip install 'hyperplan[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=cfg.ray_address, num_cpus=None if cfg.ray_address else cfg.workers,
                 include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    remote = ray.remote(num_cpus=1, max_retries=0)(run_one)
    try:
        waiting = [remote.remote(cfg, task, agent) for task, agent in jobs]
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()
