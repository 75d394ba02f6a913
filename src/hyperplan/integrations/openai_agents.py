"""hyperplan in the OpenAI Agents SDK (``openai-agents`` 0.24): per turn, the agent's model sees
only the tools hyperplan selects for the conversation so far, with no LLM on the path.

    from hyperplan.integrations.openai_agents import ToolSelection

    selection = ToolSelection(budget=10)
    server = MCPServerStdio(params, tool_filter=selection.tool_filter)   # MCP tools
    agent = Agent(name="a", tools=selection.narrow(my_function_tools), mcp_servers=[server])
    result = await Runner.run(agent, "cancel my order of Dune", hooks=selection.hooks)

* :meth:`ToolSelection.tool_filter` is a dynamic ``tool_filter`` for the SDK's MCP servers
  (``ToolFilterContext``). It reads the server's whole listing (``cached_tools``, which the SDK
  fills before filtering), MCP output schemas included, selects once per listing and answers
  each tool from that;
* :meth:`ToolSelection.narrow` gives function tools an ``is_enabled`` that asks the same kind of
  selection over the agent's function tools (an ``is_enabled`` they already had must agree too);
* :attr:`ToolSelection.hooks` (``RunHooks``) records each tool call's arguments and result, so
  the next turn's selection knows which values are held: producers of those drop out and what
  the new deficit needs comes in. Pass it as ``hooks=`` to ``Runner.run`` (or call
  :meth:`ToolSelection.record` from your own hooks). Calls already in the run's input (a
  conversation continued with ``result.to_input_list()``) are read from it.

The request is the last user message of the run's input (``RunContextWrapper.turn_input``);
the calls before it in the input are the conversation's earlier turns, which a new request
re-conditions (:meth:`hyperplan.select.Session.new_turn`). The calls recorded by the hooks
are kept per run (two runs never share them, whether or not they pass a ``context``).

One budget covers the agent's MCP servers and function tools together: each server's filter
answers from one selection over every server's listing (a server not listed yet in this run
is asked for its listing once) plus the function tools.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from agents import Agent, FunctionTool, RunContextWrapper, RunHooks, Tool
    from agents.agent import AgentBase
    from agents.mcp import ToolFilterContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("hyperplan.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'hyperplan[openai-agents]'") from exc

from hyperplan.integrations._catalog import (
    Call,
    ToolDef,
    last_user_text,
    parse_arguments,
    turns_in,
)
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

MAX_DECISIONS = 1024


def _function_def(tool: FunctionTool) -> ToolDef:
    return ToolDef(name=tool.name, description=tool.description or "",
                   parameters=tool.params_json_schema)


def _mcp_def(tool: Any) -> ToolDef:
    """A listed MCP tool (``mcp.types.Tool``: ``input_schema`` in mcp 2.x, ``inputSchema`` in
    1.x), its output schema included."""
    def field(snake: str, camel: str) -> Any:
        value = getattr(tool, snake, None)
        return value if value is not None else getattr(tool, camel, None)

    return ToolDef(name=str(tool.name), description=str(getattr(tool, "description", "") or ""),
                   parameters=field("input_schema", "inputSchema"),
                   returns=field("output_schema", "outputSchema"))


class ToolSelection:
    """One selection setup for agents of the OpenAI Agents SDK (module doc). ``budget``: tools
    selected per turn besides ``keep`` (names, or a predicate on the name); the rest as for
    :func:`hyperplan.select.build_selector`. ``host``: the
    :class:`~hyperplan.integrations.host.SelectionHost` that selects (``narrower`` is its
    deprecated name); ``conversations``: its table of the calls recorded per run."""

    narrower = deprecated_alias("host", "ToolSelection.narrower")

    def __init__(self, *, budget: int = DEFAULT_BUDGET, keep: Keep = (),
                 embedder: str | Embedder = "auto", cache_dir: str | Path | None = "default",
                 config: SelectConfig | None = None,
                 sources: Sequence[str | Catalog] = ()) -> None:
        self.host = SelectionHost(budget=budget, keep=keep, embedder=embedder,
                                  cache_dir=cache_dir, config=config, sources=sources)
        self.conversations = self.host.conversations
        self.hooks: RunHooks[Any] = _RecordingHooks(self)
        self._decided: OrderedDict[Hashable, Narrowed | None] = OrderedDict()
        self._pending: dict[Hashable, asyncio.Future[Narrowed | None]] = {}
        self._lock = threading.Lock()
        self._listing: tuple[ToolFilterContext | None, Narrowed | None] = (None, None)
        self._runs: OrderedDict[int, object] = OrderedDict()  # pins the ids of run keys

    # -- conversations --------------------------------------------------------------

    def conversation(self, run_context: RunContextWrapper[Any]) -> str:
        """The key a run's recorded calls are kept under: the run's own ``usage`` object,
        which the SDK makes per run and shares with every tool context of it (module doc)."""
        run = run_context.usage
        with self._lock:
            self._runs[id(run)] = run
            self._runs.move_to_end(id(run))
            while len(self._runs) > MAX_DECISIONS:
                self._runs.popitem(last=False)
        return f"run:{id(run)}"

    def record(self, run_context: RunContextWrapper[Any], tool: str, arguments: Any,
               result: Any, *, ok: bool = True) -> None:
        """Record one call for the run's conversation (what :attr:`hooks` does)."""
        self.conversations.ensure(self.conversation(run_context)).observe(
            Call(tool, parse_arguments(arguments), result, ok))

    def _state(self, run_context: RunContextWrapper[Any]
               ) -> tuple[str, list[Call], list[Call]]:
        """The request, this turn's calls and the earlier turns' calls of a run."""
        request = last_user_text(run_context.turn_input)
        calls, earlier = turns_in(run_context.turn_input)
        held = self.conversations.get(self.conversation(run_context))
        return request, calls + (held.calls() if held is not None else []), earlier

    async def _decide(self, key: Hashable, tools: Callable[[], list[ToolDef]], request: str,
                      calls: list[Call], earlier: list[Call]) -> Narrowed | None:
        """One selection per key, however many tools ask at once."""
        with self._lock:
            if key in self._decided:
                self._decided.move_to_end(key)
                return self._decided[key]
            pending = self._pending.get(key)
        if pending is None:
            loop = asyncio.get_running_loop()
            pending = loop.create_future()
            with self._lock:
                self._pending[key] = pending
            try:
                decided = await asyncio.to_thread(self.host.narrow, tools(), request,
                                                  calls, earlier=earlier)
            except BaseException as exc:
                with self._lock:
                    self._pending.pop(key, None)
                pending.set_exception(exc)
                raise
            with self._lock:
                self._pending.pop(key, None)
                self._decided[key] = decided
                while len(self._decided) > MAX_DECISIONS:
                    self._decided.popitem(last=False)
            pending.set_result(decided)
            return decided
        return await pending

    # -- MCP servers ----------------------------------------------------------------

    async def tool_filter(self, context: ToolFilterContext, tool: Any) -> bool:
        """A dynamic ``tool_filter`` for the SDK's MCP servers: whether ``tool`` is among
        the selected ones of this listing."""
        last_context, decided = self._listing
        if last_context is not context:
            decided = await self._listing_decision(context)
            self._listing = (context, decided)
        return decided is None or decided.allows(str(tool.name))

    async def _listing_decision(self, context: ToolFilterContext) -> Narrowed | None:
        servers = list(getattr(context.agent, "mcp_servers", ()))
        server = next((s for s in servers if s.name == context.server_name), None)
        if server is None or not server.cached_tools:
            return None  # no listing to select from: nothing is narrowed
        listings = [await _listing(s) if s is not server else list(server.cached_tools)
                    for s in servers]
        mcp_defs = [_mcp_def(t) for listed in listings for t in listed]
        functions = [_function_def(t) for t in getattr(context.agent, "tools", ())
                     if isinstance(t, FunctionTool)]
        request, calls, earlier = self._state(context.run_context)
        key = ("agent", id(context.agent), self.conversation(context.run_context), request,
               len(calls), tuple(d.name for d in mcp_defs))
        decided = await self._decide(key, lambda: mcp_defs + functions, request, calls, earlier)
        if decided is None:
            return None
        own = {str(t.name) for t in server.cached_tools}
        offered = {d.name for d in mcp_defs if d.name in own and decided.allows(d.name)}
        return dataclasses.replace(decided, names=tuple(sorted(offered)))

    # -- function tools -------------------------------------------------------------

    def narrow(self, tools: Sequence[Tool]) -> list[Tool]:
        """``tools`` with every function tool enabled only while selected (copies; other
        kinds of tools unchanged)."""
        out: list[Tool] = []
        for tool in tools:
            if isinstance(tool, FunctionTool):
                out.append(dataclasses.replace(tool, is_enabled=self.is_enabled(
                    tool.name, tool.is_enabled)))
            else:
                out.append(tool)
        return out

    def is_enabled(self, name: str, also: bool | Callable[..., Any] = True
                   ) -> Callable[[RunContextWrapper[Any], AgentBase[Any]], Awaitable[bool]]:
        """An ``is_enabled`` for the function tool ``name``: true while it is selected (and
        ``also``, the tool's own ``is_enabled``, holds)."""

        async def enabled(run_context: RunContextWrapper[Any], agent: AgentBase[Any]) -> bool:
            if also is False:
                return False
            if callable(also):
                own = also(run_context, agent)
                if not (await own if inspect.isawaitable(own) else own):
                    return False
            decided = await self._function_decision(run_context, agent)
            return decided is None or decided.allows(name)

        return enabled

    async def _function_decision(self, run_context: RunContextWrapper[Any],
                                 agent: AgentBase[Any]) -> Narrowed | None:
        tools = [t for t in getattr(agent, "tools", ()) if isinstance(t, FunctionTool)]
        request, calls, earlier = self._state(run_context)
        listed = [_mcp_def(t) for s in getattr(agent, "mcp_servers", ())
                  for t in (s.cached_tools or ())]
        defs = [_function_def(t) for t in tools]
        if listed:  # the same selection as the servers' filters (one budget)
            key: Hashable = ("agent", id(agent), self.conversation(run_context), request,
                             len(calls), tuple(d.name for d in listed))
            return await self._decide(key, lambda: listed + defs, request, calls, earlier)
        key = ("functions", self.conversation(run_context), id(agent), request, len(calls),
               len(tools))
        return await self._decide(key, lambda: defs, request, calls, earlier)


async def _listing(server: Any) -> list[Any]:
    """An MCP server's tools: its cached listing, else its session's own (unfiltered)
    listing, else none."""
    if server.cached_tools:
        return list(server.cached_tools)
    session = getattr(server, "session", None)
    if session is None:
        return []
    try:
        return list((await session.list_tools()).tools)
    except Exception:  # a server that cannot list now offers nothing to this selection
        return []


class _RecordingHooks(RunHooks[Any]):
    """Run hooks recording each local tool call (function and MCP tools) for the selection."""

    def __init__(self, selection: ToolSelection) -> None:
        self.selection = selection

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                          tool: Tool, result: object) -> None:
        arguments = getattr(context, "tool_arguments", None)
        name = getattr(context, "tool_name", None) or getattr(tool, "name", "")
        self.selection.record(context, str(name), arguments, _plain(result))


def _plain(result: object) -> Any:
    """A tool's output as JSON-like data (MCP results arrive as JSON text or content)."""
    if isinstance(result, str):
        return result
    try:
        return json.loads(json.dumps(result, default=str))
    except (TypeError, ValueError):
        return str(result)
