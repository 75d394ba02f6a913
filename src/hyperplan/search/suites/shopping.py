"""Generated shopping-planning tasks modelled on DeepPlanning Shopping Planning.

A task asks for ``n`` items (2-3 at level 1, 3-4 at level 2, 4-5 at level 3), one per product
category. Each item carries attribute requirements in the DeepPlanning style: brand, colour,
size, review counts ("more than 300 four-star reviews", "fewer than 10 one-star reviews"),
total reviews, average rating and delivery time. The user owns a few coupons (cross-store
threshold coupons "¥30 off every ¥300" and same-brand coupons) and states one global budget.

Catalog design (why search matters):

* every category holds the *gold* product (satisfies every requirement and is the cheapest
  product that does), one or two pricier *valid alternatives*, *near-miss decoys* that break
  exactly one requirement and are cheaper than the gold product (so they look attractive on a
  price-sorted listing), and a few random *fillers*;
* the budget is the gold cart's price after its best coupon combination plus a slack smaller
  than the cheapest single swap to a valid alternative, so the budget couples the items: one
  pricier-but-valid choice anywhere can break it, and a coupon may be needed to fit;
* attributes are hidden until revealed: ``search <category>`` lists a category's products
  (id, name, brand, price); ``view <product>`` reveals colour, size, review counts, rating and
  delivery days. :meth:`ShoppingEnv.hint` reads only the query and what the history revealed.

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

import itertools
import random
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan.search.suites.base import StateEnv, decision_id

# category -> (price range, size choices)
CATEGORIES: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {
    "running shoes": ((300, 1100), ("39", "40", "41", "42", "43", "44")),
    "sneakers": ((250, 900), ("38", "39", "40", "41", "42", "43")),
    "rain jacket": ((350, 1400), ("S", "M", "L", "XL", "XXL")),
    "hoodie": ((150, 600), ("S", "M", "L", "XL", "XXL")),
    "t-shirt": ((60, 260), ("S", "M", "L", "XL", "XXL")),
    "backpack": ((180, 800), ("20L", "25L", "30L", "35L")),
    "jeans": ((200, 700), ("28", "30", "32", "34", "36")),
    "cap": ((60, 240), ("S/M", "L/XL", "one size")),
    "headphones": ((300, 1500), ("standard", "compact")),
    "water bottle": ((50, 200), ("500ml", "750ml", "1L")),
    "yoga mat": ((90, 400), ("4mm", "6mm", "8mm")),
    "sunglasses": ((150, 900), ("standard", "wide")),
}
BRANDS = (
    "Nike", "Adidas", "Puma", "Vans", "Salomon", "Arc'teryx", "Uniqlo", "Levi's",
    "The North Face", "Columbia", "Sony", "Decathlon", "Timberland", "New Balance",
)
COLOURS = ("black", "white", "red", "blue", "green", "orange", "grey", "beige", "gold", "navy")
MODELS = ("Classic", "Pro", "Lite", "Trail", "Urban", "Flex", "Air", "Max", "Edge", "Core")
CROSS_COUPONS = ((30, 300), (60, 500), (120, 900), (200, 1200), (300, 1500))
BRAND_COUPONS = ((25, 200), (60, 400), (180, 1000))

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
LISTED_KEYS = frozenset({"brand"})  # revealed by a category search; the rest needs a view


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


# ---------------------------------------------------------------- generator


def _nice(x: float) -> int:
    step = 50 if x >= 1000 else 10 if x >= 100 else 5 if x >= 20 else 1
    return max(step, round(x / step) * step)


def _random_stars(rng: random.Random) -> tuple[int, int, int, int, int]:
    scale = rng.choice((0.3, 0.6, 1.0, 1.6))
    return (
        int(rng.randint(0, 40) * scale), int(rng.randint(0, 60) * scale),
        int(rng.randint(10, 150) * scale), int(rng.randint(50, 600) * scale),
        int(rng.randint(100, 1500) * scale),
    )


def _threshold(rng: random.Random, key: str, gold: Product) -> Requirement | None:
    op = OPS[key]
    got = gold.attr(key)
    if op == "==":
        return Requirement(key, op, got)
    assert isinstance(got, int | float)
    if key == "rating":
        value: float = int((got - rng.uniform(0.05, 0.3)) * 10) / 10
        return Requirement(key, op, value) if value < got and value >= 3.0 else None
    if key == "delivery":
        return Requirement(key, op, min(5, int(got) + rng.choice((0, 0, 1))))
    if op == ">":
        t = _nice(got * rng.uniform(0.55, 0.9))
        while t >= got and t > 1:
            t -= max(1, t // 10)
        return Requirement(key, op, t) if 0 < t < got else None
    t = _nice(got * rng.uniform(1.2, 2.0) + rng.randint(2, 10))
    return Requirement(key, op, t) if t > got else None


def _perturb(rng: random.Random, base: Product, pid: str, keep: frozenset[str]) -> Product:
    sizes = CATEGORIES[base.category][1]
    stars = tuple(max(0, int(n * rng.uniform(0.5, 1.6)) + rng.randint(-3, 3))
                  for n in base.stars)
    if sum(stars) == 0:
        stars = (0, 0, 0, 0, 1)
    return replace(
        base, pid=pid,
        name=base.name if rng.random() < 0.4 else f"{base.brand} {rng.choice(MODELS)} "
        f"{base.category.title()}",
        brand=base.brand if "brand" in keep else rng.choice(BRANDS),
        colour=base.colour if "colour" in keep else rng.choice(COLOURS),
        size=base.size if "size" in keep else rng.choice(sizes),
        stars=stars,  # type: ignore[arg-type]
        delivery=max(1, min(7, base.delivery + rng.randint(-1, 2))),
    )


def _break(rng: random.Random, p: Product, req: Requirement) -> Product:
    """Force ``req`` to fail on ``p`` (other attributes untouched)."""
    k = req.key
    if k in ("brand", "colour", "size"):
        pool = {"brand": BRANDS, "colour": COLOURS, "size": CATEGORIES[p.category][1]}[k]
        other = rng.choice([v for v in pool if v != req.value])
        if k == "brand":
            return replace(p, brand=other)
        if k == "colour":
            return replace(p, colour=other)
        return replace(p, size=other)
    if k == "delivery":
        assert isinstance(req.value, int)
        return replace(p, delivery=req.value + rng.randint(1, 3))
    stars = list(p.stars)
    if k.startswith("stars"):
        i = int(k[5]) - 1
        assert isinstance(req.value, int)
        if req.op == ">":
            stars[i] = rng.randint(int(req.value * 0.6), int(req.value))
        else:
            stars[i] = rng.randint(int(req.value), int(req.value * 1.5) + 5)
    elif k == "reviews":
        assert isinstance(req.value, int)
        factor = req.value / max(1, sum(stars)) * rng.uniform(0.6, 0.98)
        stars = [int(n * factor) for n in stars]
    elif k == "rating":
        stars[0] += int(sum(stars) * rng.uniform(0.15, 0.4))
        stars[1] += int(sum(stars) * rng.uniform(0.05, 0.2))
    return replace(p, stars=tuple(stars))  # type: ignore[arg-type]


def _violations(p: Product, reqs: Sequence[Requirement]) -> frozenset[str]:
    return frozenset(r.key for r in reqs if not r.holds(p))


N_ITEMS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}
N_REQS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def generate_shopping_task(seed: int, level: int) -> ShoppingTask:
    """A seeded task (module doc). Same ``(seed, level)`` -> identical task."""
    if level not in N_ITEMS:
        raise ValueError(f"shopping level must be 1, 2 or 3, not {level}")
    rng = random.Random(f"shopping:{seed}:{level}")
    n_items = rng.randint(*N_ITEMS[level])
    cats = rng.sample(sorted(CATEGORIES), n_items)
    used_pids: set[str] = set()

    def new_pid() -> str:
        while True:
            pid = f"{rng.getrandbits(32):08x}"
            if pid not in used_pids:
                used_pids.add(pid)
                return pid

    items: list[Item] = []
    products: list[Product] = []
    gold: list[Product] = []
    for idx, cat in enumerate(cats):
        (lo, hi), sizes = CATEGORIES[cat]
        brand = rng.choice(BRANDS)
        g = Product(new_pid(), f"{brand} {rng.choice(MODELS)} {cat.title()}", cat, brand,
                    rng.randint(lo, hi), rng.choice(COLOURS), rng.choice(sizes),
                    _random_stars(rng), rng.randint(1, 4))
        n_req = rng.randint(*N_REQS[level])
        keys = [rng.choice(("brand", "colour", "size"))]
        keys += rng.sample([k for k in REQ_KEYS if k not in keys], n_req - 1)
        reqs = [r for k in keys if (r := _threshold(rng, k, g)) is not None]
        assert reqs and not _violations(g, reqs)
        keep = frozenset(r.key for r in reqs)
        pool: list[Product] = [g]
        # valid alternatives: pricier
        for _ in range(rng.randint(1, 2)):
            for _try in range(100):
                alt = _perturb(rng, g, "", keep)
                if not _violations(alt, reqs):
                    price = max(g.price + 5, int(g.price * rng.uniform(1.12, 1.6)))
                    pool.append(replace(alt, pid=new_pid(), price=price))
                    break
        # near-miss decoys: break exactly one requirement, cheaper than gold
        for req in reqs:
            for _ in range(1 if level == 1 else rng.randint(1, 2)):
                for _try in range(100):
                    dec = _break(rng, _perturb(rng, g, "", keep), req)
                    if _violations(dec, reqs) == {req.key}:
                        price = max(10, int(g.price * rng.uniform(0.7, 0.95)))
                        pool.append(replace(dec, pid=new_pid(), price=price))
                        break
        # fillers
        for _ in range(rng.randint(2, 3)):
            fb = rng.choice(BRANDS)
            f = Product(new_pid(), f"{fb} {rng.choice(MODELS)} {cat.title()}", cat, fb,
                        rng.randint(lo, hi), rng.choice(COLOURS), rng.choice(sizes),
                        _random_stars(rng), rng.randint(1, 5))
            if not _violations(f, reqs) and f.price <= g.price:
                f = replace(f, price=int(g.price * rng.uniform(1.1, 1.5)) + 5)
            pool.append(f)
        rng.shuffle(pool)
        products.extend(pool)
        items.append(Item(idx, cat, tuple(reqs)))
        gold.append(g)

    # coupons: candidates are cross-store ones and brand coupons for gold brands
    candidates = [Coupon(f"Cross-store: ¥{d} off every ¥{t:,}", d, t) for d, t in CROSS_COUPONS]
    for b in sorted({p.brand for p in gold}):
        d, t = rng.choice(BRAND_COUPONS)
        candidates.append(Coupon(f"Same-brand {b}: ¥{d} off every ¥{t:,}", d, t, b))
    owned = tuple(sorted(rng.sample(candidates, min(len(candidates), level + 1)),
                         key=lambda c: c.name))
    gold_coupons = best_coupons(gold, owned)
    subtotal = sum(p.price for p in gold)
    final = subtotal - sum(c.discount for c in gold_coupons)
    gaps = []
    for item, g in zip(items, gold, strict=True):
        valid = [p.price - g.price for p in products
                 if p.category == item.category and p.pid != g.pid
                 and not _violations(p, item.requirements)]
        if valid:
            gaps.append(min(valid))
    slack = int(min(gaps, default=50) * rng.uniform(0.1, 0.6))
    budget = final + slack

    parts = [f"I need to order {n_items} items online."]
    for k, it in enumerate(items):
        lead = "First" if k == 0 else "Finally" if k == n_items - 1 else "Next"
        parts.append(f"{lead}, I need {it.text()}.")
    parts.append(f"My total budget is ¥{budget}, after any coupons.")
    parts.append("I own these coupons: " + "; ".join(c.name for c in owned) + ".")
    return ShoppingTask(
        seed, level, tuple(items), tuple(products), owned, budget,
        tuple(p.pid for p in gold), tuple(c.name for c in gold_coupons), " ".join(parts),
    )


# ---------------------------------------------------------------- environment


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
        lines = [f"Query: {self.task.query}"]
        lines += [f"{k + 1}. {t}" for k, t in enumerate(self.state.trace)]
        return "\n".join(lines)

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
