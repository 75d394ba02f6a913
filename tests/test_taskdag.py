"""Task DAG validation (Definition 3), structured goals, prompt files and binding helpers."""

from __future__ import annotations

import pytest

from hyperplan.catalog import ToolSpec, build_catalog
from hyperplan.execute.binding import Candidate, narrow
from hyperplan.execute.goal import GoalError, StructuredGoal, dag_from_goal
from hyperplan.execute.state import AgentState, materialise, path_parts, values_at
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.plan.prompts import PROMPT_NAMES, render
from hyperplan.plan.taskdag import Subtask, TaskDAG, find_cycle, validate_dag


def _tool(name: str, ins: dict[str, str], outs: dict[str, str] | None = None) -> ToolSpec:
    props = {k: {"type": v} for k, v in ins.items()}
    out = {"type": "object", "properties": {k: {"type": v} for k, v in (outs or {}).items()}}
    return ToolSpec(name=name, input_schema={"type": "object", "properties": props,
                                             "required": list(ins)},
                    output_schema=out if outs else None)


@pytest.fixture(scope="module")
def graph() -> Hypergraph:
    return build_graph(build_catalog([
        _tool("notes.create_note", {"title": "string"}, {"note_id": "integer"}),
        _tool("notes.share_note", {"note_id": "integer"}, {"share_url": "string"}),
        _tool("weather.forecast", {"city": "string"}, {"summary": "string"}),
    ]))


def _dag(*subtasks: Subtask) -> TaskDAG:
    return TaskDAG(tuple(subtasks))


def test_valid_dag_has_no_violations(graph: Hypergraph) -> None:
    dag = _dag(Subtask("q1", "create", ("notes.create_note",)),
               Subtask("q2", "share", ("notes.share_note",), ("notes.share_note:out:share_url",),
                       ("q1",)))
    assert validate_dag(dag, graph) == []


def test_violations_are_named(graph: Hypergraph) -> None:
    dag = _dag(Subtask("q1", "x", ("notes.nope",), ("nowhere",), ("q1", "q9")),
               Subtask("q1", "dup", ("notes.create_note",)))
    problems = validate_dag(dag, graph)
    assert "duplicate subtask id 'q1'" in problems
    assert any("unknown tool 'notes.nope'" in p for p in problems)
    assert any("target 'nowhere'" in p for p in problems)
    assert any("depends on itself" in p for p in problems)
    assert any("unknown subtask 'q9'" in p for p in problems)


def test_cycles_and_ungrounded_dependencies(graph: Hypergraph) -> None:
    cyclic = _dag(Subtask("a", "", ("notes.create_note",), depends_on=("b",)),
                  Subtask("b", "", ("notes.share_note",), depends_on=("a",)))
    assert find_cycle(cyclic) in (["a", "b", "a"], ["b", "a", "b"])
    ungrounded = _dag(Subtask("a", "", ("weather.forecast",)),
                      Subtask("b", "", ("notes.share_note",), depends_on=("a",)))
    (problem,) = validate_dag(ungrounded, graph)
    assert "dependency 'a' -> 'b' is not grounded" in problem


def test_structured_goal_reading_and_dag(graph: Hypergraph) -> None:
    goal = StructuredGoal.from_dict({"values": {"title": "x"}, "subgoals": [
        {"id": "s1", "terminals": ["notes.share_note"], "values": {"title": "y"}}]})
    dag = dag_from_goal(graph, goal)
    assert dag.subtasks[0].values == {"title": "y"}
    with pytest.raises(GoalError, match="needs 'terminals' or 'effects'"):
        StructuredGoal.from_dict({"subgoals": [{"id": "s"}]})
    with pytest.raises(GoalError, match="unknown"):
        StructuredGoal.from_dict({"subgoals": [{"terminals": ["a"], "depends_on": ["zz"]}]})


def test_every_prompt_file_renders() -> None:
    fills = {"request": "r", "context": "c", "plan": "p", "observations": "o", "goal": "g",
             "tool": "t", "description": "d", "bound": "{}", "parameters": "x",
             "violations": "v", "tools": "t", "previous": "p", "step": "s", "apps": "a"}
    for name in PROMPT_NAMES:
        system, user = render(name, **fills)
        assert "$" not in system + user


def test_values_at_paths_and_records() -> None:
    assert path_parts("a[].b[]") == ["a", "[]", "b", "[]"]
    data = {"songs": [{"id": 1, "t": "x"}, {"id": 2, "t": "y"}]}
    assert [v for v, _ in values_at(data, "songs[].id")] == [1, 2]
    assert values_at(data, "songs[].id")[1][1] == {"id": 2, "t": "y"}
    assert values_at(5, "result") == [(5, None)]
    assert values_at({"a": None}, "a") == []


def test_materialise_binds_outputs_and_effects(graph: Hypergraph) -> None:
    bindings, effects = materialise(graph, "notes.create_note", {"note_id": 7}, 0)
    assert [(b.node, b.value) for b in bindings] == [("notes.create_note:out:note_id", 7)]
    assert "notes.create_note.done" in effects
    state = AgentState.start().after_call  # the method exists and is pure
    assert callable(state)


def test_narrow_prefers_records_matching_known_values() -> None:
    cands = [Candidate(1, "s", {"id": 1, "name": "Alex Doe"}),
             Candidate(2, "s", {"id": 2, "name": "Alex Roe"})]
    assert [c.value for c in narrow(cands, {"name": "alex roe"})] == [2]
    assert len(narrow(cands, {"name": "Sam"})) == 2


def test_similar_names_for_unknown_tools() -> None:
    from hyperplan.graph.text import similar_names

    names = ["music.like_song", "music.unlike_song", "mail.send_email", "checkout"]
    assert similar_names("like_song", names) == ["music.like_song"]
    assert similar_names("shop.checkout", names) == ["checkout"]
    assert similar_names("music.like_sng", names) == ["music.like_song", "music.unlike_song"]
    assert similar_names("weather", names) == []
