"""hyperplan in pydantic-ai (``pydantic-ai-slim`` 2.x): per model request, the agent's function
tools are narrowed to hyperplan's selection for the conversation so far, with no LLM on the path.

    from pydantic_ai import Agent
    from hyperplan.integrations.pydantic_ai import ToolPreselection

    preselect = ToolPreselection(budget=10, returns=my_tools)     # returns: optional, below
    agent = Agent(model, tools=my_tools, capabilities=[preselect.capability()])

:class:`ToolPreselection` is a ``prepare_tools`` function (``ToolsPrepareFunc``): pydantic-ai 2
takes it as the ``PrepareTools`` capability (:meth:`ToolPreselection.capability`) or on a
toolset (``toolset.prepared(preselect)``, :func:`narrowed`). It reads the request (the last user
prompt) and the calls made so far (tool calls and their returns in ``ctx.messages``), so
producers whose values are held drop out and what the new deficit needs comes in; a new user
prompt re-conditions that state (:meth:`hyperplan.select.Session.new_turn`): the calls of
earlier turns no longer hold a producer back from a new value.

A tool definition's ``return_schema`` (pydantic-ai derives it from the function's return
annotation) is the tool's output schema, which gives the links from one tool's output to another's
input their best evidence. Where pydantic-ai cannot derive one (``typing.TypedDict`` before
Python 3.12), ``returns`` (the tool functions or ``Tool`` objects) lets hyperplan read the
annotations itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import PrepareTools
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.prepared import PreparedToolset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("hyperplan.integrations.pydantic_ai needs pydantic-ai 2: "
                      "pip install 'hyperplan[pydantic-ai]'") from exc

from hyperplan.integrations._catalog import Call, ToolDef, output_schema_of, text_of
from hyperplan.integrations.host.host import (
    DEFAULT_BUDGET,
    Keep,
    Narrowed,
    SelectionHost,
    deprecated_alias,
)

if TYPE_CHECKING:
    from hyperplan.catalog import Catalog
    from hyperplan.embed.base import Embedder
    from hyperplan.select.selector import SelectConfig


def request_of(messages: Sequence[Any], prompt: Any = None) -> str:
    """The text of the last user prompt of a pydantic-ai history (else the run's prompt)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    text = text_of(part.content)
                    if text.strip():
                        return text
    return text_of(prompt) if prompt is not None else ""


def calls_of(messages: Sequence[Any]) -> list[Call]:
    """The tool calls of a pydantic-ai history with their results, in order (a call the
    model had to retry counts as failed)."""
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    done: list[Call] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    pending[part.tool_call_id] = (part.tool_name, part.args_as_dict())
        elif isinstance(message, ModelRequest):
            for req in message.parts:
                if isinstance(req, ToolReturnPart):
                    found = pending.pop(req.tool_call_id, None)
                    if found is not None:
                        done.append(Call(found[0], found[1], req.model_response_object(),
                                         getattr(req, "outcome", "success") == "success"))
                elif isinstance(req, RetryPromptPart) and req.tool_name:
                    found = pending.pop(req.tool_call_id, None)
                    if found is not None:
                        done.append(Call(found[0], found[1], None, False))
    return done


def turns_of(messages: Sequence[Any]) -> tuple[list[Call], list[Call]]:
    """The calls of the current user turn (from the last user prompt on) and of the earlier
    turns (:meth:`hyperplan.select.Session.new_turn` re-conditions on the new request)."""
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(
                isinstance(p, UserPromptPart) and text_of(p.content).strip()
                for p in message.parts):
            start = index
            break
    return calls_of(messages[start:]), calls_of(messages[:start])


def _returns(tools: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Output schemas by tool name from functions or ``pydantic_ai.Tool`` objects."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        func = getattr(tool, "function", tool)
        name = getattr(tool, "name", None) or getattr(func, "__name__", None)
        schema = output_schema_of(func) if callable(func) else None
        if name and schema:
            out[str(name)] = schema
    return out


class ToolPreselection:
    """A ``prepare_tools`` function narrowing an agent's function tools to hyperplan's
    selection (module doc). ``budget``: tools selected per request besides ``keep`` (names,
    or a predicate on the name); ``returns``: tool functions or ``Tool`` objects whose return
    annotations give output schemas; the rest as for :func:`hyperplan.select.build_selector`.
    ``host``: the :class:`~hyperplan.integrations.host.SelectionHost` that selects
    (``narrower`` is its deprecated name)."""

    narrower = deprecated_alias("host", "ToolPreselection.narrower")

    def __init__(self, *, budget: int = DEFAULT_BUDGET, keep: Keep = (),
                 returns: Iterable[Callable[..., Any] | Any] = (),
                 embedder: str | Embedder = "auto", cache_dir: str | Path | None = "default",
                 config: SelectConfig | None = None,
                 sources: Sequence[str | Catalog] = ()) -> None:
        self.host = SelectionHost(budget=budget, keep=keep, embedder=embedder,
                                  cache_dir=cache_dir, config=config, sources=sources)
        self.returns = _returns(returns)
        self.last: Narrowed | None = None

    def _defs(self, tool_defs: Sequence[ToolDefinition]) -> list[ToolDef]:
        return [ToolDef(name=t.name, description=t.description or "",
                        parameters=t.parameters_json_schema,
                        returns=self.returns.get(t.name) or getattr(t, "return_schema", None))
                for t in tool_defs if t.kind == "function"]

    def narrow(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
               ) -> list[ToolDefinition]:
        """The tool definitions to send for this step (synchronously)."""
        calls, earlier = turns_of(ctx.messages)
        decided = self.host.narrow(self._defs(tool_defs), request_of(ctx.messages, ctx.prompt),
                                   calls, earlier=earlier)
        self.last = decided
        if decided is None:
            return tool_defs
        return [t for t in tool_defs if t.kind != "function" or decided.allows(t.name)]

    async def __call__(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
                       ) -> list[ToolDefinition]:
        """The ``ToolsPrepareFunc``: :meth:`narrow` in a worker thread (a first selector
        build does not hold the event loop)."""
        return await asyncio.to_thread(self.narrow, ctx, tool_defs)

    def capability(self) -> PrepareTools[Any]:
        """This preselection as pydantic-ai's ``PrepareTools`` capability."""
        return PrepareTools(self)


def narrowed(toolset: AbstractToolset[Any], **kwargs: Any) -> PreparedToolset[Any]:
    """``toolset`` with its tools narrowed per step (``kwargs``: :class:`ToolPreselection`'s)."""
    return toolset.prepared(ToolPreselection(**kwargs))
