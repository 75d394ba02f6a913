"""Synthetic tool catalogs for scale benchmarks of graph construction.

:func:`synthetic_catalog` makes a deterministic catalog of ``n_tools`` tools that looks like a
large API marketplace: about ``n_tools / 40`` apps (namespaces ``app0``, ``app1``, ...), each
with a login tool and a handful of entities (``order``, ``playlist``, ``order_item``,
``shared_folder`` ...) and the usual tools over them (``app7.search_orders``,
``app7.show_order``, ``app7.create_order``, ``app7.update_order``, ``app7.delete_order``,
``app7.list_customer_orders`` ...). Entities are drawn Zipf-like from a pool of a few thousand
names (base words, ``base_modifier`` and ``adjective_base`` combinations), so common entities
recur across many apps and the vocabulary keeps growing with the catalog. Apps differ in
style: snake_case or camelCase fields, string or integer ids, paging parameter names,
envelope or bare-array responses. Field descriptions are templated sentences (some left
empty), with nested outputs such as ``orders[].order_id`` and ``orders[].customer.email``.

The tools of one app are made in :mod:`hyperplan_bench.synthetic.app_tools`; the ground truth read
back from a catalog is in :mod:`hyperplan_bench.synthetic.expectations`.
"""

from __future__ import annotations

import bisect
import itertools
import random

from hyperplan.catalog import Catalog, ToolSpec, build_catalog
from hyperplan_bench.synthetic.app import App, Entity, new_app
from hyperplan_bench.synthetic.app_tools import account_tools, core_tools, extra_tools, report_tool
from hyperplan_bench.synthetic.words import (
    BASE_ENTITIES,
    MODIFIERS,
    TOOLS_PER_APP,
    EntityWords,
    shuffled_entity_pool,
)

__all__ = ["TOOLS_PER_APP", "synthetic_catalog"]


class _Zipf:
    def __init__(self, n: int, s: float = 1.0) -> None:
        self.cum = list(itertools.accumulate(1.0 / (k + 1) ** s for k in range(n)))

    def draw(self, rng: random.Random) -> int:
        return bisect.bisect_left(self.cum, rng.random() * self.cum[-1])


def _quotas(n_tools: int, rng: random.Random) -> list[int]:
    """Tools per app: about TOOLS_PER_APP each (varied), summing to ``n_tools``."""
    n_apps = max(1, round(n_tools / TOOLS_PER_APP))
    raw = [rng.uniform(0.6, 1.4) for _ in range(n_apps)]
    scale = n_tools / sum(raw)
    quotas = [max(1, int(r * scale)) for r in raw]
    k = 0
    while sum(quotas) != n_tools:  # fix rounding, keeping every app non-empty
        i = k % n_apps
        if sum(quotas) < n_tools:
            quotas[i] += 1
        elif quotas[i] > 1:
            quotas[i] -= 1
        k += 1
    return quotas


def _app_entities(pool: list[EntityWords], zipf: _Zipf, count: int,
                  rng: random.Random) -> list[Entity]:
    """``count`` distinct entities (a ``base_modifier`` entity brings its base as parent);
    some base entities get another entity of the app as parent."""
    chosen: dict[EntityWords, Entity] = {}
    tries = 0
    while len(chosen) < count and tries < 50 * count:
        tries += 1
        words = pool[zipf.draw(rng)]
        if words in chosen:
            continue
        parent = None
        if len(words) == 2 and words[1] in MODIFIERS and words[0] in BASE_ENTITIES:
            base = (words[0],)
            parent = chosen.setdefault(base, Entity(base))
        elif chosen and rng.random() < 0.4:
            parent = rng.choice(list(chosen.values()))
            if parent.parent is not None:  # keep nesting shallow
                parent = None
        chosen[words] = Entity(words, parent)
    return list(chosen.values())


def _app_tools(app: App, quota: int) -> list[ToolSpec]:
    """The first ``quota`` tools of ``app`` in priority order: login, the core tools of each
    entity, profile and logout, the extra tools of each entity; report tools pad the rest.
    (The account tools are drawn twice, as they always were: the draws shape the seed's
    catalog.)"""
    candidates = account_tools(app)[:1]
    for entity in app.entities:
        candidates += core_tools(app, entity)
    candidates += account_tools(app)[1:]
    for entity in app.entities:
        candidates += extra_tools(app, entity)
    missing = quota - min(quota, len(candidates))
    return candidates[:quota] + [report_tool(app, k) for k in range(missing)]


def synthetic_catalog(n_tools: int, seed: int = 0) -> Catalog:
    """A deterministic catalog of exactly ``n_tools`` tools (see the module docstring).

    The same ``(n_tools, seed)`` always gives the same catalog, in any process.
    """
    if n_tools < 0:
        raise ValueError(f"n_tools must be >= 0, got {n_tools}")
    rng = random.Random(f"hyperplan-synthetic:{seed}")
    pool = shuffled_entity_pool(rng)
    zipf = _Zipf(len(pool))
    tools: list[ToolSpec] = []
    for index, quota in enumerate(_quotas(n_tools, rng) if n_tools else []):
        app_rng = random.Random(f"hyperplan-synthetic:{seed}:{index}")
        n_entities = max(1, round((quota - 3) / 7))
        app = new_app(index, _app_entities(pool, zipf, n_entities, app_rng), app_rng)
        tools += _app_tools(app, quota)
    return build_catalog(tools, source=f"synthetic:{n_tools}:{seed}")
