"""The planner's context graph cut to the model's context window (hyperplan.execute.fit): the
arithmetic on hand-made numbers, then the agent against a scripted model with a small window
(the ScriptedLLM double rejects messages longer than its window, as a server does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hyperplan.embed import get_embedder
from hyperplan.execute.agent import RunResult, run_request
from hyperplan.execute.fit import (
    FIRST_RATIO,
    MAX_FITS,
    best_tools,
    largest_fitting,
    model_tokens_per_token,
    shrink_to_window,
)
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import TraceWriter, read_trace
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.graph.build import build_graph
from hyperplan.graph.model import Hypergraph
from hyperplan.llm import Accounting, ContextLengthError, ScriptedLLM, ScriptedRule
from hyperplan.retrieve.context_graph import ContextGraph, extract_context_graph
from hyperplan.retrieve.interpret import interpret_request
from hyperplan.retrieve.serialize import count_tokens, serialize_context_graph
from toy_music import CREDENTIALS, MusicWorld, music_catalog

INTERPRETATION = {"operations": ["like song"], "schemas": ["song title"],
                  "values": {**CREDENTIALS, "query": "Help"}}
LIKE = {"id": "q1", "goal": "like Help", "terminals": ["music.like_song"], "depends_on": [],
        "inputs": {"query": "Help"}}
FULL_PROMPT = 702  # the planner's messages with all 4 tools, in the double's chars/4 tokens


@pytest.fixture(scope="module")
def graph() -> Hypergraph:
    return build_graph(music_catalog(MusicWorld()), embedder=get_embedder("hashing"))


@pytest.fixture(scope="module")
def cg(graph: Hypergraph) -> ContextGraph:
    return extract_context_graph(graph, interpret_request("Like the song Help"),
                                 embedder=get_embedder("hashing"))


def _run(graph: Hypergraph, window: int, trace: Path, rules: list[ScriptedRule] | None = None,
         plan_room: int = 0, plain_context: bool = False,
         ) -> tuple[RunResult, ScriptedLLM, list[dict[str, Any]]]:
    world = MusicWorld()
    accounting = Accounting()
    llm = ScriptedLLM([ScriptedRule(json=INTERPRETATION, component="interpreter"),
                       *(rules or [ScriptedRule(json={"subtasks": [LIKE]},
                                                component="planner")])],
                      accounting=accounting, context_window=window)
    tracer = TraceWriter(trace)
    ctx = RunContext(graph=graph, catalog=music_catalog(world),
                     runtime=PythonRuntime(world.tools()), accounting=accounting,
                     tracer=tracer, config=AgentConfig(plan_room=plan_room),
                     llm=TracedLLM(llm, tracer))
    result = run_request(ctx, "Like the song Help", get_embedder("hashing"),
                         plain_context=plain_context)
    return result, llm, read_trace(trace)


# ---------------------------------------------------------------- the arithmetic
def test_largest_fitting_is_the_longest_prefix_within_the_budget(cg: ContextGraph) -> None:
    sizes = [count_tokens(serialize_context_graph(best_tools(cg, k)))
             for k in range(len(cg.tools) + 1)]
    assert sizes == sorted(sizes) and len(cg.tools) == 4
    for budget in (0, sizes[1] - 1, sizes[1], sizes[2] + 1, sizes[4], 10**6):
        want = max(k for k, size in enumerate(sizes) if size <= budget or k == 0)
        assert largest_fitting(cg, serialize_context_graph, budget) == want


def test_the_token_ratio_is_measured_from_two_rejected_attempts() -> None:
    assert model_tokens_per_token([]) == FIRST_RATIO
    assert model_tokens_per_token([(400, 900)]) == FIRST_RATIO
    assert model_tokens_per_token([(400, 900), (300, 780)]) == pytest.approx(1.2)
    assert model_tokens_per_token([(400, 900), (400, 880)]) == FIRST_RATIO  # same text
    assert model_tokens_per_token([(400, 900), (300, 899)]) == 0.5  # kept within [0.5, 3]


def test_the_cut_leaves_the_room_asked_for(cg: ContextGraph) -> None:
    sent = count_tokens(serialize_context_graph(cg))
    history: list[tuple[int, int]] = []
    # the server counted 1000 model tokens against a window of 900; with 100 tokens of room,
    # 200 model tokens = 160 cl100k tokens (FIRST_RATIO 1.25) of context text must go
    error = ContextLengthError("too long", limit=900, prompt_tokens=1000)
    smaller = shrink_to_window(cg, serialize_context_graph, error, history, room=100)
    assert smaller is not None and history == [(sent, 1000)]
    assert smaller.tools == cg.tools[:len(smaller.tools)]  # the best-ranked ones
    assert count_tokens(serialize_context_graph(smaller)) <= sent - 160
    assert largest_fitting(cg, serialize_context_graph, sent - 160) == len(smaller.tools)


def test_without_sizes_half_the_tools_are_kept_and_one_tool_is_the_floor(
        cg: ContextGraph) -> None:
    unknown = ContextLengthError("too long")
    half = shrink_to_window(cg, serialize_context_graph, unknown, [], room=0)
    assert half is not None and half.tools == cg.tools[:2]
    assert shrink_to_window(best_tools(cg, 1), serialize_context_graph, unknown, [], 0) is None
    hopeless = ContextLengthError("too long", limit=100, prompt_tokens=5000)
    assert shrink_to_window(cg, serialize_context_graph, hopeless, [], room=0) is None


# ---------------------------------------------------------------- the agent
def test_a_window_too_small_for_the_context_graph_gets_its_best_tools(
        graph: Hypergraph, tmp_path: Path) -> None:
    result, llm, events = _run(graph, FULL_PROMPT - 50, tmp_path / "t.jsonl")
    assert result.status == "success", result.message
    shown = [e for e in events if e["type"] == "context_graph"]
    assert len(shown) == 2 and "fitted_to_window" not in shown[0]
    first, cut = shown[0]["tools"], shown[1]["tools"]
    assert cut == first[:len(cut)] and 0 < len(cut) < len(first) and "music.like_song" in cut
    assert (shown[1]["fitted_to_window"], shown[1]["tools_before"]) == (FULL_PROMPT - 50, 4)
    planner = [c for c in llm.calls if c.component == "planner"]
    assert len(planner) == 1  # the rejected request reached no rule
    assert result.accounting["totals"]["errors"] == 1


def test_the_full_prompt_is_what_the_test_assumes(graph: Hypergraph, tmp_path: Path) -> None:
    result, llm, _ = _run(graph, 10**6, tmp_path / "t.jsonl")
    assert result.status == "success"
    planner = next(c for c in llm.calls if c.component == "planner")
    assert -(-sum(len(m.content) for m in planner.messages) // 4) == FULL_PROMPT


def test_a_window_too_small_for_one_tool_fails_the_run_cleanly(
        graph: Hypergraph, tmp_path: Path) -> None:
    result, _, events = _run(graph, 300, tmp_path / "t.jsonl")
    assert result.status == "failed" and result.tool_calls == 0
    assert "does not fit the model's context window" in result.message
    shown = [e for e in events if e["type"] == "context_graph"]
    assert 1 <= len(shown) <= 1 + MAX_FITS
    assert result.accounting["totals"]["errors"] == len(shown)


def test_a_repair_that_does_not_fit_is_a_plan_error(graph: Hypergraph, tmp_path: Path) -> None:
    bad = {"subtasks": [{**LIKE, "terminals": ["music.play_song"]}]}
    rules = [ScriptedRule(json=bad, component="planner")]
    result, _, events = _run(graph, FULL_PROMPT + 10, tmp_path / "t.jsonl", rules)
    assert result.status == "failed"
    assert "invalid and the repair does not fit" in result.message
    assert "unknown tool 'music.play_song'" in result.message
    assert len([e for e in events if e["type"] == "context_graph"]) == 1  # no cut for that


def test_plain_tool_lists_are_cut_the_same_way(graph: Hypergraph, tmp_path: Path) -> None:
    """Variant 1 shows the planner "name: description" lines (319 tokens of messages with
    all 4 tools): the cut measures those."""
    full, _, _ = _run(graph, 10**6, tmp_path / "full.jsonl", plain_context=True)
    assert full.status == "success"
    result, llm, events = _run(graph, 310, tmp_path / "t.jsonl", plain_context=True)
    assert result.status == "success", result.message
    shown = [e for e in events if e["type"] == "context_graph"]
    assert len(shown) == 2 and len(shown[1]["tools"]) < len(shown[0]["tools"])
    planner = next(c for c in llm.calls if c.component == "planner").messages[-1].content
    assert "# Tools" not in planner and "- music.like_song:" in planner
