"""Replay mode of the pre-selection benchmark (:mod:`hyperplan_bench.eval.preselect`): the
state-conditioned case.

Each task's gold calls are replayed in order through a :class:`~hyperplan.select.Session`: before
call i the methods select K tools, and the step scores whether call i's tool is among them
(``next_hit``); then the session observes call i (its arguments and result). The selector's two
methods see the state the session holds (``context_graph``: :meth:`Selector.select` with the
session's held values, its calls and ``chain=False``; ``context_graph_doe``:
:meth:`Session.select`); the text-only methods see the same request at every step, so they
select the same tools throughout: they cannot use state, which is exactly the comparison.

Values: τ²'s calls carry the arguments of its gold actions and the responses its environment
gave them. The other suites' gold data has no result values (NesTools and Seal-Tools name them
``API_call_k``, NESTFUL ``$varN.field$``), so each call's result is synthetic: one value per
field of the tool's output schema (strings ``tool#call:path``, numbers, booleans; arrays of one
element), and an argument the gold data takes from an earlier call (a gold data flow) gets the
value that call's synthetic result holds at that output path, so the session sees the flow as
an agent would. Literal arguments are the gold call's own.

Per method and K: ``next_hit`` (over all steps), ``next_hit_first`` (the first call: no state
yet), ``next_hit_later`` (every later call), ``tasks_all_hit`` (tasks whose every step hit) and
the selection's ``ms_p50`` / ``ms_p99`` and ``cpu_ms_p50`` / ``cpu_ms_p99``.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from hyperplan.catalog import ToolSpec
from hyperplan.execute.state import values_at
from hyperplan_bench.eval.preselect_bench import PartBench, ReplayCall, Tally, Timed, timed
from hyperplan_bench.importers.gold import GoldTask

MAX_DEPTH = 6  # nesting of a synthetic result
StepRow = tuple[float, bool, int, int, float, float]
"""Per step, method and budget: hit, first step, step, task number, wall and CPU ms."""


def synthetic(schema: Any, tag: str, path: str = "", depth: int = 0) -> Any:
    """A JSON value shaped like ``schema`` whose scalars name ``tag`` and their path."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return f"{tag}:{path or 'result'}"
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key) or [] if isinstance(b, dict)
                    and b.get("type") != "null"]
        if branches:
            return synthetic(branches[0], tag, path, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((t for t in kind if t != "null"), None)
    props = schema.get("properties")
    if kind == "object" or (kind is None and isinstance(props, dict)):
        if not isinstance(props, dict) or not props:
            return {}
        return {str(name): synthetic(sub, tag, f"{path}.{name}" if path else str(name),
                                     depth + 1) for name, sub in props.items()}
    if kind == "array":
        return [synthetic(schema.get("items"), tag, f"{path}[]", depth + 1)]
    seed = zlib.crc32(f"{tag}:{path}".encode())
    if kind == "integer":
        return 1000 + seed % 900_000
    if kind == "number":
        return round(1000 + (seed % 900_000) / 7, 3)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return f"{tag}:{path or 'result'}"


def _first_scalar(value: Any) -> Any:
    if isinstance(value, dict):
        for item in value.values():
            found = _first_scalar(item)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        return _first_scalar(value[0]) if value else None
    return value


def synthetic_calls(specs: dict[str, ToolSpec], task: GoldTask) -> tuple[ReplayCall, ...]:
    """The task's gold calls with their literal arguments, synthetic results and, for each
    argument a gold flow feeds, the value the producing call's result holds there."""
    calls: list[ReplayCall] = []
    for number, call in enumerate(task.calls):
        args: dict[str, Any] = {}
        for name, literal in call.literals:
            try:
                args[name] = json.loads(literal)
            except ValueError:
                args[name] = literal
        for name in call.referenced:
            args[name] = _referenced(task, calls, call.tool, name)
        spec = specs.get(call.tool)
        schema = spec.output_schema if spec is not None else None
        calls.append(ReplayCall(call.tool, args, synthetic(schema, f"{call.tool}#{number}")))
    return tuple(calls)


def _referenced(task: GoldTask, earlier: Sequence[ReplayCall], consumer: str, param: str) -> Any:
    """The value an earlier call's result holds at the output a gold flow into ``param``
    names (the latest such call), else a placeholder."""
    for flow in task.flows:
        if flow.consumer != consumer or flow.input_param != param:
            continue
        for made in reversed(earlier):
            if made.tool != flow.producer:
                continue
            if not flow.output_path:
                return _first_scalar(made.result)
            found = values_at(made.result, flow.output_path)
            if found:
                return found[0][0]
    return f"ref:{consumer}:{param}"


def replay_part(bench: PartBench, tasks: Sequence[GoldTask],
                tally: Tally[StepRow]) -> int:
    """Replay every task of one catalog (module doc), adding one row per step, method and
    budget to ``tally``: ``(hit, first step, step, task number, ms, CPU ms)``; returns how
    many tasks were replayed (those with gold calls to catalog tools)."""
    from hyperplan.retrieve.context_graph import single_thread_blas

    specs = {t.name: t for t in bench.part.catalog.tools}
    vectors = bench.prepare(tasks)
    index = bench.graph.tool_index
    replayed = 0
    for number, task in enumerate(tasks):
        bench.tick(number, len(tasks))
        calls = bench.part.replays.get(task.id) or synthetic_calls(specs, task)
        if not calls or any(c.tool not in index for c in calls):
            continue
        task_no = tally.tasks
        tally.tasks += 1
        replayed += 1
        with single_thread_blas():
            fixed = {k: bench.text_methods(task.text, vectors[number], k) for k in bench.budgets}
        session = bench.selector.session(task.text)
        for step, call in enumerate(calls):
            target = index[call.tool]
            for k in bench.budgets:
                results = dict(fixed[k])
                with single_thread_blas():
                    results["context_graph"] = bench.selector_method(
                        task.text, k, False, frozenset(session.held), frozenset(session.effects),
                        tuple(session.called))
                    results["context_graph_doe"] = _session_select(bench, session, k)
                tally.add("all_tools", k, (1.0, step == 0, step, task_no, 0.0, 0.0), ())
                for method, (ids, ms, cpu) in results.items():
                    tally.add(method, k,
                              (float(target in ids), step == 0, step, task_no, ms, cpu), ())
            session.observe(call.tool, dict(call.arguments), call.result, ok=call.ok)
    bench.tick(len(tasks), len(tasks))
    return replayed


def _session_select(bench: PartBench, session: Any, k: int) -> Timed:
    return timed(lambda: [bench.graph.tool_index[n] for n in session.select(budget=k).names])


def replay_summary(rows: Sequence[StepRow]) -> dict[str, float]:
    """``next_hit`` over all steps, on the first and on later steps, tasks whose every step
    hit, and latency (rows as :func:`replay_part` makes them)."""
    if not rows:
        return {"next_hit": 0.0, "next_hit_first": 0.0, "next_hit_later": 0.0,
                "tasks_all_hit": 0.0, "steps": 0, "ms_p50": 0.0, "ms_p99": 0.0,
                "cpu_ms_p50": 0.0, "cpu_ms_p99": 0.0}
    hits = np.asarray([r[0] for r in rows], dtype=np.float64)
    first = np.asarray([r[1] for r in rows], dtype=bool)
    ms = np.asarray([r[4] for r in rows], dtype=np.float64)
    cpu = np.asarray([r[5] for r in rows], dtype=np.float64)
    by_task: dict[int, bool] = {}
    for hit, _, _, task_no, _, _ in rows:
        by_task[task_no] = by_task.get(task_no, True) and hit >= 1.0
    later = hits[~first]
    return {
        "next_hit": round(float(hits.mean()), 4),
        "next_hit_first": round(float(hits[first].mean()), 4) if first.any() else 0.0,
        "next_hit_later": round(float(later.mean()), 4) if later.size else 0.0,
        "tasks_all_hit": round(sum(by_task.values()) / len(by_task), 4),
        "steps": int(hits.size),
        "ms_p50": round(float(np.percentile(ms, 50)), 3),
        "ms_p99": round(float(np.percentile(ms, 99)), 3),
        "cpu_ms_p50": round(float(np.percentile(cpu, 50)), 3),
        "cpu_ms_p99": round(float(np.percentile(cpu, 99)), 3),
    }
