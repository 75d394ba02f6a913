"""ReAct and Plan-and-Execute under the same harness as HyperAgent (scripted LLM)."""

from __future__ import annotations

from typing import Any

import pytest

from hyperplan.agents import run_plan_and_execute, run_react
from hyperplan.agents.toolcalling import wire_name
from hyperplan.embed import get_embedder
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.subtask import RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.llm import Accounting, Budget, ScriptedLLM, ScriptedRule, ToolCall
from toy_music import CREDENTIALS, MusicWorld, music_catalog


@pytest.fixture(scope="module")
def graph() -> Hypergraph:
    return build_graph(music_catalog(MusicWorld()), embedder=get_embedder("hashing"))


def _ctx(graph: Hypergraph, world: MusicWorld, rules: list[ScriptedRule],
         budget: Budget | None = None) -> tuple[RunContext, ScriptedLLM]:
    accounting = Accounting(budget)
    llm = ScriptedLLM(rules, accounting=accounting)
    ctx = RunContext(graph=graph, catalog=music_catalog(world),
                     runtime=PythonRuntime(world.tools()), accounting=accounting,
                     tracer=TraceWriter(), llm=llm)
    return ctx, llm


def _call(tool: str, **args: Any) -> ScriptedRule:
    return ScriptedRule(tool_calls=(ToolCall(wire_name(tool), args, f"c-{tool}"),),
                        component=None, times=1)


CALLS = [_call("music.login", **CREDENTIALS),
         _call("music.search_songs", access_token="tok-SECRET", query="Help"),
         _call("music.like_song", access_token="tok-SECRET", song_id=3)]


def test_wire_names_are_endpoint_safe() -> None:
    assert wire_name("music.like_song") == "music__like_song"
    assert wire_name("GET /pets/{id}") == "GET__pets__id_"


def test_react_calls_tools_until_it_answers(graph: Hypergraph) -> None:
    world = MusicWorld()
    ctx, llm = _ctx(graph, world, [*CALLS, ScriptedRule(text="Liked Help.")])
    result = run_react(ctx, "Like the song Help")
    assert result.status == "success" and result.message == "Liked Help."
    assert world.liked == [3] and result.tool_calls == 3
    assert len(llm.calls) == 4 and llm.calls[1].messages[-1].role == "tool"
    offered = {t.name for t in llm.calls[0].tools}
    assert "music__like_song" in offered


def test_react_unknown_tool_is_an_observation(graph: Hypergraph) -> None:
    world = MusicWorld()
    rules = [_call("music.play", song_id=1), ScriptedRule(text="cannot")]
    ctx, llm = _ctx(graph, world, rules)
    result = run_react(ctx, "Play Help")
    assert result.status == "success"
    assert "no tool named" in llm.calls[1].messages[-1].content


def test_react_budget_stops_cleanly_with_partial_state(graph: Hypergraph) -> None:
    world = MusicWorld()
    ctx, _ = _ctx(graph, world, [*CALLS, ScriptedRule(text="done")], Budget(max_tool_calls=2))
    result = run_react(ctx, "Like the song Help")
    assert result.status == "budget_exhausted"
    assert result.tool_calls == 2 and world.liked == []


def test_react_without_final_answer_fails(graph: Hypergraph) -> None:
    rules = [ScriptedRule(tool_calls=(ToolCall("music__login", CREDENTIALS, "x"),))]
    ctx, _ = _ctx(graph, MusicWorld(), rules)
    result = run_react(ctx, "Like the song Help", max_steps=3)
    assert result.status == "failed" and "within 3 steps" in result.message


def test_plan_and_execute_runs_each_step(graph: Hypergraph) -> None:
    world = MusicWorld()
    plan = ScriptedRule(json={"steps": ["log in", "find the song Help", "like it"]},
                        component="planner")
    rules = [plan, CALLS[0], ScriptedRule(text="token tok-SECRET", times=1),
             CALLS[1], ScriptedRule(text="song_id 3", times=1),
             CALLS[2], ScriptedRule(text="liked", times=1)]
    ctx, llm = _ctx(graph, world, rules)
    result = run_plan_and_execute(ctx, "Like the song Help")
    assert result.status == "success", result.message
    assert world.liked == [3]
    assert [c.component for c in llm.calls].count("executor") == 6
    last_step_prompt = llm.calls[5].messages[1].content
    assert "step 2 (find the song Help): song_id 3" in last_step_prompt
    assert result.state.status["step3"].value == "done"


PLAN = {"subtasks": [{"id": "q1", "goal": "like the song Help", "terminals": ["music.like_song"],
                      "depends_on": [], "inputs": {"query": "Help"}}]}
INTERP = ScriptedRule(json={"operations": ["like song"], "schemas": ["song"], "values": {}},
                      component="interpreter")


def test_variant1_plans_from_plain_tool_descriptions(graph: Hypergraph) -> None:
    from hyperplan.agents import run_variant1

    world = MusicWorld()
    rules = [INTERP, ScriptedRule(json=PLAN, component="planner")]
    ctx, llm = _ctx(graph, world, rules)
    result = run_variant1(ctx, "Like the song Help", get_embedder("hashing"))
    prompt = next(c for c in llm.calls if c.component == "planner").messages[-1].content
    assert "# Links" not in prompt and "- music.like_song: Like a song." in prompt
    # the scripted plan gives no credentials, so execution stops honestly
    assert result.status in ("failed", "blocked", "success")


def test_variant2_runs_subtasks_over_semantic_top_k_tools(graph: Hypergraph) -> None:
    from hyperplan.agents import run_variant2

    world = MusicWorld()
    rules = [INTERP, ScriptedRule(json=PLAN, component="planner"), *CALLS,
             ScriptedRule(text="liked", component="executor")]
    ctx, llm = _ctx(graph, world, rules)
    result = run_variant2(ctx, "Like the song Help", get_embedder("hashing"), k=3)
    assert result.status == "success", result.message
    assert world.liked == [3]
    offered = {t.name for t in next(c for c in llm.calls if c.component == "executor").tools}
    assert "music__like_song" in offered and len(offered) <= 4
