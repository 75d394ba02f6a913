"""The graph build of the gateway, in a child process:
``python -m hyperplan.integrations.mcp_gateway.build CATALOG.json EMBEDDER CACHE_DIR
[ANNOTATIONS.json]``.

Building the Tool-Schema Hypergraph of a large catalog takes minutes of CPU, and parts of it
hold the interpreter lock for seconds at a time; in the gateway's own process that would
stall the requests it serves meanwhile. So the gateway's builder
(:class:`~.selection.GatewayBuilder`) writes the catalog to a file and runs this module,
which builds the graph into the selection cache (:func:`hyperplan.select.cache.cached_build`)
and embeds every tool and schema node into the embedder's disk cache (the Tool Context
Graph's index). The gateway then reads both, which is
fast and leaves it responsive. Exit status 0 on success; on failure, the reason is the last
line of stderr (redacted, then cut: :func:`failure_line`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from hyperplan.integrations.host.pool import failure_line

__all__ = ["build", "failure_line", "main"]


def build(catalog_file: Path, embedder: str, cache_dir: Path,
          annotations_file: Path | None = None) -> None:
    """Build and store the graph of the catalog in ``catalog_file`` (module doc), with the
    inferred nodes of ``annotations_file`` (an annotation file) when given."""
    from hyperplan.catalog import Catalog
    from hyperplan.embed import get_embedder
    from hyperplan.graph.annotations import load_annotations
    from hyperplan.retrieve.context_graph import GraphIndex
    from hyperplan.select.cache import cached_build

    catalog = Catalog.model_validate_json(catalog_file.read_text(encoding="utf-8"))
    emb = get_embedder(embedder)
    annotations = load_annotations(annotations_file) if annotations_file else None
    graph, _ = cached_build(catalog, emb, cache_dir, annotations=annotations)
    GraphIndex(graph, emb)  # fills the embedding cache the gateway's index reads


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 4):
        raise SystemExit("usage: python -m hyperplan.integrations.mcp_gateway.build "
                         "CATALOG.json EMBEDDER CACHE_DIR [ANNOTATIONS.json]")
    try:
        build(Path(args[0]), args[1], Path(args[2]), Path(args[3]) if len(args) == 4 else None)
    except Exception as exc:
        print(failure_line(exc), file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
