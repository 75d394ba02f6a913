"""``hyperplan plan context|support``: the deterministic core on a saved graph, no LLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from hyperplan.cli.common import embedder_from_option, fail, out
from hyperplan.cli.options import ToolBudget, embedder_option
from hyperplan.embed.base import Embedder
from hyperplan.graph.io import load_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.text import did_you_mean
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import ground
from hyperplan.plan.relevance import request_relevance
from hyperplan.plan.support import PolicyName, SupportPlan, plan_support
from hyperplan.retrieve import (
    ContextGraphConfig,
    GraphIndex,
    count_tokens,
    extract_context_graph,
    interpret_request,
    serialize_context_graph,
)

plan_app = typer.Typer(help="Tool Context Graph and DOE on a saved graph.", no_args_is_help=True)


def _split(values: str) -> list[str]:
    return [v.strip() for v in values.split(",") if v.strip()]


@plan_app.command("context")
def context_cmd(
    path: Path = typer.Argument(..., help="graph JSON"),
    request: str = typer.Argument(..., help="the user's request, in plain words"),
    budget: ToolBudget = 20,
    embedder: str = embedder_option("auto", "none is refused here (the context graph "
                                                    "needs vectors)"),
    prompt: bool = typer.Option(False, "--prompt", help="print the planner prompt text"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Extract the Tool Context Graph for a request (Definition 2)."""
    if budget < 1:
        fail(f"--budget must be >= 1, got {budget}")
    graph = load_graph(path)
    emb = embedder_from_option(embedder)
    if emb is None or not isinstance(emb, Embedder):
        fail("the context graph needs an embedder; use --embedder hashing for a lexical one")
    index = GraphIndex(graph, emb)
    interpretation = interpret_request(request, index.namespaces)
    context = extract_context_graph(graph, interpretation, embedder=emb, index=index,
                                    config=ContextGraphConfig(budget=budget))
    text = serialize_context_graph(context)
    if as_json:
        print(json.dumps({
            "operations": list(interpretation.operations),
            "schemas": list(interpretation.schemas),
            "tools": [{"name": t.name, "score": round(t.score, 4), "reason": t.reason,
                       "hop": t.hop, "via": t.via} for t in context.tools],
            "prompt_tokens": count_tokens(text),
        }))
        return
    out.print(f"operations: {list(interpretation.operations)}", highlight=False)
    out.print(f"schemas: {list(interpretation.schemas)}", highlight=False)
    table = Table("tool", "score", "reason", "via")
    for tool in context.tools:
        table.add_row(tool.name, f"{tool.score:.3f}", tool.reason, tool.via)
    out.print(table)
    out.print(f"{len(context.tools)} tools, {count_tokens(text)} prompt tokens")
    if prompt:
        print(text)


def _plan_json(graph: Hypergraph, plan: SupportPlan, policy: PolicyName) -> dict[str, Any]:
    """The plan as printed: the chosen graph's tools in execution order and its links, the
    tools :func:`~hyperplan.plan.support.attach_claimants` added, and the policy's steps
    whose plan was kept (``steps``, in order)."""
    chosen = plan.chosen
    return {
        "ok": chosen is not None,
        "reason": "" if chosen is not None else plan.reason(graph),
        "tools": [graph.tools[t].name for t in chosen.tools] if chosen else [],
        "links": [
            {"from": graph.node_name(r.source), "to": graph.node_name(r.deficit),
             "weight": round(r.weight, 4)}
            for r in (chosen.resolutions if chosen else ())
        ],
        "attached": [graph.tools[t].name for t in sorted(plan.attached)],
        "policy": policy.value,
        "steps": list(plan.via),
    }


def _relevance(graph: Hypergraph, request: str, embedder: str) -> np.ndarray | None:
    """The tools' relevance to ``request`` as ``hyperplan run`` computes it (None without a
    request)."""
    if not request.strip():
        return None
    from hyperplan.cli.run_cmds import search_embedder

    return request_relevance(graph, request, search_embedder(embedder))


@plan_app.command("support")
def support_cmd(
    path: Path = typer.Argument(..., help="graph JSON"),
    tools: str = typer.Argument(..., help="candidate terminal tool(s), comma-separated"),
    known: str = typer.Option("", help="known values: parameter names or node keys, "
                                       "comma-separated (e.g. query,spotify.login:in:username)"),
    effects: str = typer.Option("", help="achieved effects, e.g. spotify.authenticated"),
    top_k: int = typer.Option(DOEConfig.top_k, help="producers per expansion (K)"),
    beam: int = typer.Option(DOEConfig.beam_width, help="beam width (B)"),
    policy: PolicyName = typer.Option(
        PolicyName.AGENT, "--policy", help="the planning policy (hyperplan.plan.support): "
        "agent = what `hyperplan run` and `hyperplan demo` run (DOE, open-world producers, the "
        "stated-value repairs); paper = DOE and Support Graph Selection only; selector = the "
        "selector's; chains = the chains benchmark's"),
    request: str = typer.Option("", "--request", help="the user's request: "
                                "the tools' relevance to it, computed as `hyperplan run` does, "
                                "turns on the policy's steps that need one (none without it)"),
    embedder: str = embedder_option("auto", "embeds --request (none: hashing)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Deficit-Oriented Expansion: the producer tools a terminal tool still needs.

    The fewest producer tools still missing for the terminal tool, given what is already
    known (Definitions 5-6), planned by the policy the agent runs (--policy); the known
    parameter names count as values the user stated."""
    if top_k < 1 or beam < 1:
        fail(f"--top-k and --beam must be >= 1, got {top_k} and {beam}")
    if not _split(tools):
        fail("give at least one terminal tool name")
    graph = load_graph(path)
    unknown = [t for t in _split(tools) if t not in graph.tool_index]
    if unknown:
        hints = [f"{t!r} ({hint})" if (hint := did_you_mean(t, graph.tool_index)) else repr(t)
                 for t in unknown]
        fail(f"{path}: unknown tool(s) {', '.join(hints)}")
    grounding = ground(graph, _split(known), _split(effects))
    stated = {name for name in _split(known) if ":" not in name}  # bare names, as the agent
    plan = plan_support(graph, _split(tools), grounding, _relevance(graph, request, embedder),
                        policy.policy, config=DOEConfig(top_k=top_k, beam_width=beam),
                        stated=stated)
    result = _plan_json(graph, plan, policy)
    if as_json:
        print(json.dumps(result))
        return
    _print_plan(result)


def _print_plan(result: dict[str, Any]) -> None:
    if not result["ok"]:
        out.print(f"[red]{result['reason']}[/red]", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    out.print("execution order: " + " -> ".join(result["tools"]), highlight=False,
              soft_wrap=True)
    for link in result["links"]:
        out.print(f"  {link['from']} -> {link['to']} ({link['weight']:.2f})", highlight=False,
                  soft_wrap=True)
    if result["attached"]:
        out.print("attached: " + ", ".join(result["attached"]), highlight=False, soft_wrap=True)
    if result["steps"]:
        out.print(f"steps (policy {result['policy']}): " + ", ".join(result["steps"]),
                  highlight=False, soft_wrap=True)
