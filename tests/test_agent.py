"""The agent runtime on a small hand-built music world: LLM-free goals, the scripted-LLM
planner paths (valid plan, cyclic plan repaired, hallucinated tool rejected, tool failure ->
refinement, budget hit mid-run, ambiguous binding -> LLM choice) and traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import pytest

from hyperplan.embed import get_embedder
from hyperplan.execute.agent import RunResult, run_goal, run_request
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import TraceWriter, read_events, read_trace, redact, summarize
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.importers.python_callables import load_python_callables
from hyperplan.llm import LLM, Accounting, Budget, ScriptedLLM, ScriptedRule
from toy_music import CREDENTIALS, MusicWorld, music_catalog


@pytest.fixture(scope="module")
def graph() -> Hypergraph:
    return build_graph(music_catalog(MusicWorld()), embedder=get_embedder("hashing"))


def _context(graph: Hypergraph, world: MusicWorld, *, llm: LLM | None = None,
             budget: Budget | None = None, trace: Path | None = None,
             ) -> RunContext:
    accounting = Accounting(budget)
    tracer = TraceWriter(trace)
    if isinstance(llm, ScriptedLLM):
        llm.accounting = accounting  # the run's budget covers the model's calls
    if llm is not None:
        llm = TracedLLM(llm, tracer)
    return RunContext(graph=graph, catalog=music_catalog(world),
                      runtime=PythonRuntime(world.tools()), accounting=accounting,
                      tracer=tracer, config=AgentConfig(), llm=llm)


def _goal(**values: Any) -> StructuredGoal:
    return StructuredGoal.from_dict({"terminals": ["music.like_song"],
                                     "values": {**CREDENTIALS, **values}})


def _calls(result: RunResult) -> list[str]:
    return [r.result.tool for r in result.state.history]


# ---------------------------------------------------------------- LLM-free mode
def test_goal_runs_llm_free_with_minimal_calls(graph: Hypergraph) -> None:
    world = MusicWorld()
    result = run_goal(_context(graph, world), _goal(query="Help"))
    assert result.status == "success"
    assert _calls(result) == ["music.login", "music.search_songs", "music.like_song"]
    assert result.llm_calls == 0
    assert world.liked == [3]


def test_known_value_picks_the_matching_search_result(graph: Hypergraph) -> None:
    world = MusicWorld()
    result = run_goal(_context(graph, world), _goal(query="Yesterday", artist="Leona Lewis"))
    assert result.status == "success"
    assert world.liked == [2]


def test_ambiguous_binding_blocks_with_candidates_instead_of_guessing(graph: Hypergraph) -> None:
    world = MusicWorld()
    result = run_goal(_context(graph, world), _goal(query="Yesterday"))
    assert result.status == "blocked"
    assert world.liked == []
    (choice,) = result.blocked
    assert (choice.tool, choice.parameter) == ("music.like_song", "song_id")
    assert sorted(c.value for c in choice.candidates) == [1, 2]
    assert result.llm_calls == 0


def test_ambiguous_binding_goes_to_one_llm_choice(graph: Hypergraph) -> None:
    world = MusicWorld()
    llm = ScriptedLLM([ScriptedRule(json={"song_id": 2}, component="binder")])
    result = run_goal(_context(graph, world, llm=llm), _goal(query="Yesterday"))
    assert result.status == "success"
    assert world.liked == [2]  # candidate 2 of [1, 2] in binding order
    assert [c.component for c in llm.calls] == ["binder"]
    assert "Leona Lewis" in llm.calls[0].messages[-1].content


def test_tool_errors_are_observations_and_refinement_is_bounded(graph: Hypergraph) -> None:
    world = MusicWorld(broken=True)
    result = run_goal(_context(graph, world), _goal(query="Help"))
    assert result.status == "failed"
    failed = [r.result for r in result.state.history if not r.result.ok]
    assert failed and "like service unavailable" in failed[0].error


def test_wrong_user_value_fails_cleanly(graph: Hypergraph) -> None:
    world = MusicWorld()
    goal = StructuredGoal.from_dict({"terminals": ["music.like_song"],
                                     "values": {"email": "x", "password": "bad", "query": "Help"}})
    result = run_goal(_context(graph, world), goal)
    assert result.status == "failed"
    assert "wrong password" in result.state.history[0].result.error


def test_budget_hit_mid_run_returns_partial_result(graph: Hypergraph) -> None:
    world = MusicWorld()
    result = run_goal(_context(graph, world, budget=Budget(max_tool_calls=2)), _goal(query="Help"))
    assert result.status == "budget_exhausted"
    assert _calls(result) == ["music.login", "music.search_songs"]
    assert "tool_calls" in result.message
    assert result.accounting["stopped"]


def test_unknown_goal_tool_is_a_clear_error(graph: Hypergraph) -> None:
    from hyperplan.plan.taskdag import PlanError

    goal = StructuredGoal.from_dict({"terminals": ["music.play"], "values": {}})
    with pytest.raises(PlanError, match=r"unknown tool 'music\.play'"):
        run_goal(_context(graph, MusicWorld()), goal)


# ---------------------------------------------------------------- scripted LLM planner
INTERPRETATION = {"operations": ["like song"], "schemas": ["song title"],
                  "values": {**CREDENTIALS, "query": "Help"}}


def _plan(*subtasks: dict[str, Any]) -> dict[str, Any]:
    return {"subtasks": list(subtasks)}


LIKE = {"id": "q1", "goal": "like Help", "terminals": ["music.like_song"], "depends_on": [],
        "inputs": {"query": "Help"}}


def _request(graph: Hypergraph, world: MusicWorld, rules: list[ScriptedRule],
             **kw: Any) -> tuple[RunResult, ScriptedLLM]:
    llm = ScriptedLLM([ScriptedRule(json=INTERPRETATION, component="interpreter"), *rules])
    ctx = _context(graph, world, llm=llm, **kw)
    return run_request(ctx, "Like the song Help", get_embedder("hashing")), llm


def test_valid_plan_runs(graph: Hypergraph) -> None:
    world = MusicWorld()
    result, llm = _request(graph, world, [ScriptedRule(json=_plan(LIKE), component="planner")])
    assert result.status == "success", result.message
    assert world.liked == [3]
    assert [c.component for c in llm.calls] == ["interpreter", "planner"]
    assert result.llm_calls == 2


def test_cyclic_plan_is_repaired_once(graph: Hypergraph) -> None:
    world = MusicWorld()
    cyclic = _plan({**LIKE, "depends_on": ["q2"]},
                   {"id": "q2", "goal": "search", "terminals": ["music.search_songs"],
                    "depends_on": ["q1"]})
    rules = [ScriptedRule(json=cyclic, component="planner", times=1),
             ScriptedRule(json=_plan(LIKE), component="planner")]
    result, llm = _request(graph, world, rules)
    assert result.status == "success"
    repair = llm.calls[2].messages[-1].content
    assert "dependency cycle: q1 -> q2 -> q1" in repair


def test_hallucinated_tool_is_rejected_after_one_repair(graph: Hypergraph) -> None:
    world = MusicWorld()
    bad = _plan({**LIKE, "terminals": ["music.play_song"]})
    result, llm = _request(graph, world, [ScriptedRule(json=bad, component="planner")])
    assert result.status == "failed"
    assert "unknown tool 'music.play_song'" in result.message
    assert [c.component for c in llm.calls].count("planner") == 2
    assert world.liked == [] and result.tool_calls == 0


def test_tool_failure_leads_to_dag_refinement(graph: Hypergraph, tmp_path: Path) -> None:
    world = MusicWorld(broken=True)
    alternative = _plan({**LIKE, "id": "q1b", "terminals": ["music.add_song_to_library"]})
    rules = [ScriptedRule(json=_plan(LIKE), component="planner"),
             ScriptedRule(json=alternative, component="refiner")]
    result, llm = _request(graph, world, rules, trace=tmp_path / "t.jsonl")
    assert result.status == "success", result.message
    assert world.library == [3]
    assert result.dag is not None and result.dag.version == 1
    refiner_prompt = next(c for c in llm.calls if c.component == "refiner").messages[-1].content
    assert "like service unavailable" in refiner_prompt
    assert summarize(read_events(tmp_path / "t.jsonl"))["dag_versions"] == 2


def test_budget_hit_during_planning_is_clean(graph: Hypergraph) -> None:
    world = MusicWorld()
    result, _ = _request(graph, world, [ScriptedRule(json=_plan(LIKE), component="planner")],
                         budget=Budget(max_calls=1))
    assert result.status == "budget_exhausted"
    assert result.tool_calls == 0 and "llm_calls" in result.message


# ---------------------------------------------------------------- traces
def test_trace_records_run_and_hides_secrets(graph: Hypergraph, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx = _context(graph, MusicWorld(), trace=path)
    run_goal(ctx, _goal(query="Help"))
    ctx.tracer.close()
    text = path.read_text()
    assert "pw-secret" not in text and "tok-SECRET" not in text
    events = read_trace(path)
    summary = summarize(read_events(path))
    assert summary["status"] == "success" and summary["tool_calls"] == 3
    assert summary["llm_calls"] == 0
    support = next(e for e in events if e["type"] == "support_graph")
    assert support["tools"] == ["music.login", "music.search_songs", "music.like_song"]
    assert json.loads(path.read_text().splitlines()[0])["type"] == "run_start"


def test_an_interpretation_that_anchors_no_tool_falls_back_to_the_rules(
        graph: Hypergraph, tmp_path: Path) -> None:
    """SmolLM2 once read "Create a playlist ... add 'Clair de Lune'" as the single operation
    ", 'Clair de Lune'": nothing anchors, and the planner would see an empty tool list."""
    world = MusicWorld()
    garbage = {"operations": ["zqxj vwkp"], "schemas": [""], "values": INTERPRETATION["values"]}
    llm = ScriptedLLM([ScriptedRule(json=garbage, component="interpreter"),
                       ScriptedRule(json=_plan(LIKE), component="planner")])
    ctx = _context(graph, world, llm=llm, trace=tmp_path / "t.jsonl")
    result = run_request(ctx, "Like the song Help", get_embedder("hashing"))
    assert result.status == "success", result.message
    events = read_trace(tmp_path / "t.jsonl")
    readings = [e for e in events if e["type"] == "interpretation"]
    assert [e["source"] for e in readings] == ["llm", "rules"]
    assert "anchors no tool" in readings[1]["reason"]
    assert readings[1]["values"]["query"] == "Help"  # the model's values are kept
    assert readings[1]["values"]["password"] == "***"  # and redacted in the trace
    (shown,) = [e for e in events if e["type"] == "context_graph"]
    assert "music.like_song" in shown["tools"]


def test_redact_hides_credentials_and_payment_cards():
    event = {"arguments": {"username": "me", "password": "pw", "spotify_access_token": "t",
                           "cardNumber": "4111", "payment": {"card_number": "4111", "cvv": "123"}},
             "result": [{"order_id": "o1", "security_code": "9"}]}
    assert redact(event) == {
        "arguments": {"username": "me", "password": "***", "spotify_access_token": "***",
                      "cardNumber": "***", "payment": {"card_number": "***", "cvv": "***"}},
        "result": [{"order_id": "o1", "security_code": "***"}]}


class Found(TypedDict):
    result: list[str]


class Made(TypedDict):
    result: str


def find_books(query: str) -> Found:
    """Search the catalogue for books; returns the book ids."""
    return {"result": ["b1"] if "dune" in query else ["b1", "b2"]}


def add_to_cart(book_id: str) -> Made:
    """Add a book to the shopping cart; returns the cart id."""
    return {"result": f"cart-{book_id}"}


def checkout(cart_id: str) -> Made:
    """Pay for the cart; returns the order id."""
    return {"result": f"order-{cart_id}"}


@pytest.mark.parametrize(("query", "status"), [("dune", "success"), ("any", "blocked")])
def test_wrapped_bare_results_link_and_bind(query: str, status: str) -> None:
    """Tools that wrap a bare value as ``{"result": ...}`` (as MCP servers do), undescribed in
    their schemas: the "returns X" clause of each description names the value, so DOE chains
    them, and the one-element list binds the string input (two elements are a choice)."""
    catalog = load_python_callables([find_books, add_to_cart, checkout], source="unit")
    graph = build_graph(catalog, embedder=get_embedder("minilm"))  # the CLI's default
    context = RunContext(graph=graph, catalog=catalog, runtime=PythonRuntime.from_catalog(catalog),
                         accounting=Accounting(), tracer=TraceWriter(None), config=AgentConfig())
    goal = StructuredGoal.from_dict({"terminals": ["checkout"], "values": {"query": query}})
    result = run_goal(context, goal)
    assert result.status == status
    if status == "success":
        assert _calls(result) == ["find_books", "add_to_cart", "checkout"]
        assert result.state.history[-1].result.value == {"result": "order-cart-b1"}
    else:
        assert _calls(result) == ["find_books"]
        assert "book_id" in result.message
