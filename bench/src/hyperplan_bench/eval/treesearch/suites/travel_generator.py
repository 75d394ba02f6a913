"""Seeded generator of travel-planning tasks (:func:`generate_travel_task`); the task model is
:mod:`hyperplan_bench.eval.treesearch.suites.travel_task`.

Generation keeps a hidden gold itinerary (built first, feasible by construction and
self-checked) and surrounds it with realistic traps: cheaper transports that arrive late /
leave early / use the other mode / leave too early in the morning, cheaper hotels missing the
stars or amenity, pricier valid options that break the budget (budget = gold cost + a slack of
0-6 %), attractions closed on one weekday or open only in the afternoon, long visits that do
not fit a morning, restaurants open only for dinner.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from hyperplan_bench.eval.treesearch.suites.travel_task import (
    MEALS,
    SLOTS,
    WEEKDAYS,
    Attraction,
    Hotel,
    Preference,
    Restaurant,
    Transport,
    TravelTask,
    evaluate,
)

CITIES = ("Hangzhou", "Chengdu", "Xi'an", "Suzhou", "Guilin", "Xiamen", "Qingdao", "Kunming")
CUISINES = ("Sichuan", "Cantonese", "Hunan", "Shandong", "Jiangsu", "Zhejiang", "vegetarian",
            "seafood", "noodles", "hotpot")
AMENITIES = ("pool", "gym", "free breakfast", "parking", "spa", "airport shuttle")
ATTR_WORDS = ("Museum", "Temple", "Garden", "Lake Park", "Old Street", "Tower", "Gallery",
              "Zoo", "Pagoda", "Palace", "Market", "Mountain Trail", "Aquarium", "Bridge")
PREFIXES = ("West", "Golden", "Jade", "Silk", "Dragon", "Lotus", "Pearl", "Cloud", "Stone",
            "Bamboo", "Phoenix", "Red", "Azure", "Ancient")


def generate_travel_task(seed: int, level: int) -> TravelTask:
    """A seeded task (module doc). Same ``(seed, level)`` -> identical task."""
    if level not in (1, 2, 3):
        raise ValueError(f"travel level must be 1, 2 or 3, not {level}")
    for attempt in range(20):
        task = _generate(random.Random(f"travel:{seed}:{level}:{attempt}"), seed, level)
        plan = {tuple(g[:-1]): g[-1] for g in task.gold}
        scores, _ = evaluate(task, plan)
        if all(v == 1.0 for v in scores.values()):
            return task
    raise RuntimeError(f"travel generator failed for seed {seed} level {level}")


def _generate(rng: random.Random, seed: int, level: int) -> TravelTask:
    """One generation attempt: the gold itinerary with its traps around it, then the
    preferences, the budget and the query (:func:`generate_travel_task` self-checks it)."""
    days = level
    city = rng.choice(CITIES)
    weekday = rng.randrange(7)
    nid = _sequential_ids()
    names = rng.sample([f"{p} {w}" for p in PREFIXES for w in ATTR_WORDS], 4 * days + 8)
    pref_kinds = _preference_kinds(rng, days, level)
    mode = rng.choice(("train", "flight"))
    depart_after = rng.choice((5 * 60, 5 * 60 + 30, 6 * 60))
    g_out, g_back, transports = _transports(rng, nid, mode, depart_after)
    # the hotel preferences are drawn even for a day trip, which books no hotel
    min_stars = rng.choice((3, 4))
    amenity = rng.choice(AMENITIES)
    g_hotel, hotels = _hotels(rng, nid, days, min_stars, amenity)

    gold: list[tuple[Any, ...]] = [("out", g_out.tid), ("back", g_back.tid)]
    if g_hotel is not None:
        gold.append(("hotel", g_hotel.hid))
    cuisine = rng.choice(CUISINES)
    used_names = iter(names)
    attractions, restaurants, must_id = _gold_days(rng, nid, used_names, weekday, days, gold)
    restaurants = _serve_cuisine_at_one_gold_meal(rng, cuisine, gold, restaurants)
    attractions += _trap_attractions(rng, nid, used_names, weekday, days)
    restaurants += _trap_restaurants(rng, nid, days)
    rng.shuffle(attractions)
    rng.shuffle(restaurants)

    values: dict[str, str | int] = {
        "hotel_stars": min_stars, "hotel_amenity": amenity, "must_visit": must_id,
        "cuisine": cuisine, "mode": mode, "depart_after": depart_after,
    }
    prefs = [Preference(k, values[k]) for k in pref_kinds]
    task = TravelTask(seed, level, city, days, weekday, tuple(transports), tuple(hotels),
                      tuple(attractions), tuple(restaurants), tuple(prefs), 0, tuple(gold))
    task = replace(task, budget=_budget(rng, task))
    return replace(task, query=_query(task))


def _sequential_ids() -> Callable[[str], str]:
    """``nid(prefix)`` -> ``prefix`` + the next number of one counter shared by every kind."""
    counter = iter(range(1, 10_000))

    def nid(prefix: str) -> str:
        return f"{prefix}{next(counter):03d}"

    return nid


def _preference_kinds(rng: random.Random, days: int, level: int) -> list[str]:
    """The ``level + 1`` kinds of preference the traveller states (hotel ones need a night)."""
    kinds = ["hotel_stars", "hotel_amenity"] if days > 1 else []
    kinds += ["must_visit", "cuisine", "mode", "depart_after"]
    return rng.sample(kinds, min(len(kinds), level + 1))


def _transports(rng: random.Random, nid: Callable[[str], str], mode: str,
                depart_after: int) -> tuple[Transport, Transport, list[Transport]]:
    """The gold outbound and return transports, and all transports (gold and traps) shuffled."""
    other_mode = "flight" if mode == "train" else "train"
    # -- gold transports
    g_dep = depart_after + rng.choice((0, 15, 30))
    g_out = Transport(nid("T"), "out", mode, g_dep, g_dep + rng.randint(60, 90),
                      rng.randint(300, 700))
    g_back_dep = 20 * 60 + 30 + rng.choice((0, 30, 60, 90))
    g_back = Transport(nid("T"), "back", mode, g_back_dep, g_back_dep + rng.randint(60, 150),
                       rng.randint(300, 700))
    transports = [g_out, g_back]
    # traps: cheaper late arrival, cheaper other mode, cheaper too-early departure,
    # cheaper early return, pricier valid
    late = rng.randint(9 * 60, 11 * 60)
    transports.append(Transport(nid("T"), "out", mode, late - 90, late,
                                int(g_out.price * rng.uniform(0.6, 0.9))))
    dep = g_dep + rng.choice((0, 30))
    transports.append(Transport(nid("T"), "out", other_mode, dep, dep + 70,
                                int(g_out.price * rng.uniform(0.6, 0.9))))
    early = depart_after - rng.choice((30, 60, 90))
    transports.append(Transport(nid("T"), "out", mode, early, early + 80,
                                int(g_out.price * rng.uniform(0.7, 0.95))))
    transports.append(Transport(nid("T"), "out", mode, g_dep + 20, g_dep + 100,
                                int(g_out.price * rng.uniform(1.3, 1.8))))
    e_dep = rng.randint(16 * 60, 19 * 60)
    transports.append(Transport(nid("T"), "back", mode, e_dep, e_dep + 90,
                                int(g_back.price * rng.uniform(0.6, 0.9))))
    transports.append(Transport(nid("T"), "back", other_mode, g_back_dep, g_back_dep + 80,
                                int(g_back.price * rng.uniform(0.6, 0.9))))
    transports.append(Transport(nid("T"), "back", mode, g_back_dep + 30, g_back_dep + 120,
                                int(g_back.price * rng.uniform(1.3, 1.8))))
    rng.shuffle(transports)
    return g_out, g_back, transports


def _hotels(rng: random.Random, nid: Callable[[str], str], days: int, min_stars: int,
            amenity: str) -> tuple[Hotel | None, list[Hotel]]:
    """The gold hotel and all hotels (gold and traps) shuffled; none for a day trip."""
    hotels: list[Hotel] = []
    g_hotel: Hotel | None = None
    if days > 1:
        g_am = tuple(sorted({amenity, *rng.sample(AMENITIES, 2)}))
        g_hotel = Hotel(nid("H"), f"{rng.choice(PREFIXES)} Hotel", min_stars + rng.choice((0, 1)),
                        g_am, rng.randint(250, 600))
        hotels.append(g_hotel)
        no_am = tuple(sorted(a for a in rng.sample(AMENITIES, 3) if a != amenity))
        hotels.append(Hotel(nid("H"), f"{rng.choice(PREFIXES)} Inn", g_hotel.stars, no_am,
                            int(g_hotel.price * rng.uniform(0.6, 0.9))))
        hotels.append(Hotel(nid("H"), f"{rng.choice(PREFIXES)} Lodge", min_stars - 1, g_am,
                            int(g_hotel.price * rng.uniform(0.5, 0.85))))
        hotels.append(Hotel(nid("H"), f"{rng.choice(PREFIXES)} Grand", 5,
                            tuple(sorted({amenity, *rng.sample(AMENITIES, 3)})),
                            int(g_hotel.price * rng.uniform(1.5, 2.5))))
        for _ in range(rng.randint(0, 2)):
            hotels.append(Hotel(nid("H"), f"{rng.choice(PREFIXES)} Suites", rng.randint(2, 5),
                                tuple(sorted(rng.sample(AMENITIES, 2))), rng.randint(150, 900)))
        rng.shuffle(hotels)
    return g_hotel, hotels


def _gold_days(rng: random.Random, nid: Callable[[str], str], used_names: Iterator[str],
               weekday: int, days: int, gold: list[tuple[Any, ...]]
               ) -> tuple[list[Attraction], list[Restaurant], str]:
    """A gold attraction or restaurant for every slot of every day, appended to ``gold``;
    returns the attractions, the restaurants and the id of the must-visit attraction."""
    attractions: list[Attraction] = []
    restaurants: list[Restaurant] = []
    must_day = rng.randrange(days)
    must_slot = rng.choice(("morning", "afternoon"))
    must_id = ""
    for d in range(days):
        wd = (weekday + d) % 7
        for slot, start, latest in SLOTS:
            if slot in MEALS:
                r = _gold_restaurant(rng, nid, start, latest)
                restaurants.append(r)
                gold.append(("slot", d, slot, r.rid))
                continue
            a = _gold_attraction(rng, nid, used_names, slot, start, wd)
            attractions.append(a)
            gold.append(("slot", d, slot, a.aid))
            if d == must_day and slot == must_slot:
                must_id = a.aid
    return attractions, restaurants, must_id


def _gold_restaurant(rng: random.Random, nid: Callable[[str], str], start: int,
                     latest: int) -> Restaurant:
    """A restaurant open for the whole meal slot from ``start`` to ``latest``."""
    r_cuisine = rng.choice(CUISINES)
    return Restaurant(nid("R"), f"{rng.choice(PREFIXES)} {r_cuisine.title()} House",
                      r_cuisine, start - rng.choice((30, 60, 120)),
                      latest + rng.choice((30, 90, 150)), rng.randint(40, 180))


def _gold_attraction(rng: random.Random, nid: Callable[[str], str], used_names: Iterator[str],
                     slot: str, start: int, wd: int) -> Attraction:
    """An attraction that can be visited in ``slot`` (starting at ``start``) on weekday ``wd``."""
    dur = rng.choice((90, 120, 150, 180)) if slot == "morning" else rng.choice(
        (90, 120, 150, 180, 240))
    opening = start - rng.choice((0, 30, 60)) if slot == "morning" else rng.choice(
        (8 * 60, 9 * 60, 13 * 60, 13 * 60 + 30))
    closing = max(start + dur, rng.choice((16 * 60, 17 * 60, 18 * 60, 21 * 60)))
    closed_on = rng.choice([None, None, (wd + rng.randint(1, 6)) % 7])
    return Attraction(nid("A"), next(used_names), opening, closing, closed_on, dur,
                      rng.choice((0, 20, 40, 60, 80, 120)))


def _serve_cuisine_at_one_gold_meal(rng: random.Random, cuisine: str, gold: list[tuple[Any, ...]],
                                    restaurants: list[Restaurant]) -> list[Restaurant]:
    """``restaurants`` with one gold meal's restaurant turned into a ``cuisine`` restaurant."""
    # one gold meal has the requested cuisine
    meal_idx = [i for i, g in enumerate(gold) if g[0] == "slot" and g[2] in MEALS]
    pick = rng.choice(meal_idx)
    rid = gold[pick][3]
    return [replace(r, cuisine=cuisine, name=f"{r.name.split()[0]} {cuisine.title()} "
                    "House") if r.rid == rid else r for r in restaurants]


def _trap_attractions(rng: random.Random, nid: Callable[[str], str], used_names: Iterator[str],
                      weekday: int, days: int) -> list[Attraction]:
    """``days + 2`` attractions that cannot fill some slot of the trip."""
    attractions: list[Attraction] = []
    # trap attractions: closed on a trip weekday, afternoon-only, too long for a morning
    for _ in range(days + 2):
        kind = rng.randrange(3)
        wd = (weekday + rng.randrange(days)) % 7
        if kind == 0:
            a = Attraction(nid("A"), next(used_names), 8 * 60, 18 * 60, wd,
                           rng.choice((90, 120)), rng.choice((0, 20, 40)))
        elif kind == 1:
            a = Attraction(nid("A"), next(used_names), 13 * 60, 20 * 60, None,
                           rng.choice((90, 120)), rng.choice((0, 20, 40)))
        else:
            a = Attraction(nid("A"), next(used_names), 8 * 60, 20 * 60, None,
                           rng.choice((210, 240)), rng.choice((20, 40, 60)))
        attractions.append(a)
    return attractions


def _trap_restaurants(rng: random.Random, nid: Callable[[str], str],
                      days: int) -> list[Restaurant]:
    """``days + 2`` cheaper restaurants, about half of them open only for dinner."""
    restaurants: list[Restaurant] = []
    for _ in range(days + 2):
        c = rng.choice(CUISINES)
        dinner_only = rng.random() < 0.5
        restaurants.append(Restaurant(
            nid("R"), f"{rng.choice(PREFIXES)} {c.title()} Kitchen", c,
            17 * 60 if dinner_only else 11 * 60, 22 * 60 if dinner_only else 21 * 60,
            rng.randint(30, 120)))
    return restaurants


def _budget(rng: random.Random, task: TravelTask) -> int:
    """The gold itinerary's cost plus a slack of 0-6 %."""
    _, metrics = evaluate(task, {tuple(g[:-1]): g[-1] for g in task.gold})
    return int(metrics["cost"] * (1 + rng.uniform(0.0, 0.06)))


def _query(task: TravelTask) -> str:
    """The traveller's request: trip, bookings, stated preferences and budget."""
    days = task.days
    trip = "a day trip" if days == 1 else f"a {days}-day trip"
    text = [f"I'm planning {trip} to {task.city}, starting on a {WEEKDAYS[task.start_weekday]}."]
    text.append("Please book the outbound and return transport"
                + (", a hotel" if days > 1 else "")
                + ", and plan sightseeing and meals (lunch and dinner) for each day.")
    text += [p.text(task)[0].upper() + p.text(task)[1:] + "." for p in task.preferences]
    text.append(f"My total budget is ¥{task.budget}.")
    return " ".join(text)
