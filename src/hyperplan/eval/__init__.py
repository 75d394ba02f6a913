"""The tree-search benchmark suites (:mod:`hyperplan.eval.treesearch`), here until they join
the rest of the lab in hyperplan-bench (:mod:`hyperplan_bench.eval`)."""
