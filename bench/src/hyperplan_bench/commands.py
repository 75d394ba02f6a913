"""The lab's top-level commands, as the ``hyperplan`` command line reads them through the
``hyperplan.commands`` and ``hyperplan.aliases`` entry points (:func:`hyperplan.cli.commands`).
Importing this module loads no command: each :class:`~hyperplan.cli.Entry` names its module,
imported when the command runs."""

from __future__ import annotations

from hyperplan.cli import Entry

SEARCH = Entry("hyperplan_bench.cli.search_cmds:search_app", "Tree search (HyperMCTS) on "
               "generated long-horizon tasks: runs, sweeps, benchmarks.")
"""``hyperplan search``: HyperMCTS and its baselines on the generated tree-search suites."""

EVAL = Entry("hyperplan_bench.cli.eval_cmds:eval_app", "Benchmarks with stable JSON output, "
             "agent runs and their reports.",
             (("retrieval", "hyperplan_bench.cli.eval_retrieval:retrieval_cmd"),
              ("preselect", "hyperplan_bench.cli.eval_preselect:preselect_cmd"),
              ("run", "hyperplan_bench.cli.eval_run:eval_run_cmd"),
              ("report", "hyperplan_bench.cli.eval_run:report_cmd")))
"""``hyperplan eval``: the benchmark suites (chains, links, retrieval, preselect) and agent
runs with their reports."""

BENCH = Entry("hyperplan_bench.cli.bench_cmds:bench_app", "Scale benchmarks on synthetic "
              "catalogs.", (("select", "hyperplan_bench.cli.bench_select:select_cmd"),))
"""``hyperplan bench``: scale benchmarks on synthetic catalogs and the fault-injection bench."""

REPORT_ALIAS = ("hyperplan_bench.cli.eval_run:report_cmd", "eval report")
"""``hyperplan report``, the old name of ``hyperplan eval report`` (hidden)."""
