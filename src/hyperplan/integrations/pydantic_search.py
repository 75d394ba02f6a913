"""hyperplan as the search strategy of pydantic-ai's ``ToolSearch`` capability (pydantic-ai 2.68).

Tools made with ``defer_loading=True`` stay hidden until the search finds them; a callable
``strategy`` ``(ctx, queries, tools) -> names`` runs locally (pydantic-ai's ``search_tools``
function tool) and behind the providers' client-executed tool search (Anthropic
``tool_reference`` blocks, OpenAI ``execution="client"``). :func:`hyperplan_strategy` is that
callable: hyperplan's selection for the joined queries over the deferred tools, the producers
of their inputs included and conditioned on the calls of ``ctx.messages`` (Definition 4). An
empty answer is pydantic-ai's own "no matches" return, which tells the model not to retry::

    from pydantic_ai.capabilities import ToolSearch
    from hyperplan.integrations.pydantic_search import hyperplan_strategy
    search = ToolSearch(strategy=hyperplan_strategy())
    agent = Agent(model, tools=deferred_tools, capabilities=[search])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from pydantic_ai import RunContext
    from pydantic_ai.tools import ToolDefinition
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("hyperplan.integrations.pydantic_search needs pydantic-ai 2: "
                      "pip install 'hyperplan[pydantic-ai]'") from exc

from hyperplan.integrations._catalog import ToolDef
from hyperplan.integrations.pydantic_ai import calls_of
from hyperplan.integrations.tool_search import DEFAULT_LIMIT, MIN_SIMILARITY, Found, ToolSearch


def tool_def(definition: ToolDefinition) -> ToolDef:
    """A pydantic-ai ``ToolDefinition`` as hyperplan reads it (its return schema included)."""
    returns = getattr(definition, "return_schema", None)
    return ToolDef(name=definition.name, description=definition.description or "",
                   parameters=definition.parameters_json_schema,
                   returns=returns if isinstance(returns, dict) else None)


class HyperplanStrategy:
    """The ``ToolSearch`` strategy (module doc); ``last`` is the latest answer, with
    hyperplan's reasons."""

    def __init__(self, *, limit: int = DEFAULT_LIMIT, min_similarity: float = MIN_SIMILARITY,
                 **kwargs: Any) -> None:
        self.search = ToolSearch(limit=limit, min_similarity=min_similarity, **kwargs)
        self.last: Found | None = None

    def __call__(self, ctx: RunContext[Any], queries: Sequence[str],
                 tools: Sequence[ToolDefinition]) -> list[str]:
        query = "; ".join(q.strip() for q in queries if q and q.strip())
        found = self.search.search(query, calls=calls_of(ctx.messages),
                                   tools=[tool_def(t) for t in tools])
        self.last = found
        return list(found.names)


def hyperplan_strategy(*, limit: int = DEFAULT_LIMIT, **kwargs: Any) -> HyperplanStrategy:
    """A strategy for ``pydantic_ai.capabilities.ToolSearch(strategy=...)``; ``kwargs`` as
    :class:`~hyperplan.integrations.tool_search.ToolSearch` (embedder, cache_dir, sources)."""
    return HyperplanStrategy(limit=limit, **kwargs)
