"""``hyperplan demo``: the agent on the demo world's tasks.

By default every task runs LLM-free on its structured goal: for each task the demo prints the
Tool Context Graph of its request (what a planner would be shown), the support graph DOE chose
for each sub-goal, every call with its arguments and result, and whether the world's checker
accepts the final state, next to the fewest calls the checker needs. With an LLM endpoint
(``--llm`` or ``HYPERPLAN_LLM_BASE_URL``) the full agent runs on the natural-language requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from hyperplan.cli.common import out
from hyperplan.cli.options import Model, embedder_option, llm_option
from hyperplan.cli.run_cmds import search_embedder
from hyperplan.cli.trace_render import render_event
from hyperplan.connect import llm_from_options
from hyperplan.demo_world import DemoTask, DemoWorld, load_tasks
from hyperplan.embed.base import Embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.agent import RunResult, namespaces, run_goal, run_request, tool_links
from hyperplan.execute.events import ContextGraphShown
from hyperplan.execute.runtimes import PythonRuntime
from hyperplan.execute.subtask import RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.llm.budget import Accounting
from hyperplan.retrieve import GraphIndex, extract_context_graph, interpret_request
from hyperplan.retrieve.serialize import count_tokens, serialize_context_graph


def demo(
    task: list[str] = typer.Option([], "--task", help="Run only these task ids (repeatable)."),
    embedder: str = embedder_option("auto"),
    llm: str | None = llm_option("run the full agent on the natural-language requests "
                                 "(else HYPERPLAN_LLM_BASE_URL)"),
    model: Model = None,
    trace_dir: Path = typer.Option(None, help="Write one JSONL trace per task here."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary table."),
    as_json: bool = typer.Option(False, "--json", help="Print per-task results as JSON."),
) -> None:
    """Run the agent on the demo world's tasks (LLM-free unless an endpoint is configured)."""
    tasks = _select(load_tasks(), task)
    world = DemoWorld()
    emb = search_embedder(embedder)
    graph = build_graph(world.catalog(), embedder=emb)
    index = GraphIndex(graph, emb)
    probe = llm_from_options(llm, model, Accounting(), check=True)
    use_llm = probe is not None
    if probe is not None:
        model = probe.model
    if not as_json:
        out.print(f"[bold]Demo world[/bold]: {graph.n_tools} tools in "
                  f"{len(namespaces(graph))} apps, {graph.n_links} links; {len(tasks)} tasks; "
                  + ("full agent with an LLM" if use_llm else "LLM-free (structured goals)"))
    rows = [_run_task(t, world, graph, index, emb, use_llm, llm, model, trace_dir,
                      show=not (quiet or as_json)) for t in tasks]
    if as_json:
        out.print_json(json.dumps(rows))
    else:
        _summary(rows)
    failed = [r for r in rows if not r["ambiguous"] and not r["check"]]
    if failed and not use_llm:
        raise typer.Exit(1)


def _select(tasks: list[DemoTask], wanted: list[str]) -> list[DemoTask]:
    if not wanted:
        return tasks
    known = {t.id: t for t in tasks}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise HyperplanError(f"unknown demo task(s) {unknown}; known: {', '.join(known)}")
    return [known[w] for w in wanted]


def _run_task(task: DemoTask, world: DemoWorld, graph: Hypergraph, index: GraphIndex,
              emb: Embedder, use_llm: bool, llm: str | None, model: str | None,
              trace_dir: Path | None, show: bool) -> dict[str, Any]:
    world.reset()
    accounting = Accounting()
    tracer = TraceWriter(trace_dir / f"{task.id}.jsonl" if trace_dir else None)
    client = llm_from_options(llm, model, accounting) if use_llm else None
    ctx = RunContext(graph=graph, catalog=world.catalog(),
                     runtime=PythonRuntime(world.callables()), accounting=accounting,
                     tracer=tracer, llm=TracedLLM(client, tracer) if client else None,
                     request=task.request, embedder=emb, index=index)
    if show:
        out.print(f"\n[bold cyan]{task.id}[/bold cyan] {task.request}", highlight=False)
    try:
        if client is not None:
            result = run_request(ctx, task.request, emb, index)
        else:
            _context_event(tracer, graph, index, emb, task.request)
            result = run_goal(ctx, task.goal)
    finally:
        tracer.close()
    passed = bool(task.check(world))
    if show:
        for e in tracer.events:
            for line in render_event(e):
                out.print(line, highlight=False)
        _verdict(task, result, passed)
    return {"task": task.id, "ambiguous": task.ambiguous, "status": result.status,
            "check": passed, "tool_calls": result.tool_calls, "min_calls": task.min_calls,
            "llm_calls": result.llm_calls,
            "blocked": [b.as_dict() for b in result.blocked]}


def _context_event(tracer: TraceWriter, graph: Hypergraph, index: GraphIndex, emb: Embedder,
                   request: str) -> None:
    cg = extract_context_graph(graph, interpret_request(request, namespaces(graph)),
                               embedder=emb, index=index)
    text = serialize_context_graph(cg)
    tracer.emit(ContextGraphShown(tools=cg.tool_names, tokens=count_tokens(text),
                                  links=tool_links(cg.subgraph)))


def _verdict(task: DemoTask, result: RunResult, passed: bool) -> None:
    if passed:
        out.print(f"  [green]solved[/green]: {result.tool_calls} tool calls (checker minimum "
                  f"{task.min_calls}), {result.llm_calls} LLM calls")
    elif task.ambiguous and result.status == "blocked":
        out.print("  [yellow]stopped[/yellow]: the goal is ambiguous; candidates listed above "
                  f"({task.notes})" if task.notes else "  [yellow]stopped[/yellow]: ambiguous")
    else:
        out.print(f"  [red]not solved[/red]: {result.status} {result.message}", highlight=False)


def _summary(rows: list[dict[str, Any]]) -> None:
    table = Table(title="demo tasks")
    for col in ("task", "status", "checker", "tool calls", "min", "LLM calls"):
        table.add_column(col)
    for r in rows:
        expected = r["ambiguous"] and r["status"] == "blocked"  # stopping is the right outcome
        table.add_row(r["task"], f"{r['status']} (expected)" if expected else r["status"],
                      "pass" if r["check"] else "fail",
                      str(r["tool_calls"]), str(r["min_calls"]), str(r["llm_calls"]))
    out.print(table)
    plain = [r for r in rows if not r["ambiguous"]]
    solved = sum(r["check"] for r in plain)
    minimal = sum(r["check"] and r["tool_calls"] == r["min_calls"] for r in plain)
    ambiguous = [r for r in rows if r["ambiguous"]]
    stopped = sum(r["status"] == "blocked" for r in ambiguous)
    out.print(f"unambiguous tasks solved: {solved}/{len(plain)} ({minimal} with the minimum "
                  f"number of calls); ambiguous tasks stopped with candidates: "
                  f"{stopped}/{len(ambiguous)}; LLM calls: {sum(r['llm_calls'] for r in rows)}")
