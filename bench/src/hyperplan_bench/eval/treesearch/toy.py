"""A tiny synthetic shopping environment for tests, the ``toy`` suite and the bookkeeping bench.

Not a benchmark (the real suites live in :mod:`hyperplan_bench.eval.treesearch.suites`): m items,
each
with p candidate products; a product meets its item's requirement or not (hidden), has a price,
and a noisy :meth:`hint` that -- like a decoy -- favours pricier products. Any unfilled item can
be filled next (so A1 B1 C1 and B1 A1 C1 are different histories with the same decision set),
the identity of a commit is the product id, and the verifier scores one objective per item
(local) plus the total budget (global), naming each objective's decisions.

``fail_keys`` makes :meth:`step` raise ``ValueError`` for those action keys (failure tests);
``info`` adds one information-gathering action per item (kept in the history, not recorded).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict


@dataclass(frozen=True)
class Product:
    id: str
    item: int
    price: float
    ok: bool
    hint: float


class ToyShopEnv:
    """See the module doc. Deterministic per ``seed``."""

    def __init__(
        self,
        seed: int = 0,
        n_items: int = 3,
        n_products: int = 4,
        *,
        info: bool = False,
        fail_keys: Sequence[str] = (),
        slack: float = 0.15,
    ) -> None:
        rng = random.Random(seed)
        self.n_items = n_items
        self.info = info
        self.fail_keys = frozenset(fail_keys)
        self.products: list[list[Product]] = []
        cheapest_ok = 0.0
        for i in range(n_items):
            row: list[Product] = []
            good = set(rng.sample(range(n_products), max(1, n_products // 3)))
            for j in range(n_products):
                price = round(rng.uniform(20, 100), 2)
                ok = j in good
                hint = (0.55 + 0.4 * (price - 20) / 80) if ok else rng.uniform(0.2, 0.8)
                row.append(Product(f"P{i}.{j}", i, price, ok, round(hint, 3)))
            cheapest_ok += min(p.price for p in row if p.ok)
            self.products.append(row)
        self.budget = round(cheapest_ok * (1 + slack), 2)
        self._objectives = [
            *(Objective(f"item{i}", f"item {i} meets its requirement") for i in range(n_items)),
            Objective("budget", f"total at most {self.budget}", scope="global"),
        ]
        self._chosen: dict[int, Product] = {}
        self._inspected: frozenset[int] = frozenset()
        self._steps = 0

    # -- protocol ------------------------------------------------------------------------
    @property
    def query(self) -> str:
        return f"Buy one product for each of {self.n_items} items within {self.budget}."

    @property
    def objectives(self) -> Sequence[Objective]:
        return self._objectives

    @property
    def horizon(self) -> int:
        return self.n_items * (2 if self.info else 1)

    def reset(self) -> None:
        self._chosen = {}
        self._inspected = frozenset()
        self._steps = 0

    def snapshot(self) -> Any:
        return (tuple(sorted(self._chosen.items())), self._inspected, self._steps)

    def restore(self, snapshot: Any) -> None:
        chosen, inspected, steps = snapshot
        self._chosen = dict(chosen)
        self._inspected = inspected
        self._steps = steps

    def decisions(self) -> Sequence[Action]:
        if self.is_terminal():
            return []
        out: list[Action] = []
        for i, row in enumerate(self.products):
            if i in self._chosen:
                continue
            if self.info and i not in self._inspected:
                out.append(Action(f"inspect{i}", ActionKind.INFO, i, f"inspect item {i}"))
            out.extend(Action(p.id, ActionKind.COMMIT, p, f"buy {p.id} at {p.price}") for p in row)
        return out

    def step(self, action: Action) -> str:
        if action.key in self.fail_keys:
            raise ValueError(f"tool error on {action.key}")
        if action.kind is ActionKind.INFO:
            self._inspected = self._inspected | {int(action.payload)}
            self._steps += 1
            return f"item {action.payload} inspected"
        product = action.payload
        if not isinstance(product, Product) or product.item in self._chosen:
            raise ValueError(f"invalid action {action.key}")
        self._chosen[product.item] = product
        self._steps += 1
        return f"bought {product.id}"

    def is_terminal(self) -> bool:
        return len(self._chosen) == self.n_items

    def identity(self, action: Action) -> Hashable:
        return action.key

    def recorded(self, action: Action) -> bool:
        return action.kind is ActionKind.COMMIT

    def verify(self) -> Verdict:
        scores: dict[str, float] = {}
        decisions: dict[str, frozenset[Hashable]] = {}
        for i in range(self.n_items):
            product = self._chosen.get(i)
            scores[f"item{i}"] = 1.0 if product is not None and product.ok else 0.0
            if product is not None:
                decisions[f"item{i}"] = frozenset({product.id})
        total = sum(p.price for p in self._chosen.values())
        scores["budget"] = 1.0 if total <= self.budget else max(0.0, 1 - (total - self.budget)
                                                                / self.budget)
        decisions["budget"] = frozenset(p.id for p in self._chosen.values())
        success = all(v >= 1.0 for v in scores.values()) and self.is_terminal()
        reward = sum(scores.values()) / len(scores)
        items_ok = sum(scores[f"item{i}"] for i in range(self.n_items)) / self.n_items
        return Verdict(reward, success, scores, decisions, {"score": items_ok})

    def hint(self, action: Action) -> float:
        if action.kind is ActionKind.INFO:
            return 0.5
        product = action.payload
        return product.hint if isinstance(product, Product) else 0.5

    def describe(self) -> str:
        chosen = ", ".join(p.id for _, p in sorted(self._chosen.items())) or "nothing yet"
        return f"chosen: {chosen}"


def make_toy_tasks(n: int, seed: int, level: int | None = None) -> list[ToyShopEnv]:
    """n toy tasks; ``level`` 1..3 sets the size (items = 2 + level, products = 3 + 2 level)."""
    lv = 2 if level is None else max(1, min(3, level))
    return [ToyShopEnv(seed * 100_003 + i, 2 + lv, 3 + 2 * lv) for i in range(n)]
