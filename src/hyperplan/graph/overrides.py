"""User overrides of dependency links and strengthening from observed data flows.

Override file (YAML or JSON)::

    add:       # new links; an existing lighter link is raised to this weight
      - {from: "spotify.login:out:access_token", to: "spotify.show_song:in:access_token",
         weight: 1.0}
    remove:    # one link, or every link between two tools
      - {from: "a:out:x", to: "b:in:y"}
      - {from_tool: "gmail.login", to_tool: "spotify.show_song"}
    reweight:
      - {from: "a:out:x", to: "b:in:y", weight: 0.3}

Nodes are named ``<tool>:<in|out|pre|eff>:<path>`` as ``hyperplan graph show`` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hyperplan.errors import GraphError, OverrideError, yaml_problem
from hyperplan.graph.model import Hypergraph, Link, NodeKind, node_key


@dataclass(frozen=True)
class LinkOverrides:
    add: tuple[tuple[str, str, float], ...] = ()
    remove: tuple[tuple[str, str], ...] = ()
    remove_tools: tuple[tuple[str, str], ...] = ()
    reweight: tuple[tuple[str, str, float], ...] = ()


def load_overrides(path: str | Path) -> LinkOverrides:
    """Parse an override file; malformed entries raise :class:`OverrideError` naming the file,
    the section and the entry number."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
        doc = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except FileNotFoundError:
        raise OverrideError(f"{p}: override file not found") from None
    except OSError as exc:
        raise OverrideError(f"{p}: cannot read override file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise OverrideError(f"{p}: override file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise OverrideError(f"{p}: malformed override file: {exc}") from None
    except yaml.YAMLError as exc:
        raise OverrideError(f"{p}: malformed override file: {yaml_problem(exc)}") from None
    doc = doc or {}
    if not isinstance(doc, dict):
        raise OverrideError(f"{p}: expected a mapping with add/remove/reweight")
    unknown = set(doc) - {"add", "remove", "reweight"}
    if unknown:
        raise OverrideError(f"{p}: unknown section(s) {sorted(unknown)}")
    removals = list(enumerate(_entries(p, doc, "remove")))
    return LinkOverrides(
        add=tuple(_weighted(p, "add", k, e) for k, e in enumerate(_entries(p, doc, "add"))),
        remove=tuple(
            _pair(p, "remove", k, e, "from", "to") for k, e in removals if "from_tool" not in e
        ),
        remove_tools=tuple(
            _pair(p, "remove", k, e, "from_tool", "to_tool") for k, e in removals
            if "from_tool" in e
        ),
        reweight=tuple(
            _weighted(p, "reweight", k, e) for k, e in enumerate(_entries(p, doc, "reweight"))
        ),
    )


def _entries(p: Path, doc: dict[str, Any], section: str) -> list[dict[str, Any]]:
    items = doc.get(section) or []
    if not isinstance(items, list) or not all(isinstance(e, dict) for e in items):
        raise OverrideError(f"{p}: section {section!r} must be a list of mappings")
    return items


def _pair(p: Path, section: str, k: int, e: dict[str, Any], a: str, b: str) -> tuple[str, str]:
    if not isinstance(e.get(a), str) or not isinstance(e.get(b), str):
        raise OverrideError(f"{p}: {section}[{k}] needs string fields {a!r} and {b!r}")
    return e[a], e[b]


def _weighted(p: Path, section: str, k: int, e: dict[str, Any]) -> tuple[str, str, float]:
    src, dst = _pair(p, section, k, e, "from", "to")
    weight = e.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not (
        0.0 < float(weight) <= 1.0
    ):
        raise OverrideError(f"{p}: {section}[{k}] weight must be a number in (0, 1]")
    return src, dst, float(weight)


def _node_id(graph: Hypergraph, name: str, where: str) -> int:
    try:
        return graph.node(name).id
    except GraphError:
        raise OverrideError(f"{where}: unknown schema node {name!r}") from None


def apply_overrides(graph: Hypergraph, overrides: LinkOverrides) -> Hypergraph:
    """A new graph with ``overrides`` applied (remove, then reweight, then add)."""
    links = {(lk.source, lk.target): lk for lk in graph.links()}
    for src, dst in overrides.remove:
        links.pop((_node_id(graph, src, "remove"), _node_id(graph, dst, "remove")), None)
    for src_tool, dst_tool in overrides.remove_tools:
        a, b = _tool_id(graph, src_tool), _tool_id(graph, dst_tool)
        links = {k: v for k, v in links.items()
                 if not (graph.nodes[k[0]].tool == a and graph.nodes[k[1]].tool == b)}
    for src, dst, w in overrides.reweight:
        key = (_node_id(graph, src, "reweight"), _node_id(graph, dst, "reweight"))
        if key not in links:
            raise OverrideError(f"reweight: no link {src} -> {dst} to reweight")
        links[key] = Link(key[0], key[1], w, "override")
    for src, dst, w in overrides.add:
        key = (_node_id(graph, src, "add"), _node_id(graph, dst, "add"))
        if key not in links or links[key].weight < w:
            links[key] = Link(key[0], key[1], w, "override")
    try:
        return graph.with_links(links.values())
    except GraphError as exc:
        raise OverrideError(f"override makes an invalid link: {exc}") from None


def _tool_id(graph: Hypergraph, name: str) -> int:
    try:
        return graph.tool(name).id
    except GraphError:
        raise OverrideError(f"remove: unknown tool {name!r}") from None


@dataclass(frozen=True)
class ObservedFlow:
    """A value that flowed from ``producer``'s output ``output_path`` into ``consumer``'s
    input ``input_param`` in a successful trace."""

    producer: str
    output_path: str
    consumer: str
    input_param: str


def strengthen_from_traces(
    graph: Hypergraph, flows: Iterable[ObservedFlow], *, rate: float = 0.5
) -> Hypergraph:
    """Move each observed link's weight towards 1: w <- w + rate·(1 - w); a flow with no link
    yet is added with weight ``rate``. Flows naming unknown nodes raise :class:`GraphError`."""
    if not 0.0 < rate <= 1.0:
        raise ValueError("rate must be in (0, 1]")
    links = {(lk.source, lk.target): lk for lk in graph.links()}
    for flow in flows:
        src = graph.node(node_key(flow.producer, NodeKind.OUTPUT, flow.output_path)).id
        dst = graph.node(node_key(flow.consumer, NodeKind.INPUT, flow.input_param)).id
        old = links.get((src, dst))
        weight = rate if old is None else old.weight + rate * (1.0 - old.weight)
        links[(src, dst)] = Link(src, dst, min(weight, 1.0), "trace")
    return graph.with_links(links.values())
