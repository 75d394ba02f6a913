"""Gold-call suites: NesTools and NESTFUL tasks as agent tasks, checked against their
gold calls on a symbolic environment.

Neither benchmark ships an environment that runs offline (NesTools has none; NESTFUL's
executable split calls RapidAPI), but both give, per task, the gold calls with their literal
arguments and which earlier output feeds which parameter. This suite makes that executable:

* runtime (:class:`SymbolicRuntime`): every catalog tool answers every call with *symbolic
  values* built from its output schema: on the k-th call of tool ``T`` a string output at path
  ``p`` is ``⟨T#k:p⟩``, an integer or number a fresh unique number, a boolean ``true``, an
  object without declared properties ``{"ref": "⟨T#k:p⟩"}`` (objects keep their properties,
  arrays hold one item; path syntax as the gold flows write it: ``location.name``,
  ``author[].id``). The runtime remembers which (tool, path) produced each value, leaves and
  whole objects or arrays alike. Booleans carry no identity: a boolean argument passes the
  flow check when any allowed producer returned ``true``. Arguments are not validated against
  the input schemas: the benchmarks' own gold calls do not always satisfy them (NESTFUL passes
  numbers to string parameters, leaves required ones out, names parameters its spec lacks),
  and the check compares every argument with the gold call.
* check (:func:`matches_gold`): the calls made equal the gold calls — each gold call is matched
  by a distinct call of the same tool with the same argument names, every literal argument
  equal (JSON-equal, or the same text up to case and surrounding spaces) and every referenced
  argument holding a token of a producer and output path that the gold flows name for that
  parameter — and no other call was made. This is the exact-match criterion of the chains
  benchmark (``eval chains`` compares tool sets) extended to arguments and data flow. A
  producer is identified by tool and output path, not by which of several calls of one tool
  made it.
* tasks: only those whose own gold calls, replayed on the symbolic environment
  (:func:`replay_gold`), pass the check — all 600 NesTools tasks; 276 of NESTFUL's 300 (the
  others read output paths their spec does not declare, e.g. ``id`` of a tool whose output
  has ``artist_id``).
* goal (LLM-free ``hyperagent-goal``): as in ``eval chains``, one sub-goal per terminal tool
  (gold calls whose outputs nothing consumes) with its own literal arguments, and the other
  calls' literals as shared values by bare parameter name; DOE must find the producers and the
  binder must route their outputs.
* catalog: NesTools = the union of all tasks' APIs (as ``eval chains``); NESTFUL = the union of
  its spec files (tool names are unique across them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.embed import get_embedder
from hyperplan.errors import HyperplanError
from hyperplan.execute.goal import StructuredGoal, SubGoal
from hyperplan.execute.results import ErrorKind, ToolResult, ToolRuntime
from hyperplan.execute.runtimes.base import Clock, ClosingRuntime, fail_result, ok_result
from hyperplan.graph.build import build_graph
from hyperplan.retrieve.context_graph import GraphIndex
from hyperplan_bench.eval.chains import terminals_of
from hyperplan_bench.eval.registry import REPLAY_DATA
from hyperplan_bench.eval.suite_api import EvalTask, SuiteSession, data_root
from hyperplan_bench.importers.gold import GoldCall, GoldTask

REPLAY_SUITES = REPLAY_DATA  # suite -> default data under data_root() (the registry's rows)
_TOKEN = re.compile(r"⟨([^⟨⟩#]+)#(\d+):([^⟨⟩]*)⟩")
_MAX_DEPTH = 4


@dataclass(frozen=True)
class RecordedCall:
    tool: str
    arguments: Mapping[str, Any]


Source = tuple[str, str]  # (producing tool, output path)


class SymbolicValues:
    """Issues the symbolic output values and remembers which (tool, path) produced each."""

    def __init__(self) -> None:
        self.sources: dict[str, set[Source]] = {}
        self._serial = 0

    def output(self, tool: str, index: int, schema: Mapping[str, Any] | None) -> Any:
        """The response of the ``index``-th call of ``tool`` (see the module doc)."""
        if not schema or (not schema.get("type") and "properties" not in schema):
            return {"result": self._leaf(tool, index, "result", None)}
        return self._build(tool, index, schema, "", 0)

    def _build(self, tool: str, index: int, schema: Mapping[str, Any], path: str,
               depth: int) -> Any:
        kind = schema.get("type")
        props = schema.get("properties")
        value: Any
        if isinstance(props, dict) and props and kind in (None, "object") \
                and depth < _MAX_DEPTH:
            value = {name: self._build(tool, index, sub if isinstance(sub, dict) else {},
                                       f"{path}.{name}" if path else name, depth + 1)
                     for name, sub in props.items()}
        elif kind == "array" and depth < _MAX_DEPTH:
            items = schema.get("items")
            value = [self._build(tool, index, items if isinstance(items, dict) else {},
                                 f"{path}[]", depth + 1)]
        else:
            return self._leaf(tool, index, path or "result", kind)
        self.sources.setdefault(_key(value), set()).add((tool, _norm_path(path or "result")))
        return value

    def _leaf(self, tool: str, index: int, path: str, kind: Any) -> Any:
        self._serial += 1
        value: Any
        if kind == "object":  # an object without declared properties: a record of its own
            value = {"ref": f"⟨{tool}#{index}:{path}⟩"}
        elif kind == "boolean":
            value = True
        elif kind == "integer":
            value = 700_000 + self._serial
        elif kind == "number":
            value = 700_000 + self._serial + 0.5
        else:
            value = f"⟨{tool}#{index}:{path}⟩"
        self.sources.setdefault(_key(value), set()).add((tool, _norm_path(path)))
        return value

    def sources_of(self, value: Any) -> set[Source]:
        """The (tool, path) that produced ``value`` (a leaf, object or array output as it was
        returned), or any string output quoted inside a text ``value``."""
        found = set(self.sources.get(_key(value), set()))
        if isinstance(value, str):  # a string output may be quoted inside a longer text
            found |= {(m[1], _norm_path(m[3])) for m in _TOKEN.finditer(value)}
        return found


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class SymbolicRuntime(ClosingRuntime):
    """Answers every call of a catalog tool with symbolic values and records the calls."""

    def __init__(self, catalog: Catalog) -> None:
        self.tools = {t.name: t for t in catalog.tools}
        self.calls: list[RecordedCall] = []
        self.values = SymbolicValues()

    def can_run(self, tool: ToolSpec) -> bool:
        return tool.name in self.tools

    def call(self, tool: ToolSpec, arguments: Mapping[str, Any], *,
             timeout: float | None = None) -> ToolResult:
        clock = Clock()
        if tool.name not in self.tools:
            return fail_result(tool, arguments, ErrorKind.UNKNOWN_TOOL,
                               f"{tool.name}: not a tool of this suite", clock)
        if not isinstance(arguments, Mapping):
            return fail_result(tool, arguments, ErrorKind.INVALID_ARGUMENTS,
                               f"{tool.name}: arguments must be an object", clock)
        self.calls.append(RecordedCall(tool.name, dict(arguments)))
        value = self.values.output(tool.name, len(self.calls), tool.output_schema)
        return ok_result(tool, arguments, value, clock)


def matches_gold(gold: GoldTask, calls: Sequence[RecordedCall], values: SymbolicValues) -> bool:
    """Whether ``calls`` are exactly ``gold``'s calls (see the module doc)."""
    if len(calls) != len(gold.calls):
        return False
    sources: dict[tuple[str, str], set[Source]] = {}
    for flow in gold.flows:
        sources.setdefault((flow.consumer, flow.input_param), set()).add(
            (flow.producer, _norm_path(flow.output_path)))
    unused = list(range(len(calls)))
    for want in gold.calls:
        hit = next((i for i in unused
                    if _call_matches(want, calls[i], sources, values)), None)
        if hit is None:
            return False
        unused.remove(hit)
    return True


def _call_matches(want: GoldCall, got: RecordedCall, sources: Mapping[tuple[str, str], set[Source]],
                  values: SymbolicValues) -> bool:
    if got.tool != want.tool:
        return False
    names = {n for n, _ in want.literals} | set(want.referenced)
    if set(got.arguments) != names:
        return False
    for name, text in want.literals:
        if not _same_value(json.loads(text), got.arguments[name]):
            return False
    for name in want.referenced:
        allowed = sources.get((want.tool, name), set())
        if not values.sources_of(got.arguments[name]) & allowed:
            return False
    return True


def _same_value(expected: Any, actual: Any) -> bool:
    if expected == actual:
        return True
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    return str(expected).strip().casefold() == str(actual).strip().casefold()


def _norm_path(path: str) -> str:
    """``a[0].b`` / ``a.0.b`` / ``a[].b`` → ``a[].b``."""
    path = re.sub(r"\[\d+\]", "[]", path)
    return re.sub(r"\.(\d+)(?=\.|$)", "[]", path)


def goal_from_gold(gold: GoldTask) -> StructuredGoal | None:
    """One sub-goal per terminal tool with its literals; other literals are shared values."""
    terminals = terminals_of(gold)
    subgoals: list[SubGoal] = []
    shared: dict[str, Any] = {}
    for call in gold.calls:
        values = {name: json.loads(text) for name, text in call.literals}
        if call.tool in terminals and all(s.terminals != (call.tool,) for s in subgoals):
            subgoals.append(SubGoal(id=f"g{len(subgoals) + 1}", terminals=(call.tool,),
                                    values=values, description=f"call {call.tool}"))
            continue
        for key, value in values.items():
            shared.setdefault(key, value)
    return StructuredGoal(tuple(subgoals), shared) if subgoals else None


def default_data_path(suite: str) -> Path:
    """The suite's file under :func:`data_root`."""
    return data_root() / REPLAY_SUITES[suite]


def load_gold_suite(suite: str, data: str | Path | None) -> tuple[Catalog, list[GoldTask]]:
    """The union catalog and the gold tasks of ``suite`` read from ``data``."""
    from hyperplan_bench.eval.links import load_suite

    if suite not in REPLAY_SUITES:
        raise HyperplanError(f"unknown gold-call suite {suite!r}; expected "
                             f"{', '.join(REPLAY_SUITES)}")
    path = Path(data) if data else default_data_path(suite)
    if not path.exists():
        raise HyperplanError(f"{suite}: data not found at {path} (pass --data PATH or set "
                             "HYPERPLAN_DATA; see docs/data.md)")
    parts = load_suite(suite, path).parts
    tools = {t.name: t for catalog, _ in parts for t in catalog.tools}
    tasks = [t for _, part_tasks in parts for t in part_tasks]
    return Catalog(tools=tuple(tools.values()), source=suite), tasks


class ReplaySession:
    """A worker's catalog, graph and index; a fresh symbolic runtime per task."""

    def __init__(self, suite: str, data: str | Path | None, embedder: str) -> None:
        self.catalog, tasks = load_gold_suite(suite, data)
        self._gold = {t.id: t for t in tasks}
        self.embedder = get_embedder(embedder)
        self.graph = build_graph(self.catalog, embedder=self.embedder)
        self.index = GraphIndex(self.graph, self.embedder)
        self._runtimes: dict[str, SymbolicRuntime] = {}

    def start(self, task: EvalTask) -> ToolRuntime:
        runtime = SymbolicRuntime(self.catalog)
        self._runtimes[task.id] = runtime
        return runtime

    def check(self, task: EvalTask) -> bool:
        gold = self._gold.get(task.id)
        if gold is None:
            raise HyperplanError(f"unknown task {task.id!r}")
        runtime = self._runtimes.pop(task.id, None)
        if runtime is None:
            return False
        return matches_gold(gold, runtime.calls, runtime.values)


class ReplaySuite:
    """``nestools`` or ``nestful`` as an agent suite (``data``: the file or directory)."""

    def __init__(self, name: str, data: str | Path | None = None) -> None:
        if name not in REPLAY_SUITES:
            raise HyperplanError(f"unknown gold-call suite {name!r}")
        self.name = name
        self.data = str(data) if data else None

    def tasks(self) -> list[EvalTask]:
        catalog, tasks = load_gold_suite(self.name, self.data)
        return [EvalTask(t.id, t.text, goal_from_gold(t), min_calls=len(t.calls))
                for t in tasks if gold_replays(t, catalog)]

    def open(self, embedder: str) -> SuiteSession:
        return ReplaySession(self.name, self.data, embedder)


def replay_gold(gold: GoldTask, runtime: SymbolicRuntime) -> None:
    """Make ``gold``'s calls on ``runtime``, each referenced argument taken from the latest
    output of a producer the gold flows name for it (the check's sanity reference: a gold
    replay must pass :func:`matches_gold`)."""
    outputs: dict[str, Any] = {}
    for call in gold.calls:
        args = {name: json.loads(text) for name, text in call.literals}
        for name in call.referenced:
            flow = next((f for f in gold.flows if f.consumer == call.tool
                         and f.input_param == name and f.producer in outputs), None)
            if flow is None:
                raise HyperplanError(f"task {gold.id}: no earlier producer for "
                                     f"{call.tool}.{name}")
            args[name] = value_at(outputs[flow.producer], flow.output_path)
        result = runtime.call(runtime.tools[call.tool], args)
        if not result.ok:
            raise HyperplanError(f"task {gold.id}: gold call failed: {result.error}")
        outputs[call.tool] = result.value


def value_at(value: Any, path: str) -> Any:
    """The value at a gold-flow output path (``a.b``, ``a[].b``, ``a[0].b``) of an output."""
    for part in _norm_path(path).replace("[]", ".[]").split("."):
        if not part:
            continue
        if part == "[]":
            value = value[0] if isinstance(value, list) and value else value
        elif isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, dict) and "result" in value and len(value) == 1:
            value = value["result"]
    return value


def gold_replays(gold: GoldTask, catalog: Catalog) -> bool:
    """Whether ``gold``'s own calls, replayed symbolically, pass :func:`matches_gold`."""
    runtime = SymbolicRuntime(catalog)
    try:
        replay_gold(gold, runtime)
    except (HyperplanError, KeyError):
        return False
    return matches_gold(gold, runtime.calls, runtime.values)
