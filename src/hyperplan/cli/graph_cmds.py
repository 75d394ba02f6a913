"""``hyperplan graph build|stats|show|export``."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from hyperplan.catalog import printable
from hyperplan.cli.common import (
    console,
    embedder_from_option,
    fail,
    out,
    printed_warnings,
    stage_progress,
)
from hyperplan.cli.options import AllowUnsafeTools, embedder_option
from hyperplan.embed.cache import CachedEmbedder
from hyperplan.graph.build import build_graph
from hyperplan.graph.export import neighbourhood, to_dot, to_mermaid
from hyperplan.graph.io import (
    check_output,
    load_graph,
    matrix_path,
    recorded_matrix_name,
    save_graph,
)
from hyperplan.graph.links import LinkConfig
from hyperplan.graph.model import Evidence, Hypergraph, NodeKind, SchemaNode
from hyperplan.graph.safe_paths import check_output_path, write_text
from hyperplan.graph.text import NAMELESS_OUTPUTS, did_you_mean, listed
from hyperplan.importers.repair import summary as repair_summary
from hyperplan.retrieve.context_graph import index_texts
from hyperplan.sources import demo_catalog_path, load_source

graph_app = typer.Typer(help="Build and inspect Tool-Schema Hypergraphs.", no_args_is_help=True)


@graph_app.command("build")
def build_cmd(
    source: str = typer.Argument(..., help="KIND:LOCATION, e.g. appworld:DIR, openai:FILE"),
    output: Path = typer.Option(..., "-o", "--output", help="graph JSON to write (+ .npz)"),
    embedder: str = embedder_option("auto"),
    overrides: Path | None = typer.Option(None, help="YAML/JSON link overrides"),
    min_weight: float = typer.Option(LinkConfig.min_weight, help="keep links at least this"),
    warm: bool = typer.Option(True, "--warm/--no-warm",
                              help="embed the retrieval texts into the embedding cache now, so "
                                   "the first query on this graph is fast"),
    allow_unsafe_tools: AllowUnsafeTools = False,
    annotations: Path | None = typer.Option(
        None, "--annotations", metavar="FILE",
        help="inferred outputs, preconditions and effects to build with (graph annotate)"),
    llm_annotate: str | None = typer.Option(
        None, "--llm-annotate", metavar="URL",
        help="first ask the model at this OpenAI-compatible base URL for every tool's outputs, "
             "preconditions and effects (cached per tool)"),
) -> None:
    """Import a tool catalog, infer dependency links and save the hypergraph."""
    if not 0 < min_weight <= 1:
        fail(f"--min-weight must be in (0, 1] (link weights are), got {min_weight}")
    check_output(output, protect=source_paths(source))
    with printed_warnings():
        catalog = load_source(source, allow_unsafe_tools=allow_unsafe_tools)
    if not len(catalog):
        fail(f"{source}: no tools found")
    console.print(f"imported {len(catalog)} tools from {source}")
    if catalog.repairs:  # on stderr: --json outputs stay clean
        console.print(repair_summary(catalog.repairs), highlight=False)
    config = LinkConfig(min_weight=min_weight)
    text_embedder = embedder_from_option(embedder)
    annotated = None
    if annotations is not None or llm_annotate is not None:
        from hyperplan.cli.graph_annotate import annotations_for

        with printed_warnings():
            annotated = annotations_for(catalog, file=annotations, url=llm_annotate)
    with stage_progress() as progress, printed_warnings():
        graph = build_graph(catalog, embedder=text_embedder, config=config,
                            overrides=overrides, progress=progress, annotations=annotated)
        if warm and isinstance(text_embedder, CachedEmbedder):
            warm_retrieval_cache(graph, text_embedder, progress)
    check_output(output, protect=source_paths(source))  # again: the build took a while
    json_path, npz_path = save_graph(graph, output)
    print_stats(graph)
    unnamed = unnamed_outputs(graph)
    if unnamed:
        shown = listed(unnamed)
        tools = "1 tool returns" if len(unnamed) == 1 else f"{len(unnamed)} tools return"
        console.print(f"[yellow]note[/yellow]: {tools} a bare value with no name and no "
                      f"description ({shown}); no input can be linked to it. "
                      "Describe it (a docstring's 'Returns:' section, a schema description) or "
                      "name its fields (a TypedDict, an object schema).", highlight=False)
    out.print(f"wrote {json_path} and {npz_path} in {graph.metadata.get('build_seconds')} s")


def source_paths(source: str) -> tuple[Path, ...]:
    """The existing files or directories a ``KIND:LOCATION`` source reads, which an output
    must not overwrite: the location of file and directory sources, the shipped catalog of
    ``demo``, the module file (or package directory) of ``python:MOD`` found without importing
    it, the existing files named in an ``mcp-server:`` command (its script); nothing for
    ``tau2:``, whose data is installed with its package."""
    if source == "demo":
        return (demo_catalog_path(),)
    kind, _, location = source.partition(":")
    if kind == "python":
        candidates = _module_paths(location.partition(":")[0])
    elif kind == "mcp-server":
        try:
            candidates = [Path(word) for word in shlex.split(location)]
        except ValueError:
            candidates = []
    elif kind == "tau2" or not location:
        candidates = []
    else:
        candidates = [Path(location)]
    return tuple(p for p in candidates if p.exists())


def _module_paths(module: str) -> list[Path]:
    """Where the top-level package of ``module`` lives, found on ``sys.path`` without
    importing anything: its directory, or its single file."""
    top = module.strip().partition(".")[0]
    try:
        spec = PathFinder.find_spec(top) if top.isidentifier() else None
    except (ImportError, ValueError, OSError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    return [Path(spec.origin)] if spec.origin else []


def graph_files(path: Path) -> tuple[Path, ...]:
    """The graph JSON ``path`` and the matrix file it records (or would be saved with)."""
    name = recorded_matrix_name(path)
    return (path, path.parent / name if name and "/" not in name else matrix_path(path))


def warm_retrieval_cache(graph: Hypergraph, embedder: CachedEmbedder,
                         progress: Callable[[str, int, int], None], chunk: int = 512) -> None:
    """Embed the texts a retrieval index of ``graph`` needs (:func:`index_texts`: one per tool
    and schema node, 64,000 for GitHub's REST API) into ``embedder``'s cache, with progress."""
    texts = list(dict.fromkeys(index_texts(graph)))
    for start in range(0, len(texts), chunk):
        progress("embedding texts for retrieval", start, len(texts))
        embedder.embed(texts[start: start + chunk])
    progress("embedding texts for retrieval", len(texts), len(texts))


def unnamed_outputs(graph: Hypergraph) -> list[str]:
    """The tools whose output is a bare value (``result``, or ``[]`` for a list of scalars)
    without a description: link inference has nothing to name it by."""
    return [graph.tools[n.tool].name for n in graph.nodes
            if n.kind is NodeKind.OUTPUT and n.path in NAMELESS_OUTPUTS and not n.description]


def graph_stats(graph: Hypergraph) -> dict[str, Any]:
    """Counts that describe a graph (also the ``--json`` output of ``graph stats``)."""
    kinds = Counter(n.kind.value for n in graph.nodes)
    evidence = Counter(graph.link_evidence)
    produced = np.diff(graph.producer_matrix.indptr) > 0
    required = [v for t in graph.tools for v in t.required]
    unsupported = sum(1 for v in required if not produced[v])
    weights = graph.link_weight
    return {
        "tools": graph.n_tools,
        "nodes": graph.n_nodes,
        "nodes_by_kind": {k.value: kinds.get(k.value, 0) for k in NodeKind},
        "links": graph.n_links,
        "links_by_evidence": dict(sorted(evidence.items())),
        "link_weight_quartiles": [round(float(q), 3) for q in np.quantile(weights, [.25, .5, .75])]
        if weights.size else [],
        "required_inputs": len(required),
        "required_inputs_without_producer": unsupported,
        "unnamed_outputs": len(unnamed_outputs(graph)),
        "nodes_by_evidence": dict(sorted(Counter(n.evidence.value for n in graph.nodes).items())),
        "build_seconds": graph.metadata.get("build_seconds"),
        "embedder": graph.metadata.get("embedder"),
    }


def print_stats(graph: Hypergraph) -> None:
    stats = graph_stats(graph)
    table = Table(title="Tool-Schema Hypergraph", show_header=False)
    table.add_row("tools", str(stats["tools"]))
    table.add_row("schema nodes", str(stats["nodes"]))
    for kind, count in stats["nodes_by_kind"].items():
        table.add_row(f"  {NodeKind(kind).name.lower()}", str(count))
    table.add_row("dependency links", str(stats["links"]))
    for evidence, count in stats["links_by_evidence"].items():
        table.add_row(f"  {evidence}", str(count))
    table.add_row("required inputs", str(stats["required_inputs"]))
    table.add_row("  without any producer", str(stats["required_inputs_without_producer"]))
    out.print(table)


@graph_app.command("stats")
def stats_cmd(
    path: Path = typer.Argument(..., help="graph JSON"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Node, link and coverage counts of a saved graph."""
    graph = load_graph(path)
    if as_json:
        print(json.dumps(graph_stats(graph)))
    else:
        print_stats(graph)


def print_tool(graph: Hypergraph, name: str, min_weight: float, limit: int = 8) -> None:
    tool = graph.tool(name)
    # descriptions are the catalog author's text: no markup, no terminal controls
    out.print(f"\n[bold]{escape(tool.name)}[/bold] — {escape(printable(tool.description))}",
              highlight=False)
    table = Table("input / precondition", "req", "producers (weight)")
    for v in tool.inputs:
        node = graph.nodes[v]
        producers = [
            f"{graph.tools[graph.nodes[lk.source].tool].name}.{graph.nodes[lk.source].path} "
            f"({lk.weight:.2f})"
            for lk in sorted(graph.links_into(v), key=lambda lk: -lk.weight)
            if lk.weight >= min_weight
        ]
        shown = producers[:limit] + ([f"… {len(producers) - limit} more"]
                                     if len(producers) > limit else [])
        table.add_row(f"{node.kind.value}:{node.path}{_evidence_note(node)}",
                      "yes" if node.required else "", "\n".join(shown) or "-")
    out.print(table)
    consumers = sorted(graph.tools[t].name for t in graph.downstream(tool.id))
    outputs = ", ".join(f"{escape(graph.nodes[o].path)}{_evidence_note(graph.nodes[o])}"
                        for o in tool.outputs)
    out.print(f"outputs: {outputs or '-'}", highlight=False)
    out.print(f"consumers: {', '.join(consumers) or '-'}", highlight=False)


def _evidence_note(node: SchemaNode) -> str:
    """`` [description 0.60]`` for a node the catalog does not declare, else ``""``."""
    if node.evidence is Evidence.DECLARED and node.confidence == 1.0:
        return ""
    return escape(f" [{node.evidence.value} {node.confidence:.2f}]")


@graph_app.command("show")
def show_cmd(
    path: Path = typer.Argument(..., help="graph JSON"),
    tool: str = typer.Argument(..., help="tool name"),
    min_weight: float = typer.Option(0.0, help="hide links below this weight"),
) -> None:
    """A tool's inputs with their producers and weights, its outputs and consumers."""
    graph = load_graph(path)
    if tool not in graph.tool_index:
        hint = did_you_mean(tool, graph.tool_index,
                            fallback=[n for n in graph.tool_index if tool.lower() in n.lower()])
        fail(f"{path}: no tool named {tool!r}" + (f"; {hint}" if hint else ""))
    print_tool(graph, tool, min_weight)


@graph_app.command("export")
def export_cmd(
    path: Path = typer.Argument(..., help="graph JSON"),
    fmt: str = typer.Option("dot", "--format", "-f", help="dot | mermaid"),
    tool: list[str] = typer.Option([], "--tool", "-t", help="centre tool(s); default: all"),
    hops: int = typer.Option(1, help="neighbourhood radius around --tool"),
    min_weight: float = typer.Option(0.0, help="drop links below this weight"),
    output: Path | None = typer.Option(None, "-o", "--output", help="file (default stdout)"),
) -> None:
    """Export the graph, or the neighbourhood of some tools, to DOT or Mermaid."""
    if output:  # before the work: an output that would destroy data is refused at once
        check_output_path(output, graph_files(path))
    graph = load_graph(path)
    if tool:
        graph = graph.induce(neighbourhood(graph, tool, hops))
    if fmt not in ("dot", "mermaid"):
        fail(f"unknown format {fmt!r}; expected dot or mermaid")
    text = to_dot(graph, min_weight=min_weight) if fmt == "dot" else to_mermaid(
        graph, min_weight=min_weight)
    if output:
        write_text(check_output_path(output, graph_files(path)), text)
        console.print(f"wrote {output} ({graph.n_tools} tools)")
    else:
        print(text, end="")
