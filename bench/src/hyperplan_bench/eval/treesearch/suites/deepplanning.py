"""Run the real DeepPlanning Shopping Planning data as search environments.

DeepPlanning (Qwen-Agent ``benchmark/deepplanning/shoppingplanning``) ships its queries in the
repository and its per-case databases on HuggingFace (``Qwen/DeepPlanning``,
``database_zip/database_level{1,2,3}.tar.gz``). After downloading and extracting them, point
:func:`load_deepplanning_shopping` at a directory laid out like this::

    <root>/
      level_1_query_meta.json          # or shopping_level_1_query_meta.json
      database_level1/                 # or database/ (or pass database_dir=)
        case_1/                        # one directory per meta "id": case_<id>
          products.jsonl               # one product JSON object per line
          user_info.json               # the user's coupons / VIP flag / address
          validation_cases.json        # ground truth used by the benchmark's evaluator

Fields read, and what is assumed:

* ``level_L_query_meta.json``: a JSON list of ``{"id": str, "query": str}`` (the real files
  have exactly these two fields).
* ``products.jsonl``: ``product_id`` (required) and ``price`` (required, number) are used by
  the cart arithmetic; ``brand`` groups the products for the brand-search info action (the
  benchmark's ``filter_by_brand``); ``name``, ``brand``, ``color``, ``size`` feed the listing
  and the hint. Every other field (``rating``, ``sales_volume``, ``stock_quantity``,
  ``shipping_info``, ``applicable_coupons``, ...) is shown verbatim by the view action and not
  interpreted. These names follow the benchmark's tool code; the database itself is not
  available here, so they are assumptions checked only against the hand-made test file.
* ``user_info.json``: ``coupons`` (``{coupon name: quantity owned}``) and ``is_vip`` (VIP
  coupons need it). Coupon names carry their terms, ``"...: ¥30 off every ¥300"``; stacking
  follows the benchmark's cart rule (sum of threshold x quantity over the used coupons must not
  exceed the cart's base total).
* ``validation_cases.json``: ``ground_truth_products`` (list of ``{"product_id", "name"}``) and
  ``ground_truth_coupons`` (``{coupon name: quantity}``).

Environment (:class:`DeepPlanningShoppingEnv`): info ``("brand", b)`` lists a brand's products
(id, name, brand, price) and ``("view", pid)`` shows a product's full record; commit
``("add", pid)`` puts a listed product in the cart (at most as many products as the ground
truth has), ``("coupon", name, k)`` uses the k-th copy of an owned coupon when the cart total
allows it, and ``("finish",)``. Horizon ``4 * n_products + min(10, coupon copies owned) + 2``.

Verifier = the benchmark's evaluator: one objective per ground-truth product (``gt:<pid>``,
1 when it is in the cart) and per ground-truth coupon (``coupon:<name>``, 1 when used with the
exact quantity); reward = matched / expected (the benchmark's per-case score), success = all
matched (its case score), ``metrics["match_score"]`` = matched products / expected products.
The benchmark's evaluator does not check the budget separately (the ground truth encodes it),
so neither does this adapter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hyperplan.errors import HyperplanError
from hyperplan.search.env import Action, ActionKind, Objective, Verdict
from hyperplan_bench.eval.treesearch.suites.base import StateEnv, decision_id

_COUPON_TERMS = re.compile(r"¥([\d,]+)\s+off\s+every\s+¥([\d,]+)")
_WORD = re.compile(r"[a-z0-9']+")


def coupon_terms(name: str) -> tuple[float, float] | None:
    """(discount, threshold) from a DeepPlanning coupon name, or None."""
    m = _COUPON_TERMS.search(name)
    if not m:
        return None
    return float(m.group(1).replace(",", "")), float(m.group(2).replace(",", ""))


@dataclass(frozen=True)
class DPCase:
    case_id: str
    level: int
    query: str
    products: tuple[dict[str, Any], ...]
    owned_coupons: tuple[tuple[str, int], ...]
    is_vip: bool
    gold_products: tuple[str, ...]
    gold_coupons: tuple[tuple[str, int], ...]

    def spec(self) -> dict[str, Any]:
        return {"suite": "deepplanning-shopping", "case": self.case_id, "level": self.level,
                "query": self.query, "products": list(self.products),
                "coupons": dict(self.owned_coupons), "is_vip": self.is_vip,
                "gold_products": list(self.gold_products),
                "gold_coupons": dict(self.gold_coupons)}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise HyperplanError(f"DeepPlanning file missing: {path}") from exc
    except json.JSONDecodeError as exc:
        raise HyperplanError(f"{path}: not valid JSON ({exc})") from exc


def _meta_path(root: Path, level: int) -> Path:
    for name in (f"level_{level}_query_meta.json", f"shopping_level_{level}_query_meta.json"):
        if (root / name).exists():
            return root / name
    raise HyperplanError(
        f"no level_{level}_query_meta.json (or shopping_level_{level}_query_meta.json) "
        f"under {root}")


def _database_dir(root: Path, level: int) -> Path:
    for cand in (root / f"database_level{level}", root / f"database_level{level}" / "database",
                 root / "database"):
        if cand.is_dir():
            return cand
    raise HyperplanError(
        f"no database directory for level {level} under {root} (expected "
        f"database_level{level}/ or database/ with case_<id>/ folders; download it from "
        "HuggingFace Qwen/DeepPlanning)")


def load_case(case_dir: Path, case_id: str, level: int, query: str) -> DPCase:
    products: list[dict[str, Any]] = []
    path = case_dir / "products.jsonl"
    if not path.exists():
        raise HyperplanError(f"DeepPlanning file missing: {path}")
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HyperplanError(f"{path}:{n}: not valid JSON ({exc})") from exc
        if not isinstance(rec, dict) or "product_id" not in rec:
            raise HyperplanError(f"{path}:{n}: field 'product_id' missing")
        try:
            float(rec.get("price", ""))
        except (TypeError, ValueError) as exc:
            raise HyperplanError(f"{path}:{n}: field 'price' is not a number") from exc
        products.append(rec)
    user = _read_json(case_dir / "user_info.json")
    val = _read_json(case_dir / "validation_cases.json")
    coupons = user.get("coupons", {}) if isinstance(user, dict) else {}
    gold = tuple(str(g["product_id"]) for g in val.get("ground_truth_products", [])
                 if isinstance(g, dict) and "product_id" in g)
    if not gold:
        raise HyperplanError(
            f"{case_dir / 'validation_cases.json'}: field 'ground_truth_products' is empty")
    known = {str(p["product_id"]) for p in products}
    missing = [pid for pid in gold if pid not in known]
    if missing:
        raise HyperplanError(
            f"{case_dir / 'validation_cases.json'}: ground-truth products {missing} are not in "
            "products.jsonl")
    gold_coupons = tuple(sorted((str(k), int(v))
                                for k, v in val.get("ground_truth_coupons", {}).items()))
    return DPCase(case_id, level, query or str(val.get("query", "")), tuple(products),
                  tuple(sorted((str(k), int(v)) for k, v in coupons.items())),
                  bool(user.get("is_vip", False)), gold, gold_coupons)


def load_deepplanning_shopping(
    root: str | Path, level: int, *, database_dir: str | Path | None = None,
    limit: int | None = None,
) -> list[DeepPlanningShoppingEnv]:
    """Environments for the DeepPlanning shopping cases of ``level`` (layout in module doc).
    Cases whose ``case_<id>`` folder is missing raise :class:`HyperplanError`."""
    root = Path(root)
    meta = _read_json(_meta_path(root, level))
    if not isinstance(meta, list):
        raise HyperplanError(f"{_meta_path(root, level)}: expected a JSON list of cases")
    db = Path(database_dir) if database_dir is not None else _database_dir(root, level)
    envs: list[DeepPlanningShoppingEnv] = []
    for row in meta[:limit] if limit is not None else meta:
        cid = str(row.get("id", ""))
        case_dir = db / f"case_{cid}"
        if not case_dir.is_dir():
            raise HyperplanError(f"DeepPlanning case folder missing: {case_dir}")
        envs.append(DeepPlanningShoppingEnv(load_case(case_dir, cid, level,
                                                      str(row.get("query", "")))))
    return envs


@dataclass(frozen=True)
class DPState:
    listed: frozenset[str] = frozenset()  # brands searched
    viewed: frozenset[str] = frozenset()
    cart: tuple[str, ...] = ()
    coupons: tuple[str, ...] = ()  # one entry per used copy
    finished: bool = False
    steps: int = 0
    trace: tuple[str, ...] = ()


class DeepPlanningShoppingEnv(StateEnv):
    """A DeepPlanning shopping case as a :class:`~hyperplan.search.env.SearchEnv`."""

    state: DPState

    def __init__(self, case: DPCase) -> None:
        self.case = case
        self._products = {str(p["product_id"]): p for p in case.products}
        self._brands: dict[str, list[str]] = {}
        for pid, p in self._products.items():
            self._brands.setdefault(str(p.get("brand") or "(no brand)"), []).append(pid)
        self._owned = dict(case.owned_coupons)
        self._query_words = set(_WORD.findall(case.query.lower()))
        self._objectives = tuple(
            Objective(f"gt:{pid}", f"ground-truth product {k + 1}")
            for k, pid in enumerate(case.gold_products)
        ) + tuple(Objective(f"coupon:{name}", f"use {name} x{q}", "global")
                  for name, q in case.gold_coupons)
        copies = sum(self._owned.values())
        self._horizon = 4 * len(case.gold_products) + min(10, copies) + 2
        self._start(DPState())

    @property
    def query(self) -> str:
        return self.case.query

    def spec(self) -> dict[str, Any]:
        return self.case.spec()

    def _price(self, pid: str) -> float:
        return float(self._products[pid]["price"])

    def _coupon_ok(self, used: Sequence[str]) -> bool:
        total = sum(self._price(pid) for pid in self.state.cart)
        need = 0.0
        for name in used:
            terms = coupon_terms(name)
            if terms is None or (name.startswith("VIP") and not self.case.is_vip):
                return False
            need += terms[1]
        return need <= total

    def _listing(self, pid: str) -> str:
        p = self._products[pid]
        return f"{pid} | {p.get('name', '')} | {p.get('brand', '')} | ¥{p['price']}"

    def _compute_decisions(self) -> list[Action]:
        if self.is_terminal():
            return []
        st = self.state
        out = [Action(f"brand:{b}", ActionKind.INFO, ("brand", b), f"search brand {b}")
               for b in sorted(self._brands) if b not in st.listed]
        listed = [pid for b in sorted(st.listed) for pid in self._brands[b]]
        out += [Action(f"view:{pid}", ActionKind.INFO, ("view", pid), f"view {pid}")
                for pid in listed if pid not in st.viewed]
        if len(st.cart) < len(self.case.gold_products):
            out += [Action(f"add:{pid}", ActionKind.COMMIT, ("add", pid),
                           f"add {self._listing(pid)}")
                    for pid in listed if pid not in st.cart]
        for name, owned in sorted(self._owned.items()):
            used = st.coupons.count(name)
            if used < owned and self._coupon_ok([*st.coupons, name]):
                out.append(Action(f"coupon:{name}:{used + 1}", ActionKind.COMMIT,
                                  ("coupon", name, used + 1), f"use coupon {name}"))
        if st.cart:
            out.append(Action("finish", ActionKind.COMMIT, ("finish",), "finish"))
        return out

    def _apply(self, st: DPState, action: Action) -> tuple[DPState, str]:
        p = action.payload
        if p[0] == "brand":
            obs = f"brand {p[1]}: " + "; ".join(self._listing(x) for x in self._brands[p[1]])
            st = replace(st, listed=st.listed | {p[1]})
        elif p[0] == "view":
            obs = json.dumps(self._products[p[1]], ensure_ascii=False, sort_keys=True)
            st = replace(st, viewed=st.viewed | {p[1]})
        elif p[0] == "add":
            obs = f"added {self._listing(p[1])}"
            st = replace(st, cart=(*st.cart, p[1]))
        elif p[0] == "coupon":
            obs = f"used coupon {p[1]}"
            st = replace(st, coupons=(*st.coupons, p[1]))
        else:
            obs = "finished"
            st = replace(st, finished=True)
        return st, obs

    def recorded(self, action: Action) -> bool:
        return action.kind is ActionKind.COMMIT and action.payload[0] != "finish"

    def verify(self) -> Verdict:
        st = self.state
        cart = set(st.cart)
        scores: dict[str, float] = {}
        about: dict[str, frozenset[Hashable]] = {}
        adds = frozenset(decision_id(("add", pid)) for pid in st.cart)
        for pid in self.case.gold_products:
            scores[f"gt:{pid}"] = float(pid in cart)
            about[f"gt:{pid}"] = frozenset({decision_id(("add", pid))}) if pid in cart else adds
        used = {name: st.coupons.count(name) for name in set(st.coupons)}
        uses = frozenset(decision_id(("coupon", n, k + 1)) for n in used for k in range(used[n]))
        for name, q in self.case.gold_coupons:
            scores[f"coupon:{name}"] = float(used.get(name, 0) == q)
            about[f"coupon:{name}"] = uses
        matched_products = sum(pid in cart for pid in self.case.gold_products)
        reward = sum(scores.values()) / len(scores)
        total = sum(self._price(pid) for pid in st.cart)
        discount = sum((coupon_terms(n) or (0.0, 0.0))[0] for n in st.coupons)
        return Verdict(
            reward=reward, success=reward == 1.0, objective_scores=scores,
            objective_decisions=about,
            metrics={"match_score": matched_products / len(self.case.gold_products),
                     "extra_products": float(len(cart - set(self.case.gold_products))),
                     "final_price": max(0.0, total - discount)},
        )

    def _overlap(self, pid: str) -> float:
        p = self._products[pid]
        fields = [p.get("name"), p.get("brand")]
        if pid in self.state.viewed:
            fields += [p.get("color"), p.get("size")]
        words = set(_WORD.findall(" ".join(str(f) for f in fields if f).lower()))
        if not words:
            return 0.5
        return len(words & self._query_words) / len(words)

    def hint(self, action: Action) -> float:
        p = action.payload
        if p[0] == "brand":
            return 0.9 if set(_WORD.findall(str(p[1]).lower())) <= self._query_words else 0.2
        if p[0] in ("view", "add"):
            return 0.2 + 0.8 * self._overlap(p[1])
        if p[0] == "coupon":
            return 0.7
        if len(self.state.cart) < len(self.case.gold_products):
            return 0.2
        return 0.6 if any(a.payload[0] == "coupon" for a in self.decisions()) else 1.0

    def describe(self) -> str:
        return "\n".join(f"{k + 1}. {t}" for k, t in enumerate(self.state.trace))

    def gold_actions(self) -> list[Action]:
        """Search each gold product's brand, add it, use the gold coupons, finish."""
        acts: list[Action] = []
        seen: set[str] = set()
        for pid in self.case.gold_products:
            b = str(self._products[pid].get("brand") or "(no brand)")
            if b not in seen:
                seen.add(b)
                acts.append(Action(f"brand:{b}", ActionKind.INFO, ("brand", b)))
            acts.append(Action(f"add:{pid}", ActionKind.COMMIT, ("add", pid)))
        for name, q in self.case.gold_coupons:
            for k in range(q):
                acts.append(Action(f"coupon:{name}:{k + 1}", ActionKind.COMMIT,
                                   ("coupon", name, k + 1)))
        acts.append(Action("finish", ActionKind.COMMIT, ("finish",)))
        return acts
