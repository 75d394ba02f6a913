"""hyperplan as a Hermes Agent plugin (``hermes-agent`` 0.19.0): before each model request, the
tools Hermes would send are narrowed to hyperplan's selection for the conversation so far, with
no LLM on the path.

Installed into Hermes' environment from a checkout or a built wheel with ``--no-deps`` (README,
"Installing for an agent": Hermes pins ``openai==2.24.0``), the plugin is found
through the entry-point group ``hermes_agent.plugins`` under the name ``hyperplan`` and, like
every pip plugin, is opt-in: ``hermes plugins enable hyperplan``. :meth:`HermesPlugin.register`
then adds

* an ``llm_request`` middleware: it reads the request's ``tools`` in the provider format of the
  ``api_mode`` (OpenAI chat ``{"type": "function", "function": {...}}``, Responses API
  ``{"type": "function", "name", ...}``, Anthropic ``{name, description, input_schema}``,
  Bedrock ``toolConfig.tools[].toolSpec``), takes the last user message of ``messages`` /
  ``input`` as the request, and returns the request with only the selected tools, the tools it
  keeps (below) and any provider-executed tool. The selector is built from the tools of the
  request itself (cached by the tool set, in memory and on disk), so nothing has to be
  configured;
* a ``post_tool_call`` hook that records each call, its arguments and result for the session
  (``session_id``), so the next request's selection knows which values are held: producers of
  those drop out and what the new deficit needs comes in (hyperplan's state-conditioned
  session). Without hook records (a resumed session) the calls are read from the messages.
  A Hermes session spans user messages: the calls since the last user message are this
  turn's, the others the earlier turns' (:meth:`hyperplan.select.Session.new_turn`: a
  follow-up that names no new value, "now close it", keeps using the id held; one that names
  another record by title is offered the lookup again);
* ``on_session_finalize`` / ``on_session_reset`` hooks that forget a session's records (not
  ``on_session_end``, which Hermes fires after every user message).

What is never narrowed away (``keep``): by default Hermes' core tools (``toolsets.
_HERMES_CORE_TOOLS``: terminal, files, web, browser, memory, todo, clarify...) and its tool-search
bridge (``tool_search``, ``tool_describe``, ``tool_call``), the tools Hermes itself never
defers; the narrowing then applies to MCP and plugin tools, which are what grows without bound.
A tool forced by ``tool_choice`` is kept too.

Settings, from the environment or the ``hyperplan:`` section of Hermes' ``config.yaml``
(the environment wins):

* ``HYPERPLAN_HERMES_BUDGET`` / ``budget``: tools selected per request besides the kept ones
  (default 10);
* ``HYPERPLAN_HERMES_KEEP`` / ``keep``: comma-separated names, and the words ``core`` (Hermes'
  core tools), ``bridges`` (the tool-search bridge), ``none``; default ``core,bridges``;
* ``HYPERPLAN_HERMES_SOURCES`` / ``sources``: hyperplan sources (``mcp-server:CMD``,
  ``openapi:FILE``, ...; separated by ``;`` or new lines) describing the same tools better, e.g.
  with the output schemas Hermes drops from MCP tools;
* ``HYPERPLAN_HERMES_EMBEDDER`` / ``embedder``: hyperplan's embedder (default ``auto``);
  the graph cache lives under ``$HYPERPLAN_CACHE_DIR``.

Hermes' own tool search (``tools/tool_search.py``, config ``tools.tool_search.enabled``:
``auto`` by default, which activates once the MCP and plugin tools pass ``threshold_pct``, 10%,
of the context) replaces those tools with its ``tool_search`` bridge before any middleware
runs, so the plugin would see nothing left to narrow. The plugin detects the bridge in a request
and logs one warning naming the setting (:data:`TOOL_SEARCH_WARNING`); ``tools: {tool_search:
{enabled: 'off'}}`` in config.yaml lets hyperplan narrow the tools instead.

The plugin imports neither Hermes, nor hyperplan's MCP gateway, nor the ``mcp`` package (Hermes
pins its own ``mcp``); hyperplan's selection code loads on the first request, so Hermes' start is
not slowed. A failure inside the plugin is logged and leaves the request as Hermes built it.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperplan.integrations._catalog import Call, ToolDef
    from hyperplan.integrations.host import Narrowed, SelectionHost

logger = logging.getLogger("hyperplan.integrations.hermes")

#: Hermes' tool-search bridge (``tools/tool_search.py``): the model's way to reach the rest.
BRIDGE_TOOLS = frozenset({"tool_search", "tool_describe", "tool_call"})
DEFAULT_KEEP = "core,bridges"
#: Logged once when a request shows Hermes' own tool search already deferred the tools.
TOOL_SEARCH_WARNING = (
    "hyperplan: Hermes' own tool search is active (config.yaml tools.tool_search.enabled, "
    "'auto' by default): %s MCP/plugin tools were deferred behind its tool_search bridge "
    "before this plugin saw the request, so hyperplan has nothing to narrow. Set "
    "tools.tool_search.enabled: 'off' in $HERMES_HOME/config.yaml to let hyperplan select them.")


def hermes_core_tools() -> frozenset[str]:
    """Hermes' core tools (``toolsets._HERMES_CORE_TOOLS``), empty outside Hermes."""
    try:
        module = importlib.import_module("toolsets")
    except ImportError:
        return frozenset()
    names = getattr(module, "_HERMES_CORE_TOOLS", ())
    return frozenset(n for n in names if isinstance(n, str))


def keep_names(spec: str) -> frozenset[str]:
    """The tool names a ``keep`` setting names (words ``core``, ``bridges``, ``none``)."""
    names: set[str] = set()
    for word in (w.strip() for w in spec.split(",")):
        if word == "core":
            names |= hermes_core_tools()
        elif word == "bridges":
            names |= BRIDGE_TOOLS
        elif word and word != "none":
            names.add(word)
    return frozenset(names)


def _hermes_settings() -> dict[str, Any]:
    """The ``hyperplan:`` section of Hermes' config.yaml (empty outside Hermes)."""
    try:
        config = importlib.import_module("hermes_cli.config").load_config()
    except Exception:
        return {}
    section = config.get("hyperplan") if isinstance(config, Mapping) else None
    return dict(section) if isinstance(section, Mapping) else {}


def _setting(env: str, settings: Mapping[str, Any], key: str, default: Any) -> Any:
    value = os.environ.get(env)
    if value is not None and value.strip():
        return value
    return settings.get(key, default)


def _sources(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value or "")
    return [s.strip() for s in text.replace("\n", ";").split(";") if s.strip()]


class HermesPlugin:
    """The plugin object behind the ``hermes_agent.plugins`` entry point (module doc).

    Arguments left None are read from the environment / config.yaml when Hermes registers the
    plugin; ``host`` replaces the whole selection setup (tests, custom embedders): the
    plugin's one :class:`~hyperplan.integrations.host.SelectionHost`, whose conversations
    are Hermes' sessions. ``narrower`` is the deprecated name of ``host``."""

    def __init__(self, *, budget: int | None = None, keep: str | None = None,
                 sources: list[str] | None = None, embedder: str | None = None,
                 host: SelectionHost | None = None,
                 narrower: SelectionHost | None = None) -> None:
        if narrower is not None:
            warnings.warn("HermesPlugin(narrower=...) is deprecated: pass host=...",
                          DeprecationWarning, stacklevel=2)
        self.budget = budget
        self.keep = keep
        self.sources = sources
        self.embedder = embedder
        self._host = host or narrower
        self._lock = threading.Lock()
        self.last: Narrowed | None = None
        #: How many tools Hermes' own tool search had deferred when first seen (None: never).
        self.hermes_deferred: int | None = None

    # -- Hermes' plugin API ------------------------------------------------------------

    def register(self, ctx: Any) -> None:
        """Called by Hermes with its ``PluginContext``."""
        ctx.register_middleware("llm_request", self.on_llm_request)
        ctx.register_hook("post_tool_call", self.on_post_tool_call)
        # on_session_end fires after every run_conversation (each user message), so the
        # records go only at the real boundaries
        ctx.register_hook("on_session_finalize", self.on_session_finalize)
        ctx.register_hook("on_session_reset", self.on_session_finalize)

    def on_llm_request(self, request: Any = None, api_mode: str = "", session_id: str = "",
                       task_id: str = "", **_: Any) -> dict[str, Any] | None:
        """The ``llm_request`` middleware: ``{"request": narrowed}``, or None to leave the
        request as it is."""
        if not isinstance(request, Mapping):
            return None
        try:
            narrowed = self.narrow_request(request, session_id or task_id)
        except Exception:
            logger.warning("hyperplan: tool narrowing failed, request left unchanged",
                           exc_info=True)
            return None
        return None if narrowed is None else {"request": narrowed}

    def on_post_tool_call(self, tool_name: str = "", args: Any = None, result: Any = None,
                          session_id: str = "", task_id: str = "", status: str | None = "ok",
                          **_: Any) -> None:
        """The ``post_tool_call`` hook: the call joins its session's state."""
        try:
            from hyperplan.integrations._catalog import Call, parse_arguments

            name, arguments = tool_name, parse_arguments(args)
            if name == "tool_call" and isinstance(arguments.get("name"), str):
                name, arguments = arguments["name"], parse_arguments(arguments.get("arguments"))
            key = session_id or task_id
            if name and key:
                self.host.conversations.ensure(key).observe(
                    Call(name, arguments, result, status in (None, "ok")))
        except Exception:
            logger.warning("hyperplan: could not record a tool result", exc_info=True)

    def on_session_finalize(self, session_id: str = "", **_: Any) -> None:
        if self._host is not None and session_id:
            self._host.conversations.drop(session_id)

    # -- the narrowing -----------------------------------------------------------------

    def recorded(self, session: str) -> list[Call]:
        """The calls the ``post_tool_call`` hook recorded for ``session`` (kept in the host's
        conversations until the session ends)."""
        held = self.host.conversations.get(session) if session else None
        return held.calls() if held is not None else []

    @property
    def host(self) -> SelectionHost:
        """The selection host, built from the settings on first use."""
        if self._host is None:
            with self._lock:
                if self._host is None:
                    self._host = self._configured()
        return self._host

    @property
    def narrower(self) -> SelectionHost:
        """Deprecated: :attr:`host`."""
        warnings.warn("HermesPlugin.narrower is deprecated: use HermesPlugin.host",
                      DeprecationWarning, stacklevel=2)
        return self.host

    def _configured(self) -> SelectionHost:
        from hyperplan.integrations.host import DEFAULT_BUDGET, SelectionHost

        settings = _hermes_settings()
        budget = self.budget if self.budget is not None else \
            int(_setting("HYPERPLAN_HERMES_BUDGET", settings, "budget", DEFAULT_BUDGET))
        keep = self.keep if self.keep is not None else \
            str(_setting("HYPERPLAN_HERMES_KEEP", settings, "keep", DEFAULT_KEEP))
        if isinstance(keep, (list, tuple)):
            keep = ",".join(map(str, keep))
        sources = self.sources if self.sources is not None else \
            _sources(_setting("HYPERPLAN_HERMES_SOURCES", settings, "sources", ""))
        embedder = self.embedder or str(_setting("HYPERPLAN_HERMES_EMBEDDER", settings,
                                                 "embedder", "auto"))
        return SelectionHost(budget=budget, keep=keep_names(keep), sources=sources,
                             embedder=embedder)

    def narrow_request(self, request: Mapping[str, Any], session: str) -> dict[str, Any] | None:
        """``request`` with its tools narrowed (a new dict), None when nothing changes."""
        from hyperplan.integrations._catalog import last_user_text, provider_tool, turns_in

        tools, put = _tools_of(request)
        if not tools:
            return None
        self._check_hermes_tool_search(tools)
        defs: list[ToolDef] = []
        for entry in tools:
            found = provider_tool(entry)
            if found is not None:
                defs.append(found)
        messages = request.get("messages", request.get("input"))
        text = last_user_text(messages)
        now, before = turns_in(messages)
        recorded = self.recorded(session)
        if recorded:
            now, before = split_turns(recorded, len(now), _user_turns(messages) > 1)
        forced = _forced(request.get("tool_choice"))
        narrowed = self.host.narrow(defs, text, now, also_keep=forced, earlier=before)
        if narrowed is None:
            return None
        self.last = narrowed
        kept = [t for t in tools if _offered(t, narrowed)]
        if len(kept) == len(tools):
            return None
        _move_cache_marker(tools, kept)
        return put(kept)

    def _check_hermes_tool_search(self, tools: list[Any]) -> None:
        """Warn once when Hermes' tool-search bridge stands in for deferred tools."""
        if self.hermes_deferred is not None:
            return
        deferred = hermes_deferred_count(tools)
        if deferred is not None:
            self.hermes_deferred = deferred
            logger.warning(TOOL_SEARCH_WARNING, deferred if deferred >= 0 else "its")


def split_turns(recorded: list[Call], this_turn: int, several: bool
                ) -> tuple[list[Call], list[Call]]:
    """The hook records of a session split into this user turn's calls and the earlier
    turns': the last ``this_turn`` records (as many calls as the messages show after the last
    user message) when the messages hold ``several`` user turns, else all of them."""
    if not several:
        return list(recorded), []
    cut = max(0, len(recorded) - this_turn)
    return list(recorded[cut:]), list(recorded[:cut])


def _user_turns(messages: Any) -> int:
    """How many user messages with text ``messages`` holds (tool results excluded)."""
    from hyperplan.integrations._catalog import last_user_text

    if not isinstance(messages, (list, tuple)):
        return 0
    return sum(1 for m in messages if last_user_text([m]))


def hermes_deferred_count(tools: list[Any]) -> int | None:
    """How many tools Hermes' ``tool_search`` bridge in ``tools`` stands for (read from its
    description, "Search N additional tools that are loaded on demand"), -1 when the bridge is
    there but the count cannot be read, None when Hermes' tool search is not active."""
    from hyperplan.integrations._catalog import provider_tool

    for entry in tools:
        found = provider_tool(entry)
        if found is None or found.name != "tool_search":
            continue
        names = {d.name for d in map(provider_tool, tools) if d is not None}
        if not {"tool_describe", "tool_call"} <= names:
            return None  # a tool of the user's own called tool_search
        match = _DEFERRED.search(found.description)
        return int(match.group(1)) if match else -1
    return None


_DEFERRED = re.compile(r"Search (\d+) additional tools")


def _offered(entry: Any, narrowed: Narrowed) -> bool:
    from hyperplan.integrations._catalog import provider_tool

    found = provider_tool(entry)
    return found is None or narrowed.allows(found.name)


def _tools_of(request: Mapping[str, Any]) -> tuple[list[Any],
                                                   Callable[[list[Any]], dict[str, Any]]]:
    """The request's tool list and how to put a new one in its place (Bedrock keeps it in
    ``toolConfig.tools``, every other mode in ``tools``)."""
    config = request.get("toolConfig")
    if isinstance(config, Mapping) and isinstance(config.get("tools"), list):
        def put_bedrock(tools: list[Any]) -> dict[str, Any]:
            return {**request, "toolConfig": {**config, "tools": tools}}

        return list(config["tools"]), put_bedrock
    tools = request.get("tools")

    def put(new: list[Any]) -> dict[str, Any]:
        return {**request, "tools": new}

    return (list(tools) if isinstance(tools, list) else []), put


def _forced(choice: Any) -> frozenset[str]:
    """The tool a ``tool_choice`` forces (OpenAI chat, Responses API, Anthropic, Bedrock)."""
    if not isinstance(choice, Mapping):
        return frozenset()
    fn = choice.get("function")
    if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
        return frozenset({fn["name"]})
    tool = choice.get("tool")
    if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
        return frozenset({tool["name"]})
    name = choice.get("name")
    return frozenset({name}) if isinstance(name, str) else frozenset()


def _move_cache_marker(before: list[Any], after: list[Any]) -> None:
    """Anthropic prompt caching marks the last tool with ``cache_control``; when narrowing
    dropped the marked tool, the new last tool carries the marker instead."""
    marked = [t for t in before if isinstance(t, Mapping) and "cache_control" in t]
    if not marked or not after or any(isinstance(t, Mapping) and "cache_control" in t
                                      for t in after):
        return
    last = after[-1]
    if isinstance(last, Mapping):
        after[-1] = {**last, "cache_control": marked[-1]["cache_control"]}


#: The object the ``hermes_agent.plugins`` entry point names; Hermes calls ``plugin.register``.
plugin = HermesPlugin()
register = plugin.register
