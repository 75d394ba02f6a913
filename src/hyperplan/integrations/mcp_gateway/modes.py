"""What the gateway lists and answers in each mode, free of any MCP SDK type (the server
module turns these plain dicts into protocol objects).

* **search** (:attr:`Mode.SEARCH`): ``tools/list`` is always ``find_tools`` and ``call_tool``.
  ``find_tools(request, known?, budget?)`` returns the selected tools as MCP tool definitions
  (their real upstream schemas), each with why it is there (anchored by the request, or the
  producer of an input of another selected tool), the chain Deficit-Oriented Expansion
  proposes and the definitions' token counts. ``call_tool(name, arguments)`` forwards to any
  upstream tool and feeds the result into the conversation's state.
* **narrow** (:attr:`Mode.NARROW`): ``tools/list`` is ``find_tools`` plus the tools currently
  selected for the conversation. After ``find_tools`` and after every call the gateway selects
  again from the state (Definition 4: what the calls returned is now held, so its producers
  drop out and what the new deficit needs comes in); when the list changed the server
  announces ``notifications/tools/list_changed``. After a call that selection is
  :meth:`Gateway.refresh`, which the server runs once the call's result is sent (the reply
  is ``observed``), so the call does not wait for it; the conversation's next request does.
  The list keeps its order (new tools appended) and is announced changed only when its set
  changed. A call of a tool that was never selected for the conversation (listed, or returned
  by ``find_tools``) is refused, not forwarded; one ``find_tools`` returned earlier is
  forwarded even when the list has moved on.

In both modes ``find_tools`` is how the gateway learns of a new user request (MCP has no
user turn): a request other than the conversation's last one starts a new turn of its state
(:mod:`.conversations`).

Every tool ``find_tools`` returns carries its ``hints``: the MCP annotations the upstream
declared (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) and its
``title`` (for a tool that is not an MCP upstream's, what its catalog entry says: read-only,
destructive), so a client in search mode, where every call goes through ``call_tool``, can
still ask for approval per tool. In narrow mode the listed tools keep their annotations.

Each answer is for one conversation (:mod:`.conversations`), or for none: a request that names
no conversation the gateway holds is served stateless (a call is forwarded and nothing is
remembered; in narrow mode any upstream tool may then be called by name).

Every reply is redacted by value (:mod:`hyperplan.secrets`) before it leaves, errors
included. Oversized input is refused with a message naming the limit: a ``find_tools``
request longer than ``max_request_chars``, ``call_tool`` arguments larger than
``max_argument_bytes`` of JSON.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.integrations.mcp_gateway.config import MAX_BUDGET, MAX_KNOWN, GatewayConfig, Mode
from hyperplan.integrations.mcp_gateway.conversations import (
    CONVERSATION_META,
    Conversation,
    conversation_table,
)
from hyperplan.integrations.mcp_gateway.selection import SelectionService
from hyperplan.integrations.mcp_gateway.upstream import MCP_SERVER, Upstream
from hyperplan.secrets import redact_text, redact_value

if TYPE_CHECKING:
    from hyperplan.select import Selection

FIND_TOOLS = "find_tools"
CALL_TOOL = "call_tool"
CONVERSATION = "conversation"  # the argument of find_tools / call_tool that carries the token
_META_NAME = CONVERSATION_META
HINT_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})

FIND_TOOLS_DEFINITION: dict[str, Any] = {
    "name": FIND_TOOLS,
    "title": "Find the tools for a task",
    "description": (
        "Find the tools for what you want to do, with no LLM involved: the tools the request "
        "names plus the tools that produce the inputs they need (e.g. the lookup that yields "
        "an id), in the order to call them, given what you already hold. Call it first, and "
        "again when the task changes."),
    "inputSchema": {
        "type": "object",
        "properties": {
            "request": {"type": "string",
                        "description": "What you want to do, in a sentence or two."},
            "known": {"type": "array", "items": {"type": "string"},
                      "description": "Names of values you already hold (e.g. order_id), so "
                                     "the tools that produce them are not proposed."},
            "budget": {"type": "integer", "minimum": 1, "maximum": MAX_BUDGET,
                       "description": "How many tools at most."},
            CONVERSATION: {"type": "string",
                           "description": "The conversation token an earlier find_tools "
                                          "returned, so the state carries over (leave it out "
                                          "to start a new conversation)."},
        },
        "required": ["request"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}

CALL_TOOL_DEFINITION: dict[str, Any] = {
    "name": CALL_TOOL,
    "title": "Call a tool find_tools returned",
    "description": (
        "Call one of the tools find_tools returned: name is its name, arguments an object "
        "matching its inputSchema. Arguments are checked against the schema before anything "
        "is sent."),
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
            CONVERSATION: {"type": "string",
                           "description": "The conversation token find_tools returned, so "
                                          "the result is remembered in its state."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Reply:
    """The answer to one ``tools/call``: ``text`` (and ``blocks``, content an MCP upstream
    returned that is not text), ``structured`` content, whether it is an error, whether the
    conversation's tool list changed (narrow ``find_tools``) and whether the call was
    forwarded and its result ``observed`` into the state (narrow mode: select again)."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False
    list_changed: bool = False
    blocks: tuple[dict[str, Any], ...] = ()
    observed: bool = False
    conversation: str | None = None  # the token of the conversation answered, if any


def error_reply(message: str, kind: str = "gateway", **extra: Any) -> Reply:
    """An error the client sees as a tool error (``isError``), redacted."""
    text = redact_text(message)
    return Reply(text, {"error": text, "error_kind": kind, **redact_value(extra)},
                 is_error=True)


class Gateway:
    """The two modes over ``upstream`` and ``service`` (module doc). Methods are blocking and
    thread-safe: the server runs them in worker threads."""

    def __init__(self, upstream: Upstream, service: SelectionService,
                 config: GatewayConfig) -> None:
        self.upstream = upstream
        self.service = service
        self.config = config
        self.table = conversation_table(service, config.conversation_limits)

    @property
    def mode(self) -> Mode:
        return self.config.mode

    # tools/list -------------------------------------------------------------------------

    def list_tools(self, conv: Conversation | None) -> list[dict[str, Any]]:
        """The MCP tool definitions the client sees now (narrow mode without a conversation:
        ``find_tools`` alone). Upstream definitions are redacted: a server may put a
        credential it was given into a parameter's default or description."""
        if self.mode is Mode.SEARCH:
            return [FIND_TOOLS_DEFINITION, CALL_TOOL_DEFINITION]
        listed = conv.listed if conv is not None else ()
        return [FIND_TOOLS_DEFINITION, *(self.upstream.definition(n) for n in listed)]

    # tools/call -------------------------------------------------------------------------

    def call(self, conv: Conversation | None, name: str, arguments: Mapping[str, Any] | None,
             *, timeout: float | None = None) -> Reply:
        """Answer ``tools/call`` of ``name`` for ``conv`` (None: stateless; ``find_tools``
        then answers for a throwaway state). A forwarded call gets ``timeout`` seconds (the
        gateway's ``call_timeout`` when None). Never raises for bad input: every problem is
        an error reply the client can read."""
        reply = self._call(conv, name, arguments, timeout)
        return replace(reply, conversation=conv.token if conv is not None else None)

    def _call(self, conv: Conversation | None, name: str,
              arguments: Mapping[str, Any] | None, timeout: float | None) -> Reply:
        try:
            args = dict(arguments or {})
            if name == FIND_TOOLS:
                return self._find_tools(conv, args)
            if self.mode is Mode.SEARCH:
                if name == CALL_TOOL:
                    return self._call_tool(conv, args, timeout)
                return error_reply(
                    f"{name!r} is not a tool of this gateway: in search mode it serves "
                    f"{FIND_TOOLS} and {CALL_TOOL}. Call {CALL_TOOL} with "
                    f"name={name!r} and the tool's arguments.", "unknown_tool")
            return self._narrow_call(conv, name, args, timeout)
        except Exception as exc:  # a gateway bug must cost one call, not the session
            return error_reply(f"{name}: the gateway failed on this call: "
                               f"{type(exc).__name__}: {exc}", "internal")

    def refresh(self, conv: Conversation) -> bool:
        """Narrow mode: select again from the conversation's state (after a call, or once the
        graph is ready); True when the listed tools changed."""
        if self.mode is not Mode.NARROW:
            return False
        found = conv.reselect()
        return found is not None and self._relist(conv, found)

    def _find_tools(self, conv: Conversation | None, args: dict[str, Any]) -> Reply:
        unknown = sorted(set(args) - {"request", "known", "budget", CONVERSATION})
        if unknown:
            return error_reply(f"{FIND_TOOLS}: unknown argument(s) {', '.join(unknown)}; it "
                               "takes request, known and budget", "invalid_arguments")
        request = args.get("request")
        if not isinstance(request, str) or not request.strip():
            return error_reply(f"{FIND_TOOLS}: 'request' must be a non-empty string saying "
                               "what you want to do", "invalid_arguments")
        if len(request) > self.config.max_request_chars:
            return error_reply(
                f"{FIND_TOOLS}: the request is {len(request):,} characters long; the limit is "
                f"{self.config.max_request_chars:,}. Say what you want to do in a few "
                "sentences.", "request_too_large")
        known = args.get("known", [])
        if not isinstance(known, list) or not all(isinstance(k, str) for k in known):
            return error_reply(f"{FIND_TOOLS}: 'known' must be a list of strings (names of "
                               "values you hold)", "invalid_arguments")
        if len(known) > MAX_KNOWN or sum(len(k) for k in known) > self.config.max_request_chars:
            return error_reply(f"{FIND_TOOLS}: 'known' is too large (at most {MAX_KNOWN} "
                               f"names, {self.config.max_request_chars:,} characters in all)",
                               "request_too_large")
        budget = args.get("budget", self.config.budget)
        if isinstance(budget, bool) or not isinstance(budget, int) \
                or not 1 <= budget <= MAX_BUDGET:
            return error_reply(f"{FIND_TOOLS}: 'budget' must be an integer from 1 to "
                               f"{MAX_BUDGET}", "invalid_arguments")
        kept = conv is not None
        state = conv if conv is not None else Conversation(self.service)
        found = state.find(request.strip(), known, budget)
        changed = self._relist(state, found) if self.mode is Mode.NARROW and kept else False
        return self._found_reply(state, found, changed, kept)

    def _found_reply(self, conv: Conversation, found: Selection, changed: bool,
                     kept: bool) -> Reply:
        data = found.as_dict()
        data["ready"] = self.service.ready
        data[CONVERSATION] = conv.token if kept else None
        listed = self.mode is Mode.NARROW and conv.bound
        if not listed:  # the definitions: the client's tool list does not show them
            data["tools"] = [{**self.upstream.definition(t["name"]), **t,
                              "server": self.upstream.server_of(t["name"])}
                             for t in data["tools"]]
        for tool in data["tools"]:
            tool["hints"] = self.hints(tool["name"])
        if self.mode is Mode.SEARCH:
            data["next"] = (f"Call these with {CALL_TOOL}(name, arguments), in the order of "
                            "'chain' when one is given; each result is remembered, so "
                            f"{FIND_TOOLS} afterwards proposes only what is still missing.")
        else:
            data["listed"] = list(conv.listed)
            data["list_changed"] = changed
            data["next"] = ("These tools are now in your tool list (tools/list); call them "
                            "directly, in the order of 'chain' when one is given. The list "
                            "follows what you hold after each call." if listed else
                            "Call these tools directly by name, in the order of 'chain' when "
                            "one is given. To see them in tools/list, pass the conversation "
                            f"token in each request's _meta under {_META_NAME!r}.")
        if kept and not conv.bound:
            data["next"] += (f" Pass {CONVERSATION}={conv.token!r} (or the same in _meta "
                             f"under {_META_NAME!r}) with every later request, so the state "
                             "carries over.")
        elif not kept:
            data.setdefault("notes", []).append(
                "this state is not kept: the gateway holds as many conversations for you as "
                "it may; results of calls are not remembered")
        data = redact_value(data)
        return Reply(json.dumps(data, ensure_ascii=False), data, list_changed=changed)

    def hints(self, name: str) -> dict[str, Any]:
        """Tool ``name``'s annotations as the client should weigh them (module doc): the
        declared hints and title; empty when the tool declares none."""
        definition = self.upstream.definition(name)
        annotations = definition.get("annotations")
        declared = annotations if isinstance(annotations, dict) else {}
        hints: dict[str, Any] = {k: declared[k] for k in HINT_KEYS
                                 if isinstance(declared.get(k), bool)}
        spec = self.upstream.tool(name)
        metadata = spec.metadata if spec is not None else {}
        for key, field in (("readOnlyHint", "read_only"), ("destructiveHint", "destructive")):
            if key not in hints and isinstance(metadata.get(field), bool):
                hints[key] = metadata[field]
        title = definition.get("title") or declared.get("title")
        if isinstance(title, str) and title:
            hints["title"] = title
        return hints

    def _relist(self, conv: Conversation, found: Selection) -> bool:
        """Narrow mode: the conversation's list becomes the selection, in a stable order (the
        tools kept where they were, new ones appended); True only when the *set* changed, so
        a client is not told to re-list (and drop its prompt cache) for a new order."""
        names = [n for n in found.names if n != FIND_TOOLS]
        conv.offered.update(names)
        if set(names) == set(conv.listed):
            return False
        kept = [n for n in conv.listed if n in names]
        conv.listed = (*kept, *(n for n in names if n not in kept))
        return True

    def _call_tool(self, conv: Conversation | None, args: dict[str, Any],
                   timeout: float | None) -> Reply:
        unknown = sorted(set(args) - {"name", "arguments", CONVERSATION})
        if unknown:
            return error_reply(f"{CALL_TOOL}: unknown argument(s) {', '.join(unknown)}; it "
                               "takes name and arguments", "invalid_arguments")
        name = args.get("name")
        if not isinstance(name, str) or not name:
            return error_reply(f"{CALL_TOOL}: 'name' must be the name of a tool "
                               f"{FIND_TOOLS} returned", "invalid_arguments")
        arguments = args.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error_reply(f"{CALL_TOOL}: 'arguments' must be an object, got "
                               f"{type(arguments).__name__}", "invalid_arguments")
        return self._forward(conv, name, arguments, timeout)

    def _narrow_call(self, conv: Conversation | None, name: str, args: dict[str, Any],
                     timeout: float | None) -> Reply:
        if self.upstream.tool(name) is None:
            return self._unknown(name)
        if conv is not None and name not in conv.listed and name not in conv.offered:
            now = ", ".join(conv.listed) or f"only {FIND_TOOLS}"
            return error_reply(
                f"{name} is not among the tools selected for this conversation (now: {now}); "
                f"call {FIND_TOOLS} with what you want to do and the tool list will include "
                "the tools for it. The call was not forwarded.", "not_selected")
        return self._forward(conv, name, args, timeout)

    def _unknown(self, name: str) -> Reply:
        close = difflib.get_close_matches(name, self.upstream.names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return error_reply(f"no upstream tool is named {name!r}{hint}; call {FIND_TOOLS} with "
                           "what you want to do to get the tools for it", "unknown_tool")

    def _forward(self, conv: Conversation | None, name: str, arguments: dict[str, Any],
                 timeout: float | None) -> Reply:
        if self.upstream.tool(name) is None:
            return self._unknown(name)
        size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
        if size > self.config.max_argument_bytes:
            return error_reply(f"{name}: the arguments are {size:,} bytes of JSON; the limit "
                               f"is {self.config.max_argument_bytes:,} (--max-argument-bytes)."
                               " The call was not forwarded.", "request_too_large")
        result = self.upstream.call(name, arguments, timeout=timeout)
        forwarded = result.error_kind not in (ErrorKind.INVALID_ARGUMENTS,
                                              ErrorKind.UNKNOWN_TOOL)
        if forwarded and conv is not None:
            conv.observe(name, arguments, result.value if result.ok else None, result.ok)
        return self._result_reply(result, forwarded, observed=forwarded and conv is not None)

    def _result_reply(self, result: ToolResult, forwarded: bool, observed: bool) -> Reply:
        if not result.ok:
            kind = result.error_kind.value if result.error_kind else "tool_error"
            failed = error_reply(result.error or f"{result.tool} failed", kind,
                                 tool=result.tool, forwarded=forwarded)
            return replace(failed, observed=observed)
        value = redact_value(result.value)
        blocks = _content_blocks(value) if self.upstream.source_of(result.tool).startswith(
            MCP_SERVER) else ()
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                               default=str)
        structured = value if isinstance(value, dict) else None
        return Reply(text, structured, blocks=blocks, observed=observed)


def _content_blocks(value: Any) -> tuple[dict[str, Any], ...]:
    """The content blocks an MCP upstream returned when they are not all text (the MCP
    runtime hands those on as a list of block dicts), else ()."""
    if isinstance(value, list) and value and all(
            isinstance(b, dict) and b.get("type") in _CONTENT_TYPES for b in value):
        return tuple(value)
    return ()
