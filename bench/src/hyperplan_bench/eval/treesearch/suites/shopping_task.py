"""Task data model and cart arithmetic of the generated shopping-planning suite (modelled on
DeepPlanning Shopping Planning); the environment and verifier are
:mod:`hyperplan_bench.eval.treesearch.suites.shopping`.

A task asks for ``n`` items (2-3 at level 1, 3-4 at level 2, 4-5 at level 3), one per product
category. Each item carries attribute requirements in the DeepPlanning style: brand, colour,
size, review counts ("more than 300 four-star reviews", "fewer than 10 one-star reviews"),
total reviews, average rating and delivery time. The user owns a few coupons (cross-store
threshold coupons "¥30 off every ¥300" and same-brand coupons) and states one global budget.

Requirements compare one product attribute with a value (``==``, ``>``, ``<``, ``<=``, by key:
:data:`OPS`) and fall into groups (:data:`GROUP_OF`) that the verifier scores. Coupons follow
DeepPlanning's cart rules (:func:`coupons_valid`); :func:`best_coupons` finds the largest
valid saving.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

STAR_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
GROUP_OF = {
    "brand": "attrs", "colour": "attrs", "size": "attrs", "delivery": "delivery",
    "stars1": "reviews", "stars2": "reviews", "stars4": "reviews", "stars5": "reviews",
    "reviews": "reviews", "rating": "reviews",
}
REQ_KEYS = ("brand", "colour", "size", "stars5", "stars4", "stars2", "stars1", "reviews",
            "rating", "delivery")
OPS = {"brand": "==", "colour": "==", "size": "==", "stars5": ">", "stars4": ">",
       "stars2": "<", "stars1": "<", "reviews": ">", "rating": ">", "delivery": "<="}


@dataclass(frozen=True)
class Product:
    pid: str
    name: str
    category: str
    brand: str
    price: int
    colour: str
    size: str
    stars: tuple[int, int, int, int, int]  # review counts for 1..5 stars
    delivery: int  # days to the user's address

    def attr(self, key: str) -> str | int | float:
        if key == "brand":
            return self.brand
        if key == "colour":
            return self.colour
        if key == "size":
            return self.size
        if key == "delivery":
            return self.delivery
        if key.startswith("stars"):
            return self.stars[int(key[5]) - 1]
        if key == "reviews":
            return sum(self.stars)
        if key == "rating":
            total = sum(self.stars)
            return round(sum((k + 1) * n for k, n in enumerate(self.stars)) / total, 2)
        raise KeyError(key)

    def listing(self) -> str:
        return f"{self.pid} | {self.name} | {self.brand} | ¥{self.price}"

    def details(self) -> str:
        s = self.stars
        return (
            f"{self.pid} {self.name} ({self.brand}, {self.category}): ¥{self.price}, colour "
            f"{self.colour}, size {self.size}, reviews 5★{s[4]} 4★{s[3]} 3★{s[2]} 2★{s[1]} "
            f"1★{s[0]} (total {sum(s)}, average {self.attr('rating')}), delivery "
            f"{self.delivery} day(s)"
        )

    def spec(self) -> dict[str, Any]:
        return {"pid": self.pid, "name": self.name, "category": self.category,
                "brand": self.brand, "price": self.price, "colour": self.colour,
                "size": self.size, "stars": list(self.stars), "delivery": self.delivery}


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "==", ">", "<", "<="
    value: str | int | float

    @property
    def group(self) -> str:
        return GROUP_OF[self.key]

    def holds(self, product: Product) -> bool:
        got = product.attr(self.key)
        if self.op == "==":
            return got == self.value
        assert isinstance(got, int | float) and isinstance(self.value, int | float)
        if self.op == ">":
            return got > self.value
        if self.op == "<":
            return got < self.value
        return got <= self.value

    def text(self) -> str:
        k, v = self.key, self.value
        if k == "brand":
            return f"from {v}"
        if k == "colour":
            return f"in {v}"
        if k == "size":
            return f"in size {v}"
        if k.startswith("stars"):
            word = "more than" if self.op == ">" else "fewer than"
            return f"{word} {v} {STAR_WORDS[int(k[5])]}-star reviews"
        if k == "reviews":
            return f"more than {v} total reviews"
        if k == "rating":
            return f"an average rating above {v}"
        return f"delivery within {v} day(s)"


@dataclass(frozen=True)
class Coupon:
    name: str
    discount: int
    threshold: int
    brand: str | None = None  # None: cross-store

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "discount": self.discount, "threshold": self.threshold,
                "brand": self.brand}


@dataclass(frozen=True)
class Item:
    index: int
    category: str
    requirements: tuple[Requirement, ...]

    def groups(self) -> tuple[str, ...]:
        seen: list[str] = []
        for r in self.requirements:
            if r.group not in seen:
                seen.append(r.group)
        return tuple(seen)

    def text(self) -> str:
        return f"a {self.category} " + ", ".join(r.text() for r in self.requirements)


@dataclass(frozen=True)
class ShoppingTask:
    seed: int
    level: int
    items: tuple[Item, ...]
    products: tuple[Product, ...]
    coupons: tuple[Coupon, ...]  # owned by the user
    budget: int
    gold: tuple[str, ...]  # hidden gold plan: one pid per item
    gold_coupons: tuple[str, ...]
    query: str

    def spec(self) -> dict[str, Any]:
        return {
            "suite": "shopping", "seed": self.seed, "level": self.level,
            "items": [{"category": it.category,
                       "requirements": [[r.key, r.op, r.value] for r in it.requirements]}
                      for it in self.items],
            "products": [p.spec() for p in self.products],
            "coupons": [c.spec() for c in self.coupons], "budget": self.budget,
            "gold": list(self.gold), "gold_coupons": list(self.gold_coupons),
            "query": self.query,
        }


# ---------------------------------------------------------------- cart arithmetic


def coupons_valid(chosen: Iterable[Product], coupons: Sequence[Coupon]) -> bool:
    """DeepPlanning-style stacking: cross-store thresholds sum to at most the subtotal; a
    same-brand coupon needs its threshold within that brand's subtotal."""
    products = list(chosen)
    subtotal = sum(p.price for p in products)
    cross = sum(c.threshold for c in coupons if c.brand is None)
    if cross > subtotal:
        return False
    for c in coupons:
        if c.brand is not None:
            brand_total = sum(p.price for p in products if p.brand == c.brand)
            if c.threshold > brand_total:
                return False
    return len({c.name for c in coupons}) == len(coupons)


def best_coupons(chosen: Sequence[Product], owned: Sequence[Coupon]) -> tuple[Coupon, ...]:
    best: tuple[Coupon, ...] = ()
    best_saving = 0
    for k in range(1, len(owned) + 1):
        for combo in itertools.combinations(owned, k):
            saving = sum(c.discount for c in combo)
            if saving > best_saving and coupons_valid(chosen, combo):
                best, best_saving = combo, saving
    return best


# ---------------------------------------------------------------- requirement checks


def _violations(p: Product, reqs: Sequence[Requirement]) -> frozenset[str]:
    return frozenset(r.key for r in reqs if not r.holds(p))
