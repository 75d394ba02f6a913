"""graph-tool-call (PyPI ``graph-tool-call``, MIT), the closest open competitor of the
pre-selection benchmark (:mod:`hyperplan_bench.eval.preselect`): "graph-structured tool retrieval",
BM25 and an embedding index fused with a tool graph whose prerequisite relations are detected
by rules from the tools' names and schemas (``ToolGraph.add_tools(detect_dependencies=True)``).

Its graph is built through its public API from the same tools the other methods see, as MCP
tool dicts (name, description, ``inputSchema``, the ``outputSchema`` where the catalog declares
one, and the MCP ``annotations`` an MCP catalog carries): ``ToolGraph.ingest_mcp_tools``, which
detects the dependencies. Its embedding index is enabled with the benchmark's embedder (its
default, ``sentence-transformers/all-MiniLM-L6-v2``, is the model ``--embedder auto`` uses
here; a callable keeps the vectors the same as the other methods'), so its query embedding goes
through the same memo or model as theirs. Each request is ``ToolGraph.retrieve(request,
top_k=K)`` in its default ``basic`` mode (no LLM). Run when importable, else skipped and said so
in the JSON.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hyperplan.catalog import Catalog, ToolSpec

GTC_VERSION = "0.47.0"
METHOD = "graph_tool_call"
Timed = tuple[list[int], float, float]


def gtc_status() -> tuple[bool, str]:
    """Whether graph-tool-call can run here, and its version or why not."""
    try:
        import graph_tool_call
        from graph_tool_call import ToolGraph  # noqa: F401
    except ImportError as exc:
        return False, (f"graph-tool-call is not installed ({exc}); pip install "
                       f"graph-tool-call=={GTC_VERSION} to run it")
    return True, str(getattr(graph_tool_call, "__version__", "unknown"))


def mcp_tool(tool: ToolSpec) -> dict[str, Any]:
    """``tool`` as an MCP ``tools/list`` entry (what graph-tool-call ingests)."""
    entry: dict[str, Any] = {"name": tool.name, "description": tool.description,
                             "inputSchema": tool.input_schema}
    if tool.output_schema:
        entry["outputSchema"] = tool.output_schema
    annotations = tool.metadata.get("annotations")
    if isinstance(annotations, dict) and annotations:
        entry["annotations"] = dict(annotations)
    return entry


class GTCRanker:
    """graph-tool-call's ``ToolGraph`` over one catalog (module doc); ``embed`` maps texts to
    vectors (the benchmark routes it through its memo or its model)."""

    def __init__(self, catalog: Catalog, embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        from graph_tool_call import ToolGraph

        self.graph = ToolGraph()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its notes on large catalogs, once per build
            self.graph.ingest_mcp_tools([mcp_tool(t) for t in catalog.tools])
            self.graph.enable_embedding(lambda texts: np.asarray(embed(list(texts))).tolist())
        self.index = {t.name: i for i, t in enumerate(catalog.tools)}

    def top(self, text: str, k: int) -> Timed:
        """Tool ids in graph-tool-call's order (at most ``k``) and the milliseconds of its
        ``retrieve`` (its query embedding included, served as the embedder serves it)."""
        wall, cpu = time.perf_counter(), time.thread_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = self.graph.retrieve(text, top_k=k)
        ms, cpu_ms = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
        ids = [self.index[t.name] for t in found if t.name in self.index]
        return list(dict.fromkeys(ids))[:k], ms, cpu_ms
