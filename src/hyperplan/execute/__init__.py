"""Execution: agent state, tool runtimes, argument binding and the execution loop
(seed 000, "Task Execution")."""
