"""Dev-split ``complete`` at K = 5, 10, 20 of the selection with the context graph's
``request_row`` and ``fill`` off and on (docs/benchmarks.md, "Pre-selection: the request as
written, a filled budget, following the calls").

    python scripts/dev/preselect_variants.py SUITE DATA|- [SPLIT]
    python scripts/dev/preselect_variants.py sealtools ../shared/data/sealtools dev
"""

from __future__ import annotations

import sys
from dataclasses import replace

from hyperplan.embed import get_embedder
from hyperplan.select.cache import default_cache_dir
from hyperplan_bench.eval.links import split_tasks
from hyperplan_bench.eval.preselect import load_preselect_suite
from hyperplan_bench.eval.preselect_bench import PartBench, gold_tools

BUDGETS = (5, 10, 20)
VARIANTS = {"base": (False, False), "row": (True, False), "fill": (False, True),
            "row+fill": (True, True)}


def main(suite: str, data: str | None, split: str) -> None:
    embedder = get_embedder("minilm")
    hits = {(v, chain, k): [0, 0] for v in VARIANTS for chain in (False, True) for k in BUDGETS}
    for part in load_preselect_suite(suite, data).parts:
        names = set(part.catalog.names())
        tasks = [t for t in split_tasks(part.tasks, split)
                 if t.text.strip() and gold_tools(t) and set(gold_tools(t)) <= names]
        if not tasks:
            continue
        bench = PartBench(part, embedder, BUDGETS, default_cache_dir(), False, None, suite)
        bench.prepare(tasks)
        base = bench.selector.config
        for variant, (row, fill) in VARIANTS.items():
            context = replace(base.context, request_row=row, fill=fill)
            bench.selector.config = replace(base, context=context)
            for task in tasks:
                gold = {bench.graph.tool_index[n] for n in gold_tools(task)}
                for chain in (False, True):
                    for k in BUDGETS:
                        ids, _, _ = bench.selector_method(task.text, k, chain)
                        cell = hits[(variant, chain, k)]
                        cell[0] += gold <= set(ids)
                        cell[1] += 1
    for variant in VARIANTS:
        for chain in (False, True):
            shares = {k: round(a / max(n, 1), 3) for (v, c, k), (a, n) in hits.items()
                      if v == variant and c == chain}
            print(suite, variant, "+doe" if chain else "", shares)


if __name__ == "__main__":
    main(sys.argv[1], None if sys.argv[2] == "-" else sys.argv[2],
         sys.argv[3] if len(sys.argv) > 3 else "dev")
