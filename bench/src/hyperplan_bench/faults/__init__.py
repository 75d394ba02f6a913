"""``hyperplan bench faults``: the fault-injection benchmark of docs/benchmarks.md,
"`hyperplan bench faults`: the catalogue end to end through the command line"
(the faults, numbered by item, are those of its section "Runtime trust under faults").

It runs a catalogue of faults end to end through the command line - each a subprocess of
``python -m hyperplan ...`` with a hard wall-clock limit - against misbehaving servers, tools,
files and stores it starts itself on 127.0.0.1 and in a temporary directory
(:mod:`~hyperplan_bench.faults.servers`), and classifies every case as exactly one of clear, crash,
hang, leak, repeated write, lost results or unclear (:mod:`~hyperplan_bench.faults.verdict`). The
cases, one per fault, cite the fault item they reproduce: :mod:`~hyperplan_bench.faults.run_cases`
(items 1-6), :mod:`~hyperplan_bench.faults.file_cases` (7, 8, 10),
:mod:`~hyperplan_bench.faults.eval_cases` (9). :mod:`~hyperplan_bench.faults.runner` runs them.

The ``gateway`` section (:mod:`~hyperplan_bench.faults.gateway_cases`, item 1 of issue 36,
:mod:`~hyperplan_bench.faults.gateway_http`, item 2,
:mod:`~hyperplan_bench.faults.gateway_calls`, items
3-4, :mod:`~hyperplan_bench.faults.gateway_faults`, items 5-6) runs
``hyperplan serve`` over stdio and ``--http`` against clients and misbehaving upstreams it
starts itself (:mod:`~hyperplan_bench.faults.gateway_servers`), and counts two more buckets:
isolation breaks and authentication bypasses.
"""

from __future__ import annotations

from collections.abc import Iterable

from hyperplan_bench.faults import (
    eval_cases,
    file_cases,
    gateway_calls,
    gateway_cases,
    gateway_faults,
    gateway_http,
    run_cases,
)
from hyperplan_bench.faults.common import CASES, SECTIONS
from hyperplan_bench.faults.runner import Case, run_bench
from hyperplan_bench.faults.verdict import Check, Outcome, Step, Verdict, classify

# imported for the cases they register
_MODULES = (run_cases, file_cases, eval_cases, gateway_cases, gateway_http, gateway_calls,
            gateway_faults)


def all_cases(section: str | None = None) -> list[Case]:
    """The catalogue (of one section, if given), by section and fault item number; an
    unknown section is a ``ValueError``."""
    if section is not None and section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}; known: {', '.join(SECTIONS)}")
    return sorted((c for c in CASES if section in (None, c.section)),
                  key=lambda c: (SECTIONS.index(c.section), c.item))


def select_cases(only: Iterable[str] = (), section: str | None = None) -> list[Case]:
    """The cases named in ``only`` (all of ``section``, or of every section, if empty); an
    unknown name is a ``ValueError`` listing the known ones."""
    names = [n.strip() for n in only if n.strip()]
    if not names:
        return all_cases(section)
    known = {c.name: c for c in all_cases(section)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [c for c in all_cases(section) if c.name in names]


__all__ = ["SECTIONS", "Case", "Check", "Outcome", "Step", "Verdict", "all_cases", "classify",
           "run_bench", "select_cases"]
