"""Links that are never junk (issue 37, item 3): control inputs get no producer, identifiers link
to their own resource only, links across namespaces need a specific key or a role suffix,
generic words link by name inside a namespace only; and a write tool the request does not ask
for is never proposed as a producer."""

from __future__ import annotations

import numpy as np
import pytest

from hyperplan.catalog import build_catalog, make_tool
from hyperplan.embed import HashingEmbedder
from hyperplan.graph.build import build_graph
from hyperplan.graph.field_roles import FieldRole, field_role, role_suffixes
from hyperplan.graph.model import Hypergraph
from hyperplan.plan.doe import DOEConfig
from hyperplan.plan.grounding import ground
from hyperplan.select.rank import plan_chains
from hyperplan.select.selector import Selector


def _obj(**props: str) -> dict[str, object]:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()},
            "required": list(props)}


def _pairs(graph: Hypergraph) -> set[tuple[str, str]]:
    return {(graph.node_name(lk.source), graph.node_name(lk.target)) for lk in graph.links()
            if lk.evidence == "inferred"}


@pytest.mark.parametrize(("name", "role"), [
    ("page", FieldRole.CONTROL), ("max_results", FieldRole.CONTROL),
    ("sortBy", FieldRole.CONTROL), ("tv_id", FieldRole.IDENTIFIER),
    ("ticket_ids", FieldRole.IDENTIFIER), ("message", FieldRole.GENERIC),
    ("file_path", FieldRole.GENERIC), ("id", FieldRole.GENERIC),
    ("receiver_email", FieldRole.SPECIFIC), ("repo_path", FieldRole.SPECIFIC),
])
def test_field_roles(name: str, role: FieldRole) -> None:
    assert field_role(name) is role


def test_role_suffixes() -> None:
    assert role_suffixes("receiver_email") == ("email",)
    assert role_suffixes("receiver_phone_number") == ("phone_number",)
    assert role_suffixes("tv_id") == ()


def test_control_inputs_get_no_producer() -> None:
    graph = build_graph(build_catalog([
        make_tool(name="list_movies", input_schema=_obj(page="integer"),
                  output_schema=_obj(page="integer", total_pages="integer")),
        make_tool(name="list_shows", input_schema=_obj(page="integer", limit="integer"),
                  output_schema=_obj(limit="integer")),
    ]))
    assert _pairs(graph) == set()


def test_an_identifier_links_to_its_own_resource_only() -> None:
    graph = build_graph(build_catalog([
        make_tool(name="get_movie", input_schema=_obj(query="string"),
                  output_schema=_obj(id="integer", title="string"),
                  metadata={"entity": "movie"}),
        make_tool(name="get_tv_show", input_schema=_obj(tv_id="integer"),
                  output_schema=_obj(name="string"), metadata={"entity": "tv"}),
        make_tool(name="movie_credits", input_schema=_obj(movie_id="integer"),
                  output_schema=_obj(cast="array"), metadata={"entity": "movie"}),
    ]))
    pairs = _pairs(graph)
    assert ("get_movie:out:id", "movie_credits:in:movie_id") in pairs
    assert not any(target == "get_tv_show:in:tv_id" for _, target in pairs)


def test_links_across_namespaces_need_a_specific_key_or_a_role() -> None:
    graph = build_graph(build_catalog([
        make_tool(name="contacts.search", input_schema=_obj(query="string"),
                  output_schema={"type": "object", "properties": {"contacts": {
                      "type": "array", "items": _obj(email="string", note="string")}}}),
        make_tool(name="payments.send_money",
                  input_schema=_obj(receiver_email="string", amount="number")),
        make_tool(name="git.commit", input_schema=_obj(message="string")),
        make_tool(name="memory.delete_observations", input_schema=_obj(entity="string"),
                  output_schema=_obj(message="string", deleted="integer")),
        make_tool(name="notes.save", input_schema=_obj(text="string"),
                  description="Save a text: the content of a note."),
    ]))
    pairs = _pairs(graph)
    assert ("contacts.search:out:contacts[].email", "payments.send_money:in:receiver_email") \
        in pairs
    # a generic word across namespaces links to the very same name only (message <- message),
    # not to another generic word its description mentions (text <- note)
    assert ("memory.delete_observations:out:message", "git.commit:in:message") in pairs
    assert not any(t == "notes.save:in:text" for _, t in pairs)
    assert not any(t == "payments.send_money:in:amount" for _, t in pairs)


def _write_chain_selector() -> Selector:
    tools = [
        make_tool(name="create_draft", description="Create a new draft message and return "
                  "its id.", input_schema=_obj(subject="string"),
                  output_schema=_obj(draft_id="string")),
        make_tool(name="find_draft", description="Find a draft by its subject.",
                  input_schema=_obj(subject="string"), output_schema=_obj(draft_id="string")),
        make_tool(name="show_draft", description="Show the text of a draft.",
                  input_schema=_obj(draft_id="string"), output_schema=_obj(text="string")),
        make_tool(name="login", description="Log in and get an access token.",
                  input_schema=_obj(username="string", password="string"),
                  output_schema=_obj(access_token="string")),
        make_tool(name="show_inbox", description="Show the messages of the inbox.",
                  input_schema=_obj(access_token="string"),
                  output_schema=_obj(messages="array")),
    ]
    catalog = build_catalog(tools)
    embedder = HashingEmbedder()
    return Selector(catalog, build_graph(catalog, embedder=embedder), embedder)


def test_a_write_is_never_an_unasked_producer_but_a_login_is() -> None:
    selector = _write_chain_selector()
    assert selector.graph.unprompted_writers.tolist() == [True, False, False, False, False]
    shown = selector.select("show the text of my draft about lunch", budget=5)
    producers = {producer for step in shown.chain for _, producer, _ in step.reads}
    assert "find_draft" in producers and "create_draft" not in producers
    inbox = selector.select("show the messages of my inbox", budget=5)
    assert "login" in {p for step in inbox.chain for _, p, _ in step.reads}


def test_doe_proposes_a_write_as_producer_only_when_asked() -> None:
    catalog = build_catalog([
        make_tool(name="create_draft", input_schema=_obj(subject="string"),
                  output_schema=_obj(draft_id="string")),
        make_tool(name="show_draft", input_schema=_obj(draft_id="string"),
                  output_schema=_obj(text="string")),
    ])
    graph = build_graph(catalog)
    show, create = graph.tool_index["show_draft"], graph.tool_index["create_draft"]
    grounding = ground(graph, ["subject"], set())
    relevance = np.zeros(graph.n_tools)
    free = plan_chains(graph, [show], grounding, relevance, DOEConfig())
    assert free.graphs[show] is not None and create in free.graphs[show].tools
    unasked = plan_chains(graph, [show], grounding, relevance, DOEConfig(), asked=[show])
    assert unasked.graphs[show] is None  # the deficit stays open; no write is proposed
    asked = plan_chains(graph, [show], grounding, relevance, DOEConfig(),
                        asked=[show, create])
    assert asked.graphs[show] is not None and create in asked.graphs[show].tools


def test_a_generic_word_never_links_two_servers() -> None:
    memory = make_tool(name="delete_observations", input_schema=_obj(entity="string"),
                       output_schema=_obj(message="string"), metadata={"server": "memory"})
    git = make_tool(name="git_commit", input_schema=_obj(message="string", repo_path="string"),
                    metadata={"server": "git"})
    status = make_tool(name="git_status", input_schema=_obj(repo_path="string"),
                       output_schema=_obj(repo_path="string", message="string"),
                       metadata={"server": "git"})
    pairs = _pairs(build_graph(build_catalog([memory, git, status])))
    assert ("git_status:out:message", "git_commit:in:message") in pairs  # one server
    assert not any(s.startswith("delete_observations") for s, _ in pairs)
