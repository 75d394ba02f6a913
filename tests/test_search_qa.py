"""The question-answering suite over noisy evidence (modelled on SealQA, HyperMCTS paper,
Section 3): generator, verifier on hand-checked cases, solvability, every method through
``evaluate``, and the SealQA record adapter on a hand-written fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperplan.errors import HyperplanError
from hyperplan.search.env import Action
from hyperplan.search.mcts import MCTSConfig
from hyperplan_bench.eval.treesearch.runner import METHODS, evaluate
from hyperplan_bench.eval.treesearch.suites import make_tasks
from hyperplan_bench.eval.treesearch.suites.qa import QAEnv
from hyperplan_bench.eval.treesearch.suites.qa_generator import generate_qa_task
from hyperplan_bench.eval.treesearch.suites.qa_task import (
    Doc,
    Part,
    QATask,
    Query,
    case_score,
    normalise,
)
from hyperplan_bench.eval.treesearch.suites.sealqa import (
    grade,
    load_sealqa,
    load_sealqa_records,
    parse_record,
)

FIXTURE = Path(__file__).parent / "data" / "sealqa" / "records.jsonl"


def hand_task() -> QAEnv:
    """One part, four documents written by hand: gold (registry, 2026-05, 384 m), stale
    (wiki, 2021, 350 m), decoy (news, 2026-08, about "Corvo Tower East", 410 m) and a forum
    post (2026-01, 399 m)."""
    docs = (
        Doc("d0a", 0, "engineering registry", "2026-05", "Corvo Tower height: official figures",
            "Corvo Tower", "384 m", "gold"),
        Doc("d0b", 0, "city wiki", "2021-04", "Corvo Tower height (2021)", "Corvo Tower",
            "350 m", "stale"),
        Doc("d0c", 0, "news wire", "2026-08", "latest: Corvo Tower height update",
            "Corvo Tower East", "410 m", "decoy"),
        Doc("d0d", 0, "travel forum", "2026-01", "what is the height of Corvo Tower? thread",
            "Corvo Tower", "399 m", "conflict"),
    )
    part = Part(0, "height", "How tall is Corvo Tower after its latest renovation?",
                "Corvo Tower", "384 m")
    task = QATask(0, 1, (part,), (Query("q0a", 0, "Corvo Tower height",
                                        ("d0a", "d0b", "d0c", "d0d")),),
                  docs, (("q0a", "d0a"),), part.question)
    return QAEnv(task)


def act(env: QAEnv, key: str) -> Action:
    return next(a for a in env.decisions() if a.key == key)


def run(env: QAEnv, *keys: str) -> None:
    env.reset()
    for key in keys:
        env.step(act(env, key))


# ------------------------------------------------------------------ generator


def test_generator_is_deterministic_per_seed() -> None:
    def spec(seed: int, level: int) -> str:
        return json.dumps(generate_qa_task(seed, level).spec(), sort_keys=True)

    assert spec(3, 2) == spec(3, 2)
    assert spec(3, 2) != spec(4, 2)
    a = [json.dumps(e.spec(), sort_keys=True) for e in make_tasks("qa", 6, 7)]  # type: ignore[attr-defined]
    b = [json.dumps(e.spec(), sort_keys=True) for e in make_tasks("qa", 6, 7)]  # type: ignore[attr-defined]
    assert a == b and len(set(a)) == 6


@pytest.mark.parametrize("level", [1, 2, 3])
def test_generated_tasks_have_noisy_evidence(level: int) -> None:
    for env in make_tasks("qa", 20, 5, level):
        task = env.task  # type: ignore[attr-defined]
        assert len(task.parts) == level + 1
        for p in task.parts:
            kinds = [d.kind for d in task.docs if d.part == p.index]
            assert kinds.count("gold") == 1 and "stale" in kinds and "conflict" in kinds
            wrong = {d.value for d in task.docs if d.part == p.index and d.kind != "gold"}
            assert p.gold not in wrong


@pytest.mark.parametrize("level", [1, 2, 3])
def test_oracle_plan_solves_every_generated_task(level: int) -> None:
    for env in make_tasks("qa", 60, 13, level):
        env.reset()
        for a in env.gold_actions():  # type: ignore[attr-defined]
            env.step(a)
        v = env.verify()
        assert v.success and v.reward == 1.0 and v.metrics["score"] == 1.0
        assert env.is_terminal()


# ------------------------------------------------------------------ verifier, by hand


def test_verifier_correct_answer() -> None:
    env = hand_task()
    run(env, "search:q0a", "open:d0a", "answer:0:384 m")
    v = env.verify()
    assert (v.success, v.reward, v.metrics["score"]) == (True, 1.0, 1.0)
    assert v.objective_decisions["part0"] == frozenset({"answer:0:384 m", "open:d0a"})


def test_verifier_wrong_answer_from_a_forum() -> None:
    env = hand_task()
    run(env, "search:q0a", "open:d0d", "answer:0:399 m")
    v = env.verify()
    assert (v.success, v.reward, v.metrics["score"]) == (False, 0.0, 0.0)


def test_verifier_stale_value_scores_zero() -> None:
    env = hand_task()
    run(env, "search:q0a", "open:d0b", "answer:0:350 m")
    assert env.verify().metrics["score"] == 0.0 and not env.verify().success


def test_verifier_decoy_value_scores_zero() -> None:
    env = hand_task()
    run(env, "search:q0a", "open:d0c", "answer:0:410 m")
    assert env.verify().metrics["score"] == 0.0 and env.verify().reward == 0.0


def test_verifier_abstention_gets_half_credit() -> None:
    env = hand_task()
    run(env, "search:q0a", "open:d0a", "abstain")
    assert not env.recorded(Action("abstain", payload=("abstain",)))
    v = env.verify()
    assert env.is_terminal()
    assert (v.success, v.reward, v.metrics["score"], v.metrics["abstained"]) == \
        (False, 0.5, 0.5, 1.0)
    assert case_score(("384 m",), ("384 m",), abstained=True) == 0.5


def test_answers_need_an_opened_document_and_match_normalised() -> None:
    env = hand_task()
    run(env, "search:q0a")
    assert not any(a.key.startswith("answer:") for a in env.decisions())
    assert normalise("1,204 m.") == normalise("1204 M") == "1204 m"


def test_hint_is_fooled_by_the_decoy_but_not_by_stale_or_forum_pages() -> None:
    env = hand_task()
    run(env, "search:q0a")
    h = {k: env.hint(act(env, k)) for k in ("open:d0a", "open:d0b", "open:d0c", "open:d0d")}
    assert h["open:d0c"] > h["open:d0a"] > max(h["open:d0b"], h["open:d0d"])
    env.step(act(env, "open:d0a"))
    env.step(act(env, "open:d0c"))
    assert env.hint(act(env, "answer:0:410 m")) > env.hint(act(env, "answer:0:384 m"))


# ------------------------------------------------------------------ through evaluate


def test_every_method_runs_on_the_suite() -> None:
    tasks = make_tasks("qa", 3, 2)
    result = evaluate(tasks, MCTSConfig(budget=8, branching=2), seed=2)
    assert set(result["methods"]) == set(METHODS)
    for summary in result["methods"].values():
        assert 0.0 <= summary["case_acc"] <= summary["score"] + 0.5 + 1e-9
        assert summary["failures"] == 0


# ------------------------------------------------------------------ SealQA adapter


def test_sealqa_records_parse_from_the_fixture() -> None:
    records = load_sealqa_records(FIXTURE)
    assert [r.answer for r in records] == ["Lake Oslen", "Dara Novak"]
    assert records[0].question_types == ("Advanced reasoning",)
    assert records[1].question_types == ("Temporal tracking",)
    assert len(records[0].docs) == 3 and records[1].docs == ()
    assert records[0].docs[0].source == "survey office"


def test_sealqa_env_is_solvable_and_graded_with_half_credit() -> None:
    envs = load_sealqa(FIXTURE)
    assert len(envs) == 1  # the record without documents only grades answers
    env = envs[0]
    assert env.task.source == "sealqa"
    run(env, "search:q0a", "open:d00", "answer:0:Lake Oslen")
    assert env.verify().success
    run(env, "search:q0a", "abstain")
    assert env.verify().metrics["score"] == 0.5
    rec = load_sealqa_records(FIXTURE)[1]
    assert grade("dara novak", rec) == 1.0
    assert grade("I don't know", rec) == 0.5 and grade(None, rec) == 0.5
    assert grade("Ana Moreau", rec) == 0.0


def test_sealqa_bad_records_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(HyperplanError, match="answer"):
        parse_record({"question": "q"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(HyperplanError, match=r"bad\.jsonl"):
        load_sealqa_records(bad)
