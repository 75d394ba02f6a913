"""Task data model and verifier of the generated travel-planning suite (modelled on
DeepPlanning Travel Planning); the environment is
:mod:`hyperplan_bench.eval.treesearch.suites.travel`.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SLOTS: tuple[tuple[str, int, int], ...] = (  # name, start minute, latest end
    ("morning", 9 * 60, 12 * 60),
    ("lunch", 12 * 60, 13 * 60),
    ("afternoon", 14 * 60, 18 * 60),
    ("dinner", 18 * 60, 19 * 60 + 30),
)
MEALS = ("lunch", "dinner")


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def hours(opening: int, closing: int) -> str:
    """Opening hours as ``HH:MM-HH:MM``."""
    return f"{hhmm(opening)}-{hhmm(closing)}"


@dataclass(frozen=True)
class Transport:
    """One leg's train or flight; times in minutes after midnight, price in ¥."""

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
    """A hotel of the city; ``price`` per night in ¥."""

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
    """A sight: open ``open``-``close`` (minutes after midnight) except on weekday
    ``closed_on``; a visit takes ``duration`` minutes and a ticket costs ``price`` ¥."""

    aid: str
    name: str
    open: int
    close: int
    closed_on: int | None  # weekday index or None
    duration: int
    price: int

    def text(self) -> str:
        closed = f", closed {WEEKDAYS[self.closed_on]}s" if self.closed_on is not None else ""
        return (f"{self.aid} {self.name} open {hours(self.open, self.close)}{closed}, "
                f"visit {self.duration} min, ticket ¥{self.price}")

    def listing(self) -> str:
        return f"{self.aid} {self.name}, ticket ¥{self.price}"


@dataclass(frozen=True)
class Restaurant:
    """A restaurant serving ``cuisine``, open ``open``-``close`` (minutes after midnight),
    ``price`` ¥ a person."""

    rid: str
    name: str
    cuisine: str
    open: int
    close: int
    price: int

    def text(self) -> str:
        return (f"{self.rid} {self.name} ({self.cuisine}) open "
                f"{hours(self.open, self.close)}, ~¥{self.price}/person")

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


def evaluate(task: TravelTask, plan: dict[tuple[Any, ...], Any]) -> tuple[
        dict[str, float], dict[str, float]]:
    """Objective scores and metrics of a (possibly partial) plan: component -> choice id.
    The scores are ordered: cs objectives, ``ps.budget``, then the preferences in task order."""
    trans = {t.tid: t for t in task.transports}
    out = trans.get(plan.get(("out",), ""))
    back = trans.get(plan.get(("back",), ""))
    hotel = next((h for h in task.hotels if h.hid == plan.get(("hotel",))), None)
    sched = _scheduled(task, plan)
    sc = _commonsense_scores(task, plan, out, back, hotel, sched)
    rest = {r.rid: r for r in task.restaurants}
    cost = _plan_cost(task, rest, out, back, hotel, sched)
    sc["ps.budget"] = float(out is not None and back is not None and cost <= task.budget)
    for p in task.preferences:
        sc[f"ps.{p.kind}"] = _preference_score(p, rest, out, back, hotel, sched)
    return sc, _summary_metrics(task, sc, cost)


def _scheduled(task: TravelTask, plan: dict[tuple[Any, ...], Any]) -> list[tuple[int, str, str]]:
    """(day, slot, option) of every slot the plan fills (not undecided, not skipped), in day
    and slot order."""
    return [
        (d, s[0], plan[("slot", d, s[0])]) for d in range(task.days) for s in SLOTS
        if plan.get(("slot", d, s[0])) not in (None, "skip")
    ]


def _commonsense_scores(task: TravelTask, plan: dict[tuple[Any, ...], Any],
                        out: Transport | None, back: Transport | None, hotel: Hotel | None,
                        sched: list[tuple[int, str, str]]) -> dict[str, float]:
    """The ``cs.*`` scores (module doc), in objective order."""
    sc: dict[str, float] = {}
    sc["cs.transport"] = float(out is not None and back is not None)
    day0 = [_visit(task, s, o) for d, s, o in sched if d == 0]
    sc["cs.arrival"] = float(out is not None and all(out.arrive + 60 <= st for st, _ in day0))
    last = [_visit(task, s, o) for d, s, o in sched if d == task.days - 1]
    sc["cs.departure"] = float(back is not None and all(en + 60 <= back.depart
                                                         for _, en in last))
    sc["cs.hours"] = float(all(_open_for(task, d, s, o) for d, s, o in sched))
    sc["cs.overlap"] = float(all(_fits(task, s, o) for d, s, o in sched))
    sc["cs.meals"] = float(_meals_covered(task, plan, out, back))
    ids = [o for _, _, o in sched]
    sc["cs.repeat"] = float(len(ids) == len(set(ids)))
    sc["cs.sightseeing"] = float(all(
        any(d == day and s not in MEALS for d, s, _ in sched) for day in range(task.days)))
    if task.days > 1:
        sc["cs.hotel"] = float(hotel is not None)
    return sc


def _meals_covered(task: TravelTask, plan: dict[tuple[Any, ...], Any],
                   out: Transport | None, back: Transport | None) -> bool:
    """``cs.meals``: lunch and dinner are scheduled whenever the traveller is in town for them
    (arrival + 1 h <= meal start, meal end + 1 h <= return departure)."""
    for d in range(task.days):
        for meal in MEALS:
            _, start, end = _slot(meal)
            present = not (d == 0 and out is not None and out.arrive + 60 > start)
            present = present and not (
                d == task.days - 1 and back is not None and end + 60 > back.depart)
            if present and plan.get(("slot", d, meal)) in (None, "skip"):
                return False
    return True


def _plan_cost(task: TravelTask, rest: dict[str, Restaurant], out: Transport | None,
               back: Transport | None, hotel: Hotel | None,
               sched: list[tuple[int, str, str]]) -> int:
    """Total cost of the chosen transports, hotel nights, tickets and meals."""
    nights = task.days - 1
    cost = (out.price if out else 0) + (back.price if back else 0)
    cost += hotel.price * nights if hotel else 0
    for _, s, o in sched:
        cost += rest[o].price if s in MEALS else task.attraction(o).price
    return cost


def _preference_score(p: Preference, rest: dict[str, Restaurant], out: Transport | None,
                      back: Transport | None, hotel: Hotel | None,
                      sched: list[tuple[int, str, str]]) -> float:
    """The ``ps.<kind>`` score of preference ``p`` (module doc)."""
    if p.kind == "hotel_stars":
        return float(hotel is not None and hotel.stars >= int(p.value))
    if p.kind == "hotel_amenity":
        return float(hotel is not None and p.value in hotel.amenities)
    if p.kind == "must_visit":
        return float(p.value in [o for _, _, o in sched])
    if p.kind == "cuisine":
        return float(any(s in MEALS and rest[o].cuisine == p.value for _, s, o in sched))
    if p.kind == "mode":
        return float(out is not None and back is not None
                     and out.mode == p.value and back.mode == p.value)
    return float(out is not None and out.depart >= int(p.value))


def _summary_metrics(task: TravelTask, sc: dict[str, float], cost: int) -> dict[str, float]:
    """CS score, PS score (means in score order), their composite, and the task figures."""
    cs = [v for k, v in sc.items() if k.startswith("cs.")]
    ps = [v for k, v in sc.items() if k.startswith("ps.")]
    cs_score, ps_score = sum(cs) / len(cs), sum(ps) / len(ps)
    return {"cs_score": cs_score, "ps_score": ps_score,
            "composite": (cs_score + ps_score) / 2, "cost": float(cost),
            "budget": float(task.budget), "level": float(task.level)}
