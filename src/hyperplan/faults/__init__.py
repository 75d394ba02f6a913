"""``hyperplan bench faults``: the fault-injection benchmark of docs/benchmarks.md,
"`hyperplan bench faults`: the catalogue end to end through the command line"
(the faults, numbered by item, are those of its section "Runtime trust under faults").

It runs a catalogue of faults end to end through the command line - each a subprocess of
``python -m hyperplan ...`` with a hard wall-clock limit - against misbehaving servers, tools,
files and stores it starts itself on 127.0.0.1 and in a temporary directory
(:mod:`~hyperplan.faults.servers`), and classifies every case as exactly one of clear, crash,
hang, leak, repeated write, lost results or unclear (:mod:`~hyperplan.faults.verdict`). The
cases, one per fault, cite the fault item they reproduce: :mod:`~hyperplan.faults.run_cases`
(items 1-6), :mod:`~hyperplan.faults.file_cases` (7, 8, 10),
:mod:`~hyperplan.faults.eval_cases` (9). :mod:`~hyperplan.faults.runner` runs them.
"""

from __future__ import annotations

from collections.abc import Iterable

from hyperplan.faults import eval_cases, file_cases, run_cases
from hyperplan.faults.common import CASES
from hyperplan.faults.runner import Case, run_bench
from hyperplan.faults.verdict import Check, Outcome, Step, Verdict, classify

_MODULES = (run_cases, file_cases, eval_cases)  # imported for the cases they register


def all_cases() -> list[Case]:
    """The catalogue, ordered by fault item number."""
    return sorted(CASES, key=lambda c: c.item)


def select_cases(only: Iterable[str] = ()) -> list[Case]:
    """The cases named in ``only`` (all if empty); an unknown name is a ``ValueError``
    listing the known ones."""
    names = [n.strip() for n in only if n.strip()]
    if not names:
        return all_cases()
    known = {c.name: c for c in all_cases()}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [c for c in all_cases() if c.name in names]


__all__ = ["Case", "Check", "Outcome", "Step", "Verdict", "all_cases", "classify", "run_bench",
           "select_cases"]
