"""``hyperplan run`` (the agent on your tools) and ``hyperplan trace show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from hyperplan.catalog import Catalog
from hyperplan.cli.common import budget_from_options, console, embedder_from_option, fail, out
from hyperplan.cli.options import (
    AllowUnsafeTools,
    BaseUrl,
    Headers,
    IdempotencyKeyHeader,
    MaxResponseBytes,
    Model,
    deprecation,
    embedder_option,
    llm_option,
)
from hyperplan.cli.trace_render import render_event
from hyperplan.connect import llm_from_options, parse_headers, tools_from_source
from hyperplan.embed import get_embedder
from hyperplan.embed.base import Embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.agent import RunResult, run_goal, run_request
from hyperplan.execute.events import TraceEvent
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.runtimes.http import DEFAULT_MAX_RESPONSE_BYTES
from hyperplan.execute.sandboxing import Sandbox
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import (
    DEFAULT_MAX_CHARS,
    TraceWriter,
    malformed_event,
    read_events,
    summarize,
)
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.graph.build import build_graph
from hyperplan.graph.io import load_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.text import listed
from hyperplan.llm.budget import Accounting
from hyperplan.secrets import SECRETS, redact_text

trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True)


def _goal(goal: str) -> StructuredGoal:
    """``--goal``: a JSON object, or the path of a file holding one (inline JSON is never
    taken for a path: a long one is no valid file name)."""
    where, text = "--goal", goal
    if not goal.lstrip().startswith(("{", "[")):
        path = Path(goal)
        where = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HyperplanError(f"--goal {goal!r}: no such file, and not a JSON "
                                 "object") from None
        except OSError as exc:
            raise HyperplanError(f"{path}: cannot read the goal file ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise HyperplanError(f"{path}: not JSON (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HyperplanError(f"{where}: not JSON: {exc.msg} (line {exc.lineno})") from None
    return StructuredGoal.from_dict(data, source=where)


RunTools = Annotated[list[str], typer.Option(
    "--tools",
    help="python:MOD | openapi:FILE | 'mcp-server:CMD' | demo-world | any catalog source "
    "(planning only); repeat to use several (merged in order)")]
McpCommand = Annotated[str | None, typer.Option(
    "--mcp-command", hidden=True, help="Deprecated: use --tools 'mcp-server:CMD'.")]
GraphFile = Annotated[Path | None, typer.Option(
    "--graph", help="A graph saved by `graph build` from the same tools (its links and "
    "overrides are used; nothing is rebuilt).")]
Overrides = Annotated[Path | None, typer.Option(
    help="YAML/JSON link overrides for the graph built from --tools.")]
MaxSeconds = Annotated[float | None, typer.Option(
    help="Budget: wall time, a hard deadline for the whole run (every call gets the time "
    "left).")]
TraceMaxChars = Annotated[int, typer.Option(
    help="Longest string value a trace keeps (the rest is cut and marked).")]
SandboxOption = Annotated[Sandbox, typer.Option(
    help="subprocess: run python: tools in a child process without network, with CPU, "
    "memory and file-size limits and the run's deadline.")]


def run(
    request: str = typer.Argument("", help="What to do, in natural language (needs an LLM)."),
    tools: RunTools = [],  # noqa: B006 (typer copies it)
    mcp_command: McpCommand = None,
    goal: str = typer.Option(None, help="Structured goal (JSON or a file): LLM-free mode."),
    llm: str | None = llm_option("the agent's model (else HYPERPLAN_LLM_BASE_URL); key from "
                                 "HYPERPLAN_LLM_API_KEY"),
    model: Model = None,
    embedder: str = embedder_option("auto"),
    graph_file: GraphFile = None,
    overrides: Overrides = None,
    base_url: BaseUrl = None,
    header: Headers = [],  # noqa: B006 (typer copies it)
    trace: Path = typer.Option(None, help="Write the JSONL trace here."),
    max_llm_calls: int = typer.Option(None, help="Budget: LLM calls."),
    max_tokens: int = typer.Option(None, help="Budget: prompt + completion tokens."),
    max_tool_calls: int = typer.Option(None, help="Budget: tool calls."),
    max_seconds: MaxSeconds = None,
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES,
    idempotency_key_header: IdempotencyKeyHeader = None,
    trace_max_chars: TraceMaxChars = DEFAULT_MAX_CHARS,
    allow_unsafe_tools: AllowUnsafeTools = False,
    sandbox: SandboxOption = Sandbox.NONE,
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run the agent: LLM-free on a structured --goal, or the full agent on REQUEST."""
    accounting = Accounting(budget_from_options(max_llm_calls, max_tokens, max_tool_calls,
                                                max_seconds))
    if max_response_bytes < 1 or trace_max_chars < 1:
        raise HyperplanError("--max-response-bytes and --trace-max-chars must be positive")
    structured = _secret_goal(goal)
    if mcp_command is not None:
        deprecation("--mcp-command CMD", "--tools 'mcp-server:CMD'")
    setup = tools_from_source(tools, base_url=base_url, headers=parse_headers(header),
                              mcp_command=mcp_command,
                              timeout=accounting.deadline(30.0) or 30.0,
                              max_response_bytes=max_response_bytes,
                              idempotency_header=idempotency_key_header,
                              allow_unsafe_tools=allow_unsafe_tools, sandbox=sandbox)
    client = None if goal else llm_from_options(llm, model, accounting, check=True)
    if goal is None:
        _check_request(request, has_llm=client is not None)
    emb = search_embedder(embedder)
    graph = _run_graph(setup.catalog, graph_file, overrides, emb)
    tracer = TraceWriter(trace, max_chars=trace_max_chars)
    ctx = RunContext(graph=graph, catalog=setup.catalog, runtime=setup.runtime,
                     accounting=accounting, tracer=tracer, config=AgentConfig(),
                     llm=TracedLLM(client, tracer) if client else None, request=request,
                     embedder=emb)
    try:
        result = (run_goal(ctx, structured) if structured is not None
                  else run_request(ctx, request, emb))
        tracer.close()
        print_outcome(result, tracer.events, as_json, trace)  # before the servers are stopped
    finally:
        tracer.close()
        setup.runtime.close()
    if result.status not in ("success", "blocked"):
        raise typer.Exit(2)


def _secret_goal(goal: str | None) -> StructuredGoal | None:
    """The structured goal of ``--goal``; its secret values are redacted from everything."""
    if goal is None:
        return None
    if not goal.strip():
        raise HyperplanError("--goal is empty: give a JSON object or a file holding one")
    structured = _goal(goal)
    SECRETS.add_all(str(v) for v in structured.secret_values())
    return structured


def _check_request(request: str, *, has_llm: bool) -> None:
    if not has_llm:
        raise HyperplanError("give --goal for an LLM-free run, or --llm URL (or set "
                             "HYPERPLAN_LLM_BASE_URL) to run the agent on a request")
    if not request.strip():
        raise HyperplanError("the request is empty")


def _run_graph(catalog: Catalog, graph_file: Path | None, overrides: Path | None,
               emb: Embedder) -> Hypergraph:
    """The graph a run plans over: a saved one (built from the same tools), else built here."""
    if graph_file is not None and overrides is not None:
        raise HyperplanError("--overrides applies to a graph built here; a --graph file "
                             "already has its overrides (give them to `graph build`)")
    if graph_file is None:
        return build_graph(catalog, embedder=emb, overrides=overrides)
    graph = load_graph(graph_file)
    check_graph_tools(graph, [t.name for t in catalog.tools], graph_file)
    return graph


def print_outcome(result: RunResult, events: list[TraceEvent], as_json: bool,
                  trace: Path | None) -> None:
    """The result as JSON (redacted by value, :mod:`hyperplan.secrets`) or as text."""
    if as_json:
        out.print_json(redact_text(json.dumps(result.as_dict(), default=str)))
        return
    print_result(result, events)
    if trace:
        console.print(f"trace: {trace}")


def check_graph_tools(graph: Hypergraph, names: list[str], path: Path) -> None:
    """A saved graph must have been built from the tools being run: the same names in the
    same order (tool ids index both)."""
    built = [t.name for t in graph.tools]
    if built == names:
        return
    missing = [n for n in names if n not in graph.tool_index]
    extra = sorted(set(built) - set(names))
    parts = [f"{len(missing)} of the tools are not in it ({listed(missing)})" if missing else "",
             f"it has {len(extra)} other tools ({listed(extra)})" if extra else ""]
    why = "; ".join(p for p in parts if p) or "its tools are in another order"
    raise HyperplanError(f"--graph {path} was not built from these tools: {why}; rebuild it "
                         "with `hyperplan graph build` from the same source")


def search_embedder(spec: str) -> Embedder:
    """The embedder for retrieval: ``none`` (no description similarity) falls back to the
    hashing embedder, since the context graph needs vectors."""
    emb = embedder_from_option(spec)
    return emb if isinstance(emb, Embedder) else get_embedder("hashing")


def print_result(result: RunResult, events: list[TraceEvent]) -> None:
    """Context graph, plans, support graphs, every call, and the outcome."""
    for e in events:
        for line in render_event(e):
            out.print(redact_text(line), highlight=False)
    colour = {"success": "green", "blocked": "yellow"}.get(result.status, "red")
    out.print(f"[{colour}]{result.status}[/{colour}] tool calls {result.tool_calls}, "
              f"LLM calls {result.llm_calls} {escape(redact_text(result.message))}",
              highlight=False)


@trace_app.command("show")
def trace_show(
    path: Path = typer.Argument(..., help="A JSONL trace written by run/demo."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Summarise a trace and replay its steps: plan versions, support graphs, calls."""
    events = read_events(path)
    if not events:
        fail(f"{path}: empty trace (no events)")
    why = malformed_event(events)
    if why:
        fail(f"{path}: not a trace written by hyperplan run/demo: {why}")
    summary = summarize(events)
    lines = [line for e in events for line in render_event(e)]
    if as_json:
        out.print_json(json.dumps(summary))
        return
    table = Table(title=str(path), show_header=False)
    for key, value in summary.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    out.print(table)
    for line in lines:
        out.print(line, highlight=False)
