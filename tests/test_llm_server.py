"""Integration test of `OpenAICompatibleLLM` against a real llama.cpp server.

Start one with ``scripts/start-llm-server.sh PORT`` and set
``HYPERPLAN_LLM_TEST_URL=http://127.0.0.1:PORT/v1`` (model alias: ``HYPERPLAN_LLM_TEST_MODEL``,
default ``smollm2``). Without the URL the tests skip, except in CI with
``HYPERPLAN_LLM_TEST_REQUIRED=1``, where they fail.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from hyperplan.embed import get_embedder
from hyperplan.execute.agent import run_request
from hyperplan.execute.events import LLMCalled
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.subtask import AgentConfig, RunContext
from hyperplan.execute.trace import TraceWriter, read_events, summarize
from hyperplan.execute.traced_llm import TracedLLM
from hyperplan.graph.build import build_graph
from hyperplan.llm import (
    Accounting,
    Budget,
    ContextLengthError,
    LLMResponse,
    Message,
    OfferedTool,
    OpenAICompatibleLLM,
)
from toy_music import MusicWorld, music_catalog

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    },
    "required": ["city", "steps"],
}
WEATHER = OfferedTool(
    "get_weather",
    "Get the current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture(scope="module")
def base_url(llm_server_url: str) -> str:
    return llm_server_url


@pytest.fixture
def accounting() -> Accounting:
    return Accounting()


@pytest.fixture
def llm(base_url: str, accounting: Accounting) -> Iterator[OpenAICompatibleLLM]:
    client = OpenAICompatibleLLM(
        os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2"),
        base_url=base_url,
        timeout=120,
        temperature=0.0,
        max_tokens=96,
        accounting=accounting,
    )
    yield client
    client.close()


def test_plain_chat(llm: OpenAICompatibleLLM, accounting: Accounting) -> None:
    response = llm.complete(
        [Message.system("You are concise."), Message.user("Name one colour.")], component="chat"
    )
    assert response.text.strip()
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0
    stats = accounting.by_component()["chat"]
    assert stats.calls == 1 and stats.total_tokens == response.usage.total_tokens


def test_async_plain_chat(llm: OpenAICompatibleLLM) -> None:
    async def run() -> LLMResponse:
        try:
            return await llm.acomplete([Message.user("Say hello.")])
        finally:
            await llm.aclose()

    response = asyncio.run(run())
    assert response.text.strip()


def test_schema_constrained_json(llm: OpenAICompatibleLLM) -> None:
    response = llm.complete(
        [Message.user("Plan a short trip to Paris: give the city and up to three steps.")],
        schema=SCHEMA,
        component="planner",
    )
    jsonschema.validate(response.parsed, SCHEMA)
    # llama.cpp rejects OpenAI's json_schema (HTTP 500) and accepts json_object + schema.
    assert llm.structured_mode() in ("json_schema", "json_object")


def test_forced_tool_call(llm: OpenAICompatibleLLM) -> None:
    response = llm.complete(
        [Message.user("What is the weather in Paris?")],
        tools=[WEATHER],
        tool_choice="get_weather",
        component="actor",
    )
    assert response.tool_calls, response.text
    call = response.tool_calls[0]
    assert call.name == "get_weather"
    assert isinstance(call.arguments, dict)


def test_the_servers_context_window_is_read_from_its_refusal(base_url: str) -> None:
    """scripts/start-llm-server.sh serves a 4096-token window: messages longer than it are a
    ContextLengthError with the server's counts, not retried. (This server lowers a completion
    cap that overflows by itself; the client's lowering is for servers that refuse it, such as
    OpenAI's and vLLM's, and is tested in test_llm.py.)"""
    accounting = Accounting()
    client = OpenAICompatibleLLM(os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2"),
                                 base_url=base_url, timeout=120, temperature=0.0,
                                 max_tokens=8, accounting=accounting)
    with pytest.raises(ContextLengthError) as info:
        client.complete([Message.user("Say yes. " + "word " * 6000)])
    assert info.value.limit == 4096 and (info.value.prompt_tokens or 0) > 4096
    assert (accounting.totals().calls, accounting.totals().errors) == (1, 1)


def test_agent_runs_end_to_end_on_the_real_server(base_url: str, tmp_path: Path) -> None:
    """The whole agent (interpretation, context graph, Task DAG, execution) through the real
    server, under a budget. SmolLM2-135M rarely produces a valid plan, so any clean ending
    counts; the point is that every LLM call goes over HTTP, is accounted and traced, and
    nothing crashes."""
    accounting = Accounting(Budget(max_calls=4, max_wall_s=150))
    client = OpenAICompatibleLLM(os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2"),
                                 base_url=base_url, timeout=120, temperature=0.0, max_tokens=160,
                                 max_retries=1, max_reasks=1, accounting=accounting)
    world = MusicWorld()
    graph = build_graph(music_catalog(world), embedder=get_embedder("hashing"))
    tracer = TraceWriter(tmp_path / "trace.jsonl")
    ctx = RunContext(graph=graph, catalog=music_catalog(world),
                     runtime=PythonRuntime(world.tools()), accounting=accounting,
                     tracer=tracer, llm=TracedLLM(client, tracer),
                     config=AgentConfig(max_refinements=1))
    try:
        result = run_request(ctx, "Log in as me@example.com with password pw-secret and like "
                             "the song Help.", get_embedder("hashing"))
    finally:
        tracer.close()
        client.close()
    assert result.status in ("success", "partial", "blocked", "failed", "budget_exhausted")
    events = read_events(tmp_path / "trace.jsonl")
    calls = [e for e in events if isinstance(e, LLMCalled)]
    assert calls, "no LLM call reached the server"
    assert accounting.totals().calls >= len(calls)
    assert accounting.totals().prompt_tokens > 0
    assert summarize(events)["status"] == result.status


def test_retrieval_benchmark_reads_the_real_models_interpretation(
    base_url: str, tmp_path: Path
) -> None:
    """``eval retrieval`` with the interpretation from the real server (the paper's setting),
    on a custom suite of the demo catalog: every task is interpreted once, by the model or by
    the rules after an unusable answer, and a second run reads every answer from the store."""
    from hyperplan_bench.eval.interpretations import (
        InterpretationStore,
        Interpreted,
        llm_interpreter,
    )
    from hyperplan_bench.eval.retrieval import METHODS, evaluate_retrieval

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"id": "like", "request": "Like the song Yesterday", '
        '"tools": ["music.search_songs", "music.like_song"]}\n'
        '{"id": "mail", "request": "Email Ann my playlist", '
        '"tools": ["contacts.search_contacts", "mail.send_email"]}\n')
    client = OpenAICompatibleLLM(os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2"),
                                 base_url=base_url, timeout=120, temperature=0.0, max_tokens=128,
                                 max_retries=1, max_reasks=1)
    store_path = tmp_path / "interpretations.jsonl"
    try:
        with InterpretationStore(store_path) as store:
            doc = evaluate_retrieval("custom", "demo", tasks, budget=5,
                                     embedder=get_embedder("hashing"),
                                     interpreter=llm_interpreter(client),
                                     interpreter_name="llm:smollm2", store=store)
    finally:
        client.close()
    info = doc["interpretation"]
    assert info["by"] == "llm:smollm2" and info["llm"] + info["rules"] == 2
    assert info["seconds_p50"] > 0
    assert set(doc["methods"]) == set(METHODS) and doc["n_tasks"] == 2
    assert len(store_path.read_text().splitlines()) == 2

    def refuse(text: str, namespaces: object) -> Interpreted:
        raise AssertionError("the store should answer")

    with InterpretationStore(store_path) as store:
        again = evaluate_retrieval("custom", "demo", tasks, budget=5,
                                   embedder=get_embedder("hashing"), interpreter=refuse,
                                   interpreter_name="llm:smollm2", store=store)
    assert again["methods"]["context_graph"]["recall"] == doc["methods"]["context_graph"]["recall"]


@pytest.mark.parametrize("suite", ["shopping", "qa"])
def test_tree_search_with_the_real_model_as_its_policy(
    base_url: str, monkeypatch: pytest.MonkeyPatch, suite: str
) -> None:
    """``search run --policy llm`` in the default (full-path) design: HyperMCTS, UCT and the
    LATS-style baseline (its value requests and reflections asked of the model too) on one
    generated task of each suite, the real model proposing the children of every expanded
    history (rollouts by the heuristic). The 135M model's answers may be unusable (then the
    policy falls back to uniform choices); the point is that every proposal goes over HTTP, is
    counted, and the search ends cleanly."""
    import json

    from typer.testing import CliRunner

    from hyperplan.cli import app

    monkeypatch.setenv("HYPERPLAN_LLM_MAX_TOKENS", "96")
    model = os.environ.get("HYPERPLAN_LLM_TEST_MODEL", "smollm2")
    result = CliRunner().invoke(app, [
        "search", "run", "--suite", suite, "--tasks", "1", "--seed", "1", "--rollouts", "2",
        "--methods", "hypermcts,uct,lats", "--policy", "llm", "--llm", base_url, "--model", model,
        "--max-llm-calls", "12", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    report = doc["llm"]
    assert report["model"] == model and report["rollouts"] == "heuristic"
    assert 1 <= report["calls"] <= 12 and report["histories"] >= 1
    assert report["prompt_tokens"] > 0 and 0 <= report["fallbacks"] <= report["histories"]
    assert doc["design"] == "full-path"
    for method in ("hypermcts", "uct", "lats"):
        assert doc["methods"][method]["rollouts"] >= 1
        assert doc["methods"][method]["policy_calls_per_case"] >= 1
