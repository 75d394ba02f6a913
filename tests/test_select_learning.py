"""Learning from use: observed data flows strengthen links, persist beside the cached graph,
and ``hyperplan graph learn`` does it offline from traces or flows files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hyperplan.catalog import Catalog, build_catalog, make_tool
from hyperplan.embed import HashingEmbedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.events import ToolCalled
from hyperplan.graph.build import build_graph
from hyperplan.graph.io import load_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.graph.overrides import ObservedFlow
from hyperplan.select import build_selector
from hyperplan.select.flows import flows_from_trace, read_flows, write_flows


def _catalog() -> Catalog:
    """``send_report`` takes a ``document`` that no name or type match ties to
    ``render``'s ``pdf_url``: only use shows the flow."""
    return build_catalog([
        make_tool(name="render", description="Render the quarterly figures.",
                  input_schema={"type": "object", "properties": {"quarter": {"type": "string"}},
                                "required": ["quarter"]},
                  output_schema={"type": "object",
                                 "properties": {"pdf_url": {"type": "string"}}}),
        make_tool(name="send_report", description="Send a report to the board.",
                  input_schema={"type": "object",
                                "properties": {"document": {"type": "string"},
                                               "board": {"type": "string"}},
                                "required": ["document", "board"]},
                  output_schema={"type": "object", "properties": {"sent": {"type": "boolean"}}}),
    ], source="reports")


def _weight(graph: Hypergraph, source: str, target: str) -> float:
    src, dst = graph.node_index[source], graph.node_index[target]
    for s, t, w in zip(graph.link_source, graph.link_target, graph.link_weight, strict=True):
        if (int(s), int(t)) == (src, dst):
            return float(w)
    return 0.0


FLOW = ("render:out:pdf_url", "send_report:in:document")


def test_a_session_learns_a_flow_and_the_next_build_keeps_it(tmp_path: Path) -> None:
    selector = build_selector([_catalog()], embedder="hashing", cache_dir=tmp_path)
    before = _weight(selector.graph, *FLOW)
    session = selector.session("send the quarterly report to the board")
    session.observe("render", {"quarter": "Q3"}, {"pdf_url": "https://x/q3.pdf"})
    session.observe("send_report", {"document": "https://x/q3.pdf", "board": "main"},
                    {"sent": True})
    assert session.flows == [ObservedFlow("render", "pdf_url", "send_report", "document")]
    assert selector.learn(session.flows) == 1
    learned = _weight(selector.graph, *FLOW)
    assert learned == pytest.approx(before + 0.5 * (1 - before))
    again = build_selector([_catalog()], embedder="hashing", cache_dir=tmp_path)
    assert _weight(again.graph, *FLOW) == pytest.approx(learned)  # persisted in the entry


def test_flows_that_name_unknown_nodes_are_skipped() -> None:
    selector = build_selector([_catalog()], embedder="hashing", cache_dir=None)
    assert selector.learn([ObservedFlow("render", "nope", "send_report", "document"),
                           ObservedFlow("ghost", "x", "send_report", "document")]) == 0


def test_trace_replay_and_flows_files(tmp_path: Path) -> None:
    graph = build_graph(_catalog(), embedder=HashingEmbedder())
    events = [
        ToolCalled(tool="render", arguments={"quarter": "Q3"}, ok=True,
                   value={"pdf_url": "u-1"}),
        ToolCalled(tool="send_report", ok=True, value={"sent": True},
                   arguments={"document": "u-1", "board": "b"}),
        ToolCalled(tool="send_report", reused=True, ok=True,
                   arguments={"document": "u-1", "board": "b"}, value={"sent": True}),
    ]
    flows = flows_from_trace(graph, events)
    assert flows == [ObservedFlow("render", "pdf_url", "send_report", "document")]
    path = tmp_path / "flows.jsonl"
    assert write_flows(path, flows) == 1
    assert read_flows(path) == flows
    path.write_text('{"producer": "render"}\n')
    with pytest.raises(HyperplanError, match=r"flows.jsonl:1: not a flow"):
        read_flows(path)


def test_graph_learn_command(tmp_path: Path) -> None:
    from hyperplan.graph.io import save_graph

    graph = build_graph(_catalog(), embedder=HashingEmbedder())
    save_graph(graph, tmp_path / "g.json")
    trace = tmp_path / "run.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in [
        {"t": 0, "type": "run_start"},
        {"t": 1, "type": "tool_call", "tool": "render", "arguments": {"quarter": "Q3"},
         "ok": True, "value": {"pdf_url": "u-1"}},
        {"t": 2, "type": "tool_call", "tool": "send_report", "ok": True,
         "arguments": {"document": "u-1", "board": "b"}, "value": {"sent": True}},
    ]) + "\n")
    cmd = [sys.executable, "-m", "hyperplan", "graph", "learn", str(tmp_path / "g.json"),
           str(trace), "-o", str(tmp_path / "learned.json"), "--json"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["flows"] == 1 and summary["used"] == 1
    learned = load_graph(tmp_path / "learned.json")
    assert _weight(learned, *FLOW) > _weight(graph, *FLOW)
    bad = subprocess.run([*cmd[:6], str(tmp_path / "missing.jsonl"), *cmd[7:]],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "no such file" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_eval_learning_uses_one_split_and_scores_the_other() -> None:
    from hyperplan_bench.eval.learning import check_learning_split, learned
    from hyperplan_bench.importers.gold import GoldFlow, GoldTask

    check_learning_split(None, "all")
    check_learning_split("dev", "heldout")
    for learn, split in (("dev", "dev"), ("dev", "all"), ("heldout", "heldout")):
        with pytest.raises(HyperplanError, match="scores the tasks it learned from"):
            check_learning_split(learn, split)
    with pytest.raises(HyperplanError, match="must be dev or heldout"):
        check_learning_split("all", "heldout")
    graph = build_graph(_catalog(), embedder=HashingEmbedder())
    flow = GoldFlow("render", "pdf_url", "send_report", "document")
    tasks = [GoldTask("t1", "send the report", ("render", "send_report"), (flow,)),
             GoldTask("t2", "again", ("render", "send_report"),
                      (flow, GoldFlow("render", "ghost", "send_report", "board")))]
    strengthened, used = learned(graph, tasks)
    assert used == 1  # the same flow once; the unknown output skipped
    assert _weight(strengthened, *FLOW) > _weight(graph, *FLOW)
