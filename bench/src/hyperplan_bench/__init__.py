"""hyperplan-bench: the lab beside the hyperplan library. It holds the benchmark suites and
their harness (:mod:`hyperplan_bench.eval`), fault injection (:mod:`hyperplan_bench.faults`),
synthetic catalogs (:mod:`hyperplan_bench.synthetic`), the importers of benchmark datasets
(:mod:`hyperplan_bench.importers`: τ², Seal-Tools, NESTFUL, NesTools, StableToolBench,
AppWorld and their gold calls) and the ``hyperplan eval`` / ``hyperplan bench`` commands
(:mod:`hyperplan_bench.cli`). It imports hyperplan; hyperplan never imports it, and finds its
commands and catalog sources through entry points (:mod:`hyperplan_bench.commands`,
:mod:`hyperplan_bench.sources`)."""
