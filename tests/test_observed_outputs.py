"""Output schemas learned from observed results (issue 37, item 1, "observed"): a tool that
declares no outputs teaches the selector its output schema through Session.observe (the
gateway's calls go there), kept beside the cached graph and used by the next build."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from hyperplan.catalog import Catalog, build_catalog, make_tool
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.select import build_selector
from hyperplan.select.cache import BUILT_FILE, FLOWS_FILE, OBSERVED_FILE
from hyperplan.select.observed import (
    CONFIDENCE,
    MAX_KEYS,
    MAX_TOOLS,
    ObservedOutputs,
    learned_nodes,
    needs_outputs,
    read_observed,
    result_paths,
)

SECRET = "sk-live-4f9a8b7c6d5e"


def _catalog() -> Catalog:
    """``create_ticket`` declares no outputs; ``close_ticket`` takes a ``ticket_id``;
    ``get_weather`` declares its outputs."""
    return build_catalog([
        make_tool(name="create_ticket", description="Open a support ticket.",
                  input_schema={"type": "object", "properties": {"title": {"type": "string"}},
                                "required": ["title"]}),
        make_tool(name="close_ticket", description="Close a support ticket.",
                  input_schema={"type": "object",
                                "properties": {"ticket_id": {"type": "string"}},
                                "required": ["ticket_id"]}),
        make_tool(name="get_weather", description="The weather of a city.",
                  input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
                  output_schema={"type": "object",
                                 "properties": {"temperature": {"type": "number"}}}),
    ], source="tickets")


RESULT = {"ticket_id": "T-1", "owner": {"email": "a@b.c", "token": SECRET},
          "tags": ["x"], "links": [{"url": "http://x", "rel": "self"}], "count": 2,
          "open": True, "score": 0.5, "note": None}


def test_result_paths_are_names_and_types_one_level_down() -> None:
    assert result_paths(RESULT) == [
        ("ticket_id", "string"), ("owner", "object"), ("owner.email", "string"),
        ("owner.token", "string"), ("tags", "array"), ("links", "array"),
        ("links[].url", "string"), ("links[].rel", "string"), ("count", "integer"),
        ("open", "boolean"), ("score", "number"), ("note", "any")]
    deep = {"a": {"b": {"c": 1}}}
    assert result_paths(deep) == [("a", "object"), ("a.b", "object")]  # no deeper
    assert result_paths([{"id": 1}, {"id": 2, "name": "n"}]) == [("[].id", "integer"),
                                                                ("[].name", "string")]
    assert result_paths(json.dumps({"id": 3})) == [("id", "integer")]  # JSON text parsed
    for nothing in ("plain text", 42, None, "{not json", [1, 2]):
        assert result_paths(nothing) == []
    wide = {f"k{i}": i for i in range(100)}
    assert len(result_paths(wide)) == MAX_KEYS
    assert result_paths({"a.b": 1, "x[]": 2, "": 3, "ok": 4}) == [("ok", "integer")]


def test_only_tools_without_named_outputs_need_them() -> None:
    tools = {t.name: t for t in _catalog().tools}
    assert needs_outputs(tools["create_ticket"])
    assert not needs_outputs(tools["get_weather"])
    wrapped = make_tool(name="w", output_schema={"type": "object", "properties": {
        "result": {"type": "string"}}})
    assert needs_outputs(wrapped)


def test_a_session_learns_outputs_and_the_next_build_uses_them(tmp_path: Path) -> None:
    cache = tmp_path / "selectors"
    first = build_selector([_catalog()], embedder="hashing", cache_dir=cache)
    assert first.entry is not None
    assert not any(n.evidence is Evidence.OBSERVED for n in first.graph.nodes)
    session = first.session("close my new ticket")
    session.observe("create_ticket", {"title": "help"}, json.dumps(RESULT))  # JSON as text
    session.observe("get_weather", {"city": "Oslo"}, {"temperature": 3, "wind": 4})
    learned = learned_nodes(first)
    assert set(learned) == {"create_ticket"}  # get_weather declares its outputs
    assert {n.path for n in learned["create_ticket"]} >= {"ticket_id", "owner.email",
                                                           "links[].url"}
    assert all(n.kind is NodeKind.OUTPUT and n.evidence is Evidence.OBSERVED
               and n.confidence == pytest.approx(CONFIDENCE) for n in learned["create_ticket"])
    stored = first.entry / OBSERVED_FILE
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    text = stored.read_text()
    assert SECRET not in text and "T-1" not in text and "a@b.c" not in text  # never values
    assert set(read_observed(stored)) == {"create_ticket"}

    second = build_selector([_catalog()], embedder="hashing", cache_dir=cache)
    assert second.entry == first.entry  # the same entry, its graph rebuilt in place
    create = second.graph.tool("create_ticket")
    observed = {second.graph.nodes[v].path: second.graph.nodes[v] for v in create.outputs
                if second.graph.nodes[v].evidence is Evidence.OBSERVED}
    assert observed["ticket_id"].type == "string"
    close_in = next(v for v in second.graph.tool("close_ticket").inputs
                    if second.graph.nodes[v].path == "ticket_id")
    producers = {(second.graph.tools[second.graph.nodes[lk.source].tool].name,
                  second.graph.nodes[lk.source].path)
                 for lk in second.graph.links_into(close_in)}
    assert ("create_ticket", "ticket_id") in producers
    assert (second.entry / BUILT_FILE).is_file()
    # the learned value grounds: after the call the session holds create_ticket's ticket_id
    later = second.session("close my new ticket")
    later.observe("create_ticket", {"title": "help"}, json.dumps(RESULT))
    assert "create_ticket:out:ticket_id" in later.held

    from hyperplan.select.cache import cached_build, is_cached

    assert is_cached(cache, _catalog(), second.embedder.name)
    _, hit = cached_build(_catalog(), second.embedder, cache)
    assert hit  # nothing new learned: the third build reads the cache


def test_the_learned_flows_survive_a_rebuild(tmp_path: Path) -> None:
    cache = tmp_path / "selectors"
    first = build_selector([_catalog()], embedder="hashing", cache_dir=cache)
    assert first.entry is not None
    (first.entry / FLOWS_FILE).write_text(json.dumps(
        {"producer": "create_ticket", "output": "result", "consumer": "close_ticket",
         "input": "ticket_id"}) + "\n")
    first.session().observe("create_ticket", {}, {"ticket_id": "T-9"})
    build_selector([_catalog()], embedder="hashing", cache_dir=cache)
    assert (first.entry / FLOWS_FILE).is_file() and (first.entry / OBSERVED_FILE).is_file()


def test_failed_calls_and_unknown_tools_teach_nothing(tmp_path: Path) -> None:
    selector = build_selector([_catalog()], embedder="hashing", cache_dir=tmp_path)
    session = selector.session()
    session.observe("create_ticket", {}, {"ticket_id": "T-1"}, ok=False)
    session.observe("no_such_tool", {}, {"x": 1})
    assert learned_nodes(selector) == {}


def test_the_store_is_bounded(tmp_path: Path) -> None:
    store = ObservedOutputs(tmp_path / OBSERVED_FILE)
    for i in range(MAX_TOOLS + 5):
        store.record(f"tool_{i}", {"id": i})
    assert len(store.annotations()) == MAX_TOOLS
    store.record("tool_0", {f"k{i}": i for i in range(3 * MAX_KEYS)})
    assert len(store.annotations()["tool_0"]) == MAX_KEYS
    assert len(read_observed(tmp_path / OBSERVED_FILE)) == MAX_TOOLS
    assert not store.record("tool_0", {"k0": 1})  # nothing new: the file is not rewritten


def test_without_a_cache_outputs_are_learned_in_memory_only(tmp_path: Path) -> None:
    selector = build_selector([_catalog()], embedder="hashing", cache_dir=None)
    selector.session().observe("create_ticket", {}, {"ticket_id": "T-1"})
    assert {n.path for n in learned_nodes(selector)["create_ticket"]} == {"ticket_id"}


def test_a_damaged_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / OBSERVED_FILE
    path.write_text("{not json")
    assert read_observed(path) == {}
    path.write_text(json.dumps({"format": "hyperplan.annotations", "version": 1,
                                "tools": {"t": [{"kind": "in", "path": "x"}]}}))
    assert read_observed(path) == {}


def test_the_gateway_conversation_teaches_the_selector(tmp_path: Path) -> None:
    """Calls the gateway forwards reach Session.observe (also those made before the graph was
    ready, replayed), so the next gateway start over the same catalog builds with them."""
    from hyperplan.integrations.mcp_gateway.selection import Conversation, SelectionService

    service = SelectionService(_catalog(), embedder="hashing", cache_dir=tmp_path)
    conv = Conversation(service)
    conv.observe("create_ticket", {"title": "x"}, {"ticket_id": "T-1", "url": "u"}, True)
    service.start()
    assert service.wait(60) and service.selector is not None
    conv.find("close the ticket")  # the session is made and the pending call replayed
    assert {n.path for n in learned_nodes(service.selector)["create_ticket"]} == \
        {"ticket_id", "url"}
    again = SelectionService(_catalog(), embedder="hashing", cache_dir=tmp_path)
    again.start()
    assert again.wait(60) and again.selector is not None and not again.from_cache
    paths = {n.path for n in again.selector.graph.nodes if n.evidence is Evidence.OBSERVED}
    assert paths == {"ticket_id", "url"}
    third = SelectionService(_catalog(), embedder="hashing", cache_dir=tmp_path)
    third.start()
    assert third.wait(60) and third.from_cache
