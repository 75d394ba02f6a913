"""The travel-planning environment (:class:`TravelEnv`) of the DeepPlanning-style travel suite.

The task data model and verifier (task, constraints and scores) live in
:mod:`hyperplan_bench.eval.treesearch.suites.travel_task`, the seeded generator in
:mod:`hyperplan_bench.eval.treesearch.suites.travel_generator`; this module re-exports their public
names.

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

from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan_bench.eval.treesearch.suites.base import StateEnv, decision_id

# the ``name as name`` imports re-export names this module defined before the split
from hyperplan_bench.eval.treesearch.suites.travel_generator import AMENITIES as AMENITIES
from hyperplan_bench.eval.treesearch.suites.travel_generator import ATTR_WORDS as ATTR_WORDS
from hyperplan_bench.eval.treesearch.suites.travel_generator import CITIES as CITIES
from hyperplan_bench.eval.treesearch.suites.travel_generator import CUISINES as CUISINES
from hyperplan_bench.eval.treesearch.suites.travel_generator import PREFIXES as PREFIXES
from hyperplan_bench.eval.treesearch.suites.travel_generator import (
    generate_travel_task as generate_travel_task,
)
from hyperplan_bench.eval.treesearch.suites.travel_task import (
    MEALS,
    Attraction,
    Hotel,
    Restaurant,
    TravelTask,
    _fits,
    _open_for,
    _slot,
    _visit,
    evaluate,
)
from hyperplan_bench.eval.treesearch.suites.travel_task import SLOTS as SLOTS
from hyperplan_bench.eval.treesearch.suites.travel_task import WEEKDAYS as WEEKDAYS
from hyperplan_bench.eval.treesearch.suites.travel_task import Preference as Preference
from hyperplan_bench.eval.treesearch.suites.travel_task import Transport as Transport
from hyperplan_bench.eval.treesearch.suites.travel_task import hhmm as hhmm

VIEW_ALLOWANCE_PER_DAY = 4  # horizon room for detail views (one per day slot)


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
        if p[0] in ("out", "back"):
            hard, soft = self._transport_factors(p[0], self._trans[p[1]])
        elif p[0] == "hotel":
            hard, soft = self._hotel_factors(self._hotels[p[1]])
        else:
            _, day, slot, opt = p
            used = {v for c, v in plan.items() if c[0] == "slot"}
            if opt == "skip":
                return 0.05 if slot in MEALS else 0.2
            if opt in used:
                return 0.0
            hard = self._slot_timing_factors(day, slot, opt, plan)
            soft = self._slot_appeal_factors(slot, opt)
        return _combine_factors(hard, soft)

    def _transport_factors(self, leg: str, t: Transport) -> tuple[list[float], list[float]]:
        """(hard, soft) factors of taking ``t`` as the ``leg`` ("out"/"back") transport:
        arrival/departure comfort, the depart-after and mode preferences, the price relative
        to the cheapest transport of the same leg."""
        hard: list[float] = []
        soft: list[float] = []
        if leg == "out":
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
        return hard, soft

    def _hotel_factors(self, h: Hotel) -> tuple[list[float], list[float]]:
        """(hard, soft) factors of booking ``h``: the stars preference, the amenity preference
        (0.8 while the amenities are not viewed), the price relative to the cheapest hotel."""
        hard: list[float] = []
        soft: list[float] = []
        stars, amen = self._pref("hotel_stars"), self._pref("hotel_amenity")
        if stars is not None:
            hard.append(1.0 if h.stars >= int(stars) else 0.2)
        if amen is not None:
            hard.append((1.0 if amen in h.amenities else 0.2) if h.hid in self.state.viewed
                        else 0.8)
        soft.append(min(x.price for x in self.task.hotels) / max(1, h.price))
        return hard, soft

    def _slot_timing_factors(self, day: int, slot: str, opt: str,
                             plan: dict[tuple[Any, ...], Any]) -> list[float]:
        """Hard factors of scheduling ``opt`` in ``slot`` of ``day``: opening hours and visit
        length (0.7 each while not viewed), then arrival on day 1 and departure on the last
        day against the transports already chosen."""
        hard: list[float] = []
        known = opt in self.state.viewed
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
        return hard

    def _slot_appeal_factors(self, slot: str, opt: str) -> list[float]:
        """Soft factors of scheduling ``opt`` in ``slot``: cuisine match and meal price for a
        restaurant, must-visit match and ticket price for an attraction."""
        soft: list[float] = []
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
        return soft

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
        return "\n".join(f"{k + 1}. {t}" for k, t in enumerate(self.state.trace))

    def gold_actions(self) -> list[Action]:
        """The hidden gold plan as actions (queries first, then every gold commit, finish)."""
        acts = [Action(f"query:{c}", ActionKind.INFO, ("query", c))
                for c in self.task.categories()]
        acts += [Action(decision_id(g), ActionKind.COMMIT, tuple(g))
                 for g in self.task.gold]
        acts.append(Action("finish", ActionKind.COMMIT, ("finish",)))
        return acts


def _combine_factors(hard: list[float], soft: list[float]) -> float:
    """The mean of the soft factors (1 if none) times every hard factor, in list order."""
    value = sum(soft) / len(soft) if soft else 1.0
    for h_ in hard:
        value *= h_
    return value
