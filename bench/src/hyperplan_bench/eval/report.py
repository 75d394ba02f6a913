"""Reports of stored evaluation runs: a Markdown table, matplotlib plots
and one self-contained HTML file with a trace viewer per task.

Per agent: tasks, task success (the checker's verdict) with a 95% Wilson interval, TGC (task
goal completion = success rate) and SGC (scenario goal completion: every task of a scenario
succeeded; only when the suite groups tasks into scenarios), mean tool calls, LLM calls,
prompt / completion tokens, tool-documentation tokens in prompts, wall seconds, budget
exhaustion and failure categories. Every report carries the suite, LLM, model, command and
date; a run with the scripted double is labelled as such, never as a model's success rate.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from hyperplan_bench.eval.store import ResultRow, RunInfo, RunStore

SCRIPTED_NOTE = ("LLM: scripted test double (fixed answers per task), not a model. These "
                 "numbers exercise the harness; they are not an agent's success rate.")


@dataclass(frozen=True)
class AgentSummary:
    agent: str
    tasks: int
    success: int
    ci95: tuple[float, float]
    sgc: float | None
    tool_calls: float
    llm_calls: float
    prompt_tokens: float
    completion_tokens: float
    tool_doc_tokens: float
    seconds: float
    budget_exhausted: int
    categories: dict[str, int]

    @property
    def rate(self) -> float:
        return self.success / self.tasks if self.tasks else 0.0


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def summarize_agents(rows: Sequence[ResultRow], scenarios: dict[str, str] | None = None
                     ) -> list[AgentSummary]:
    by_agent: dict[str, list[ResultRow]] = defaultdict(list)
    for r in rows:
        by_agent[r.agent].append(r)
    out = []
    for agent, items in sorted(by_agent.items()):
        n = len(items)
        wins = sum(r.success for r in items)

        def mean(key: str, rows: list[ResultRow] = items) -> float:
            return round(sum(float(r.metrics.get(key, 0)) for r in rows) / max(len(rows), 1), 2)

        out.append(AgentSummary(
            agent, n, wins, wilson(wins, n), _sgc(items, scenarios or {}),
            mean("tool_calls"), mean("llm_calls"), mean("prompt_tokens"),
            mean("completion_tokens"), mean("tool_doc_tokens"), mean("seconds"),
            sum(bool(r.metrics.get("budget_exhausted")) for r in items),
            dict(Counter(str(r.metrics.get("category", "?")) for r in items)),
        ))
    return out


def _sgc(rows: list[ResultRow], scenarios: dict[str, str]) -> float | None:
    """Scenario goal completion: the fraction of scenarios whose every task succeeded. The
    scenario of a task comes from ``scenarios`` or else from its stored ``metrics``."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        scenario = scenarios.get(r.task_id) or str(r.metrics.get("scenario") or "")
        if scenario:
            groups[scenario].append(r.success)
    if not groups:
        return None
    return round(sum(all(v) for v in groups.values()) / len(groups), 4)


def markdown(info: RunInfo, summaries: Sequence[AgentSummary]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(info.created))
    lines = [f"# Run {info.run_id}", "",
             f"- suite: `{info.suite}`; LLM: `{info.llm}`; model: `{info.model or '-'}`; "
             f"date: {when} UTC",
             f"- command: `{info.command}`", ""]
    if info.llm == "scripted":
        lines += [f"> {SCRIPTED_NOTE}", ""]
    lines += ["| agent | tasks | success (TGC) | 95% CI | SGC | tool calls | LLM calls | "
              "prompt tok | completion tok | tool-doc tok | s | budget hit | failures |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        fails = ", ".join(f"{k} {v}" for k, v in sorted(s.categories.items()) if k != "ok")
        sgc = "-" if s.sgc is None else f"{s.sgc:.3f}"
        lines.append(
            f"| {s.agent} | {s.tasks} | {s.rate:.3f} | {s.ci95[0]:.2f}–{s.ci95[1]:.2f} | "
            f"{sgc} | {s.tool_calls} | {s.llm_calls} | {s.prompt_tokens} | "
            f"{s.completion_tokens} | {s.tool_doc_tokens} | {s.seconds} | "
            f"{s.budget_exhausted} | {fails or '-'} |")
    return "\n".join(lines) + "\n"


def write_plots(out_dir: Path, summaries: Sequence[AgentSummary]) -> list[Path]:
    """success_vs_cost.png and cost_per_agent.png (matplotlib, extra ``plot``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from hyperplan.errors import HyperplanError

        raise HyperplanError("plots need matplotlib: pip install 'hyperplan[plot]'") from None
    names = [s.agent for s in summaries]
    tokens = [s.prompt_tokens + s.completion_tokens for s in summaries]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter(tokens, [s.rate for s in summaries])
    for s, x in zip(summaries, tokens, strict=True):
        ax.annotate(s.agent, (x, s.rate), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("mean tokens per task")
    ax.set_ylabel("task success")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("success vs cost")
    first = out_dir / "success_vs_cost.png"
    fig.tight_layout()
    fig.savefig(first, dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    axes[0].bar(names, [s.tool_calls for s in summaries], label="tool calls")
    axes[0].bar(names, [s.llm_calls for s in summaries], bottom=[s.tool_calls for s in
                                                                 summaries], label="LLM calls")
    axes[0].set_title("calls per task")
    axes[0].legend()
    axes[1].bar(names, tokens)
    axes[1].set_title("tokens per task")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30)
    second = out_dir / "cost_per_agent.png"
    fig.tight_layout()
    fig.savefig(second, dpi=110)
    plt.close(fig)
    return [first, second]


def html_report(info: RunInfo, summaries: Sequence[AgentSummary],
                rows: Sequence[ResultRow]) -> str:
    """One self-contained HTML page: the table and a trace viewer per (task, agent)."""
    data = {
        "run": {"id": info.run_id, "suite": info.suite, "llm": info.llm, "model": info.model,
                "command": info.command,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(info.created)),
                "note": SCRIPTED_NOTE if info.llm == "scripted" else ""},
        "agents": [{"agent": s.agent, "tasks": s.tasks, "success": s.success,
                    "rate": round(s.rate, 4), "ci95": s.ci95, "tool_calls": s.tool_calls,
                    "llm_calls": s.llm_calls,
                    "tokens": s.prompt_tokens + s.completion_tokens,
                    "categories": s.categories} for s in summaries],
        "results": [{"task": r.task_id, "agent": r.agent, "status": r.status,
                     "success": r.success, "metrics": dict(r.metrics),
                     "trace": [_slim(e) for e in r.trace]} for r in rows],
    }
    payload = json.dumps(data, default=str).replace("</", "<\\/")
    template = resources.files("hyperplan_bench.eval").joinpath("templates", "report.html")
    page = template.read_text("utf-8")
    return page.replace("__TITLE__", html.escape(f"hyperplan run {info.run_id}")) \
        .replace("__DATA__", payload)


def _slim(event: dict[str, Any]) -> dict[str, Any]:
    """Trace events for the viewer, without the (long) context-graph prompt text."""
    return {k: v for k, v in event.items()
            if not (event.get("type") == "context_graph" and k == "text")}


def write_report(store: RunStore, run_id: str, out_dir: Path,
                 scenarios: dict[str, str] | None = None) -> dict[str, Path]:
    """report.md, the PNG plots and report.html for ``run_id`` in ``out_dir``."""
    info = store.run(run_id)
    rows = list(store.results(run_id))
    summaries = summarize_agents(rows, scenarios)
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "report.md"
    md.write_text(markdown(info, summaries), encoding="utf-8")
    plots = write_plots(out_dir, summaries)
    page = out_dir / "report.html"
    page.write_text(html_report(info, summaries, rows), encoding="utf-8")
    return {"markdown": md, "html": page, **{p.stem: p for p in plots}}
