"""The retrieval benchmark with an LLM's task interpretation (scripted double) and the JSONL
store that keeps interpretations across runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_path
from hyperplan.cli import app
from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.llm.scripted import ScriptedLLM, ScriptedRule
from hyperplan.retrieve.interpret import TaskInterpretation, interpret_request, match_apps
from hyperplan_bench.eval.interpretations import InterpretationStore, Interpreted, llm_interpreter
from hyperplan_bench.eval.retrieval import RetrievalEvalError, evaluate_retrieval

ANSWER = {"operations": ["send money to a friend"], "schemas": ["amount", "friend"],
          "apps": ["Venmo", "File System", "nosuchapp"], "values": {"amount": 5}}


def _appworld_dev(**kwargs: Any) -> dict[str, Any]:
    return evaluate_retrieval(
        "appworld", shared_path("appworld", "api_docs"),
        shared_path("appworld", "tasks_train.jsonl"), embedder=get_embedder("hashing"),
        split="dev", **kwargs)


def _scores(doc: dict[str, Any]) -> dict[str, Any]:
    return {m: {k: v for k, v in s.items() if k != "ms_p50"} for m, s in doc["methods"].items()}


def test_match_apps_ignores_case_spaces_and_underscores() -> None:
    spaces = ("file_system", "spotify", "venmo")
    assert match_apps(["Venmo", "File System", "venmo", "gmail"], spaces) == ("venmo",
                                                                               "file_system")
    assert match_apps([], spaces) == ()


def test_llm_interpretation_is_used_stored_and_read_back(tmp_path: Path) -> None:
    llm = ScriptedLLM([ScriptedRule(json=ANSWER, component="interpreter")])
    path = tmp_path / "interp.jsonl"
    with InterpretationStore(path) as store:
        doc = _appworld_dev(interpreter=llm_interpreter(llm), interpreter_name="llm:scripted",
                            store=store)
    assert len(llm.calls) == 18
    info = doc["interpretation"]
    assert (info["by"], info["llm"], info["rules"]) == ("llm:scripted", 18, 0)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 18 and len({r["id"] for r in rows}) == 18
    assert rows[0]["operations"] == ["send money to a friend"]
    assert rows[0]["apps"] == ["venmo", "file_system"]  # matched to the graph's namespaces
    prompt = llm.calls[0].messages[-1].content
    assert "Known apps: amazon, api_docs, file_system," in prompt and "venmo" in prompt

    # every task reads its interpretation back: the interpreter is never called
    def refuse(text: str, namespaces: Any) -> Interpreted:
        raise AssertionError("the store should answer")

    with InterpretationStore(path) as store:
        again = _appworld_dev(interpreter=refuse, interpreter_name="llm:scripted", store=store)
    assert _scores(again) == _scores(doc)
    assert again["interpretation"]["llm"] == 18 and again["interpretation"]["seconds_p50"] == 0
    assert len(path.read_text().splitlines()) == 18  # nothing appended


def test_unusable_llm_answer_falls_back_to_the_rules() -> None:
    llm = ScriptedLLM([ScriptedRule(json={"operations": [], "schemas": []},
                                    component="interpreter")])
    doc = _appworld_dev(interpreter=llm_interpreter(llm), interpreter_name="llm:scripted")
    rules = _appworld_dev()
    assert doc["interpretation"]["rules"] == 18 and doc["interpretation"]["llm"] == 0
    assert rules["interpretation"] == {**rules["interpretation"], "by": "rules", "llm": 0,
                                       "rules": 18}
    assert _scores(doc) == _scores(rules)


def test_store_reuses_only_the_same_text(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    item = Interpreted(TaskInterpretation(("play music",), ("song",), ("spotify",)), "llm", 1.5)
    with InterpretationStore(path) as store:
        store.put("t1", "play a song", item)
    with InterpretationStore(path) as store:
        kept = store.get("t1", "play a song")
        assert kept is not None and kept.task == item.task and kept.source == "llm"
        assert kept.seconds == 0.0
        assert store.get("t1", "play another song") is None
        assert store.get("t2", "play a song") is None
        # a task the model failed on: the rules run again (with the question flag they set)
        store.put("t3", "Which songs did I like?", Interpreted(
            TaskInterpretation(("stale",), ()), "rules"))
        again = store.get("t3", "Which songs did I like?", ("music",))
        assert again is not None and again.source == "rules"
        assert again.task == interpret_request("Which songs did I like?", ("music",))
        assert again.task.question


def test_store_cuts_a_half_written_last_line_and_names_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = {"id": "t1", "text": "x", "source": "llm", "operations": ["a"], "schemas": [],
            "apps": []}
    path.write_text(json.dumps(good) + "\n" + '{"id": "t2", "text": "y", "opera')
    with InterpretationStore(path) as store:
        assert store.get("t1", "x") is not None and store.get("t2", "y") is None
        store.put("t2", "y", Interpreted(TaskInterpretation(("b",), ()), "llm"))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t1", "t2"]

    path.write_text("[1, 2]\n" + json.dumps(good) + "\n")
    with pytest.raises(HyperplanError, match=r"s\.jsonl:1: not a stored interpretation \(no"):
        InterpretationStore(path).__enter__()
    path.write_text("not json\n" + json.dumps(good) + "\n")
    with pytest.raises(HyperplanError, match=r"s\.jsonl:1: not a stored interpretation: "):
        InterpretationStore(path).__enter__()
    path.write_text(json.dumps({**good, "id": 7}) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(HyperplanError, match="id 7 is not a string"):
        InterpretationStore(path).__enter__()
    path.write_text(json.dumps({**good, "operations": "a"}) + "\n")
    with InterpretationStore(path) as store, pytest.raises(HyperplanError, match="task t1"):
        store.get("t1", "x")


def test_store_adds_a_missing_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "t1", "text": "x", "operations": ["a"], "schemas": []}))
    with InterpretationStore(path) as store:
        store.put("t2", "y", Interpreted(TaskInterpretation(("b",), ()), "llm"))
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["t1", "t2"]


def test_cli_interpreter_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPLAN_LLM_BASE_URL", raising=False)
    tools = str(shared_path("appworld", "api_docs"))
    tasks = str(shared_path("appworld", "tasks_train.jsonl"))
    base = ["eval", "retrieval", "--suite", "appworld", "--catalog", tools, "--tasks-file", tasks,
            "--embedder", "hashing", "--json"]
    cases = {
        ("--interpreter", "llm"): "needs --llm URL",
        ("--interpreter", "rules", "--llm", "http://127.0.0.1:9/v1", "--model", "m"):
            "drop one",
        ("--interpreter", "oracle"): "rules or llm",
    }
    for extra, message in cases.items():
        result = CliRunner().invoke(app, [*base, *extra])
        assert isinstance(result.exception, RetrievalEvalError), result.output
        assert message in str(result.exception)
