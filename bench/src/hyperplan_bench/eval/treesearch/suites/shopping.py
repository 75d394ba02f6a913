"""The shopping-planning environment and verifier (:class:`ShoppingEnv`) of the
DeepPlanning-style shopping suite.

The task data model and cart arithmetic live in
:mod:`hyperplan_bench.eval.treesearch.suites.shopping_task`, the seeded generator (and its catalog
design) in :mod:`hyperplan_bench.eval.treesearch.suites.shopping_generator`; this module re-exports
their public names.

Actions (``Action.payload`` tuples): info ``("search", category)``, ``("view", pid)``; commit
``("choose", item, pid)`` (any listed product of the item's category, viewed or not),
``("coupon", name)`` (an owned coupon whose threshold the current cart meets; each coupon at
most once; cross-store thresholds stack: their sum must not exceed the subtotal, as in
DeepPlanning's cart rules) and ``("finish",)`` (once every item is chosen). Horizon
``H = 6 * n_items + n_coupons + 2``.

Verifier. Objectives: per item one objective per requirement *group* present
(``item{i}.attrs`` brand/colour/size, ``item{i}.reviews`` review counts/rating,
``item{i}.delivery``), each rho = 1 if every requirement of the group holds for the chosen
product else 0 (0 when the item is unchosen); and the global ``budget`` objective, rho = 1 when
every item is chosen and the final price (after valid applied coupons) is within the budget,
else 0. Reward ``R = (sum_i mean_groups(i) + rho_budget) / (n_items + 1)`` (each item and the
budget weigh the same). ``success`` = every requirement and the budget hold (R = 1).
``metrics["match_score"]`` = fraction of items whose product satisfies all its requirements
(DeepPlanning's match score analogue). ``objective_decisions`` maps item objectives to that
item's choose identity and the budget to every recorded identity. Identities (and
action keys, ``decision_id`` of the payload): ``search:cat``, ``view:pid``,
``choose:item:pid``, ``coupon:name``, ``finish``; :meth:`ShoppingEnv.recorded` is true for
choose and coupon commits.
``metrics`` also carries ``final_price``, ``budget``, ``over_budget``, ``chosen`` and ``level``.

:meth:`ShoppingEnv.hint` reads only the query and the revealed attributes: for a choice,
``0.75 * requirement score + 0.25 * price score``, where the requirement score is the fraction
of the item's requirements the revealed attributes satisfy (unrevealed ones count 1/2 for a
view, 0 for a choice of an unviewed product), halved once a revealed attribute breaks one, and
the price score compares the price with an even split of the remaining budget over the open
items (it cannot see which valid product is cheapest, how coupons interact, or how other
categories are priced). While none of an item's products has been viewed its choices are
scaled by 0.2 (so viewing comes first). Views of open items score
``0.2 + 0.6 * requirement score + 0.2 * price score``, unsearched categories 0.9, coupons 0.9,
finish 1 (0.7 while a coupon could still be applied). Once one more view would leave too few
steps to search and choose every open item and finish, views score 0.05 and the 0.2 scaling
is dropped.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan_bench.eval.treesearch.suites.base import StateEnv, decision_id

# the ``name as name`` imports re-export names this module defined before the split
from hyperplan_bench.eval.treesearch.suites.shopping_generator import BRAND_COUPONS as BRAND_COUPONS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import BRANDS as BRANDS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import CATEGORIES as CATEGORIES
from hyperplan_bench.eval.treesearch.suites.shopping_generator import COLOURS as COLOURS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import CROSS_COUPONS as CROSS_COUPONS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import MODELS as MODELS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import N_ITEMS as N_ITEMS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import N_REQS as N_REQS
from hyperplan_bench.eval.treesearch.suites.shopping_generator import (
    generate_shopping_task as generate_shopping_task,
)
from hyperplan_bench.eval.treesearch.suites.shopping_task import GROUP_OF as GROUP_OF
from hyperplan_bench.eval.treesearch.suites.shopping_task import OPS as OPS
from hyperplan_bench.eval.treesearch.suites.shopping_task import (
    REQ_KEYS,
    Item,
    Product,
    ShoppingTask,
    _violations,
    coupons_valid,
)
from hyperplan_bench.eval.treesearch.suites.shopping_task import STAR_WORDS as STAR_WORDS
from hyperplan_bench.eval.treesearch.suites.shopping_task import Coupon as Coupon
from hyperplan_bench.eval.treesearch.suites.shopping_task import Requirement as Requirement
from hyperplan_bench.eval.treesearch.suites.shopping_task import best_coupons as best_coupons

LISTED_KEYS = frozenset({"brand"})  # revealed by a category search; the rest needs a view


@dataclass(frozen=True)
class ShoppingState:
    searched: frozenset[str] = frozenset()
    viewed: frozenset[str] = frozenset()
    chosen: tuple[str | None, ...] = ()
    coupons: tuple[str, ...] = ()
    finished: bool = False
    steps: int = 0
    trace: tuple[str, ...] = ()


class ShoppingEnv(StateEnv):
    """One shopping task as a :class:`~hyperplan.search.env.SearchEnv` (module doc)."""

    state: ShoppingState

    def __init__(self, task: ShoppingTask) -> None:
        self.task = task
        self._products = {p.pid: p for p in task.products}
        self._coupons = {c.name: c for c in task.coupons}
        self._by_cat: dict[str, list[Product]] = {}
        for p in task.products:
            self._by_cat.setdefault(p.category, []).append(p)
        local = [
            Objective(f"item{it.index}.{grp}", f"item {it.index} ({it.category}): "
                      + ", ".join(r.text() for r in it.requirements if r.group == grp))
            for it in task.items for grp in it.groups()
        ]
        budget = Objective("budget", f"total after coupons <= ¥{task.budget}", "global")
        self._objectives = (*local, budget)
        self._horizon = 6 * len(task.items) + len(task.coupons) + 2
        self._start(ShoppingState(chosen=(None,) * len(task.items)))

    # -- protocol basics
    @property
    def query(self) -> str:
        return self.task.query

    def spec(self) -> dict[str, Any]:
        return self.task.spec()

    # -- decisions
    def _chosen_products(self, state: ShoppingState | None = None) -> list[Product]:
        st = state or self.state
        return [self._products[pid] for pid in st.chosen if pid is not None]

    def _listed(self, pid: str) -> bool:
        return self._products[pid].category in self.state.searched

    def _compute_decisions(self) -> list[Action]:
        if self.is_terminal():
            return []
        st = self.state
        out: list[Action] = []
        for it in self.task.items:
            if it.category not in st.searched:
                out.append(Action(f"search:{it.category}", ActionKind.INFO,
                                  ("search", it.category), f"search {it.category}"))
        for it in self.task.items:
            if it.category in st.searched:
                for p in self._by_cat[it.category]:
                    if p.pid not in st.viewed:
                        out.append(Action(f"view:{p.pid}", ActionKind.INFO, ("view", p.pid),
                                          f"view {p.pid} ({p.name})"))
        for it in self.task.items:
            if st.chosen[it.index] is None and it.category in st.searched:
                for p in self._by_cat[it.category]:
                    out.append(Action(f"choose:{it.index}:{p.pid}", ActionKind.COMMIT,
                                      ("choose", it.index, p.pid),
                                      f"choose {p.pid} ({p.name}, ¥{p.price}) for item "
                                      f"{it.index}"))
        chosen = self._chosen_products()
        applied = [self._coupons[n] for n in st.coupons]
        for c in self.task.coupons:
            if c.name not in st.coupons and coupons_valid(chosen, [*applied, c]):
                out.append(Action(f"coupon:{c.name}", ActionKind.COMMIT, ("coupon", c.name),
                                  f"apply coupon {c.name}"))
        if all(pid is not None for pid in st.chosen):
            out.append(Action("finish", ActionKind.COMMIT, ("finish",), "finish the order"))
        return out

    def _apply(self, st: ShoppingState, action: Action) -> tuple[ShoppingState, str]:
        kind = action.payload[0]
        if kind == "search":
            cat = action.payload[1]
            obs = f"search {cat}: " + "; ".join(p.listing() for p in self._by_cat[cat])
            st = replace(st, searched=st.searched | {cat})
        elif kind == "view":
            p = self._products[action.payload[1]]
            obs = p.details()
            st = replace(st, viewed=st.viewed | {p.pid})
        elif kind == "choose":
            _, idx, pid = action.payload
            chosen = list(st.chosen)
            chosen[idx] = pid
            obs = f"item {idx}: chose {self._products[pid].listing()}"
            st = replace(st, chosen=tuple(chosen))
        elif kind == "coupon":
            obs = f"applied coupon {action.payload[1]}"
            st = replace(st, coupons=(*st.coupons, action.payload[1]))
        else:
            obs = "order finished"
            st = replace(st, finished=True)
        return st, obs

    def recorded(self, action: Action) -> bool:
        return action.kind is ActionKind.COMMIT and action.payload[0] in ("choose", "coupon")

    # -- verifier
    def final_price(self, state: ShoppingState | None = None) -> int:
        st = state or self.state
        chosen = self._chosen_products(st)
        applied = [self._coupons[n] for n in st.coupons]
        subtotal = sum(p.price for p in chosen)
        if not coupons_valid(chosen, applied):
            return subtotal
        return subtotal - sum(c.discount for c in applied)

    def verify(self) -> Verdict:
        st = self.state
        scores: dict[str, float] = {}
        decided: dict[str, frozenset[Hashable]] = {}
        item_scores: list[float] = []
        matched = 0
        recorded: set[Hashable] = set()
        for it in self.task.items:
            pid = st.chosen[it.index]
            ident: frozenset[Hashable] = frozenset()
            product = self._products[pid] if pid is not None else None
            if pid is not None:
                ident = frozenset({decision_id(("choose", it.index, pid))})
                recorded |= ident
            group_scores = []
            for grp in it.groups():
                ok = product is not None and all(
                    r.holds(product) for r in it.requirements if r.group == grp)
                scores[f"item{it.index}.{grp}"] = 1.0 if ok else 0.0
                decided[f"item{it.index}.{grp}"] = ident
                group_scores.append(1.0 if ok else 0.0)
            item_scores.append(sum(group_scores) / len(group_scores))
            if product is not None and not _violations(product, it.requirements):
                matched += 1
        recorded |= {decision_id(("coupon", n)) for n in st.coupons}
        complete = all(pid is not None for pid in st.chosen)
        price = self.final_price()
        budget_ok = complete and price <= self.task.budget
        scores["budget"] = 1.0 if budget_ok else 0.0
        decided["budget"] = frozenset(recorded)
        n = len(self.task.items)
        reward = (sum(item_scores) + scores["budget"]) / (n + 1)
        success = matched == n and budget_ok
        return Verdict(
            reward=reward,
            success=success, objective_scores=scores, objective_decisions=decided,
            metrics={"match_score": matched / n, "final_price": float(price),
                     "budget": float(self.task.budget),
                     "over_budget": float(max(0, price - self.task.budget)) if complete else 0.0,
                     "chosen": float(sum(pid is not None for pid in st.chosen)),
                     "level": float(self.task.level)},
        )

    # -- guidance
    def _known(self, p: Product) -> frozenset[str]:
        if p.pid in self.state.viewed:
            return frozenset(REQ_KEYS)
        return LISTED_KEYS

    def _requirement_score(self, item: Item, p: Product, unknown: float = 0.5) -> float:
        """Fraction of the item's requirements the revealed attributes satisfy (unknown
        ones count ``unknown``), halved when a revealed attribute already breaks one."""
        known = self._known(p)
        total = 0.0
        broken = False
        for r in item.requirements:
            if r.key in known:
                ok = r.holds(p)
                total += 1.0 if ok else 0.0
                broken = broken or not ok
            else:
                total += unknown
        score = total / len(item.requirements)
        return score / 2 if broken else score

    def _price_score(self, p: Product) -> float:
        st = self.state
        spent = sum(x.price for x in self._chosen_products())
        open_items = sum(pid is None for pid in st.chosen)
        allowance = (self.task.budget - spent) / max(1, open_items)
        if allowance <= 0:
            return 0.0
        if p.price <= allowance:
            return 1.0
        return max(0.0, 1.0 - (p.price - allowance) / allowance)

    def _spare_steps(self) -> bool:
        """True while one more information step still leaves enough steps to search and
        choose every open item and finish (coupons are optional)."""
        st = self.state
        needed = 1 + sum(1 + (it.category not in st.searched)
                         for it in self.task.items if st.chosen[it.index] is None)
        return self._horizon - st.steps - 1 >= needed

    def hint(self, action: Action) -> float:
        kind = action.payload[0]
        if kind == "search":
            return 0.9 if action.payload[1] not in self.state.searched else 0.0
        if kind == "view":
            p = self._products[action.payload[1]]
            item = next(it for it in self.task.items if it.category == p.category)
            if self.state.chosen[item.index] is not None:
                return 0.1
            if not self._spare_steps():
                return 0.05  # the remaining steps are needed to commit and finish
            return 0.2 + 0.6 * self._requirement_score(item, p) + 0.2 * self._price_score(p)
        if kind == "choose":
            _, idx, pid = action.payload
            p = self._products[pid]
            item = self.task.items[idx]
            if pid in self.state.viewed:
                return 0.75 * self._requirement_score(item, p) + 0.25 * self._price_score(p)
            # unverified commit: unknown requirements count 0, not 1/2 (so it never looks
            # better to choose than to view), and while none of the item's products has been
            # viewed it stays at most 0.2, below every view of that item
            score = 0.75 * self._requirement_score(item, p, unknown=0.0) + \
                0.25 * self._price_score(p)
            viewed = self.state.viewed
            if self._spare_steps() and not any(
                    q.pid in viewed for q in self._by_cat[item.category]):
                score *= 0.2
            return score
        if kind == "coupon":
            return 0.9
        # finish: best once every item is chosen and no owned coupon can still be applied
        if any(pid is None for pid in self.state.chosen):
            return 0.0
        return 0.7 if any(a.payload[0] == "coupon" for a in self.decisions()) else 1.0

    def describe(self) -> str:
        return "\n".join(f"{k + 1}. {t}" for k, t in enumerate(self.state.trace))

    # -- gold plan (for tests and sanity checks; the verifier never reads it)
    def gold_actions(self) -> list[Action]:
        """The hidden gold plan as actions (search, view and choose each gold product, apply
        the gold coupons, finish)."""
        acts: list[Action] = []
        for it, pid in zip(self.task.items, self.task.gold, strict=True):
            acts.append(Action(f"search:{it.category}", ActionKind.INFO, ("search", it.category)))
            acts.append(Action(f"view:{pid}", ActionKind.INFO, ("view", pid)))
            acts.append(Action(f"choose:{it.index}:{pid}", ActionKind.COMMIT,
                               ("choose", it.index, pid)))
        for name in self.task.gold_coupons:
            acts.append(Action(f"coupon:{name}", ActionKind.COMMIT, ("coupon", name)))
        acts.append(Action("finish", ActionKind.COMMIT, ("finish",)))
        return acts
