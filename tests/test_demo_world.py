"""The demo world: catalog, state, tokens, tasks (gold sequences in exactly ``min_calls``
calls), hypergraph links and Deficit-Oriented Expansion against the gold tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from hyperplan.demo_world import (
    AuthenticationError,
    DemoTask,
    DemoWorld,
    InvalidArgumentError,
    NotFoundError,
    load_tasks,
)
from hyperplan.embed import get_embedder, minilm_available
from hyperplan.graph.build import build_graph
from hyperplan.graph.effects import WRITE_VERBS
from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.graph.text import name_tokens
from hyperplan.plan.doe import select_support_graph
from hyperplan.plan.grounding import ground

TASKS = {t.id: t for t in load_tasks()}


# --------------------------------------------------------------------------- gold runner
@dataclass
class Call:
    subgoal: str
    tool: str
    arguments: dict[str, Any]
    result: Any


@dataclass
class Gold:
    """Runs a gold call sequence on a world and records every call with its sub-goal."""

    world: DemoWorld
    subgoal: str = "g1"
    calls: list[Call] = field(default_factory=list)

    def __call__(self, tool: str, **arguments: Any) -> Any:
        result = self.world.callables()[tool](**arguments)
        self.calls.append(Call(self.subgoal, tool, arguments, result))
        return result

    def login(self, app: str, username: str | None = None) -> tuple[str, str]:
        """(access token, username): profile lookup unless the username is known already."""
        if username is None:
            username = self("profile.show_profile")["username"]
        password = self("profile.show_account_password", app_name=app)["password"]
        return self(f"{app}.login", username=username, password=password)["access_token"], \
            username


def pick(items: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    """The one element whose fields equal ``match`` (what a deterministic binder does)."""
    found = [i for i in items if all(i.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, items)
    return found[0]


def _like(g: Gold, query: str, **match: Any) -> None:
    tok, _ = g.login("music")
    song = pick(g("music.search_songs", access_token=tok, query=query), **match)
    g("music.like_song", access_token=tok, song_id=song["song_id"])


def gold_t01(g: Gold) -> None:
    _like(g, "Bohemian Rhapsody", title="Bohemian Rhapsody")


def gold_t02(g: Gold) -> None:
    _like(g, "Yesterday", title="Yesterday")


def gold_t03(g: Gold) -> None:
    tok, _ = g.login("music")
    playlist = pick(g("music.show_playlist_library", access_token=tok),
                    playlist_name="Chill Vibes")
    song = pick(g("music.search_songs", access_token=tok, query="Wonderwall"),
                title="Wonderwall")
    g("music.add_song_to_playlist", access_token=tok, playlist_id=playlist["playlist_id"],
      song_id=song["song_id"])


def gold_t04(g: Gold) -> None:
    tok, _ = g.login("music")
    new = g("music.create_playlist", access_token=tok, playlist_name="Focus")
    g.subgoal = "g2"
    song = pick(g("music.search_songs", access_token=tok, query="Clair de Lune"),
                title="Clair de Lune")
    g("music.add_song_to_playlist", access_token=tok, playlist_id=new["playlist_id"],
      song_id=song["song_id"])


def gold_t05(g: Gold) -> None:
    tok, _ = g.login("music")
    playlist = pick(g("music.show_playlist_library", access_token=tok),
                    playlist_name="Road Trip")
    shown = g("music.show_playlist", access_token=tok, playlist_id=playlist["playlist_id"])
    track = pick(shown["tracks"], title="Hotel California")
    g("music.remove_track_from_playlist", access_token=tok,
      playlist_id=playlist["playlist_id"], position=track["position"])


def gold_t06(g: Gold) -> None:
    tok, _ = g.login("music")
    song = pick(g("music.search_songs", access_token=tok, query="Someone Like You"),
                title="Someone Like You")
    g("music.unlike_song", access_token=tok, song_id=song["song_id"])


def gold_t07(g: Gold) -> None:
    tok, _ = g.login("music")
    album = pick(g("music.search_albums", access_token=tok, query="Kind of Blue"),
                 album_title="Kind of Blue")
    g("music.save_album", access_token=tok, album_id=album["album_id"])


def gold_t08(g: Gold) -> None:  # ambiguous: the artist comes from the request text
    _like(g, "Hallelujah", title="Hallelujah", artist_name="Jeff Buckley")


def gold_t09(g: Gold) -> None:
    g("contacts.add_contact", name="Priya Patel", email="priya.patel@example.com",
      phone_number="+1-555-0142")


def gold_t10(g: Gold) -> None:
    person = pick(g("contacts.search_contacts", query="Maria Garcia"), name="Maria Garcia")
    g("contacts.update_contact_phone_number", contact_id=person["contact_id"],
      phone_number="+1-555-0199")


def _send(g: Gold, query: str, amount: float, note: str, **match: Any) -> None:
    tok, _ = g.login("payments")
    person = pick(g("contacts.search_contacts", query=query), **match)
    g("payments.send_money", access_token=tok, receiver_email=person["email"], amount=amount,
      note=note)


def gold_t11(g: Gold) -> None:
    _send(g, "Bob Lee", 25, "concert tickets")


def gold_t12(g: Gold) -> None:
    _send(g, "Jane", 40, "dinner", relationship="sister")


def gold_t13(g: Gold) -> None:
    tok, _ = g.login("payments")
    person = pick(g("contacts.search_contacts", query="Carlos Diaz"))
    g("payments.request_money", access_token=tok, payer_email=person["email"], amount=15,
      note="pizza")


def gold_t14(g: Gold) -> None:
    tok, _ = g.login("payments")
    request = pick(g("payments.show_payment_requests", access_token=tok), note="movie tickets")
    g("payments.approve_payment_request", access_token=tok,
      payment_request_id=request["payment_request_id"])


def gold_t15(g: Gold) -> None:
    tok, _ = g.login("payments")
    card = pick(g("payments.show_payment_cards", access_token=tok), card_name="Travel Visa")
    g("payments.add_funds", access_token=tok, card_id=card["card_id"], amount=100)


def gold_t16(g: Gold) -> None:  # ambiguous: "from work" comes from the request text
    _send(g, "Alex", 30, "taxi", relationship="coworker")


def _text(g: Gold, query: str, text: str, **match: Any) -> None:
    tok, _ = g.login("messaging")
    person = pick(g("contacts.search_contacts", query=query), **match)
    g("messaging.send_message", access_token=tok, phone_number=person["phone_number"],
      text=text)


def gold_t17(g: Gold) -> None:
    _text(g, "Maria Garcia", "Running 10 minutes late")


def gold_t18(g: Gold) -> None:  # ambiguous: "brother" comes from the request text
    _text(g, "Sam", "Happy birthday!", relationship="brother")


def gold_t19(g: Gold) -> None:
    tok, _ = g.login("messaging")
    message = pick(g("messaging.search_messages", access_token=tok, query="call me later"))
    g("messaging.delete_message", access_token=tok, message_id=message["message_id"])


def gold_t20(g: Gold) -> None:
    tok, username = g.login("payments")
    person = pick(g("contacts.search_contacts", query="Carlos Diaz"))
    g("payments.send_money", access_token=tok, receiver_email=person["email"], amount=20,
      note="lunch")
    g.subgoal = "g2"
    tok, _ = g.login("messaging", username)
    g("messaging.send_message", access_token=tok, phone_number=person["phone_number"],
      text="Sent you $20 for lunch")


def gold_t21(g: Gold) -> None:
    tok, _ = g.login("notes")
    g("notes.create_note", access_token=tok, title="Packing list",
      text="passport, charger, socks")


def _find_note(g: Gold, tok: str, title: str, **match: Any) -> int:
    note = pick(g("notes.search_notes", access_token=tok, query=title), title=title, **match)
    return int(note["note_id"])


def gold_t22(g: Gold) -> None:
    tok, _ = g.login("notes")
    g("notes.update_note", access_token=tok, note_id=_find_note(g, tok, "Book ideas"),
      text="A heist on a generation ship.")


def gold_t23(g: Gold) -> None:
    tok, _ = g.login("notes")
    g("notes.delete_note", access_token=tok, note_id=_find_note(g, tok, "Old passwords"))


def gold_t24(g: Gold) -> None:  # ambiguous: the date comes from the request text
    tok, _ = g.login("notes")
    note_id = _find_note(g, tok, "Groceries", created_at="2024-05-01T08:30:00")
    g("notes.delete_note", access_token=tok, note_id=note_id)


def gold_t25(g: Gold) -> None:
    tok, _ = g.login("notes")
    new = g("notes.create_note", access_token=tok, title="Trip checklist",
            text="tickets, passport, charger")
    g.subgoal = "g2"
    person = pick(g("contacts.search_contacts", query="Maria Garcia"))
    g("notes.share_note", access_token=tok, note_id=new["note_id"],
      receiver_email=person["email"])


def gold_t26(g: Gold) -> None:
    tok, username = g.login("notes")
    note = g("notes.show_note", access_token=tok, note_id=_find_note(g, tok, "Wifi password"))
    g.subgoal = "g2"
    tok, _ = g.login("messaging", username)
    person = pick(g("contacts.search_contacts", query="Bob Lee"))
    g("messaging.send_message", access_token=tok, phone_number=person["phone_number"],
      text=note["text"])


def gold_t27(g: Gold) -> None:
    tok, _ = g.login("calendar")
    g("calendar.create_event", access_token=tok, title="Dentist appointment",
      start_time="2024-06-20T09:30", duration_minutes=45)


def gold_t28(g: Gold) -> None:
    tok, _ = g.login("calendar")
    event = pick(g("calendar.show_events", access_token=tok, date="2024-06-05"),
                 title="Team lunch")
    person = pick(g("contacts.search_contacts", query="Bob Lee"))
    g("calendar.add_event_attendee", access_token=tok, event_id=event["event_id"],
      attendee_email=person["email"])


def gold_t29(g: Gold) -> None:
    tok, _ = g.login("calendar")
    new = g("calendar.create_event", access_token=tok, title="Book club",
            start_time="2024-06-12T19:00", duration_minutes=90)
    g.subgoal = "g2"
    person = pick(g("contacts.search_contacts", query="Jane Doe"))
    g("calendar.add_event_attendee", access_token=tok, event_id=new["event_id"],
      attendee_email=person["email"])


def gold_t30(g: Gold) -> None:
    tok, _ = g.login("calendar")
    event = pick(g("calendar.show_events", access_token=tok, date="2024-06-07"),
                 title="Dentist")
    g("calendar.delete_event", access_token=tok, event_id=event["event_id"])


GOLD: dict[str, Callable[[Gold], None]] = {
    tid: globals()[f"gold_{tid.split('_', 1)[0]}"] for tid in TASKS
}


def run_gold(task: DemoTask, world: DemoWorld | None = None) -> tuple[DemoWorld, Gold]:
    world = world or DemoWorld()
    gold = Gold(world)
    GOLD[task.id](gold)
    return world, gold


# --------------------------------------------------------------------------- catalog
def test_catalog_imports_cleanly() -> None:
    world = DemoWorld()
    catalog = world.catalog()
    names = catalog.names()
    assert 30 <= len(names) <= 50
    assert len(set(names)) == len(names)
    assert names == list(world.callables())
    for tool in catalog.tools:
        app, _, short = tool.name.partition(".")
        assert tool.metadata["app"] == app and short
        assert tool.description, tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema.get("description"), tool.name
        for pname, pschema in tool.input_schema["properties"].items():
            assert pschema.get("description"), (tool.name, pname)
            assert pschema.get("type") or pschema.get("enum"), (tool.name, pname)


def test_write_tools_get_done_effects(hashing_graph: Hypergraph) -> None:
    writes = {t.name for t in hashing_graph.tools
              if name_tokens(t.name.split(".")[1])[0] in WRITE_VERBS}
    assert {"music.like_song", "payments.send_money", "notes.create_note",
            "messaging.send_message", "contacts.add_contact"} <= writes
    for name in writes:
        effects = {hashing_graph.nodes[o].path for o in hashing_graph.tool(name).outputs
                   if hashing_graph.nodes[o].kind is NodeKind.EFFECT}
        assert f"{name}.done" in effects


# --------------------------------------------------------------------------- state
def test_reset_is_deterministic_and_isolates_tasks() -> None:
    fresh = DemoWorld().snapshot()
    world = DemoWorld()
    assert world.snapshot() == fresh
    json.dumps(fresh)  # JSON-able
    run_gold(TASKS["t11_send_money"], world)
    tokens_first = [r["token"] for r in world.snapshot()["access_tokens"]]
    assert world.snapshot() != fresh
    world.reset()
    assert world.snapshot() == fresh
    run_gold(TASKS["t11_send_money"], world)
    assert [r["token"] for r in world.snapshot()["access_tokens"]] == tokens_first
    assert world.snapshot() == run_gold(TASKS["t11_send_money"])[0].snapshot()


def test_file_database_keeps_state_until_reset(tmp_path: Any) -> None:
    path = str(tmp_path / "world.db")
    with DemoWorld(path) as world:
        run_gold(TASKS["t21_create_note"], world)
        assert TASKS["t21_create_note"].check(world)
    with DemoWorld(path) as reopened:
        assert TASKS["t21_create_note"].check(reopened)
    with DemoWorld(path, fresh=True) as reset:
        assert not TASKS["t21_create_note"].check(reset)


def test_tokens_are_validated() -> None:
    world = DemoWorld()
    tools = world.callables()
    username = tools["profile.show_profile"]()["username"]
    with pytest.raises(AuthenticationError, match="wrong password"):
        tools["music.login"](username=username, password="nope")
    with pytest.raises(AuthenticationError, match="unknown username"):
        tools["music.login"](username="mallory", password="tune-4821")
    password = tools["profile.show_account_password"](app_name="music")["password"]
    token = tools["music.login"](username=username, password=password)["access_token"]
    assert tools["music.show_liked_songs"](access_token=token)
    with pytest.raises(AuthenticationError, match="invalid access token"):
        tools["music.show_liked_songs"](access_token="music-forged")
    with pytest.raises(AuthenticationError, match=r"issued by music\.login"):
        tools["payments.show_balance"](access_token=token)
    world.advance_clock(59)
    assert tools["music.show_liked_songs"](access_token=token)
    world.advance_clock(1)
    with pytest.raises(AuthenticationError, match="expired"):
        tools["music.show_liked_songs"](access_token=token)


def test_invalid_ids_and_values_raise_clear_errors() -> None:
    world = DemoWorld()
    g = Gold(world)
    music, username = g.login("music")
    with pytest.raises(NotFoundError, match="no song with song_id 999"):
        world.call("music.like_song", access_token=music, song_id=999)
    with pytest.raises(InvalidArgumentError, match="already liked"):
        world.call("music.like_song", access_token=music, song_id=3)
    with pytest.raises(InvalidArgumentError, match="no track at position 9"):
        world.call("music.remove_track_from_playlist", access_token=music, playlist_id=1,
                   position=9)
    pay, _ = g.login("payments", username)
    with pytest.raises(NotFoundError, match="no wallet account"):
        world.call("payments.send_money", access_token=pay, receiver_email="x@example.com",
                   amount=5)
    with pytest.raises(InvalidArgumentError, match="positive number"):
        world.call("payments.send_money", access_token=pay,
                   receiver_email="bob.lee@example.com", amount=-5)
    with pytest.raises(InvalidArgumentError, match="insufficient balance"):
        world.call("payments.send_money", access_token=pay,
                   receiver_email="bob.lee@example.com", amount=10_000)
    with pytest.raises(InvalidArgumentError, match="only pending incoming"):
        world.call("payments.approve_payment_request", access_token=pay, payment_request_id=3)
    with pytest.raises(NotFoundError, match="no saved password"):
        world.call("profile.show_account_password", app_name="bank")
    with pytest.raises(InvalidArgumentError, match="unknown demo-world tool"):
        world.call("music.play_song")


# --------------------------------------------------------------------------- tasks
def test_task_set_shape() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 20
    assert len({t.id for t in tasks}) == len(tasks)
    assert set(GOLD) == set(TASKS)
    ambiguous = [t.id for t in tasks if t.ambiguous]
    assert 3 <= len(ambiguous) <= 4
    assert any(len(t.goal.subgoals) > 1 for t in tasks)
    catalog = set(DemoWorld().catalog().names())
    for task in tasks:
        for sg in task.goal.subgoals:
            assert set(sg.terminals) <= catalog
            assert all(d in {s.id for s in task.goal.subgoals} for d in sg.depends_on)
            values = {**task.goal.values, **sg.values}
            assert not any(k.endswith(("_id", "access_token", "password")) for k in values)


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_gold_sequence_passes_check_in_min_calls(task_id: str) -> None:
    task = TASKS[task_id]
    world = DemoWorld()
    assert not task.check(world), "the check must fail on the reset state"
    _, gold = run_gold(task, world)
    assert task.check(world)
    assert len(gold.calls) == task.min_calls
    terminals = {t for sg in task.goal.subgoals for t in sg.terminals}
    assert gold.calls[-1].tool in terminals


def _candidates(task: DemoTask, call: Call) -> list[int]:
    """For each list of records a call returned (several records), how many of them agree
    with every known value of the call's sub-goal that names one of their fields."""
    sg = next(s for s in task.goal.subgoals if s.id == call.subgoal)
    known = {**task.goal.values, **sg.values}
    result = call.result
    lists = [result] if isinstance(result, list) else [
        v for v in (result or {}).values() if isinstance(v, list)]
    counts = []
    for items in lists:
        records = [i for i in items if isinstance(i, dict)]
        if len(records) > 1:
            counts.append(sum(all(r[k] == v for k, v in known.items() if k in r)
                              for r in records))
    return counts


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_known_values_pick_one_record_unless_ambiguous(task_id: str) -> None:
    """What a deterministic binder relies on: in unambiguous tasks the known values single out
    one record of every multi-record result; ambiguous tasks leave several candidates."""
    task = TASKS[task_id]
    _, gold = run_gold(task)
    counts = [n for call in gold.calls for n in _candidates(task, call)]
    if task.ambiguous:
        assert any(n >= 2 for n in counts), counts
    else:
        assert all(n == 1 for n in counts), counts


def test_checks_fail_after_other_tasks() -> None:
    """A task's check is not satisfied by another task's gold run (isolation of checks)."""
    for task in load_tasks():
        world, _ = run_gold(task)
        passing = [t.id for t in load_tasks() if t.check(world)]
        assert passing == [task.id]


# --------------------------------------------------------------------------- graph
@pytest.fixture(scope="module")
def hashing_graph() -> Hypergraph:
    return build_graph(DemoWorld().catalog(), embedder=get_embedder("hashing"))


def _links(graph: Hypergraph) -> dict[tuple[str, str], float]:
    return {(graph.node_name(lk.source), graph.node_name(lk.target)): lk.weight
            for lk in graph.links()}


KEY_LINKS = [
    ("music.login:out:access_token", "music.like_song:in:access_token"),
    ("music.login:eff:music.authenticated", "music.like_song:pre:music.authenticated"),
    ("music.search_songs:out:[].song_id", "music.like_song:in:song_id"),
    ("music.show_playlist_library:out:[].playlist_id", "music.add_song_to_playlist:in:playlist_id"),
    ("music.show_playlist:out:tracks[].position", "music.remove_track_from_playlist:in:position"),
    ("profile.show_profile:out:username", "payments.login:in:username"),
    ("profile.show_account_password:out:password", "payments.login:in:password"),
    ("contacts.search_contacts:out:[].email", "payments.send_money:in:receiver_email"),
    ("contacts.search_contacts:out:[].email", "payments.request_money:in:payer_email"),
    ("contacts.search_contacts:out:[].email", "notes.share_note:in:receiver_email"),
    ("contacts.search_contacts:out:[].email", "calendar.add_event_attendee:in:attendee_email"),
    ("contacts.search_contacts:out:[].phone_number", "messaging.send_message:in:phone_number"),
    ("notes.create_note:out:note_id", "notes.share_note:in:note_id"),
    ("notes.show_note:out:text", "messaging.send_message:in:text"),
    ("calendar.create_event:out:event_id", "calendar.add_event_attendee:in:event_id"),
]


def test_key_links_exist(hashing_graph: Hypergraph) -> None:
    links = _links(hashing_graph)
    missing = [pair for pair in KEY_LINKS if pair not in links]
    assert not missing
    assert all(links[pair] >= 0.85 for pair in KEY_LINKS)


def test_no_misleading_links_into_people_inputs(hashing_graph: Hypergraph) -> None:
    """Only contacts produce emails and phone numbers of other people; only the app's own
    login produces its access token."""
    for (source, target), _ in _links(hashing_graph).items():
        port = target.rsplit(":", 1)[1]
        if port in ("receiver_email", "payer_email", "attendee_email", "phone_number"):
            assert source.startswith("contacts."), (source, target)
        if port == "access_token":
            assert source == f"{target.split('.')[0]}.login:out:access_token", (source, target)
        if port in ("username", "password"):
            assert source.startswith("profile."), (source, target)


# --------------------------------------------------------------------------- DOE
def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(output path, value) pairs in the hypergraph's path syntax (``[].song_id``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path, item
            yield from _flatten(item, path)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield from _flatten(item, f"{prefix}[]")


def _state_before(graph: Hypergraph, task: DemoTask, gold: Gold, sid: str,
                  known: dict[str, Any]) -> tuple[set[str], set[str]]:
    """What a sub-goal inherits from earlier sub-goals: the output nodes whose values its gold
    calls reuse, and the effects achieved so far."""
    order = [s.id for s in task.goal.subgoals]
    earlier = [c for c in gold.calls if order.index(c.subgoal) < order.index(sid)]
    outputs: set[str] = set()
    for call in (c for c in gold.calls if c.subgoal == sid):
        for name, value in call.arguments.items():
            if known.get(name) == value:
                continue
            for prior in earlier:
                outputs |= {f"{prior.tool}:out:{path}" for path, v in _flatten(prior.result)
                            if type(v) is type(value) and v == value}
    effects = {graph.nodes[o].path for c in earlier for o in graph.tool(c.tool).outputs
               if graph.nodes[o].kind is NodeKind.EFFECT}
    return outputs, effects


def doe_mismatches(graph: Hypergraph) -> dict[str, tuple[list[str], list[str]]]:
    """Sub-goals whose DOE support graph differs from the gold tools: key -> (DOE, gold)."""
    bad: dict[str, tuple[list[str], list[str]]] = {}
    for task in load_tasks():
        _, gold = run_gold(task)
        for sg in task.goal.subgoals:
            known = {**task.goal.values, **sg.values}
            outputs, effects = _state_before(graph, task, gold, sg.id, known)
            grounding = ground(graph, values=[*known, *outputs], effects=effects)
            choice = select_support_graph(graph, list(sg.terminals), grounding)
            chosen = sorted(graph.tools[t].name for t in choice.chosen.tools) \
                if choice.chosen else [choice.reason]
            expected = sorted(c.tool for c in gold.calls if c.subgoal == sg.id)
            if chosen != expected:
                bad[f"{task.id}/{sg.id}"] = (chosen, expected)
    return bad


def test_doe_selects_the_gold_tools_hashing(hashing_graph: Hypergraph) -> None:
    assert doe_mismatches(hashing_graph) == {}


@pytest.mark.skipif(not minilm_available(), reason="MiniLM assets not installed")
def test_doe_selects_the_gold_tools_minilm() -> None:
    graph = build_graph(DemoWorld().catalog(), embedder=get_embedder("minilm", cache=False))
    assert doe_mismatches(graph) == {}
    links = _links(graph)
    assert all(pair in links for pair in KEY_LINKS)
