"""hyperplan in LangGraph: tool retrieval for ``langgraph-bigtool`` (0.0.3) and per-turn tool
narrowing for a plain LangGraph agent, with no LLM on the path.

``langgraph-bigtool``: its agent starts with one ``retrieve_tools`` tool and binds what that
returns. :func:`retrieve_tools_function` / :func:`retrieve_tools_coroutine` return the ids of
hyperplan's selection for the model's query, the producers the selected tools need included
(bigtool's default ranks descriptions by embedding similarity alone):

    from hyperplan.integrations.langgraph import retrieve_tools_coroutine, retrieve_tools_function

    builder = create_agent(llm, registry,
                           retrieve_tools_function=retrieve_tools_function(registry),
                           retrieve_tools_coroutine=retrieve_tools_coroutine(registry))

LangChain 1.x ``langchain.agents.create_agent``: ``middleware=[narrower.middleware()]``
(:meth:`ToolNarrower.middleware`, a ``wrap_model_call`` middleware). A plain agent
(``langgraph.prebuilt.create_react_agent``, or your own graph around a ``ToolNode``):
:class:`ToolNarrower` binds, per model call, only the tools selected for the
conversation so far (the last human message is the request; the tool calls and tool messages
of the current user turn are the state, so producers whose values are held drop out; those
of earlier turns re-condition on the new request, :meth:`hyperplan.select.Session.new_turn`):

    narrower = ToolNarrower(tools, budget=10)
    agent = create_react_agent(narrower.dynamic_model(llm), tools)     # all tools in ToolNode

or, in your own model node, ``narrower.bind(llm, state["messages"]).invoke(...)``.

Tools are LangChain ``BaseTool`` objects or plain callables; a ``StructuredTool`` made from a
function (``@tool``) gives its output schema through the function's return annotation.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("hyperplan.integrations.langgraph needs LangChain and LangGraph: "
                      "pip install 'hyperplan[langgraph]'") from exc

from hyperplan.integrations._catalog import Call, ToolDef, output_schema_of, text_of
from hyperplan.integrations.host.host import (
    DEFAULT_BUDGET,
    Keep,
    Narrowed,
    SelectionHost,
    deprecated_alias,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.runnables import Runnable

    from hyperplan.catalog import Catalog
    from hyperplan.embed.base import Embedder
    from hyperplan.select.selector import SelectConfig

ToolLike = BaseTool | Callable[..., Any]


def as_tool(tool: ToolLike) -> BaseTool:
    """A LangChain tool for ``tool`` (a plain callable wrapped as LangGraph's ``ToolNode`` does)."""
    return tool if isinstance(tool, BaseTool) else StructuredTool.from_function(tool)


def tool_def(tool: ToolLike) -> ToolDef:
    """The definition a chat model is sent for ``tool``, with the output schema its function's
    return annotation gives, if any."""
    function = convert_to_openai_tool(tool)["function"]
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None) or \
        (tool if not isinstance(tool, BaseTool) else None)
    returns = output_schema_of(func) if callable(func) else None
    return ToolDef(name=str(function["name"]), description=str(function.get("description", "")),
                   parameters=function.get("parameters"), returns=returns)


def calls_of(messages: Sequence[BaseMessage]) -> list[Call]:
    """The tool calls of a LangChain message history with their results, in order."""
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    done: list[Call] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                pending[str(call.get("id"))] = (call["name"], dict(call.get("args") or {}))
        elif isinstance(message, ToolMessage):
            found = pending.pop(str(message.tool_call_id), None)
            if found is not None:
                content = message.content if isinstance(message.content, str) else \
                    text_of(message.content)
                done.append(Call(found[0], found[1], content, message.status != "error"))
    return done


def turns_of(messages: Sequence[BaseMessage]) -> tuple[list[Call], list[Call]]:
    """The calls of the current user turn (after the last human message) and of the earlier
    turns (:meth:`hyperplan.select.Session.new_turn` re-conditions on the new request)."""
    start = _last_human(messages)
    return calls_of(messages[start:]), calls_of(messages[:start])


def _last_human(messages: Sequence[BaseMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and request_of([message]):
            return index
    return 0


def request_of(messages: Sequence[BaseMessage]) -> str:
    """The text of the last human message."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = message.content if isinstance(message.content, str) else \
                text_of(message.content)
            if text.strip():
                return text
    return ""


def _messages(state: Any) -> Sequence[BaseMessage]:
    if isinstance(state, Mapping):
        return list(state.get("messages") or ())
    found = getattr(state, "messages", None)
    return list(found) if found is not None else []


class ToolNarrower:
    """The tools to bind per model call of a LangGraph agent (module doc). ``budget``: tools
    selected per call besides ``keep`` (names, or a predicate on the name); the rest as for
    :func:`hyperplan.select.build_selector`. ``host``: the
    :class:`~hyperplan.integrations.host.SelectionHost` that selects (``narrower`` is its
    deprecated name)."""

    narrower = deprecated_alias("host", "ToolNarrower.narrower")

    def __init__(self, tools: Sequence[ToolLike], *, budget: int = DEFAULT_BUDGET,
                 keep: Keep = (), embedder: str | Embedder = "auto",
                 cache_dir: str | Path | None = "default", config: SelectConfig | None = None,
                 sources: Sequence[str | Catalog] = ()) -> None:
        self.tools = [as_tool(t) for t in tools]
        self.host = SelectionHost(budget=budget, keep=keep, embedder=embedder,
                                  cache_dir=cache_dir, config=config, sources=sources)
        self._defs: list[ToolDef] | None = None
        self.last: Narrowed | None = None

    @property
    def definitions(self) -> list[ToolDef]:
        if self._defs is None:
            self._defs = [tool_def(t) for t in self.tools]
        return self._defs

    def select(self, messages: Sequence[BaseMessage]) -> list[BaseTool]:
        """The tools for the conversation ``messages`` (all of them when nothing is narrowed:
        no human message yet, or no more tools than the budget)."""
        calls, earlier = turns_of(messages)
        decided = self.host.narrow(self.definitions, request_of(messages), calls,
                                   earlier=earlier)
        self.last = decided
        if decided is None:
            return list(self.tools)
        return [t for t in self.tools if decided.allows(t.name)]

    def bind(self, model: BaseChatModel, messages: Sequence[BaseMessage],
             **kwargs: Any) -> Runnable[LanguageModelInput, BaseMessage]:
        """``model`` with the selected tools bound (``kwargs`` go to ``bind_tools``)."""
        return model.bind_tools(self.select(messages), **kwargs)

    def dynamic_model(self, model: BaseChatModel, **kwargs: Any
                      ) -> Callable[[Any, Any], Runnable[LanguageModelInput, BaseMessage]]:
        """A dynamic model for ``create_react_agent(model=...)``: per call, ``model`` with
        the tools selected for the state's messages bound."""

        def select_model(state: Any, runtime: Any) -> Runnable[LanguageModelInput, BaseMessage]:
            return self.bind(model, _messages(state), **kwargs)

        return select_model

    def middleware(self) -> Any:
        """A middleware for LangChain 1.x ``langchain.agents.create_agent``: per model call
        (``wrap_model_call``), the request's tools narrowed to the selection for its
        messages (tools given as provider dicts are kept)::

            agent = create_agent(llm, tools, middleware=[narrower.middleware()])
        """
        try:  # typed as Any either way: LangChain is an optional extra
            middleware: Any = importlib.import_module("langchain.agents.middleware")
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("ToolNarrower.middleware needs LangChain 1.x: "
                              "pip install 'langchain>=1,<2'") from exc
        narrower = self

        class HyperplanToolSelection(middleware.AgentMiddleware):  # type: ignore[misc]
            """hyperplan's per-call tool narrowing (:class:`ToolNarrower`)."""

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                return handler(narrower.narrowed_request(request))

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                return await handler(await asyncio.to_thread(narrower.narrowed_request,
                                                             request))

        return HyperplanToolSelection()

    def narrowed_request(self, request: Any) -> Any:
        """A ``create_agent`` ``ModelRequest`` with its tools narrowed (:meth:`middleware`)."""
        tools = list(request.tools or ())
        if not any(isinstance(t, BaseTool) for t in tools):
            return request
        chosen = {t.name for t in self.select(request.messages)}
        kept = [t for t in tools if not isinstance(t, BaseTool) or t.name in chosen]
        return request.override(tools=kept)


class _Retriever:
    """hyperplan's selection over a ``langgraph-bigtool`` tool registry."""

    def __init__(self, registry: Mapping[str, ToolLike], *, budget: int,
                 host: SelectionHost) -> None:
        self.ids: dict[str, str] = {}
        self.defs: list[ToolDef] = []
        for key, tool in registry.items():
            found = tool_def(tool)
            if found.name not in self.ids:
                self.ids[found.name] = key
                self.defs.append(found)
        self.budget = budget
        self.host = host

    def __call__(self, query: str) -> list[str]:
        built = self.host.selector(self.defs)
        if built is None or not query.strip():
            return []
        selection = built.selector.select(query, budget=self.budget)
        return [self.ids[name] for name in selection.names if name in self.ids]


def _retriever(registry: Mapping[str, ToolLike], budget: int, embedder: str | Embedder,
               cache_dir: str | Path | None, config: SelectConfig | None,
               sources: Sequence[str | Catalog]) -> _Retriever:
    host = SelectionHost(budget=budget, embedder=embedder, cache_dir=cache_dir, config=config,
                         sources=sources)
    return _Retriever(registry, budget=budget, host=host)


def retrieve_tools_function(registry: Mapping[str, ToolLike], *, budget: int = 5,
                            embedder: str | Embedder = "auto",
                            cache_dir: str | Path | None = "default",
                            config: SelectConfig | None = None,
                            sources: Sequence[str | Catalog] = ()) -> Callable[[str], list[str]]:
    """A ``retrieve_tools_function`` for ``langgraph_bigtool.create_agent``: the registry ids
    of hyperplan's selection for the query (at most ``budget``, producers included)."""
    retrieve = _retriever(registry, budget, embedder, cache_dir, config, sources)

    def retrieve_tools(query: str) -> list[str]:
        """Retrieve the tools for a task, given a description of the task (what to do, to
        what). The tools that supply the inputs they need come with them."""
        return retrieve(query)

    return retrieve_tools


def retrieve_tools_coroutine(registry: Mapping[str, ToolLike], *, budget: int = 5,
                             embedder: str | Embedder = "auto",
                             cache_dir: str | Path | None = "default",
                             config: SelectConfig | None = None,
                             sources: Sequence[str | Catalog] = ()
                             ) -> Callable[[str], Coroutine[Any, Any, list[str]]]:
    """The coroutine twin of :func:`retrieve_tools_function` (the selection runs in a worker
    thread, so the event loop is not held while a first selector is built)."""
    retrieve = _retriever(registry, budget, embedder, cache_dir, config, sources)

    async def retrieve_tools(query: str) -> list[str]:
        """Retrieve the tools for a task, given a description of the task (what to do, to
        what). The tools that supply the inputs they need come with them."""
        return await asyncio.to_thread(retrieve, query)

    return retrieve_tools


__all__ = ["ToolNarrower", "as_tool", "calls_of", "request_of", "retrieve_tools_coroutine",
           "retrieve_tools_function", "tool_def", "turns_of"]
