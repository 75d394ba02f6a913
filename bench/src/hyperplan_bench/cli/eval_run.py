"""``hyperplan eval run``: agents on a suite, stored as they finish, resumable."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from hyperplan.cli.common import budget_from_options, console, fail, out, print_warning
from hyperplan.cli.options import (
    MODEL_HELP,
    OLD_LLM_VALUES,
    AsJson,
    deprecation,
    embedder_option,
    llm_option,
    output_option,
    renamed_options,
)
from hyperplan.connect import llm_from_options
from hyperplan.errors import HyperplanError
from hyperplan.llm.budget import Accounting, Budget
from hyperplan_bench.eval.harness import (
    AGENTS,
    EvalConfig,
    TaskOutcome,
    TaskRunsLost,
    pending_jobs,
    run_eval,
)
from hyperplan_bench.eval.store import RunStore

DEFAULT_STORE = Path(".hyperplan") / "runs.sqlite"


def eval_run_cmd(
    suite: str = typer.Option("demo", help="Suite name: demo | tau2 | nestools | nestful | "
                              "appworld (see `hyperplan eval suites`)."),
    domain: str = typer.Option(None, help="tau2 domain: airline | retail | telecom."),
    data: str = typer.Option(None, help="Data file or directory of nestools / nestful / "
                             "appworld (default: under $HYPERPLAN_DATA or ../shared/data)."),
    agents: str = typer.Option("hyperagent,react,planexec",
                               help=f"Comma-separated: {', '.join(AGENTS)}."),
    llm: str | None = llm_option("the agents' model (default: no model, LLM-free agents "
                                 "only; HYPERPLAN_LLM_BASE_URL is not read)"),
    scripted: bool = typer.Option(False, "--scripted", help="Answer the agents with the "
                                  "scripted test double (fixed answers per task): exercises "
                                  "the harness, measures no model."),
    model: str = typer.Option("", help=MODEL_HELP),
    embedder: str = embedder_option("hashing"),
    workers: int = typer.Option(2, help="Worker processes (1 = in this process)."),
    backend: str = typer.Option("local", help="local (processes) | ray (extra 'ray')."),
    ray_address: str = typer.Option(None, help="Ray cluster address (default: local Ray)."),
    limit: int = typer.Option(None, help="Only the first N tasks."),
    resume: str = typer.Option(None, help="Continue run RUN_ID: finished tasks are kept."),
    store: Path = typer.Option(DEFAULT_STORE, help="SQLite run store."),
    max_llm_calls: int = typer.Option(30, help="Per-task budget: LLM calls."),
    max_tool_calls: int = typer.Option(40, help="Per-task budget: tool calls."),
    max_tokens: int = typer.Option(None, help="Per-task budget: tokens."),
    max_seconds: float = typer.Option(300.0, help="Per-task budget: wall seconds."),
    as_json: AsJson = False,
) -> None:
    """Run agents on a suite; results go to the run store as each task finishes."""
    llm = _llm_choice(llm, scripted)
    if resume and not store.exists():
        fail(f"{store}: run store not found (--resume {resume})")
    with RunStore(store) as db:
        if resume:
            cfg = _resumed_config(db, resume)
            run_id = resume
            todo = len(pending_jobs(cfg, db.done(run_id)))
        else:
            chosen = _agents(agents, workers, limit)
            cfg = EvalConfig(suite=suite, agents=chosen,
                             llm=llm, model=model, embedder=embedder,
                             budget=budget_from_options(max_llm_calls, max_tokens,
                                                        max_tool_calls, max_seconds),
                             workers=workers, limit=limit,
                             suite_options=_suite_options(domain=domain, data=data),
                             backend=backend, ray_address=ray_address)
            run_id, todo = _create_run(db, cfg, data, domain)
        console.print(f"run {run_id}: {todo} task runs to do ({cfg.suite}, "
                      f"{', '.join(cfg.agents)}, llm {cfg.llm})")
        lost: TaskRunsLost | None = None
        try:
            _run_with_progress(cfg, db, run_id, todo)
        except TaskRunsLost as exc:  # the rest is stored: show it, then the line, exit 1
            lost = exc
        summary = summarize_run(db, run_id) if lost is None or db.done(run_id) else None
    if summary is not None:
        _print_summary(summary, as_json, store)
    if lost is not None:
        fail(str(lost))


def _agents(agents: str, workers: int, limit: int | None) -> tuple[str, ...]:
    """The agents ``--agents`` names, with ``--workers`` and ``--limit`` checked."""
    chosen = tuple(a.strip() for a in agents.split(",") if a.strip())
    if not chosen:
        fail(f"--agents is empty; give one or more of {', '.join(AGENTS)}")
    if workers < 1 or (limit is not None and limit < 1):
        fail(f"--workers and --limit must be >= 1, got {workers} and {limit}")
    return chosen


def _create_run(db: RunStore, cfg: EvalConfig, data: str | None,
                domain: str | None) -> tuple[str, int]:
    """A new run of ``cfg`` in ``db`` (its endpoint reached and its tasks counted first): its
    id and the number of task runs to do."""
    cfg.check()
    if cfg.llm not in ("none", "scripted"):  # an endpoint: reachable before any task
        llm_from_options(cfg.llm, cfg.model or None, Accounting(), check=True)
    todo = len(pending_jobs(cfg, set()))
    if not todo:
        fail(f"suite {cfg.suite!r} has no tasks"
             + (f" in {data}" if data else f" for domain {domain!r}" if domain else ""))
    run_id = db.create_run(suite=cfg.suite, agents=cfg.agents, llm=cfg.llm, model=cfg.model,
                           command=shlex.join(sys.argv), config=cfg.as_dict())
    return run_id, todo


def _llm_choice(url: str | None, scripted: bool) -> str:
    """What the run records as its LLM: ``none``, ``scripted`` or the endpoint URL. The old
    spellings ``--llm none`` and ``--llm scripted`` still work, with one deprecation line."""
    if url in OLD_LLM_VALUES:
        deprecation(f"--llm {url}", OLD_LLM_VALUES[url])
        scripted, url = scripted or url == "scripted", None
    if scripted and url:
        fail("give --llm URL or --scripted, not both")
    return "scripted" if scripted else url or "none"


def _resumed_config(db: RunStore, run_id: str) -> EvalConfig:
    """The configuration ``run_id`` was started with, as stored by ``eval run``."""
    config = db.run(run_id).config
    try:
        cfg = EvalConfig(**{**config, "agents": tuple(config["agents"]),
                            "budget": Budget(**config["budget"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise HyperplanError(f"{db.path}: run {run_id} has no usable configuration to resume "
                             f"({type(exc).__name__}: {exc}); it was not started by "
                             "`hyperplan eval run`") from None
    return cfg


def _print_summary(summary: dict[str, Any], as_json: bool, store: Path) -> None:
    run_id = summary["run_id"]
    if as_json:
        out.print_json(json.dumps(summary))
    else:
        for agent, row in summary["agents"].items():
            out.print(f"{agent}: success {row['success']}/{row['tasks']}, tool calls "
                      f"{row['tool_calls']}, LLM calls {row['llm_calls']}, tokens "
                      f"{row['tokens']}")
        if summary["llm"] == "scripted":  # the caveat report.md carries, beside the numbers
            from hyperplan_bench.eval.report import SCRIPTED_NOTE

            out.print(f"note: {SCRIPTED_NOTE}", highlight=False)
        console.print(f"report: hyperplan eval report {run_id} --store {store}")


def _suite_options(**options: str | None) -> dict[str, str]:
    return {k: v for k, v in options.items() if v}


def _run_with_progress(cfg: EvalConfig, db: RunStore, run_id: str, total: int) -> None:
    counts: Counter[str] = Counter()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console,
                  disable=not console.is_terminal) as bar:
        job = bar.add_task("running", total=max(total, 1))

        def update(outcome: TaskOutcome, done: int, _total: int) -> None:
            counts["success"] += outcome.success
            counts["tokens"] += outcome.metrics["prompt_tokens"] + \
                outcome.metrics["completion_tokens"]
            bar.update(job, completed=done, description=(
                f"success {counts['success']}/{done} · tokens {counts['tokens']}"))

        run_eval(cfg, db, run_id, update, on_lost=print_warning)


def summarize_run(db: RunStore, run_id: str) -> dict[str, Any]:
    """Per-agent totals of a stored run."""
    info = db.run(run_id)
    agents: dict[str, dict[str, int]] = {}
    for r in db.results(run_id):
        row = agents.setdefault(r.agent, Counter())
        row["tasks"] += 1
        row["success"] += r.success
        row["tool_calls"] += int(r.metrics.get("tool_calls", 0))
        row["llm_calls"] += int(r.metrics.get("llm_calls", 0))
        row["tokens"] += int(r.metrics.get("prompt_tokens", 0)) + \
            int(r.metrics.get("completion_tokens", 0))
    if not agents and info.agents:
        raise HyperplanError(f"run {run_id} has no results yet")
    return {"run_id": run_id, "suite": info.suite, "llm": info.llm,
            "agents": {a: dict(v) for a, v in sorted(agents.items())}}


@renamed_options({"--out": "--output"})
def report_cmd(
    run_id: str = typer.Argument(..., help="A run id from `hyperplan eval run`."),
    store: Path = typer.Option(DEFAULT_STORE, help="SQLite run store."),
    out_dir: Annotated[Path | None, output_option(
        "Output directory (default reports/RUN_ID).")] = None,
) -> None:
    """Write report.md, PNG plots and a self-contained report.html for a stored run."""
    from hyperplan_bench.eval.report import write_report

    target = out_dir or Path("reports") / run_id
    if not store.exists():
        fail(f"{store}: run store not found")
    with RunStore(store) as db:
        written = write_report(db, run_id, target)
    for kind, path in written.items():
        out.print(f"{kind}: {path}")
