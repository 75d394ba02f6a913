"""``hyperplan demo``: build and show the graph of the shipped example catalog."""

from __future__ import annotations

import typer

from hyperplan.cli.common import embedder_from_option, out
from hyperplan.cli.graph_cmds import print_stats, print_tool
from hyperplan.graph.build import build_graph
from hyperplan.graph.export import to_mermaid
from hyperplan.sources import demo_catalog_path, load_source


def demo(
    embedder: str = typer.Option("auto", help="auto | minilm | hashing | none | openai:MODEL"),
) -> None:
    """Build the Tool-Schema Hypergraph of a small music/mail catalog and show it."""
    catalog = load_source("demo")
    out.print(f"[bold]Example catalog[/bold]: {demo_catalog_path()} ({len(catalog)} tools)")
    graph = build_graph(catalog, embedder=embedder_from_option(embedder))
    print_stats(graph)
    for tool in ("music.add_song_to_playlist", "music.login"):
        print_tool(graph, tool, min_weight=0.0)
    out.print("\n[bold]Mermaid (tool-level view)[/bold]")
    print(to_mermaid(graph, min_weight=0.6), end="")
