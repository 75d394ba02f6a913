"""``hyperplan graph learn``: strengthen a graph's links from the data flows of real use."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hyperplan.cli.common import console, fail, out


def _is_trace(path: Path) -> bool:
    """Whether ``path`` is a ``hyperplan run --trace`` file (its records have a ``type``)
    rather than a flows file (records with ``producer``/``consumer``)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                fail(f"{path}: line 1 is not JSON; expected a trace or a flows file")
            return isinstance(row, dict) and "type" in row
    return False


def learn_cmd(
    graph_file: Path = typer.Argument(..., help="graph JSON (from hyperplan graph build)"),
    inputs: list[Path] = typer.Argument(..., help="trace files (hyperplan run --trace) or "
                                        "flows files (JSON lines: producer, output, "
                                        "consumer, input)"),
    output: Path = typer.Option(..., "-o", "--output", help="graph JSON to write (+ .npz)"),
    rate: float = typer.Option(0.5, help="w <- w + rate * (1 - w) per observed flow; a flow "
                                         "with no link yet gets weight rate"),
    as_json: bool = typer.Option(False, "--json", help="print only a JSON summary"),
) -> None:
    """Strengthen the links of a graph from the data flows observed in traces: a value one
    call returned that a later call received as an argument moves that link's weight towards
    1 (a flow with no link yet adds one). Flows naming tools or fields the graph does not have
    are counted and skipped."""
    from hyperplan.execute.trace import read_events
    from hyperplan.graph.io import check_output, load_graph, save_graph
    from hyperplan.graph.overrides import ObservedFlow, strengthen_from_traces
    from hyperplan.select.flows import flows_from_trace, known_flows, read_flows

    if not 0 < rate <= 1:
        fail(f"--rate must be in (0, 1], got {rate}")
    graph = load_graph(graph_file)
    check_output(output, protect=tuple(inputs))
    flows: list[ObservedFlow] = []
    for path in inputs:
        if not path.is_file():
            fail(f"{path}: no such file")
        found = (flows_from_trace(graph, read_events(path)) if _is_trace(path)
                 else read_flows(path))
        flows.extend(found)
    kept = known_flows(graph, flows)
    before = set(zip(graph.link_source.tolist(), graph.link_target.tolist(), strict=True))
    learned = strengthen_from_traces(graph, kept, rate=rate) if kept else graph
    after = set(zip(learned.link_source.tolist(), learned.link_target.tolist(), strict=True))
    json_path, npz_path = save_graph(learned, output)
    summary = {"flows": len(flows), "used": len(kept), "skipped": len(flows) - len(kept),
               "new_links": len(after - before), "links": learned.n_links,
               "output": str(json_path)}
    if as_json:
        print(json.dumps(summary))
        return
    console.print(f"{len(flows)} flows observed, {len(kept)} used "
                  f"({summary['skipped']} name tools or fields the graph lacks); "
                  f"{summary['new_links']} new links")
    out.print(f"wrote {json_path} and {npz_path}")
