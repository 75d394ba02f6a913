"""The dev-split simulation that chose how a session follows its calls (docs/benchmarks.md,
"Pre-selection: the request as written, a filled budget, following the calls"): along each
task's gold calls, the selection without following (``called`` not passed) is changed by
putting the top m consumers of the called tools' outputs first, with or without the called
tools moved last, and the net change in next-gold-tool hits over the later steps is counted.

    python scripts/dev/follow_simulation.py SUITE DATA|- [SAMPLE]
    python scripts/dev/follow_simulation.py nestools ../shared/data/nestools/test_data_dev.jsonl
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from hyperplan.embed import get_embedder
from hyperplan.embed.base import l2_normalize
from hyperplan.retrieve.context_graph import embed_interpretation
from hyperplan.retrieve.interpret import interpret_request
from hyperplan.select.cache import default_cache_dir
from hyperplan_bench.eval.links import split_tasks
from hyperplan_bench.eval.preselect import load_preselect_suite
from hyperplan_bench.eval.preselect_bench import PartBench, gold_tools
from hyperplan_bench.eval.preselect_replay import synthetic_calls

BUDGETS = (5, 10, 20)


def consumers_by_score(bench: PartBench, called: list[str], rel: np.ndarray) -> list[str]:
    """Tools fed by the called tools' outputs (A_prod), not called, best w * max(q, 0) first."""
    index, graph = bench.index, bench.graph
    score: dict[str, float] = {}
    for entry in index.fed_by([graph.tool_index[p] for p in called]).tolist():
        consumer = int(index.node_tool[index.prod_row[entry]])
        name = index.tool_names[consumer]
        if name not in called:
            value = float(index.prod_w[entry]) * max(float(rel[consumer]), 0.0)
            score[name] = max(score.get(name, 0.0), value)
    return sorted(score, key=lambda n: -score[n])


def main(suite: str, data: str | None, sample: int | None) -> None:
    embedder = get_embedder("minilm")
    net: collections.Counter[tuple[object, ...]] = collections.Counter()
    for part in load_preselect_suite(suite, data).parts:
        names = set(part.catalog.names())
        chosen = split_tasks(part.tasks, "dev")
        if sample and sample < len(chosen):
            chosen = tuple(chosen[(i * len(chosen)) // sample] for i in range(sample))
        tasks = [t for t in chosen
                 if t.text.strip() and gold_tools(t) and set(gold_tools(t)) <= names]
        if not tasks:
            continue
        bench = PartBench(part, embedder, BUDGETS, default_cache_dir(), False, None, suite)
        bench.prepare(tasks)
        specs = {t.name: t for t in part.catalog.tools}
        for task in tasks:
            calls = part.replays.get(task.id) or synthetic_calls(specs, task)
            if not calls or any(c.tool not in bench.graph.tool_index for c in calls):
                continue
            interp = interpret_request(task.text, bench.index.namespaces)
            query = embed_interpretation(interp, bench.selector.embedder, task.text)
            rel = bench.index.tool_vecs @ l2_normalize(query.operations[:1])[0]
            session = bench.selector.session(task.text)
            called: list[str] = []
            for step, call in enumerate(calls):
                for k in BUDGETS if step else ():
                    picked = bench.selector.select(task.text, known=session.held,
                                                   effects=session.effects, budget=k).names
                    hit = call.tool in picked
                    ranked = consumers_by_score(bench, called, rel)
                    fresh = [n for n in picked if n not in called]
                    again = [n for n in picked if n in called]
                    for m in (1, 2, 3):
                        front = ranked[:m]
                        plain = (front + [n for n in picked if n not in front])[:k]
                        demoted = (front + [n for n in fresh if n not in front] +
                                   [n for n in again if n not in front])[:k]
                        net[(k, m, "first")] += (call.tool in plain) - hit
                        net[(k, m, "first, called last")] += (call.tool in demoted) - hit
                    net[(k, "later steps")] += 1
                called.append(call.tool)
                session.observe(call.tool, dict(call.arguments), call.result, ok=call.ok)
    for key in sorted(net, key=str):
        print(suite, key, net[key])


if __name__ == "__main__":
    main(sys.argv[1], None if sys.argv[2] == "-" else sys.argv[2],
         int(sys.argv[3]) if len(sys.argv) > 3 else None)
