"""Generated multi-day travel-planning tasks modelled on DeepPlanning Travel Planning.

A task is a ``days``-day trip (level 1: a day trip, level 2: 2 days, level 3: 3 days) to one
city: an outbound and a return transport (train or flight, with departure/arrival times), a
hotel for the ``days - 1`` nights (levels 2-3), and per day four slots with fixed start times:
``morning`` attraction (09:00, must end by 12:00), ``lunch`` (12:00-13:00), ``afternoon``
attraction (14:00, must end by 18:00) and ``dinner`` (18:00-19:30). Any slot may be skipped.

Constraints are scored as objective-level feedback, each rho in {0, 1}:

* commonsense (``cs.*``): ``transport`` both legs chosen; ``arrival`` the outbound arrives at
  least an hour before the first scheduled activity of day 1; ``departure`` the return leaves
  at least an hour after the last activity of the last day ends; ``hours`` every scheduled
  attraction/restaurant is open for the whole visit on that weekday; ``overlap`` no attraction
  runs into the next slot; ``meals`` lunch and dinner are scheduled whenever the traveller is in
  town for them (arrival + 1 h <= meal start, meal end + 1 h <= return departure);
  ``repeat`` no attraction or restaurant twice; ``sightseeing`` at least one attraction per day;
  ``hotel`` a hotel is booked (multi-day trips only);
* personalised (``ps.*``, stated in the query): ``budget`` (global: both legs chosen and the
  total cost of transport, hotel nights, tickets and meals within the budget) and, by level,
  2-4 of ``hotel_stars``, ``hotel_amenity``, ``must_visit``, ``cuisine`` (at least one meal of
  a cuisine), ``mode`` (both legs by train/flight), ``depart_after`` (outbound not before a
  time).

CS score = mean of the cs objectives, PS score = mean of the ps objectives, reward
``R = composite = (CS + PS) / 2`` (DeepPlanning's Comp Score), ``success`` = every objective
satisfied. ``metrics`` carries ``cs_score``, ``ps_score``, ``composite``, ``cost``, ``budget``
and ``level``.

Generation keeps a hidden gold itinerary (built first, feasible by construction and
self-checked) and surrounds it with realistic traps: cheaper transports that arrive late /
leave early / use the other mode / leave too early in the morning, cheaper hotels missing the
stars or amenity, pricier valid options that break the budget (budget = gold cost + a slack of
0-6 %), attractions closed on one weekday or open only in the afternoon, long visits that do
not fit a morning, restaurants open only for dinner.

Actions: info ``("query", category)`` for ``transport``, ``hotels``, ``attractions`` and
``restaurants`` lists the category (transport: full timetable and prices; hotels: name, stars,
price; attractions: name, ticket; restaurants: name, cuisine, price) and ``("view", id)``
reveals a hotel's amenities or an attraction's/restaurant's opening hours, closing weekday and
visit length. A component can only be committed after its category was queried (viewing is
optional, committing blind is allowed). Commit ``("out", tid)``, ``("back", tid)``,
``("hotel", hid)``, ``("slot", day, slot, option_id | "skip")`` in any order, and
``("finish",)`` once every component is decided. Horizon = components + categories + 2 +
4 views per day + 1 (room to view one candidate per slot and the hotel). Identities are the
payloads joined by ":" (``decision_id``, also the action keys: they name the plan component,
not the tree position); every commit except
``finish`` is recorded.

:meth:`TravelEnv.hint` uses the query, the listings and only the details already viewed: hard
factors multiply (known violation of opening hours / slot length / arrival / departure /
preferred mode / stars / amenity: 0.2; not yet revealed: 0.7; satisfied: 1) and soft factors
average (arrival/departure comfort, must-visit and cuisine match, price relative to the
cheapest option). A view is worth 0.4-0.9 while fewer unused viewed candidates are known than
open slots, and 0.3 times that afterwards. It cannot see the budget interplay or whether a
blind option is open, so search and cross-trajectory evidence still matter.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan.search.suites.base import StateEnv, decision_id

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SLOTS: tuple[tuple[str, int, int], ...] = (  # name, start minute, latest end
    ("morning", 9 * 60, 12 * 60),
    ("lunch", 12 * 60, 13 * 60),
    ("afternoon", 14 * 60, 18 * 60),
    ("dinner", 18 * 60, 19 * 60 + 30),
)
MEALS = ("lunch", "dinner")
VIEW_ALLOWANCE_PER_DAY = 4  # horizon room for detail views (one per day slot)
CITIES = ("Hangzhou", "Chengdu", "Xi'an", "Suzhou", "Guilin", "Xiamen", "Qingdao", "Kunming")
CUISINES = ("Sichuan", "Cantonese", "Hunan", "Shandong", "Jiangsu", "Zhejiang", "vegetarian",
            "seafood", "noodles", "hotpot")
AMENITIES = ("pool", "gym", "free breakfast", "parking", "spa", "airport shuttle")
ATTR_WORDS = ("Museum", "Temple", "Garden", "Lake Park", "Old Street", "Tower", "Gallery",
              "Zoo", "Pagoda", "Palace", "Market", "Mountain Trail", "Aquarium", "Bridge")
PREFIXES = ("West", "Golden", "Jade", "Silk", "Dragon", "Lotus", "Pearl", "Cloud", "Stone",
            "Bamboo", "Phoenix", "Red", "Azure", "Ancient")


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


@dataclass(frozen=True)
class Transport:
    tid: str
    leg: str  # "out" or "back"
    mode: str  # "train" or "flight"
    depart: int
    arrive: int
    price: int

    def text(self) -> str:
        return (f"{self.tid} {self.mode} dep {hhmm(self.depart)} arr {hhmm(self.arrive)} "
                f"¥{self.price}")


@dataclass(frozen=True)
class Hotel:
    hid: str
    name: str
    stars: int
    amenities: tuple[str, ...]
    price: int  # per night

    def text(self) -> str:
        return (f"{self.hid} {self.name} {self.stars}★ [{', '.join(self.amenities)}] "
                f"¥{self.price}/night")

    def listing(self) -> str:
        return f"{self.hid} {self.name} {self.stars}★ ¥{self.price}/night"


@dataclass(frozen=True)
class Attraction:
    aid: str
    name: str
    open: int
    close: int
    closed_on: int | None  # weekday index or None
    duration: int
    price: int

    def text(self) -> str:
        closed = f", closed {WEEKDAYS[self.closed_on]}s" if self.closed_on is not None else ""
        return (f"{self.aid} {self.name} open {hhmm(self.open)}-{hhmm(self.close)}{closed}, "
                f"visit {self.duration} min, ticket ¥{self.price}")

    def listing(self) -> str:
        return f"{self.aid} {self.name}, ticket ¥{self.price}"


@dataclass(frozen=True)
class Restaurant:
    rid: str
    name: str
    cuisine: str
    open: int
    close: int
    price: int

    def text(self) -> str:
        return (f"{self.rid} {self.name} ({self.cuisine}) open {hhmm(self.open)}-"
                f"{hhmm(self.close)}, ~¥{self.price}/person")

    def listing(self) -> str:
        return f"{self.rid} {self.name} ({self.cuisine}), ~¥{self.price}/person"


@dataclass(frozen=True)
class Preference:
    kind: str  # hotel_stars | hotel_amenity | must_visit | cuisine | mode | depart_after
    value: str | int

    def text(self, task: TravelTask) -> str:
        k, v = self.kind, self.value
        if k == "hotel_stars":
            return f"the hotel must have at least {v} stars"
        if k == "hotel_amenity":
            return f"the hotel must offer {v}"
        if k == "must_visit":
            return f"I must visit {task.attraction(str(v)).name}"
        if k == "cuisine":
            return f"I want at least one {v} meal"
        if k == "mode":
            return f"I want to travel both ways by {v}"
        assert isinstance(v, int)
        return f"I can't leave home before {hhmm(v)}"


@dataclass(frozen=True)
class TravelTask:
    seed: int
    level: int
    city: str
    days: int
    start_weekday: int
    transports: tuple[Transport, ...]
    hotels: tuple[Hotel, ...]
    attractions: tuple[Attraction, ...]
    restaurants: tuple[Restaurant, ...]
    preferences: tuple[Preference, ...]
    budget: int
    gold: tuple[tuple[Any, ...], ...]  # hidden gold plan: commit payloads
    query: str = ""

    def attraction(self, aid: str) -> Attraction:
        return next(a for a in self.attractions if a.aid == aid)

    def categories(self) -> tuple[str, ...]:
        cats = ("transport", "hotels", "attractions", "restaurants")
        return cats if self.days > 1 else ("transport", "attractions", "restaurants")

    def components(self) -> tuple[tuple[Any, ...], ...]:
        comps: list[tuple[Any, ...]] = [("out",), ("back",)]
        if self.days > 1:
            comps.append(("hotel",))
        comps += [("slot", d, s[0]) for d in range(self.days) for s in SLOTS]
        return tuple(comps)

    def spec(self) -> dict[str, Any]:
        return {
            "suite": "travel", "seed": self.seed, "level": self.level, "city": self.city,
            "days": self.days, "start_weekday": self.start_weekday,
            "transports": [vars(t) for t in self.transports],
            "hotels": [{**vars(h), "amenities": list(h.amenities)} for h in self.hotels],
            "attractions": [vars(a) for a in self.attractions],
            "restaurants": [vars(r) for r in self.restaurants],
            "preferences": [[p.kind, p.value] for p in self.preferences],
            "budget": self.budget, "gold": [list(g) for g in self.gold], "query": self.query,
        }


# ---------------------------------------------------------------- evaluation helpers


def _slot(name: str) -> tuple[str, int, int]:
    return next(s for s in SLOTS if s[0] == name)


def _visit(task: TravelTask, slot: str, option: str) -> tuple[int, int]:
    """(start, end) minutes of a scheduled option in ``slot``."""
    _, start, latest = _slot(slot)
    if slot in MEALS:
        return start, latest
    return start, start + task.attraction(option).duration


def _open_for(task: TravelTask, day: int, slot: str, option: str) -> bool:
    start, end = _visit(task, slot, option)
    weekday = (task.start_weekday + day) % 7
    if slot in MEALS:
        r = next(x for x in task.restaurants if x.rid == option)
        return r.open <= start and end <= r.close
    a = task.attraction(option)
    return a.closed_on != weekday and a.open <= start and end <= a.close


def _fits(task: TravelTask, slot: str, option: str) -> bool:
    if slot in MEALS:
        return True
    _, _, latest = _slot(slot)
    return _visit(task, slot, option)[1] <= latest


@dataclass(frozen=True)
class TravelState:
    queried: frozenset[str] = frozenset()
    viewed: frozenset[str] = frozenset()
    plan: tuple[tuple[tuple[Any, ...], Any], ...] = ()  # (component, choice) in commit order
    finished: bool = False
    steps: int = 0
    trace: tuple[str, ...] = ()

    def get(self, comp: tuple[Any, ...]) -> Any:
        for c, v in self.plan:
            if c == comp:
                return v
        return None


def evaluate(task: TravelTask, plan: dict[tuple[Any, ...], Any]) -> tuple[
        dict[str, float], dict[str, float]]:
    """Objective scores and metrics of a (possibly partial) plan: component -> choice id."""
    trans = {t.tid: t for t in task.transports}
    out = trans.get(plan.get(("out",), ""))
    back = trans.get(plan.get(("back",), ""))
    hotel = next((h for h in task.hotels if h.hid == plan.get(("hotel",))), None)
    sched: list[tuple[int, str, str]] = [
        (d, s[0], plan[("slot", d, s[0])]) for d in range(task.days) for s in SLOTS
        if plan.get(("slot", d, s[0])) not in (None, "skip")
    ]
    sc: dict[str, float] = {}
    sc["cs.transport"] = float(out is not None and back is not None)
    day0 = [_visit(task, s, o) for d, s, o in sched if d == 0]
    sc["cs.arrival"] = float(out is not None and all(out.arrive + 60 <= st for st, _ in day0))
    last = [_visit(task, s, o) for d, s, o in sched if d == task.days - 1]
    sc["cs.departure"] = float(back is not None and all(en + 60 <= back.depart
                                                         for _, en in last))
    sc["cs.hours"] = float(all(_open_for(task, d, s, o) for d, s, o in sched))
    sc["cs.overlap"] = float(all(_fits(task, s, o) for d, s, o in sched))
    meals_ok = True
    for d in range(task.days):
        for meal in MEALS:
            _, start, end = _slot(meal)
            present = not (d == 0 and out is not None and out.arrive + 60 > start)
            present = present and not (
                d == task.days - 1 and back is not None and end + 60 > back.depart)
            if present and plan.get(("slot", d, meal)) in (None, "skip"):
                meals_ok = False
    sc["cs.meals"] = float(meals_ok)
    ids = [o for _, _, o in sched]
    sc["cs.repeat"] = float(len(ids) == len(set(ids)))
    sc["cs.sightseeing"] = float(all(
        any(d == day and s not in MEALS for d, s, _ in sched) for day in range(task.days)))
    if task.days > 1:
        sc["cs.hotel"] = float(hotel is not None)
    nights = task.days - 1
    rest = {r.rid: r for r in task.restaurants}
    cost = (out.price if out else 0) + (back.price if back else 0)
    cost += hotel.price * nights if hotel else 0
    for _, s, o in sched:
        cost += rest[o].price if s in MEALS else task.attraction(o).price
    sc["ps.budget"] = float(out is not None and back is not None and cost <= task.budget)
    for p in task.preferences:
        key = f"ps.{p.kind}"
        if p.kind == "hotel_stars":
            sc[key] = float(hotel is not None and hotel.stars >= int(p.value))
        elif p.kind == "hotel_amenity":
            sc[key] = float(hotel is not None and p.value in hotel.amenities)
        elif p.kind == "must_visit":
            sc[key] = float(p.value in ids)
        elif p.kind == "cuisine":
            sc[key] = float(any(s in MEALS and rest[o].cuisine == p.value for _, s, o in sched))
        elif p.kind == "mode":
            sc[key] = float(out is not None and back is not None
                            and out.mode == p.value and back.mode == p.value)
        else:
            sc[key] = float(out is not None and out.depart >= int(p.value))
    cs = [v for k, v in sc.items() if k.startswith("cs.")]
    ps = [v for k, v in sc.items() if k.startswith("ps.")]
    cs_score, ps_score = sum(cs) / len(cs), sum(ps) / len(ps)
    metrics = {"cs_score": cs_score, "ps_score": ps_score,
               "composite": (cs_score + ps_score) / 2, "cost": float(cost),
               "budget": float(task.budget), "level": float(task.level)}
    return sc, metrics


# ---------------------------------------------------------------- generator


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
    days = level
    city = rng.choice(CITIES)
    weekday = rng.randrange(7)
    counter = iter(range(1, 10_000))

    def nid(prefix: str) -> str:
        return f"{prefix}{next(counter):03d}"

    names = rng.sample([f"{p} {w}" for p in PREFIXES for w in ATTR_WORDS], 4 * days + 8)
    kinds = ["hotel_stars", "hotel_amenity"] if days > 1 else []
    kinds += ["must_visit", "cuisine", "mode", "depart_after"]
    pref_kinds = rng.sample(kinds, min(len(kinds), level + 1))
    mode = rng.choice(("train", "flight"))
    other_mode = "flight" if mode == "train" else "train"
    depart_after = rng.choice((5 * 60, 5 * 60 + 30, 6 * 60))

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

    # -- hotels
    hotels: list[Hotel] = []
    g_hotel: Hotel | None = None
    min_stars = rng.choice((3, 4))
    amenity = rng.choice(AMENITIES)
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

    # -- gold attractions and restaurants
    gold: list[tuple[Any, ...]] = [("out", g_out.tid), ("back", g_back.tid)]
    if g_hotel is not None:
        gold.append(("hotel", g_hotel.hid))
    attractions: list[Attraction] = []
    restaurants: list[Restaurant] = []
    cuisine = rng.choice(CUISINES)
    used_names = iter(names)
    must_day = rng.randrange(days)
    must_slot = rng.choice(("morning", "afternoon"))
    must_id = ""
    for d in range(days):
        wd = (weekday + d) % 7
        for slot, start, latest in SLOTS:
            if slot in MEALS:
                r_cuisine = rng.choice(CUISINES)
                r = Restaurant(nid("R"), f"{rng.choice(PREFIXES)} {r_cuisine.title()} House",
                               r_cuisine, start - rng.choice((30, 60, 120)),
                               latest + rng.choice((30, 90, 150)), rng.randint(40, 180))
                restaurants.append(r)
                gold.append(("slot", d, slot, r.rid))
                continue
            dur = rng.choice((90, 120, 150, 180)) if slot == "morning" else rng.choice(
                (90, 120, 150, 180, 240))
            opening = start - rng.choice((0, 30, 60)) if slot == "morning" else rng.choice(
                (8 * 60, 9 * 60, 13 * 60, 13 * 60 + 30))
            closing = max(start + dur, rng.choice((16 * 60, 17 * 60, 18 * 60, 21 * 60)))
            closed_on = rng.choice([None, None, (wd + rng.randint(1, 6)) % 7])
            a = Attraction(nid("A"), next(used_names), opening, closing, closed_on, dur,
                           rng.choice((0, 20, 40, 60, 80, 120)))
            attractions.append(a)
            gold.append(("slot", d, slot, a.aid))
            if d == must_day and slot == must_slot:
                must_id = a.aid
    # one gold meal has the requested cuisine
    meal_idx = [i for i, g in enumerate(gold) if g[0] == "slot" and g[2] in MEALS]
    pick = rng.choice(meal_idx)
    rid = gold[pick][3]
    restaurants = [replace(r, cuisine=cuisine, name=f"{r.name.split()[0]} {cuisine.title()} "
                           "House") if r.rid == rid else r for r in restaurants]
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
    for _ in range(days + 2):
        c = rng.choice(CUISINES)
        dinner_only = rng.random() < 0.5
        restaurants.append(Restaurant(
            nid("R"), f"{rng.choice(PREFIXES)} {c.title()} Kitchen", c,
            17 * 60 if dinner_only else 11 * 60, 22 * 60 if dinner_only else 21 * 60,
            rng.randint(30, 120)))
    rng.shuffle(attractions)
    rng.shuffle(restaurants)

    prefs: list[Preference] = []
    for k in pref_kinds:
        values: dict[str, str | int] = {
            "hotel_stars": min_stars, "hotel_amenity": amenity, "must_visit": must_id,
            "cuisine": cuisine, "mode": mode, "depart_after": depart_after,
        }
        value = values[k]
        prefs.append(Preference(k, value))

    task = TravelTask(seed, level, city, days, weekday, tuple(transports), tuple(hotels),
                      tuple(attractions), tuple(restaurants), tuple(prefs), 0, tuple(gold))
    _, metrics = evaluate(task, {tuple(g[:-1]): g[-1] for g in gold})
    budget = int(metrics["cost"] * (1 + rng.uniform(0.0, 0.06)))
    task = replace(task, budget=budget)
    trip = "a day trip" if days == 1 else f"a {days}-day trip"
    text = [f"I'm planning {trip} to {city}, starting on a {WEEKDAYS[weekday]}."]
    text.append("Please book the outbound and return transport"
                + (", a hotel" if days > 1 else "")
                + ", and plan sightseeing and meals (lunch and dinner) for each day.")
    text += [p.text(task)[0].upper() + p.text(task)[1:] + "." for p in prefs]
    text.append(f"My total budget is ¥{budget}.")
    return replace(task, query=" ".join(text))


# ---------------------------------------------------------------- environment


class TravelEnv(StateEnv):
    """One travel task as a :class:`~hyperplan.search.env.SearchEnv` (module doc)."""

    state: TravelState

    def __init__(self, task: TravelTask) -> None:
        self.task = task
        self._trans = {t.tid: t for t in task.transports}
        self._hotels = {h.hid: h for h in task.hotels}
        self._attr = {a.aid: a for a in task.attractions}
        self._rest = {r.rid: r for r in task.restaurants}
        self._components = task.components()
        scores, _ = evaluate(task, {})
        descriptions = {p.kind: p.text(task) for p in task.preferences}
        descriptions["budget"] = f"total cost <= ¥{task.budget}"
        self._objectives = tuple(
            Objective(k, descriptions.get(k[3:], k[3:]) if k.startswith("ps.") else k[3:],
                      "global" if k in ("ps.budget", "cs.repeat") else "local")
            for k in scores
        )
        self._horizon = (len(self._components) + len(task.categories()) + 2
                         + VIEW_ALLOWANCE_PER_DAY * task.days + 1)
        self._start(TravelState())

    @property
    def query(self) -> str:
        return self.task.query

    def spec(self) -> dict[str, Any]:
        return self.task.spec()

    def _plan(self) -> dict[tuple[Any, ...], Any]:
        return dict(self.state.plan)

    def _compute_decisions(self) -> list[Action]:
        if self.is_terminal():
            return []
        st = self.state
        out = [Action(f"query:{c}", ActionKind.INFO, ("query", c), f"query {c}")
               for c in self.task.categories() if c not in st.queried]
        for cat, ids in (("hotels", [h.hid for h in self.task.hotels]),
                         ("attractions", [a.aid for a in self.task.attractions]),
                         ("restaurants", [r.rid for r in self.task.restaurants])):
            if cat in st.queried:
                out += [Action(f"view:{i}", ActionKind.INFO, ("view", i), f"view {i} details")
                        for i in ids if i not in st.viewed]
        plan = self._plan()
        for comp in self._components:
            if comp in plan:
                continue
            for payload, label in self._options(comp):
                out.append(Action(decision_id(payload), ActionKind.COMMIT,
                                  payload, label))
        if len(plan) == len(self._components):
            out.append(Action("finish", ActionKind.COMMIT, ("finish",), "finish the plan"))
        return out

    def _options(self, comp: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
        q = self.state.queried
        if comp[0] in ("out", "back"):
            if "transport" not in q:
                return []
            return [((comp[0], t.tid), f"{comp[0]}: {t.text()}")
                    for t in self.task.transports if t.leg == comp[0]]
        if comp[0] == "hotel":
            if "hotels" not in q:
                return []
            return [(("hotel", h.hid), f"hotel: {self._show(h.hid)}") for h in self.task.hotels]
        _, day, slot = comp
        cat = "restaurants" if slot in MEALS else "attractions"
        if cat not in q:
            return []
        opts: list[tuple[tuple[Any, ...], str]] = [
            (("slot", day, slot, "skip"), f"day {day + 1} {slot}: skip")]
        if slot in MEALS:
            opts += [(("slot", day, slot, r.rid), f"day {day + 1} {slot}: {self._show(r.rid)}")
                     for r in self.task.restaurants]
        else:
            opts += [(("slot", day, slot, a.aid), f"day {day + 1} {slot}: {self._show(a.aid)}")
                     for a in self.task.attractions]
        return opts

    def _entity(self, i: str) -> Hotel | Attraction | Restaurant:
        return self._hotels.get(i) or self._attr.get(i) or self._rest[i]

    def _show(self, i: str) -> str:
        """What the history has revealed about hotel/attraction/restaurant ``i``."""
        e = self._entity(i)
        return e.text() if i in self.state.viewed else e.listing()

    def _apply(self, st: TravelState, action: Action) -> tuple[TravelState, str]:
        p = action.payload
        if p[0] == "query":
            cat = p[1]
            rows: list[str]
            if cat == "transport":
                rows = [f"{t.leg}: {t.text()}" for t in self.task.transports]
            elif cat == "hotels":
                rows = [h.listing() for h in self.task.hotels]
            elif cat == "attractions":
                rows = [a.listing() for a in self.task.attractions]
            else:
                rows = [r.listing() for r in self.task.restaurants]
            obs = f"{cat}: " + "; ".join(rows)
            st = replace(st, queried=st.queried | {cat})
        elif p[0] == "view":
            obs = self._entity(p[1]).text()
            st = replace(st, viewed=st.viewed | {p[1]})
        elif p[0] == "finish":
            obs = "plan finished"
            st = replace(st, finished=True)
        else:
            comp, choice = tuple(p[:-1]), p[-1]
            obs = f"decided {action.label or action.key}"
            st = replace(st, plan=(*st.plan, (comp, choice)))
        return st, obs

    def recorded(self, action: Action) -> bool:
        return action.kind is ActionKind.COMMIT and action.payload[0] != "finish"

    def verify(self) -> Verdict:
        plan = self._plan()
        scores, metrics = evaluate(self.task, plan)
        ident: dict[tuple[Any, ...], Hashable] = {c: decision_id((*c, v)) for c, v in plan.items()}
        sl = [(c, i) for c, i in ident.items() if c[0] == "slot"]
        last_day = self.task.days - 1
        slots: list[Hashable] = [i for _, i in sl]
        day0: list[Hashable] = [i for c, i in sl if c[1] == 0]
        lastd: list[Hashable] = [i for c, i in sl if c[1] == last_day]
        meals: list[Hashable] = [i for c, i in sl if c[2] in MEALS]
        sights: list[Hashable] = [i for c, i in sl if c[2] not in MEALS]
        outs: list[Hashable] = [ident[c] for c in (("out",),) if c in ident]
        backs: list[Hashable] = [ident[c] for c in (("back",),) if c in ident]
        hotel: list[Hashable] = [ident[c] for c in (("hotel",),) if c in ident]
        about: dict[str, list[Hashable]] = {
            "cs.transport": [*outs, *backs], "cs.arrival": [*outs, *day0],
            "cs.departure": [*backs, *lastd], "cs.hours": slots, "cs.overlap": sights,
            "cs.meals": [*outs, *backs, *meals], "cs.repeat": slots,
            "cs.sightseeing": sights, "cs.hotel": hotel, "ps.budget": list(ident.values()),
            "ps.hotel_stars": hotel, "ps.hotel_amenity": hotel, "ps.must_visit": sights,
            "ps.cuisine": meals, "ps.mode": [*outs, *backs], "ps.depart_after": outs,
        }
        success = all(v == 1.0 for v in scores.values())
        return Verdict(
            reward=metrics["composite"], success=success, objective_scores=scores,
            objective_decisions={k: frozenset(about[k]) for k in scores},
            metrics=metrics,
        )

    # -- guidance
    def _pref(self, kind: str) -> str | int | None:
        for p in self.task.preferences:
            if p.kind == kind:
                return p.value
        return None

    def hint(self, action: Action) -> float:
        p = action.payload
        st = self.state
        plan = self._plan()
        if p[0] == "query":
            return 0.9 if p[1] not in st.queried else 0.0
        if p[0] == "finish":
            return 1.0
        if p[0] == "view":
            return self._view_hint(p[1], plan)
        # hard factors multiply (a known violation: 0.2, unknown: 0.7-0.8), soft ones average
        hard: list[float] = []
        soft: list[float] = []
        if p[0] in ("out", "back"):
            t = self._trans[p[1]]
            if p[0] == "out":
                soft.append(1.0 if t.arrive + 60 <= 9 * 60 else
                            0.5 if t.arrive + 60 <= 12 * 60 else 0.2)
                after = self._pref("depart_after")
                if after is not None:
                    hard.append(1.0 if t.depart >= int(after) else 0.2)
            else:
                soft.append(1.0 if t.depart >= 20 * 60 + 30 else
                            0.5 if t.depart >= 19 * 60 else 0.2)
            mode = self._pref("mode")
            if mode is not None:
                hard.append(1.0 if t.mode == mode else 0.2)
            same = [x.price for x in self.task.transports if x.leg == t.leg]
            soft.append(min(same) / max(1, t.price))
        elif p[0] == "hotel":
            h = self._hotels[p[1]]
            stars, amen = self._pref("hotel_stars"), self._pref("hotel_amenity")
            if stars is not None:
                hard.append(1.0 if h.stars >= int(stars) else 0.2)
            if amen is not None:
                hard.append((1.0 if amen in h.amenities else 0.2) if h.hid in st.viewed
                            else 0.8)
            soft.append(min(x.price for x in self.task.hotels) / max(1, h.price))
        else:
            _, day, slot, opt = p
            used = {v for c, v in plan.items() if c[0] == "slot"}
            if opt == "skip":
                return 0.05 if slot in MEALS else 0.2
            if opt in used:
                return 0.0
            known = opt in st.viewed
            if known:
                hard.append(1.0 if _open_for(self.task, day, slot, opt) else 0.2)
                hard.append(1.0 if _fits(self.task, slot, opt) else 0.2)
            else:  # opening hours and visit length not revealed yet
                hard += [0.7, 0.7]
            start, end = _visit(self.task, slot, opt) if known else (
                _slot(slot)[1], _slot(slot)[2])
            out = self._trans.get(plan.get(("out",), ""))
            if day == 0 and out is not None:
                hard.append(1.0 if out.arrive + 60 <= start else 0.2)
            back = self._trans.get(plan.get(("back",), ""))
            if day == self.task.days - 1 and back is not None:
                hard.append(1.0 if end + 60 <= back.depart else 0.2)
            if slot in MEALS:
                cuisine = self._pref("cuisine")
                if cuisine is not None:
                    soft.append(1.0 if self._rest[opt].cuisine == cuisine else 0.6)
                soft.append(min(40, self._rest[opt].price) / max(1, self._rest[opt].price))
            else:
                must = self._pref("must_visit")
                if must is not None:
                    soft.append(1.0 if opt == must else 0.6)
                soft.append(1.0 - min(1.0, self._attr[opt].price / 200))
        value = sum(soft) / len(soft) if soft else 1.0
        for h_ in hard:
            value *= h_
        return value

    def _view_hint(self, i: str, plan: dict[tuple[Any, ...], Any]) -> float:
        """Viewing pays while fewer unused viewed candidates are known than open slots."""
        if i in {v for c, v in plan.items() if c[0] in ("slot", "hotel")}:
            return 0.1
        viewed = self.state.viewed
        used = {v for c, v in plan.items()}
        if i in self._hotels:
            if ("hotel",) in plan:
                return 0.1
            stars = self._pref("hotel_stars")
            base = 0.7 if stars is None or self._hotels[i].stars >= int(stars) else 0.2
            return base * (0.3 if any(h in viewed for h in self._hotels) else 1.0)
        meal = i in self._rest
        pool = self._rest if meal else self._attr
        open_slots = sum(1 for c in self._components if c[0] == "slot" and c not in plan
                         and (c[2] in MEALS) == meal)
        known = sum(1 for x in pool if x in viewed and x not in used)
        if meal:
            base = 0.8 if self._pref("cuisine") == self._rest[i].cuisine else 0.4
        else:
            base = 0.9 if self._pref("must_visit") == i else 0.5
        return base * (0.3 if known >= open_slots else 1.0)

    def describe(self) -> str:
        lines = [f"Query: {self.task.query}"]
        lines += [f"{k + 1}. {t}" for k, t in enumerate(self.state.trace)]
        return "\n".join(lines)

    def gold_actions(self) -> list[Action]:
        """The hidden gold plan as actions (queries first, then every gold commit, finish)."""
        acts = [Action(f"query:{c}", ActionKind.INFO, ("query", c))
                for c in self.task.categories()]
        acts += [Action(decision_id(g), ActionKind.COMMIT, tuple(g))
                 for g in self.task.gold]
        acts.append(Action("finish", ActionKind.COMMIT, ("finish",)))
        return acts
