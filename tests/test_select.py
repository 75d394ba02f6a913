"""The selection API (hyperplan.select): ranked tools with reasons, DOE chains, token costs,
state-conditioned sessions, the on-disk cache, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hyperplan.catalog import Catalog, build_catalog, make_tool
from hyperplan.embed import HashingEmbedder
from hyperplan.graph.build import build_graph
from hyperplan.graph.links import LinkConfig
from hyperplan.select import Reason, build_selector
from hyperplan.select.cache import cache_key
from hyperplan.select.selector import SelectConfig, Selector


def _obj(props: dict[str, str], required: list[str] | None = None) -> dict[str, object]:
    return {"type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
            "required": list(props) if required is None else required}


def _ticket_catalog(noise: int = 30) -> Catalog:
    """update_ticket needs a ticket_id that only find_ticket produces; find_ticket needs a
    project_id that only get_project produces: a two-producer chain the request names only
    at its end. ``noise`` unrelated tools around them."""
    tools = [
        make_tool(name="get_project", description="Look up a project by its name.",
                  input_schema=_obj({"project_name": "name of the project"}),
                  output_schema=_obj({"project_id": "id of the project"})),
        make_tool(name="find_ticket", description="Find a ticket of a project by its title.",
                  input_schema=_obj({"project_id": "id of the project",
                                     "title": "title of the ticket"}),
                  output_schema=_obj({"ticket_id": "id of the ticket"})),
        make_tool(name="update_ticket", description="Update the status of a ticket.",
                  input_schema=_obj({"ticket_id": "id of the ticket",
                                     "status": "the new status"}),
                  output_schema=_obj({"ok": "whether it worked"})),
    ]
    topics = ["weather", "recipe", "flight", "stock", "music", "movie", "hotel", "news",
              "translation", "calendar"]
    for i in range(noise):
        topic = topics[i % len(topics)]
        tools.append(make_tool(
            name=f"get_{topic}_{i}", description=f"Get {topic} information number {i}.",
            input_schema=_obj({f"{topic}_query": f"what {topic} to look for"}),
            output_schema=_obj({f"{topic}_info": f"the {topic} information"})))
    return build_catalog(tools, source="tickets")


@pytest.fixture(scope="module")
def selector() -> Selector:
    catalog = _ticket_catalog()
    embedder = HashingEmbedder()
    return Selector(catalog, build_graph(catalog, embedder=embedder), embedder)


def test_selection_ranks_the_chain_producers_with_reasons(selector: Selector) -> None:
    picked = selector.select("update the status of the login ticket to done", budget=5)
    assert "update_ticket" in picked.names
    assert {"find_ticket", "get_project"} <= set(picked.names)  # the whole chain
    by_name = {t.name: t for t in picked.tools}
    assert by_name["update_ticket"].reason is Reason.ANCHORED
    feeder = by_name["find_ticket"]
    assert feeder.reason in (Reason.CHAIN, Reason.PRODUCER)
    assert feeder.for_tool == "update_ticket" and feeder.for_input == "ticket_id"
    assert "ticket_id" in feeder.why() and "update_ticket" in feeder.why()
    chain = [s.tool for s in picked.chain]
    assert chain.index("get_project") < chain.index("find_ticket") < chain.index("update_ticket")
    step = next(s for s in picked.chain if s.tool == "update_ticket")
    assert ("ticket_id", "find_ticket", "ticket_id") in step.reads
    assert picked.tokens == sum(t.tokens for t in picked.tools) > 0
    assert picked.all_tokens > 5 * picked.tokens  # 33 tools against 5
    assert len(picked.tools) <= 5 and picked.missing == ()


def test_held_values_drop_their_producers(selector: Selector) -> None:
    before = selector.select("update the status of the login ticket to done", budget=5)
    held = selector.select("update the status of the login ticket to done", budget=5,
                           known={"ticket_id"})
    assert "find_ticket" in before.names
    assert held.chain[0].tool == "update_ticket"  # its own chain: itself
    assert not any(t.for_input == "ticket_id" for t in held.tools)


def test_session_follows_the_state(selector: Selector) -> None:
    session = selector.session("update the status of the login ticket to done")
    first = session.select(budget=5)
    assert [s.tool for s in first.chain][:2] == ["get_project", "find_ticket"]
    session.observe("get_project", {"project_name": "web"}, {"project_id": "P-17"})
    second = session.select(budget=5)
    assert [s.tool for s in second.chain] == ["find_ticket", "update_ticket"]
    assert "get_project:out:project_id" in second.held
    session.observe("find_ticket", {"project_id": "P-17", "title": "login"},
                    {"ticket_id": "T-9"})
    session.observe("update_ticket", {"ticket_id": "T-9", "status": "done"}, {"ok": "yes"})
    flows = {(f.producer, f.output_path, f.consumer, f.input_param) for f in session.flows}
    assert flows == {("get_project", "project_id", "find_ticket", "project_id"),
                     ("find_ticket", "ticket_id", "update_ticket", "ticket_id")}
    state = session.state()
    assert [c["tool"] for c in state["calls"]] == ["get_project", "find_ticket", "update_ticket"]


def test_failed_and_unknown_calls_ground_no_outputs(selector: Selector) -> None:
    session = selector.session("update the status of the login ticket to done")
    session.observe("find_ticket", {"title": "login"}, {"ticket_id": "T-9"}, ok=False)
    session.observe("not_a_tool", {"x": "1"}, {"ticket_id": "T-9"})
    assert not any(h.startswith("find_ticket:out") for h in session.held)
    assert "find_ticket" in session.select(budget=5).names


def test_bad_budget_and_an_empty_request(selector: Selector) -> None:
    with pytest.raises(ValueError, match="budget must be at least 1"):
        selector.select("anything", budget=0)
    empty = selector.select("", budget=3)
    assert len(empty.tools) <= 3 and empty.as_dict()["request"] == ""


def test_context_graph_alone_when_chains_are_off(selector: Selector) -> None:
    plain = selector.select("update the status of the login ticket to done", budget=5,
                            chain=False)
    assert plain.chain == () and all(t.reason is not Reason.CHAIN for t in plain.tools)


def test_selector_refuses_a_graph_of_another_catalog() -> None:
    catalog = _ticket_catalog(noise=2)
    graph = build_graph(_ticket_catalog(noise=3), embedder=HashingEmbedder())
    with pytest.raises(ValueError, match="not built from this catalog"):
        Selector(catalog, graph, HashingEmbedder())


def test_build_is_cached_on_disk_and_keyed_by_the_tools(tmp_path: Path) -> None:
    first = build_selector([_ticket_catalog(noise=4)], embedder="hashing", cache_dir=tmp_path)
    entries = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1 and (entries[0] / "graph.json").is_file()
    again = build_selector([_ticket_catalog(noise=4)], embedder="hashing", cache_dir=tmp_path)
    assert again.graph.n_links == first.graph.n_links
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 1
    other = _ticket_catalog(noise=5)
    assert cache_key(other, "hashing", LinkConfig()) != entries[0].name
    (entries[0] / "graph.json").write_text("{ damaged")
    rebuilt = build_selector([_ticket_catalog(noise=4)], embedder="hashing", cache_dir=tmp_path)
    assert rebuilt.graph.n_links == first.graph.n_links  # a damaged entry is rebuilt


def test_several_sources_are_merged_and_clashes_named(tmp_path: Path) -> None:
    selector = build_selector(["python:hyperplan.examples.bookstore", _ticket_catalog(2)],
                              embedder="hashing", cache_dir=None)
    assert {"login", "search_books", "update_ticket"} <= set(selector.catalog.names())
    from hyperplan.errors import CatalogError

    with pytest.raises(CatalogError, match="defined twice"):
        build_selector([_ticket_catalog(2), _ticket_catalog(2)], embedder="hashing",
                       cache_dir=None)


def test_bookstore_session_gets_the_login_producer() -> None:
    selector = build_selector(["python:hyperplan.examples.bookstore"], embedder="hashing",
                              cache_dir=None, config=SelectConfig(budget=4))
    picked = selector.select("add the book Dune to my cart")
    assert {"add_to_cart", "login"} <= set(picked.names)


def test_import_is_cheap() -> None:
    code = ("import sys, hyperplan.select; "
            "print(int(any(m in sys.modules for m in ('numpy', 'openai', 'scipy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "0"  # the numeric stack and the LLM SDK load on first use


def test_chain_placement(selector: Selector) -> None:
    from hyperplan.select.rank import ChainPlacement

    request = "update the status of the login ticket to done"
    before = selector.select(request, budget=5, placement=ChainPlacement.BEFORE_ANCHOR)
    names = before.names
    assert names.index("get_project") < names.index("find_ticket") < names.index("update_ticket")
    filled = selector.select(request, budget=5)  # default: the context graph's order first
    plain = selector.select(request, budget=5, chain=False)
    assert filled.names[:len(plain.names)] == plain.names[:len(filled.names)]
    assert [s.tool for s in filled.chain] == [s.tool for s in before.chain]


def test_fill_takes_the_whole_budget_after_the_chains(selector: Selector) -> None:
    from dataclasses import replace

    request = "update the status of the login ticket to done"
    cfg = selector.config
    narrow = Selector(selector.catalog, selector.graph, selector.embedder,
                      replace(cfg, context=replace(cfg.context, fill=False)))
    filled = Selector(selector.catalog, selector.graph, selector.embedder,
                      replace(cfg, context=replace(cfg.context, fill=True)))
    few = narrow.select(request, budget=30)
    full = filled.select(request, budget=30)
    assert len(few.tools) < 30 and len(full.tools) == 30
    assert len(set(full.names)) == 30
    reasons = [t.reason for t in full.tools]
    first_similar = reasons.index(Reason.SIMILAR)
    assert all(r is Reason.SIMILAR for r in reasons[first_similar:])
    assert set(few.names) <= set(full.names)  # the context graph's tools and chains kept
    assert full.tools[-1].why() == "similar to the request"


def test_the_request_as_written_anchors_its_tool() -> None:
    """A tool the whole request describes is a seed even when no interpreted phrase is near
    it (request_row), and is not without the option."""
    import numpy as np

    from hyperplan.retrieve.context_graph import (
        ContextGraphConfig,
        GraphIndex,
        QueryVectors,
        extract_with_vectors,
    )
    from hyperplan.retrieve.interpret import TaskInterpretation

    catalog = _ticket_catalog(noise=10)
    embedder = HashingEmbedder()
    index = GraphIndex(build_graph(catalog, embedder=embedder), embedder)
    target = index.graph.tool_index["get_music_4"]
    whole = index.tool_vecs[target][None, :]
    others = np.delete(index.tool_vecs, target, axis=0).mean(axis=0)
    away = others - (others @ whole[0]) * whole[0]  # orthogonal to the target
    away = (away / np.linalg.norm(away))[None, :]
    query = QueryVectors(away, np.zeros((0, whole.shape[1])), whole)
    interp = TaskInterpretation(operations=("something else",), schemas=())
    off = extract_with_vectors(index, interp, query, ContextGraphConfig(request_row=False))
    on = extract_with_vectors(index, interp, query, ContextGraphConfig(request_row=True))
    assert "get_music_4" not in off.tool_names
    assert on.tool_names[0] == "get_music_4" and on.tools[0].reason == "seed"


def test_fill_leaves_out_producers_whose_outputs_are_held() -> None:
    """With a budget larger than the catalog, the places left are filled, but not with a tool
    all of whose outputs the state already holds (login, once its token is held)."""
    from hyperplan.select import build_selector
    from hyperplan.select.session import Session

    selector = build_selector(["python:hyperplan.examples.bookstore"], embedder="hashing",
                              cache_dir=None)
    fresh = selector.select("add the book Dune to a cart", budget=10)
    assert "login" in fresh.names and len(fresh.names) == selector.graph.n_tools
    session = Session(selector, "add the book Dune to a cart")
    session.observe("login", {"username": "alice", "password": "x"},
                    {"access_token": "tok-alice"})
    after = session.select(budget=10)
    assert "login" not in after.names
    assert {"add_to_cart", "search_books", "checkout"} <= set(after.names)


def test_the_consumer_of_a_result_goes_first_and_called_tools_last() -> None:
    """After a call, the best consumer of its result leads the selection (``follows``, with
    the called tool and the input it feeds) and the called tool itself goes to the end."""
    from hyperplan.select import build_selector

    selector = build_selector(["python:hyperplan.examples.bookstore"], embedder="hashing",
                              cache_dir=None)
    session = selector.session("find the book Dune and buy it")
    assert session.select(budget=4).tools[0].reason is not Reason.FOLLOWS
    session.observe("search_books", {"query": "Dune"}, [{"book_id": "b1", "title": "Dune"}])
    assert session.called == ["search_books"]
    picked = session.select(budget=4)
    first = picked.tools[0]
    assert first.name == "add_to_cart" and first.reason is Reason.FOLLOWS
    assert (first.for_tool, first.for_input) == ("search_books", "book_id")
    assert first.why() == "follows search_books: takes book_id from its result"
    assert picked.names[-1] == "search_books"
    assert "search_books" not in session.select(budget=2).names
    failed = selector.session("find the book Dune and buy it")
    failed.observe("search_books", {"query": "Dune"}, None, ok=False)
    assert failed.called == [] and failed.select(budget=4).tools[0].reason is not Reason.FOLLOWS
