"""Export a (sub)hypergraph to Graphviz DOT or Mermaid, one box per tool and one arrow per
producer -> consumer tool pair, labelled with the port links ``out -> in (w)``.

Names come from catalogs nobody vetted (and from graph files that may have been edited), so
every label is made inert here whatever the catalog let through: control, bidi and line
separator characters become spaces (no terminal escapes, no broken lines, no reordered text),
and each format's own syntax inside a label is escaped (DOT: ``\\``, ``"`` and ``&``, since
Graphviz decodes HTML entities in plain labels; Mermaid: quotes, brackets, pipes, ``<``/``>``
and entity syntax). ``<`` and ``>`` need no escape in a quoted DOT string: only HTML labels
(``label=<...>``) and record shapes read them, and neither is written.
"""

from __future__ import annotations

import re
from collections import defaultdict

from hyperplan.catalog import CONTROL_CHARS
from hyperplan.graph.model import Hypergraph

#: What never reaches an export: the catalog's control and bidi characters, plus the Unicode
#: line and paragraph separators (line breaks to some renderers).
_UNPRINTABLE = re.compile(f"{CONTROL_CHARS.pattern}|[\u2028\u2029]")


def neighbourhood(graph: Hypergraph, tools: list[str], hops: int = 1) -> list[int]:
    """Tool ids within ``hops`` upstream/downstream steps of the named tools."""
    frontier = {graph.tool(name).id for name in tools}
    seen = set(frontier)
    for _ in range(hops):
        nxt: set[int] = set()
        for tid in frontier:
            nxt |= graph.upstream(tid) | graph.downstream(tid)
        frontier = nxt - seen
        seen |= nxt
    return sorted(seen)


def _tool_links(graph: Hypergraph, min_weight: float) -> dict[tuple[int, int], list[str]]:
    grouped: dict[tuple[int, int], list[str]] = defaultdict(list)
    for lk in graph.links():
        if lk.weight < min_weight:
            continue
        src, dst = graph.nodes[lk.source], graph.nodes[lk.target]
        grouped[(src.tool, dst.tool)].append(f"{src.path} -> {dst.path} ({lk.weight:.2f})")
    return grouped


def _dot_str(text: str) -> str:
    """``text`` as a quoted DOT string that renders as itself (module doc)."""
    text = _UNPRINTABLE.sub(" ", text)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;") + '"'


def to_dot(graph: Hypergraph, *, min_weight: float = 0.0, max_labels: int = 3) -> str:
    """Graphviz DOT text of the tool-level view of ``graph``."""
    lines = ["digraph hyperplan {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    for tool in graph.tools:
        ins = ", ".join(graph.nodes[v].path for v in tool.inputs)
        lines.append(f"  t{tool.id} [label={_dot_str(f'{tool.name}({ins})')}];")
    for (a, b), labels in sorted(_tool_links(graph, min_weight).items()):
        shown = labels[:max_labels] + (["..."] if len(labels) > max_labels else [])
        label = "\\n".join(_dot_str(text)[1:-1] for text in shown)
        lines.append(f'  t{a} -> t{b} [label="{label}", fontsize=8];')
    lines.append("}")
    return "\n".join(lines) + "\n"


_MERMAID_UNSAFE = re.compile(r'["<>{}\[\]|#;]')
_MERMAID_CODES = {"&": "#38;", "`": "#96;"}  # HTML entities, a markdown string's backticks


def _mermaid_text(text: str) -> str:
    """``text`` safe inside a quoted Mermaid label: control characters, quotes, brackets,
    entity and edge syntax become spaces, except the array marker of a path
    (``songs[].id``), and ``&`` and backticks, written with Mermaid's entity codes so they
    show as themselves."""
    parts = [_MERMAID_UNSAFE.sub(" ", _UNPRINTABLE.sub(" ", part)) for part in text.split("[]")]
    joined = "#91;#93;".join(parts)
    if "&" in joined or "`" in joined:
        joined = "".join(_MERMAID_CODES.get(ch, ch) for ch in joined)
    return joined


def to_mermaid(graph: Hypergraph, *, min_weight: float = 0.0, max_labels: int = 2) -> str:
    """Mermaid flowchart text of the tool-level view of ``graph``."""
    lines = ["flowchart LR"]
    for tool in graph.tools:
        lines.append(f'  t{tool.id}["{_mermaid_text(tool.name)}"]')
    for (a, b), labels in sorted(_tool_links(graph, min_weight).items()):
        shown = labels[:max_labels] + (["..."] if len(labels) > max_labels else [])
        label = _mermaid_text("; ".join(shown).replace("->", "→"))
        lines.append(f'  t{a} -->|"{label}"| t{b}')
    return "\n".join(lines) + "\n"
