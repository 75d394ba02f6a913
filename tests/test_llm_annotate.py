"""LLM-assisted construction (issue 37, item 5): ``hyperplan graph annotate`` and
:mod:`hyperplan.llm.annotate` with the scripted double, and end to end against the real local
llama.cpp server when ``HYPERPLAN_LLM_TEST_URL`` is set (required in CI with
``HYPERPLAN_LLM_TEST_REQUIRED=1``, as in tests/test_llm_server.py): plumbing only, the tiny
model's content is not judged."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperplan.catalog import Catalog, build_catalog, make_tool
from hyperplan.embed import HashingEmbedder, get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.graph.annotations import load_annotations
from hyperplan.graph.build import build_graph
from hyperplan.graph.io import save_graph
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.llm import ScriptedLLM, ScriptedRule
from hyperplan.llm.annotate import (
    ANSWER_SCHEMA,
    annotate_catalog,
    annotation_messages,
    read_answer,
    tool_key,
)
from hyperplan.select import build_selector
from hyperplan.select.cache import entry_path

runner = CliRunner()

TICKET = {"nodes": [
    {"kind": "out", "path": "ticket_id", "type": "string", "description": "the new ticket's id",
     "confidence": 0.95},
    {"kind": "pre", "path": "session.authenticated", "type": "boolean",
     "description": "logged in", "confidence": 0.6},
    {"kind": "eff", "path": "ticket.created", "type": "boolean", "description": "a ticket exists",
     "confidence": 0.7},
]}
CLOSE = {"nodes": [{"kind": "eff", "path": "ticket.closed", "type": "boolean",
                    "description": "the ticket is closed", "confidence": 0.9}]}


def _catalog() -> Catalog:
    return build_catalog([
        make_tool(name="create_ticket", description="Open a support ticket for a problem.",
                  input_schema={"type": "object", "properties": {
                      "title": {"type": "string", "description": "one line"},
                      "body": {"type": "string"}}, "required": ["title"]}),
        make_tool(name="close_ticket", description="Close a support ticket.",
                  input_schema={"type": "object",
                                "properties": {"ticket_id": {"type": "string"}},
                                "required": ["ticket_id"]}),
    ], source="tickets")


REASKED = ScriptedRule(json=TICKET, pattern=r"^Your previous reply was rejected")


def _rules(*extra: ScriptedRule) -> list[ScriptedRule]:
    return [*extra, ScriptedRule(json=TICKET, pattern=r"Tool: create_ticket"),
            ScriptedRule(json=CLOSE, pattern=r"Tool: close_ticket")]


def test_a_valid_answer_gives_llm_nodes(tmp_path: Path) -> None:
    llm = ScriptedLLM(_rules())
    run = annotate_catalog(_catalog(), llm, cache_dir=tmp_path / "cache")
    assert (run.asked, run.cached, run.skipped, run.calls) == (2, 0, (), 2)
    nodes = {(n.kind, n.path): n for n in run.annotations["create_ticket"]}
    assert set(nodes) == {(NodeKind.OUTPUT, "ticket_id"),
                          (NodeKind.PRECONDITION, "session.authenticated"),
                          (NodeKind.EFFECT, "ticket.created")}
    assert all(n.evidence is Evidence.LLM for n in nodes.values())
    assert nodes[(NodeKind.OUTPUT, "ticket_id")].confidence == 0.95
    call = llm.calls[0]
    assert call.schema == ANSWER_SCHEMA and call.component == "annotator"
    system, user = call.messages[0].content, call.messages[-1].content
    for word in ("outputs", "precondition", "effect", "snake_case", "device.bluetooth.enabled"):
        assert word in system
    assert "create_ticket" in user and "Open a support ticket" in user
    assert "- title (string, required): one line" in user and "- body (string)" in user


def test_an_invalid_answer_is_re_asked_once_with_the_error(tmp_path: Path) -> None:
    bad_kind = {"nodes": [{"kind": "output", "path": "ticket_id", "type": "string",
                           "description": "", "confidence": 0.8}]}
    llm = ScriptedLLM(_rules(ScriptedRule(json=bad_kind, pattern=r"Tool: create_ticket",
                                          times=1), REASKED))
    run = annotate_catalog(_catalog(), llm, cache_dir=None, workers=1)
    assert run.skipped == () and run.calls == 3
    assert {n.path for n in run.annotations["create_ticket"]} >= {"ticket_id"}
    retry = next(c for c in llm.calls if c.messages[-1].role == "user"
                 and "rejected" in c.messages[-1].content)
    assert "Tool: create_ticket" in retry.messages[1].content
    assert retry.messages[-2].role == "assistant" and "output" in retry.messages[-2].content
    assert "rejected" in retry.messages[-1].content and "kind" in retry.messages[-1].content


def test_a_path_that_is_no_canonical_name_is_re_asked(tmp_path: Path) -> None:
    prose = {"nodes": [{"kind": "out", "path": "the ID of the ticket!", "type": "string",
                        "description": "", "confidence": 0.5}]}
    llm = ScriptedLLM(_rules(ScriptedRule(json=prose, pattern=r"Tool: create_ticket",
                                          times=1), REASKED))
    run = annotate_catalog(_catalog(), llm, cache_dir=None, workers=1)
    assert run.skipped == () and "ticket_id" in {n.path for n in run.annotations["create_ticket"]}
    retry = [c for c in llm.calls if "Tool: create_ticket" in c.messages[1].content][1]
    assert "snake_case" in retry.messages[-1].content
    assert "nodes[0].path" in retry.messages[-1].content


def test_paths_are_folded_to_snake_case() -> None:
    nodes = read_answer({"nodes": [{"kind": "out", "path": " Ticket ID ", "type": "string",
                                    "description": "", "confidence": 0.5},
                                   {"kind": "out", "path": "items[].order-id", "type": "integer",
                                    "description": "", "confidence": 0.5}]}, "t")
    assert [n.path for n in nodes] == ["ticket_id", "items[].order_id"]


def test_invalid_twice_skips_the_tool_with_a_warning(tmp_path: Path) -> None:
    bad = {"nodes": [{"kind": "out", "path": "x", "type": "text", "description": "",
                      "confidence": 2}]}
    llm = ScriptedLLM(_rules(ScriptedRule(json=bad, pattern=r"Tool: create_ticket"),
                             ScriptedRule(json=bad, pattern=r"rejected")))
    with pytest.warns(UserWarning, match=r"tool 'create_ticket': no valid answer after a "
                                         r"re-ask.*; skipped"):
        run = annotate_catalog(_catalog(), llm, cache_dir=tmp_path)
    assert run.skipped == ("create_ticket",)
    assert set(run.annotations) == {"close_ticket"}
    assert run.calls == 3
    # nothing cached for the skipped tool: the next run asks it again
    again = ScriptedLLM(_rules())
    assert annotate_catalog(_catalog(), again, cache_dir=tmp_path).asked == 1


def test_a_cache_hit_makes_no_call(tmp_path: Path) -> None:
    cache = tmp_path / "annotations"
    first = annotate_catalog(_catalog(), ScriptedLLM(_rules()), cache_dir=cache)
    silent = ScriptedLLM([])  # any call would fail: no rule matches
    second = annotate_catalog(_catalog(), silent, cache_dir=cache)
    assert silent.calls == [] and (second.asked, second.cached) == (0, 2)
    assert second.annotations == first.annotations
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in cache.iterdir()} == {0o600}
    # the key is the tool's content and the model: a changed description asks again
    changed = build_catalog([make_tool(name="close_ticket", description="Close it for good.",
                                       input_schema=_catalog().tools[1].input_schema)])
    assert tool_key(changed.tools[0], "scripted") != tool_key(_catalog().tools[1], "scripted")
    assert tool_key(_catalog().tools[1], "other-model") != \
        tool_key(_catalog().tools[1], "scripted")
    third = ScriptedLLM(_rules())
    assert annotate_catalog(changed, third, cache_dir=cache).asked == 1


def test_a_failing_endpoint_ends_the_run(tmp_path: Path) -> None:
    tools = [make_tool(name=f"tool_{i}", description="Does a thing.") for i in range(5)]
    with pytest.warns(UserWarning) as caught, \
            pytest.raises(HyperplanError, match="endpoint failed 3 times in a row"):
        annotate_catalog(build_catalog(tools), ScriptedLLM([]), cache_dir=None, workers=1)
    assert "tool 'tool_0': the model endpoint failed" in str(caught[0].message)


def test_the_annotations_merge_into_the_graph_with_evidence_llm(tmp_path: Path) -> None:
    run = annotate_catalog(_catalog(), ScriptedLLM(_rules()), cache_dir=None)
    graph = build_graph(_catalog(), embedder=HashingEmbedder(), annotations=run.annotations)
    create = graph.tool("create_ticket")
    llm_nodes = {graph.nodes[v].path: graph.nodes[v] for v in (*create.inputs, *create.outputs)
                 if graph.nodes[v].evidence is Evidence.LLM}
    assert set(llm_nodes) == {"ticket_id", "session.authenticated", "ticket.created"}
    assert llm_nodes["ticket_id"].confidence == 0.95
    # the model's ticket_id output now feeds close_ticket's ticket_id
    close_in = next(v for v in graph.tool("close_ticket").inputs
                    if graph.nodes[v].path == "ticket_id")
    producers = {graph.nodes[lk.source].path for lk in graph.links_into(close_in)}
    assert "ticket_id" in producers


def test_build_selector_takes_annotations_and_an_llm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "selectors"
    plain = build_selector([_catalog()], embedder="hashing", cache_dir=cache)
    assert not any(n.evidence is Evidence.LLM for n in plain.graph.nodes)
    run = annotate_catalog(_catalog(), ScriptedLLM(_rules()), cache_dir=None)
    file = tmp_path / "notes.json"
    from hyperplan.graph.annotations import save_annotations

    save_annotations(run.annotations, file)
    annotated = build_selector([_catalog()], embedder="hashing", cache_dir=cache,
                               annotations=file)
    assert {n.path for n in annotated.graph.nodes if n.evidence is Evidence.LLM} >= \
        {"ticket_id", "ticket.closed"}
    # a graph built with annotations has its own cache entry
    assert annotated.entry != plain.entry and annotated.entry is not None
    name = get_embedder("hashing").name
    assert annotated.entry == entry_path(cache, _catalog(), name, load_annotations(file))
    llm = ScriptedLLM(_rules())
    monkeypatch.setenv("HYPERPLAN_CACHE_DIR", str(tmp_path / "home"))  # the answers' cache
    asked = build_selector([_catalog()], embedder="hashing", cache_dir=cache, llm=llm)
    assert len(llm.calls) == 2 and asked.entry == annotated.entry


def _write_mcp_catalog(path: Path) -> Path:
    tools = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
             for t in _catalog().tools]
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return path


def test_graph_annotate_writes_a_file_and_graph_show_shows_llm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperplan.cli import app

    source = f"mcp:{_write_mcp_catalog(tmp_path / 'tools.json')}"
    llm = ScriptedLLM(_rules())
    seen: dict[str, Any] = {}

    def fake_client(url: str, **options: Any) -> ScriptedLLM:
        seen.update(url=url, **options)
        return llm

    monkeypatch.setattr("hyperplan.llm.annotate.client_for", fake_client)
    out = tmp_path / "notes.json"
    result = runner.invoke(app, ["graph", "annotate", source, "--llm", "http://127.0.0.1:9/v1",
                                 "--model", "m", "-o", str(out), "--cache-dir",
                                 str(tmp_path / "c"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["tools"] == 2 and summary["asked"] == 2 and summary["skipped"] == []
    assert seen == {"url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": None}
    notes = load_annotations(out)
    assert {n.evidence for nodes in notes.values() for n in nodes} == {Evidence.LLM}
    graph = build_graph(_catalog(), embedder=HashingEmbedder(), annotations=notes)
    save_graph(graph, tmp_path / "g.json")
    shown = runner.invoke(app, ["graph", "show", str(tmp_path / "g.json"), "create_ticket"])
    assert shown.exit_code == 0, shown.output
    assert "ticket_id [llm 0.95]" in shown.stdout
    assert "pre:session.authenticated [llm 0.60]" in shown.stdout
    # again: every answer from the cache
    again = runner.invoke(app, ["graph", "annotate", source, "--llm", "http://127.0.0.1:9/v1",
                                "-o", str(out), "--cache-dir", str(tmp_path / "c"), "--json"])
    assert json.loads(again.stdout.strip().splitlines()[-1])["cached"] == 2
    assert len(llm.calls) == 2


def test_graph_annotate_refuses_to_overwrite_its_source(tmp_path: Path) -> None:
    from hyperplan.cli import app

    source = _write_mcp_catalog(tmp_path / "tools.json")
    result = runner.invoke(app, ["graph", "annotate", f"mcp:{source}", "--llm",
                                 "http://127.0.0.1:9/v1", "-o", str(source)])
    assert result.exit_code != 0
    assert json.loads(source.read_text())["tools"]


def test_an_api_key_variable_that_is_unset_is_one_clear_error() -> None:
    from hyperplan.llm.annotate import client_for

    with pytest.raises(HyperplanError, match="HYPERPLAN_TEST_NO_SUCH_KEY is not set"):
        client_for("http://127.0.0.1:9/v1", model="m", api_key_env="HYPERPLAN_TEST_NO_SUCH_KEY")


def test_the_prompt_cuts_a_long_description() -> None:
    tool = make_tool(name="t", description="word " * 2000)
    user = annotation_messages(tool)[-1].content
    assert len(user) < 2_300 and "…" in user


def test_the_core_does_not_import_the_llm_layer() -> None:
    code = ("import sys, hyperplan.select, hyperplan.select.session, hyperplan.select.observed,"
            " hyperplan.select.cache, hyperplan.graph.build; "
            "print(sorted(m for m in sys.modules if m.startswith('hyperplan.llm')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- real server
@pytest.fixture(scope="module")
def base_url(llm_server_url: str) -> str:
    return llm_server_url


def test_graph_annotate_end_to_end_with_the_local_server(base_url: str, tmp_path: Path) -> None:
    """Plumbing only: the command runs against the real server (JSON-schema-constrained
    output, re-asks) and writes a valid annotation file; a tool the tiny model answers
    wrongly twice is a warning, not a failure."""
    source = _write_mcp_catalog(tmp_path / "tools.json")
    out = tmp_path / "notes.json"
    model = os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2")
    done = subprocess.run(
        [sys.executable, "-m", "hyperplan", "graph", "annotate", f"mcp:{source}", "--llm",
         base_url, "--model", model, "-o", str(out), "--cache-dir", str(tmp_path / "c"),
         "--workers", "1", "--json"],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["asked"] == 2 and summary["calls"] >= 2
    notes = load_annotations(out)  # a valid file, whatever the model said
    assert set(notes) <= {"create_ticket", "close_ticket"}
    assert all(n.evidence is Evidence.LLM for nodes in notes.values() for n in nodes)
    assert len(notes) + len(summary["skipped"]) == 2
    # a second run is served from the cache for every tool the model answered
    again = subprocess.run(
        [sys.executable, "-m", "hyperplan", "graph", "annotate", f"mcp:{source}", "--llm",
         base_url, "--model", model, "-o", str(out), "--cache-dir", str(tmp_path / "c"),
         "--json"], capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.strip().splitlines()[-1])["cached"] == len(notes)


def test_the_gateway_builds_with_annotations(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from hyperplan.integrations.mcp_gateway.selection import SelectionService

    run = annotate_catalog(_catalog(), ScriptedLLM(_rules()), cache_dir=None)
    service = SelectionService(_catalog(), embedder="hashing", cache_dir=tmp_path,
                               annotations=run.annotations)
    service.start()
    assert service.wait(60) and service.selector is not None
    assert "ticket.closed" in {n.path for n in service.selector.graph.nodes
                               if n.evidence is Evidence.LLM}
    # an endpoint that cannot be reached is one line; the graph is built without it
    down = SelectionService(_catalog(), embedder="hashing", cache_dir=tmp_path,
                            llm="http://127.0.0.1:9/v1")
    down.start()
    assert down.wait(60) and down.selector is not None
    assert "annotating the tools with the model at http://127.0.0.1:9/v1 failed" in \
        capsys.readouterr().err
    assert not any(n.evidence is Evidence.LLM for n in down.selector.graph.nodes)


def test_annotations_for_a_build_combines_the_file_and_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `graph build --annotations FILE --llm-annotate URL` builds with."""
    from hyperplan.cli.graph_annotate import annotations_for
    from hyperplan.graph.annotations import InferredNode, save_annotations

    file = save_annotations({"close_ticket": [InferredNode(
        NodeKind.PRECONDITION, "ticket.open", "boolean", "", Evidence.NAME, 0.4)]},
        tmp_path / "mine.json")
    assert annotations_for(_catalog()) is None
    from_file = annotations_for(_catalog(), file=file)
    assert from_file is not None and [n.path for n in from_file["close_ticket"]] == \
        ["ticket.open"]
    monkeypatch.setenv("HYPERPLAN_CACHE_DIR", str(tmp_path / "home"))
    monkeypatch.setattr("hyperplan.llm.annotate.client_for",
                        lambda url, **_: ScriptedLLM(_rules()))
    both = annotations_for(_catalog(), file=file, url="http://127.0.0.1:9/v1")
    assert both is not None
    assert [n.path for n in both["close_ticket"]] == ["ticket.open", "ticket.closed"]
    assert "ticket_id" in {n.path for n in both["create_ticket"]}
