"""Fitting the planner's Tool Context Graph into the model's context window.

A server that rejects the planner's request as too long for its model
(:class:`~hyperplan.llm.types.ContextLengthError`) usually says how long the window is and how
many tokens the messages took. The planner prompt is a fixed part plus the serialised context
graph, so the graph is cut to its best-ranked tools (the budget ranking of Definition 2's
extraction, never insertion order) until the messages should leave ``room`` tokens for the
plan (``AgentConfig.plan_room``, default 512). The server counts in the model's tokens and
we count in cl100k tokens (:func:`~hyperplan.retrieve.serialize.count_tokens`); the first cut
assumes ``FIRST_RATIO`` model tokens per cl100k token, a second one measures the ratio from
the two rejected attempts. A server that gives no counts gets half the tools each time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hyperplan.llm.types import ContextLengthError
from hyperplan.retrieve.context_graph import ContextGraph
from hyperplan.retrieve.serialize import count_tokens

FIRST_RATIO = 1.25
"""Model tokens per cl100k token assumed before two attempts measure it (small open models'
tokenizers take about 1.1-1.3 times as many tokens as cl100k on tool documentation)."""
MAX_FITS = 2
"""How many times one planning call cuts its context graph before it gives up."""

Render = Callable[[ContextGraph], str]


def best_tools(cg: ContextGraph, n: int) -> ContextGraph:
    """``cg`` restricted to its ``n`` best-ranked tools."""
    return replace(cg, tools=cg.tools[:n])


def largest_fitting(cg: ContextGraph, render: Render, max_tokens: float) -> int:
    """The most best-ranked tools of ``cg`` whose rendered text has at most ``max_tokens``
    cl100k tokens (0 when not even the best one fits); binary search, the text growing with
    every tool added."""
    low, high = 0, len(cg.tools)
    while low < high:
        mid = (low + high + 1) // 2
        if count_tokens(render(best_tools(cg, mid))) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return low


def model_tokens_per_token(history: list[tuple[int, int]]) -> float:
    """Model tokens per cl100k token of context text, from the last two rejected attempts
    ``(cl100k tokens of the text sent, prompt tokens the server counted)`` when their texts
    differ in length, else :data:`FIRST_RATIO`; kept within [0.5, 3]."""
    if len(history) >= 2:
        (sent_a, counted_a), (sent_b, counted_b) = history[-2:]
        if sent_a != sent_b:
            return min(3.0, max(0.5, (counted_a - counted_b) / (sent_a - sent_b)))
    return FIRST_RATIO


def shrink_to_window(cg: ContextGraph, render: Render, error: ContextLengthError,
                     history: list[tuple[int, int]], room: int) -> ContextGraph | None:
    """A context graph of fewer best-ranked tools whose planner prompt should leave ``room``
    model tokens of the window ``error`` reports (module doc), or None when not even one tool
    would. ``history`` collects this planning call's rejected attempts; it is appended to."""
    n = len(cg.tools)
    if error.limit is None or error.prompt_tokens is None:
        keep = n // 2
    else:
        sent = count_tokens(render(cg))
        history.append((sent, error.prompt_tokens))
        excess = error.prompt_tokens + room - error.limit
        budget = sent - excess / model_tokens_per_token(history)
        keep = min(n - 1, largest_fitting(cg, render, budget))
    return best_tools(cg, keep) if keep >= 1 else None
