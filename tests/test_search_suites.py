"""Search suites (issue 5 item 4): generators, verifiers, snapshots, identities, adapter."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_path
from hyperplan.errors import HyperplanError
from hyperplan.search.env import Action, ActionKind, SearchEnv
from hyperplan_bench.eval.treesearch.suites import SUITES, make_tasks
from hyperplan_bench.eval.treesearch.suites.base import decision_id
from hyperplan_bench.eval.treesearch.suites.deepplanning import (
    DeepPlanningShoppingEnv,
    load_deepplanning_shopping,
)
from hyperplan_bench.eval.treesearch.suites.shopping import (
    Coupon,
    Item,
    Product,
    Requirement,
    ShoppingEnv,
    ShoppingTask,
)
from hyperplan_bench.eval.treesearch.suites.travel import (
    Attraction,
    Preference,
    Restaurant,
    Transport,
    TravelEnv,
    TravelTask,
)

FIXTURE = Path(__file__).parent / "data" / "deepplanning"


def act(env: SearchEnv, key: str) -> Action:
    """The decision with ``key`` at the current history (fails if it is not offered)."""
    for a in env.decisions():
        if a.key == key:
            return a
    raise AssertionError(f"{key!r} not among {[a.key for a in env.decisions()]}")


def run(env: SearchEnv, keys: list[str]) -> None:
    env.reset()
    for k in keys:
        env.step(act(env, k))


def random_walk(env: SearchEnv, rng: random.Random, limit: int | None = None) -> int:
    steps = 0
    while not env.is_terminal() and (limit is None or steps < limit):
        env.step(rng.choice(list(env.decisions())))
        steps += 1
    return steps


def play_gold(env: Any) -> None:
    env.reset()
    for a in env.gold_actions():
        env.step(a)


# ------------------------------------------------------------------ make_tasks


@pytest.mark.parametrize("suite", SUITES)
def test_make_tasks_is_deterministic_per_seed(suite: str) -> None:
    def specs(n: int, seed: int, level: int | None) -> list[str]:
        return [json.dumps(e.spec(), sort_keys=True)  # type: ignore[attr-defined]
                for e in make_tasks(suite, n, seed, level)]

    a = specs(6, 7, None)
    assert a == specs(6, 7, None)
    assert a != specs(6, 8, None)
    assert specs(3, 7, None) == a[:3]  # task i does not depend on n
    levels = [json.loads(s)["level"] for s in a]
    assert levels == [1, 2, 3, 1, 2, 3]
    assert {json.loads(s)["level"] for s in specs(4, 7, 2)} == {2}
    assert len(set(a)) == len(a)


def test_unknown_suite_names_the_known_ones() -> None:
    with pytest.raises(HyperplanError, match=r"shopping.*travel"):
        make_tasks("cooking", 1, 0)
    with pytest.raises(HyperplanError):
        make_tasks("shopping", 1, 0, level=4)


# ------------------------------------------------------------------ shopping verifier

SNEAKER_REQS = (Requirement("brand", "==", "Nike"), Requirement("stars4", ">", 300),
                Requirement("stars1", "<", 10))
CAP_REQS = (Requirement("colour", "==", "red"), Requirement("delivery", "<=", 2))


def shopping_task() -> ShoppingTask:
    """Hand-checked: P1 + C1 = 600, minus the ¥60/500 coupon = 540 = budget."""
    products = (
        Product("p1", "Nike Air Sneakers", "sneakers", "Nike", 500, "white", "42",
                (5, 10, 20, 350, 800), 2),
        Product("p2", "Nike Max Sneakers", "sneakers", "Nike", 450, "white", "42",
                (15, 10, 20, 350, 800), 2),  # decoy: 15 one-star reviews
        Product("p3", "Nike Pro Sneakers", "sneakers", "Nike", 700, "black", "42",
                (2, 10, 20, 400, 900), 1),  # valid but pricier
        Product("c1", "Puma Cap", "cap", "Puma", 100, "red", "one size", (0, 0, 1, 20, 50), 1),
        Product("c2", "Puma Cap", "cap", "Puma", 90, "blue", "one size", (0, 0, 1, 20, 50), 1),
    )
    items = (Item(0, "sneakers", SNEAKER_REQS), Item(1, "cap", CAP_REQS))
    coupon = Coupon("Cross-store: ¥60 off every ¥500", 60, 500)
    return ShoppingTask(0, 1, items, products, (coupon,), 540, ("p1", "c1"),
                        (coupon.name,), "hand-made")


COUPON = "coupon:Cross-store: ¥60 off every ¥500"


def shop(keys: list[str]) -> ShoppingEnv:
    env = ShoppingEnv(shopping_task())
    run(env, ["search:sneakers", "search:cap", *keys])
    return env


def test_shopping_valid_plan_succeeds_with_reward_one() -> None:
    env = shop(["choose:0:p1", "choose:1:c1", COUPON, "finish"])
    v = env.verify()
    assert v.success and v.reward == 1.0
    assert v.metrics["match_score"] == 1.0 and v.metrics["final_price"] == 540
    assert set(v.objective_scores) == {o.id for o in env.objectives}
    assert set(v.objective_scores) == {"item0.attrs", "item0.reviews", "item1.attrs",
                                       "item1.delivery", "budget"}
    assert v.objective_decisions["item0.reviews"] == {"choose:0:p1"}
    assert v.objective_decisions["budget"] == {"choose:0:p1", "choose:1:c1",
                                               "coupon:Cross-store: ¥60 off every ¥500"}
    assert env.is_terminal() and not env.decisions()


def test_shopping_one_broken_requirement_fails_the_case_with_partial_reward() -> None:
    env = shop(["choose:0:p2", "choose:1:c1", COUPON, "finish"])  # 550 - 60 = 490 <= 540
    v = env.verify()
    assert not v.success
    assert v.objective_scores["item0.reviews"] == 0.0
    assert v.objective_scores["item0.attrs"] == 1.0 and v.objective_scores["budget"] == 1.0
    assert v.reward == pytest.approx((0.5 + 1 + 1) / 3)
    assert v.metrics["match_score"] == 0.5


def test_shopping_over_budget_fails_the_budget_objective() -> None:
    env = shop(["choose:0:p3", "choose:1:c1", COUPON, "finish"])  # 800 - 60 = 740 > 540
    v = env.verify()
    assert not v.success and v.objective_scores["budget"] == 0.0
    assert v.metrics["match_score"] == 1.0 and v.metrics["over_budget"] == 200
    assert v.reward == pytest.approx(2 / 3)
    # the gold products without the coupon are over budget too (600 > 540)
    env = shop(["choose:0:p1", "choose:1:c1", "finish"])
    assert env.verify().objective_scores["budget"] == 0.0


def test_shopping_coupon_needs_its_threshold_and_unfinished_plans_score_partially() -> None:
    env = shop(["choose:1:c1"])
    assert COUPON not in {a.key for a in env.decisions()}  # 100 < 500
    assert "finish" not in {a.key for a in env.decisions()}
    v = env.verify()
    assert not v.success and v.objective_scores["budget"] == 0.0
    assert v.objective_scores["item0.attrs"] == 0.0 and v.objective_scores["item1.attrs"] == 1.0


def test_shopping_hint_uses_only_revealed_attributes() -> None:
    env = shop([])
    before = {k: env.hint(act(env, k)) for k in ("choose:0:p1", "choose:0:p2")}
    # nothing but brand and price revealed: the cheaper decoy looks at least as good
    assert before["choose:0:p2"] >= before["choose:0:p1"]
    run(env, ["search:sneakers", "search:cap", "view:p1", "view:p2"])
    assert env.hint(act(env, "choose:0:p2")) < env.hint(act(env, "choose:0:p1"))
    assert all(0.0 <= env.hint(a) <= 1.0 for a in env.decisions())


def test_shopping_hint_views_before_committing() -> None:
    env = shop([])
    h = {a.key: env.hint(a) for a in env.decisions()}
    # right after the searches, every view of an item ranks above every choice for it
    for idx, cat in ((0, ("p1", "p2", "p3")), (1, ("c1", "c2"))):
        assert min(h[f"view:{p}"] for p in cat) > max(h[f"choose:{idx}:{p}"] for p in cat)
    env = shop(["view:p2"])  # the decoy: a revealed requirement breaks
    h = {a.key: env.hint(a) for a in env.decisions()}
    # an unviewed product never looks better to choose than to view
    assert h["view:p1"] > h["choose:0:p1"] and h["view:p3"] > h["choose:0:p3"]
    env = shop(["view:p2", "view:p1"])  # p1 satisfies everything: committing ranks first
    h = {a.key: env.hint(a) for a in env.decisions()}
    assert h["choose:0:p1"] == max(h.values())
    # near the horizon views drop below committing, so the order can still be completed
    env = shop(["view:p2", "view:p3", "view:c2"])
    # two open items and finish need 3 steps: leave exactly 3
    env.restore(replace(env.state, steps=env.horizon - 3))
    h = {a.key: env.hint(a) for a in env.decisions()}
    assert h["view:p1"] < min(h[f"choose:0:{p}"] for p in ("p1", "p3"))
    assert h["view:c1"] < h["choose:1:c1"]


# ------------------------------------------------------------------ travel verifier

MON = 0


def travel_task(budget: int = 900) -> TravelTask:
    """Hand-checked day trip on a Monday; the valid plan costs 840."""
    transports = (
        Transport("O1", "out", "train", 6 * 60, 7 * 60 + 30, 300),
        Transport("O2", "out", "train", 9 * 60, 10 * 60 + 30, 200),  # arrives too late
        Transport("B1", "back", "train", 21 * 60, 22 * 60 + 30, 300),
        Transport("B2", "back", "flight", 21 * 60, 22 * 60, 250),
    )
    attractions = (
        Attraction("A1", "City Museum", 8 * 60, 17 * 60, None, 120, 40),
        Attraction("A2", "Lotus Garden", 13 * 60, 18 * 60, None, 120, 20),
        Attraction("A3", "Old Temple", 8 * 60, 18 * 60, MON, 90, 0),  # closed on Mondays
    )
    restaurants = (
        Restaurant("R1", "Red Sichuan House", "Sichuan", 11 * 60, 21 * 60, 80),
        Restaurant("R2", "Pearl Cantonese Kitchen", "Cantonese", 17 * 60, 22 * 60, 100),
    )
    prefs = (Preference("must_visit", "A2"), Preference("cuisine", "Sichuan"),
             Preference("mode", "train"))
    gold: tuple[tuple[Any, ...], ...] = (
        ("out", "O1"), ("back", "B1"), ("slot", 0, "morning", "A1"),
        ("slot", 0, "lunch", "R1"), ("slot", 0, "afternoon", "A2"),
        ("slot", 0, "dinner", "R2"))
    return TravelTask(0, 1, "Suzhou", 1, MON, transports, (), attractions, restaurants, prefs,
                      budget, gold, "hand-made")


def travel(plan: dict[str, str], budget: int = 900) -> TravelEnv:
    env = TravelEnv(travel_task(budget))
    keys = ["query:transport", "query:attractions", "query:restaurants"]
    keys += [f"out:{plan['out']}", f"back:{plan['back']}"]
    keys += [f"slot:0:{s}:{plan[s]}" for s in ("morning", "lunch", "afternoon", "dinner")]
    run(env, [*keys, "finish"])
    return env


VALID = {"out": "O1", "back": "B1", "morning": "A1", "lunch": "R1", "afternoon": "A2",
         "dinner": "R2"}


def test_travel_valid_plan_succeeds_with_reward_one() -> None:
    v = travel(VALID).verify()
    assert v.success and v.reward == 1.0
    assert v.metrics["cost"] == 840 and v.metrics["cs_score"] == 1.0
    assert v.metrics["ps_score"] == 1.0
    assert v.objective_decisions["ps.must_visit"] == {"slot:0:morning:A1",
                                                      "slot:0:afternoon:A2"}


def test_travel_one_broken_constraint_fails_the_case_with_partial_reward() -> None:
    v = travel({**VALID, "morning": "A3"}).verify()  # the temple is closed on Mondays
    assert not v.success and v.objective_scores["cs.hours"] == 0.0
    assert v.metrics["cs_score"] == pytest.approx(7 / 8) and v.metrics["ps_score"] == 1.0
    assert v.reward == pytest.approx((7 / 8 + 1) / 2)
    late = travel({**VALID, "out": "O2"}).verify()  # arrives 10:30, morning visit at 09:00
    assert late.objective_scores["cs.arrival"] == 0.0 and not late.success
    flight = travel({**VALID, "back": "B2"}).verify()
    assert flight.objective_scores["ps.mode"] == 0.0 and flight.metrics["cs_score"] == 1.0


def test_travel_over_budget_fails_the_budget_objective() -> None:
    v = travel(VALID, budget=800).verify()
    assert not v.success and v.objective_scores["ps.budget"] == 0.0
    assert v.metrics["cs_score"] == 1.0 and v.metrics["ps_score"] == pytest.approx(3 / 4)
    assert v.reward == pytest.approx((1 + 3 / 4) / 2)


def test_travel_hint_reads_hours_only_after_a_view() -> None:
    env = TravelEnv(travel_task())
    run(env, ["query:transport", "query:attractions", "query:restaurants"])
    a3 = act(env, "slot:0:morning:A3")
    blind = env.hint(a3)
    env.step(act(env, "view:A3"))
    assert env.hint(act(env, "slot:0:morning:A3")) < blind
    assert "closed" not in a3.label and "closed" in act(env, "slot:0:morning:A3").label


# ------------------------------------------------------------------ protocol properties


def all_envs() -> list[Any]:
    envs: list[Any] = [*make_tasks("shopping", 3, 1), *make_tasks("travel", 3, 1)]
    envs += load_deepplanning_shopping(FIXTURE, 1)
    return envs


def test_envs_satisfy_the_protocol() -> None:
    for env in all_envs():
        assert isinstance(env, SearchEnv)


def test_snapshot_restore_returns_the_exact_state() -> None:
    rng = random.Random(3)
    for env in all_envs():
        env.reset()
        random_walk(env, rng, limit=3)
        snap = env.snapshot()
        keys = [a.key for a in env.decisions()]
        verdict, text = env.verify(), env.describe()
        random_walk(env, rng)
        env.restore(snap)
        assert [a.key for a in env.decisions()] == keys
        assert env.verify() == verdict and env.describe() == text


def test_identity_drops_tree_position() -> None:
    env = ShoppingEnv(shopping_task())
    run(env, ["search:cap", "search:sneakers", "view:p2"])
    first = env.identity(act(env, "choose:0:p1"))
    run(env, ["search:sneakers", "view:p3", "search:cap", "choose:1:c1"])
    assert env.identity(act(env, "choose:0:p1")) == first == "choose:0:p1"
    assert env.recorded(act(env, "choose:0:p1"))
    assert not env.recorded(act(env, "view:p1"))

    tenv = TravelEnv(travel_task())
    run(tenv, ["query:attractions", "query:transport", "out:O1"])
    a = tenv.identity(act(tenv, "slot:0:afternoon:A2"))
    run(tenv, ["query:transport", "query:attractions", "view:A1", "back:B1"])
    assert tenv.identity(act(tenv, "slot:0:afternoon:A2")) == a
    assert tenv.recorded(act(tenv, "slot:0:afternoon:A2"))
    assert not tenv.recorded(act(tenv, "view:A2"))


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_generated_task_is_solvable(suite: str, level: int) -> None:
    for env in make_tasks(suite, 50, 11, level):
        play_gold(env)
        v = env.verify()
        assert v.success and v.reward == 1.0, env.spec()  # type: ignore[attr-defined]


@pytest.mark.parametrize("suite", SUITES)
def test_random_play_terminates_within_the_horizon(suite: str) -> None:
    rng = random.Random(5)
    for env in make_tasks(suite, 30, 2):
        ids = {o.id for o in env.objectives}
        steps = random_walk(env, rng)
        assert env.is_terminal() and steps <= env.horizon
        v = env.verify()
        assert 0.0 <= v.reward <= 1.0 and set(v.objective_scores) <= ids
        assert v.success == (v.reward == 1.0)


def _keys_are_identities_along(env: SearchEnv, rng: random.Random) -> None:
    """Every listed decision's key is ``decision_id`` of its payload and its identity, and
    the verifier's objective_decisions name identities of recorded steps taken."""
    taken: set[object] = set()
    while not env.is_terminal():
        decisions = list(env.decisions())
        for a in decisions:
            assert a.key == decision_id(a.payload) == env.identity(a)
        action = rng.choice(decisions)
        if env.recorded(action):
            taken.add(env.identity(action))
        env.step(action)
    for ids in env.verify().objective_decisions.values():
        assert set(ids) <= taken


@pytest.mark.parametrize("suite", SUITES)
def test_action_keys_are_the_identities_the_verifier_names(suite: str) -> None:
    rng = random.Random(11)
    for env in make_tasks(suite, 10, 3):
        _keys_are_identities_along(env, rng)


def test_deepplanning_keys_are_the_identities_the_verifier_names() -> None:
    rng = random.Random(12)
    for _ in range(5):
        for env in load_deepplanning_shopping(FIXTURE, 1):
            _keys_are_identities_along(env, rng)


def test_hints_are_in_unit_interval_along_random_play() -> None:
    rng = random.Random(9)
    for env in make_tasks("shopping", 6, 4) + make_tasks("travel", 6, 4):
        while not env.is_terminal():
            ds = list(env.decisions())
            assert all(0.0 <= env.hint(a) <= 1.0 for a in ds)
            assert all(a.kind in (ActionKind.INFO, ActionKind.COMMIT) for a in ds)
            env.step(rng.choice(ds))


def test_invalid_action_raises() -> None:
    env = ShoppingEnv(shopping_task())
    with pytest.raises(ValueError):
        env.step(Action("choose:0:p1", ActionKind.COMMIT, ("choose", 0, "p1")))  # not listed


# ------------------------------------------------------------------ DeepPlanning adapter


def dp_env() -> DeepPlanningShoppingEnv:
    return load_deepplanning_shopping(FIXTURE, 1)[0]


def test_deepplanning_gold_plan_matches() -> None:
    env = dp_env()
    play_gold(env)
    v = env.verify()
    assert v.success and v.reward == 1.0 and v.metrics["match_score"] == 1.0
    assert {o.id for o in env.objectives} == {"gt:a1000001", "gt:b2000001",
                                              "coupon:Cross-store: ¥60 off every ¥500"}
    second = load_deepplanning_shopping(FIXTURE, 1)[1]
    play_gold(second)
    assert second.verify().success


def test_deepplanning_scores_like_the_benchmark_evaluator() -> None:
    env = dp_env()
    run(env, ["brand:Nike", "brand:Columbia", "add:a1000002", "add:b2000001",
              "coupon:Cross-store: ¥60 off every ¥500:1", "finish"])
    v = env.verify()  # wrong shoe colour: 2 of 3 expected entries matched
    assert not v.success and v.reward == pytest.approx(2 / 3)
    assert v.objective_scores["gt:a1000001"] == 0.0 and v.metrics["match_score"] == 0.5
    run(env, ["brand:Nike", "brand:Columbia", "add:a1000001", "add:b2000001", "finish"])
    v = env.verify()  # no coupon
    assert v.metrics["match_score"] == 1.0 and v.objective_scores[
        "coupon:Cross-store: ¥60 off every ¥500"] == 0.0 and not v.success
    run(env, ["brand:Nike", "add:a1000001"])
    keys = {a.key for a in env.decisions()}
    assert "coupon:Cross-store: ¥60 off every ¥500:1" in keys  # 699 >= 500
    assert not any(k.startswith("coupon:VIP") for k in keys)  # the user is not a VIP


def test_deepplanning_reads_the_real_query_meta_format() -> None:
    root = shared_path("deepplanning")
    envs = load_deepplanning_shopping(root, 1, database_dir=FIXTURE / "database_level1",
                                      limit=2)
    real = json.loads((root / "shopping_level_1_query_meta.json").read_text(encoding="utf-8"))
    assert [e.query for e in envs] == [real[0]["query"], real[1]["query"]]


def test_deepplanning_missing_files_raise_hyperplan_error(tmp_path: Path) -> None:
    with pytest.raises(HyperplanError, match="query_meta"):
        load_deepplanning_shopping(tmp_path, 1)
    (tmp_path / "level_1_query_meta.json").write_text('[{"id": "9", "query": "x"}]')
    with pytest.raises(HyperplanError, match="database"):
        load_deepplanning_shopping(tmp_path, 1)
    (tmp_path / "database_level1").mkdir()
    with pytest.raises(HyperplanError, match="case_9"):
        load_deepplanning_shopping(tmp_path, 1)


def test_travel_task_replace_keeps_spec_serialisable() -> None:
    spec = TravelEnv(replace(travel_task(), budget=1)).spec()
    assert json.loads(json.dumps(spec))["budget"] == 1
