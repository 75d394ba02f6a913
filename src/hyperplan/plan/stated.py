"""Stated values are there to be used (our design; the paper does not cover it).

A value the user states without saying which call it is for (a known value given as a bare
parameter name, grounding rule 2 of :mod:`hyperplan.plan.grounding`) is normally meant for
some call of the plan. When no input of a planned tool takes a stated name, the plan probably
misses the call the value was stated for, and that call often produces a value the plan now
reads from a literal of the same name stated for the missing call: in "the sales tax on a
$500 purchase at 7%, and how much that is in euros", `amount` 500 belongs to the tax
calculation, while the conversion's `amount` is the tax; the plan that grounds the
conversion's `amount` with 500 leaves `tax_rate` unused.

* :func:`unused_values`: the stated names no input of the plan's tools takes;
* :func:`claimants`: the tools outside the plan with an input for an unused stated value
  (the calls the values were probably stated for);
* :func:`contested_names`: the stated names the plan's inputs take that a claimant also
  takes;
* :func:`release`: the grounding with the plan's inputs of those names ungrounded, so a
  re-plan can feed them from a producer;
* :func:`favour`: a relevance raised for the :func:`best_claimants` (per unused value, the
  most relevant claimant), so a re-plan prefers them as producers (``process_sound_clip``,
  which takes the stated ``effects`` and ``volume``, between the recording and the sculpture
  that reads the processed clip);
* :func:`keeps_takers`: whether a re-plan keeps every planned tool that takes a stated value
  (a claimant whose outputs no inferred link leads anywhere may be offered open-world, and
  then must not displace a call another value was stated for).
* :func:`attachable_claimants`: the best claimants that can join a plan as they are (they
  take an unused value as a required input and have all their required inputs), for a call
  that feeds the plan through an input no link or schema names.

The repairs that use these run as named steps of :func:`hyperplan.plan.support.plan_support`
(the planner the agent, the selector and the chains benchmark share): re-plan with the
released grounding (:func:`release_unused`), then, if values are still unused, with the best
claimants favoured too (given a relevance of the tools to the request), then with them also
offering their outputs open-world (a re-plan that must pass :func:`keeps_takers`), keeping a
new plan only if it leaves fewer stated values unused (:func:`uses_more`); last, the
:func:`attachable_claimants` join the plan where the policy says so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np

from hyperplan.graph.model import Hypergraph, NodeKind
from hyperplan.plan.grounding import Grounding

# Relevance added to the best claimants in a favouring re-plan (chosen on the NesTools and
# NESTFUL dev splits of ``hyperplan eval chains``: 0.5 / 1 / 2 / 3 / 5 / 10 gave a dev mean exact
# of 0.814 / 0.822 / 0.827 / 0.827 / 0.827 / 0.827; 2 is where the plateau starts).
CLAIMANT_BONUS = 2.0


def consumed_names(graph: Hypergraph, tools: Iterable[int]) -> set[str]:
    """The bare names of every input (required or optional; not preconditions) of ``tools``."""
    return {graph.nodes[i].path for t in tools for i in graph.tools[t].inputs
            if graph.nodes[i].kind is NodeKind.INPUT}


def unused_values(graph: Hypergraph, tools: Iterable[int], known: Collection[str]) -> set[str]:
    """The stated names (``known``) no input of ``tools`` takes."""
    return set(known) - consumed_names(graph, tools)


def _options(graph: Hypergraph, tools: Collection[int],
             known: Collection[str]) -> dict[str, set[int]]:
    """Per stated name no tool of ``tools`` takes, the tools outside ``tools`` with an input
    (required or optional) for it."""
    plan = set(tools)
    return {name: {graph.nodes[i].tool for i in graph.inputs_by_name.get(name, ())} - plan
            for name in unused_values(graph, tools, known)}


def claimants(graph: Hypergraph, tools: Collection[int], known: Collection[str]) -> set[int]:
    """The tools outside ``tools`` with an input (required or optional) for a stated name
    that no tool of ``tools`` takes: the calls the unused values were probably stated for."""
    return set().union(*_options(graph, tools, known).values())


def best_claimants(graph: Hypergraph, tools: Collection[int], known: Collection[str],
                   relevance: np.ndarray) -> set[int]:
    """Per stated name no tool of ``tools`` takes, the most relevant tool outside ``tools``
    with an input for it (the lowest tool id on ties): the one call each unused value was
    most probably stated for."""
    return {max(sorted(options), key=lambda t: float(relevance[t]))
            for options in _options(graph, tools, known).values() if options}


def attachable_claimants(graph: Hypergraph, tools: Collection[int], known: Collection[str],
                         grounding: Grounding, relevance: np.ndarray) -> set[int]:
    """The :func:`best_claimants` of the stated values ``tools`` leave unused that can join
    the plan as they are: each takes an unused value as a *required* input (an optional
    parameter name such as ``sortBy`` or ``limit`` is shared by too many tools to say which
    call it was stated for), and each of its required inputs is grounded or fed by a link
    from a tool of ``tools``. Such a call feeds the plan through an input no link or no
    schema names (an optional ``business_id``, or a ``ringtone`` the spec leaves out)."""
    plan = set(tools)
    unused = unused_values(graph, tools, known)
    out: set[int] = set()
    for c in best_claimants(graph, tools, known, relevance):
        required = graph.tools[c].required
        if not {graph.nodes[r].path for r in required} & unused:
            continue
        if all(grounding.grounded[r] or any(e in plan for e, _ in graph.producers_of(r))
               for r in required):
            out.add(c)
    return out


def contested_names(graph: Hypergraph, tools: Collection[int], known: Collection[str]) -> set[str]:
    """The stated names that inputs of ``tools`` take and that one of their
    :func:`claimants` also takes."""
    shared = consumed_names(graph, tools) & set(known)
    return {name for c in claimants(graph, tools, known)
            for name in consumed_names(graph, [c]) & shared}


def favour(relevance: np.ndarray, tools: Iterable[int], bonus: float) -> np.ndarray:
    """A copy of ``relevance`` with ``bonus`` added for each of ``tools``."""
    out = np.array(relevance, dtype=np.float64)
    out[list(tools)] += bonus
    return out


def takers(graph: Hypergraph, tools: Iterable[int], known: Collection[str]) -> set[int]:
    """The tools of ``tools`` with an input (required or optional) for a stated name."""
    names = set(known)
    return {t for t in tools if consumed_names(graph, [t]) & names}


def keeps_takers(graph: Hypergraph, old: Iterable[int], new: Iterable[int],
                 known: Collection[str]) -> bool:
    """Whether the plan ``new`` keeps every tool of ``old`` that takes a stated value (a
    re-plan that brings a claimant in may displace steps no stated value ties to the request,
    never a call a value was stated for)."""
    return takers(graph, old, known) <= set(new)


def release(graph: Hypergraph, grounding: Grounding, tools: Iterable[int],
            names: Collection[str]) -> Grounding:
    """``grounding`` with the inputs of ``tools`` named in ``names`` ungrounded."""
    vector = grounding.grounded.copy()
    for t in tools:
        for i in graph.tools[t].inputs:
            if graph.nodes[i].kind is NodeKind.INPUT and graph.nodes[i].path in names:
                vector[i] = False
    vector.setflags(write=False)
    return Grounding(vector)


def release_unused(graph: Hypergraph, tools: Collection[int], known: Collection[str],
                   grounding: Grounding) -> Grounding | None:
    """The grounding to plan again with when the plan ``tools`` leaves stated values unused:
    ``grounding`` with the plan's :func:`contested_names` released; None when none is."""
    contested = contested_names(graph, tools, known)
    return release(graph, grounding, tools, contested) if contested else None


def uses_more(graph: Hypergraph, new: Iterable[int], old: Iterable[int],
              known: Collection[str]) -> bool:
    """Whether the plan ``new`` leaves fewer stated values unused than ``old``."""
    return len(unused_values(graph, new, known)) < len(unused_values(graph, old, known))
