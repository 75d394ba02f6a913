"""The lab's commands (``hyperplan eval``, ``hyperplan bench``), registered into the
``hyperplan`` command line by :mod:`hyperplan_bench.commands`."""
