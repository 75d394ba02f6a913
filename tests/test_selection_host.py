"""The selection host shared by the gateway and the adapters (hyperplan.integrations.host):
selectors per tool set with a keyword fallback, conversations bounded and kept apart, and the
narrowing."""

from __future__ import annotations

import threading

import pytest

from hyperplan.catalog import Catalog, ToolSpec, build_catalog
from hyperplan.integrations._catalog import ToolDef
from hyperplan.integrations.host import (
    BuildState,
    Call,
    Conversation,
    ConversationLimits,
    ConversationTable,
    SelectionHost,
    SelectorPool,
    catalog_key,
)
from hyperplan.select import Selector, build_selector
from hyperplan.select.model import GRAPH_METHOD, KEYWORD_METHOD, Reason


def _spec(name: str, description: str, inputs: dict[str, str], outputs: dict[str, str]
          ) -> ToolSpec:
    return ToolSpec(
        name=name, description=description,
        input_schema={"type": "object", "required": list(inputs),
                      "properties": {k: {"type": "string", "description": v}
                                     for k, v in inputs.items()}},
        output_schema={"type": "object",
                       "properties": {k: {"type": "string", "description": v}
                                      for k, v in outputs.items()}})


def _catalog() -> Catalog:
    return build_catalog([
        _spec("find_ticket", "Find a support ticket by its title.",
              {"title": "the ticket title"}, {"ticket_id": "the ticket id"}),
        _spec("close_ticket", "Close a support ticket.",
              {"ticket_id": "the ticket id"}, {"status": "the new status"}),
        _spec("send_invoice", "Send an invoice to a customer by email.",
              {"email": "the customer email"}, {"invoice_id": "the invoice id"}),
        _spec("weather", "Today's weather in a city.", {"city": "the city"},
              {"forecast": "the forecast"}),
    ], source="test")


def _build(catalog: Catalog) -> Selector:
    return build_selector([catalog], embedder="hashing", cache_dir=None)


def test_pool_builds_once_for_many_callers() -> None:
    catalog = _catalog()
    builds: list[int] = []

    def build(c: Catalog) -> Selector:
        builds.append(1)
        return _build(c)

    pool = SelectorPool(build)
    got = []
    threads = [threading.Thread(target=lambda: got.append(pool.get("k", lambda: catalog)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert all(b is got[0] for b in got) and got[0] is not None
    assert got[0].covered == {t.name for t in catalog.tools}
    assert pool.status("k").state is BuildState.READY


def test_pool_background_build_serves_keyword_meanwhile() -> None:
    catalog = _catalog()
    release = threading.Event()

    def slow(c: Catalog) -> Selector:
        release.wait(10)
        return _build(c)

    pool = SelectorPool(slow)
    key = catalog_key(catalog)
    assert pool.get(key, lambda: catalog, wait=False) is None
    assert pool.status(key).state is BuildState.BUILDING
    found = pool.keyword(key, "close the support ticket", 2)
    assert found is not None and found.method == KEYWORD_METHOD
    assert found.names[0] == "close_ticket"
    assert all(t.reason is Reason.KEYWORD for t in found.tools)
    assert "building the context graph of 4 tools" in found.notes[0]
    release.set()
    assert pool.wait(key, 10)
    assert pool.get(key, lambda: catalog, wait=False) is not None


def test_pool_keeps_a_failed_build_and_says_why() -> None:
    calls: list[int] = []

    def broken(c: Catalog) -> Selector:
        calls.append(1)
        raise RuntimeError("no embedder here, token=s3cr3t-value")

    pool = SelectorPool(broken)
    catalog = _catalog()
    assert pool.get("k", lambda: catalog) is None
    assert pool.get("k", lambda: catalog) is None
    assert calls == [1]
    status = pool.status("k")
    assert status.state is BuildState.FAILED and "no embedder here" in status.line()
    keyword = pool.keyword("k", "weather", 1)
    assert keyword is not None and keyword.names == ["weather"]


def test_pool_empty_set_and_eviction() -> None:
    pool = SelectorPool(_build, size=1)
    one = build_catalog([_spec("a", "A.", {}, {})], source="t")
    assert pool.get("one", lambda: one) is None
    assert pool.status("one").state is BuildState.EMPTY
    assert pool.get("two", _catalog) is not None
    assert pool.status("one").state is None  # evicted: only the newest is kept


def test_conversation_replays_history_into_a_late_selector() -> None:
    selector = _build(_catalog())
    conv = Conversation(key="c")
    conv.turn("close the ticket titled printer broken")
    conv.observe(Call("find_ticket", {"title": "printer broken"}, {"ticket_id": "T-7"}))
    assert [c.tool for c in conv.calls()] == ["find_ticket"]
    selection = conv.select(selector, budget=3)
    assert selection.method == GRAPH_METHOD
    assert "close_ticket" in selection.names
    assert any("ticket_id" in h for h in conv.state()["held"])
    live = conv.session(selector)
    conv.observe(Call("close_ticket", {"ticket_id": "T-7"}, {"status": "closed"}))
    assert conv.session(selector) is live  # the same selector keeps the live session
    assert len(live.state()["calls"]) == 2


def test_conversation_new_turn_naming_a_new_value_stops_grounding() -> None:
    selector = _build(_catalog())
    conv = Conversation()
    conv.turn("close the ticket titled printer broken")
    conv.known.add("ticket_id")
    conv.session(selector)
    conv.turn("now close the ticket titled 'scanner jam'")
    assert not conv.known
    assert "find_ticket" in conv.select(selector, budget=3).names


def test_table_open_refuses_at_the_bound_and_ensure_evicts() -> None:
    now = [0.0]
    table = ConversationTable(ConversationLimits(idle_seconds=10, per_client=1, total=2),
                              clock=lambda: now[0])
    a = table.open("alice")
    assert a is not None and len(a.key) >= 32
    assert table.open("alice") is None  # per-client bound: refused, nothing evicted
    assert table.get(a.key) is a
    assert table.get("made-up") is None
    b = table.ensure("run:1", "bob")
    assert table.ensure("run:1") is b
    table.ensure("run:2")  # at the total: the least recently used (alice's) goes
    assert table.get(a.key) is None
    now[0] = 100.0
    assert len(table.items()) == 0  # idle ones expire


def _defs() -> list[ToolDef]:
    return [ToolDef(t.name, t.description, dict(t.input_schema)) for t in _catalog().tools]


def test_host_narrows_and_keeps_what_it_cannot_read() -> None:
    host = SelectionHost(budget=2, embedder="hashing", cache_dir=None, keep=["weather"])
    tools = [*_defs(), ToolDef("opaque", "", {"type": "not-a-schema-type"})]
    narrowed = host.narrow(tools, "close the ticket titled printer broken")
    assert narrowed is not None
    assert "weather" in narrowed.names and "close_ticket" in narrowed.names
    assert "send_invoice" not in narrowed.names
    assert host.narrow(tools, "") is None
    assert host.narrow(tools[:2], "close the ticket") is None  # within the budget


def test_host_rejects_a_budget_under_one() -> None:
    with pytest.raises(ValueError, match="budget must be at least 1"):
        SelectionHost(budget=0)


def test_pool_prepare_makes_the_fallback_whole_before_any_build() -> None:
    pool = SelectorPool(_build)
    catalog = _catalog()
    pool.add("k", catalog)
    before = pool.keyword("k", "weather", 1)
    assert before is not None and before.all_tokens is None  # not every tool counted yet
    pool.prepare("k")
    after = pool.keyword("k", "weather", 1)
    assert after is not None and after.names == ["weather"]
    assert after.all_tokens == sum(pool.tokens("k", t.name) for t in catalog.tools) > 0
    with pytest.raises(KeyError):
        pool.prepare("unknown")
