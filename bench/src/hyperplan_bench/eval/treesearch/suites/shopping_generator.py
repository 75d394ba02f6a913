"""Seeded generator of shopping-planning tasks (:func:`generate_shopping_task`); the task model
is :mod:`hyperplan_bench.eval.treesearch.suites.shopping_task`.

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
  delivery days. :meth:`~hyperplan_bench.eval.treesearch.suites.shopping.ShoppingEnv.hint` reads
  only the
  query and what the history revealed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from hyperplan_bench.eval.treesearch.suites.shopping_task import (
    OPS,
    REQ_KEYS,
    Coupon,
    Item,
    Product,
    Requirement,
    ShoppingTask,
    _violations,
    best_coupons,
)

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


N_ITEMS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}
N_REQS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def generate_shopping_task(seed: int, level: int) -> ShoppingTask:
    """A seeded task (module doc). Same ``(seed, level)`` -> identical task."""
    if level not in N_ITEMS:
        raise ValueError(f"shopping level must be 1, 2 or 3, not {level}")
    rng = random.Random(f"shopping:{seed}:{level}")
    n_items = rng.randint(*N_ITEMS[level])
    cats = rng.sample(sorted(CATEGORIES), n_items)
    new_pid = _unique_pids(rng)
    items: list[Item] = []
    products: list[Product] = []
    gold: list[Product] = []
    for idx, cat in enumerate(cats):
        item, g, pool = _category_listing(rng, new_pid, idx, cat, level)
        products.extend(pool)
        items.append(item)
        gold.append(g)
    owned = _owned_coupons(rng, gold, level)
    gold_coupons = best_coupons(gold, owned)
    budget = _budget(rng, items, products, gold, gold_coupons)
    return ShoppingTask(
        seed, level, tuple(items), tuple(products), owned, budget,
        tuple(p.pid for p in gold), tuple(c.name for c in gold_coupons),
        _query(items, budget, owned),
    )


def _unique_pids(rng: random.Random) -> Callable[[], str]:
    """``new_pid()`` -> a random 8-hex-digit product id not handed out before."""
    used_pids: set[str] = set()

    def new_pid() -> str:
        while True:
            pid = f"{rng.getrandbits(32):08x}"
            if pid not in used_pids:
                used_pids.add(pid)
                return pid

    return new_pid


def _category_listing(rng: random.Random, new_pid: Callable[[], str], idx: int, cat: str,
                      level: int) -> tuple[Item, Product, list[Product]]:
    """Item ``idx`` (category ``cat``) with its requirements, its gold product, and the
    category's shuffled listing (gold, valid alternatives, near-miss decoys, fillers)."""
    g = _random_product(rng, new_pid, cat, max_delivery=4)
    reqs = _requirements(rng, g, level)
    keep = frozenset(r.key for r in reqs)
    pool: list[Product] = [g]
    # valid alternatives: pricier
    pool += _valid_alternatives(rng, new_pid, g, reqs, keep)
    # near-miss decoys: break exactly one requirement, cheaper than gold
    pool += _near_miss_decoys(rng, new_pid, g, reqs, keep, level)
    # fillers
    pool += _fillers(rng, new_pid, g, reqs)
    rng.shuffle(pool)
    return Item(idx, cat, tuple(reqs)), g, pool


def _random_product(rng: random.Random, new_pid: Callable[[], str], cat: str,
                    max_delivery: int) -> Product:
    """A product of ``cat`` with random brand, model, price, colour, size, reviews, delivery."""
    (lo, hi), sizes = CATEGORIES[cat]
    brand = rng.choice(BRANDS)
    return Product(new_pid(), f"{brand} {rng.choice(MODELS)} {cat.title()}", cat, brand,
                   rng.randint(lo, hi), rng.choice(COLOURS), rng.choice(sizes),
                   _random_stars(rng), rng.randint(1, max_delivery))


def _requirements(rng: random.Random, g: Product, level: int) -> list[Requirement]:
    """The item's requirements: one of brand / colour / size plus other keys, all met by ``g``."""
    n_req = rng.randint(*N_REQS[level])
    keys = [rng.choice(("brand", "colour", "size"))]
    keys += rng.sample([k for k in REQ_KEYS if k not in keys], n_req - 1)
    reqs = [r for k in keys if (r := _threshold(rng, k, g)) is not None]
    assert reqs and not _violations(g, reqs)
    return reqs


def _valid_alternatives(rng: random.Random, new_pid: Callable[[], str], g: Product,
                        reqs: list[Requirement], keep: frozenset[str]) -> list[Product]:
    """One or two products that meet every requirement and cost more than ``g``."""
    alternatives: list[Product] = []
    for _ in range(rng.randint(1, 2)):
        for _try in range(100):
            alt = _perturb(rng, g, "", keep)
            if not _violations(alt, reqs):
                price = max(g.price + 5, int(g.price * rng.uniform(1.12, 1.6)))
                alternatives.append(replace(alt, pid=new_pid(), price=price))
                break
    return alternatives


def _near_miss_decoys(rng: random.Random, new_pid: Callable[[], str], g: Product,
                      reqs: list[Requirement], keep: frozenset[str],
                      level: int) -> list[Product]:
    """Per requirement, one (level 1) or one-two decoys failing only it, cheaper than ``g``."""
    decoys: list[Product] = []
    for req in reqs:
        for _ in range(1 if level == 1 else rng.randint(1, 2)):
            for _try in range(100):
                dec = _break(rng, _perturb(rng, g, "", keep), req)
                if _violations(dec, reqs) == {req.key}:
                    price = max(10, int(g.price * rng.uniform(0.7, 0.95)))
                    decoys.append(replace(dec, pid=new_pid(), price=price))
                    break
    return decoys


def _fillers(rng: random.Random, new_pid: Callable[[], str], g: Product,
             reqs: list[Requirement]) -> list[Product]:
    """Two or three random products; any that happens to be valid is made pricier than ``g``."""
    fillers: list[Product] = []
    for _ in range(rng.randint(2, 3)):
        f = _random_product(rng, new_pid, g.category, max_delivery=5)
        if not _violations(f, reqs) and f.price <= g.price:
            f = replace(f, price=int(g.price * rng.uniform(1.1, 1.5)) + 5)
        fillers.append(f)
    return fillers


def _owned_coupons(rng: random.Random, gold: list[Product], level: int) -> tuple[Coupon, ...]:
    """The ``level + 1`` coupons the user owns, sorted by name."""
    # coupons: candidates are cross-store ones and brand coupons for gold brands
    candidates = [Coupon(f"Cross-store: ¥{d} off every ¥{t:,}", d, t) for d, t in CROSS_COUPONS]
    for b in sorted({p.brand for p in gold}):
        d, t = rng.choice(BRAND_COUPONS)
        candidates.append(Coupon(f"Same-brand {b}: ¥{d} off every ¥{t:,}", d, t, b))
    return tuple(sorted(rng.sample(candidates, min(len(candidates), level + 1)),
                        key=lambda c: c.name))


def _budget(rng: random.Random, items: list[Item], products: list[Product],
            gold: list[Product], gold_coupons: tuple[Coupon, ...]) -> int:
    """The gold cart's price after ``gold_coupons`` plus a slack smaller than the cheapest swap
    of a gold product for a valid alternative (module doc)."""
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
    return final + slack


def _query(items: list[Item], budget: int, owned: tuple[Coupon, ...]) -> str:
    """The user's request: the items with their requirements, the budget, the coupons."""
    n_items = len(items)
    parts = [f"I need to order {n_items} items online."]
    for k, it in enumerate(items):
        lead = "First" if k == 0 else "Finally" if k == n_items - 1 else "Next"
        parts.append(f"{lead}, I need {it.text()}.")
    parts.append(f"My total budget is ¥{budget}, after any coupons.")
    parts.append("I own these coupons: " + "; ".join(c.name for c in owned) + ".")
    return " ".join(parts)
