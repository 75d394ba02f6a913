"""What the framework adapters share: a framework's tool schemas as a hyperplan catalog, and a
provider request's messages read as the request and the calls made (the selectors, the
conversations and the narrowing are the selection host's, :mod:`hyperplan.integrations.host`).

Frameworks hand their tools over as JSON schemas of the inputs only (OpenAI functions, Anthropic
``input_schema``, LangChain ``args_schema``, pydantic-ai ``ToolDefinition``): which tool's output
feeds which input is what the hypergraph needs and what they drop. Where the adapter can see it,
the output schema comes from the tool itself (an MCP tool's ``outputSchema``, a Python function's
return annotation, ``sources`` naming the same tools); otherwise a tool whose description has a
"returns X" clause ("Find the ticket by its title; returns the ticket id.") gets one untyped
output described by it, which link inference reads like any output description
(:func:`hyperplan.graph.text.returns_clause`). Tools whose schemas hyperplan cannot read are
never dropped: they are kept in every narrowed list.

Nothing here imports a framework, and nothing heavy loads before the first selection.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hyperplan.integrations.host.conversation import Call as Call

if TYPE_CHECKING:
    from hyperplan.catalog import ToolSpec


@dataclass(frozen=True)
class ToolDef:
    """One tool as a framework describes it: ``parameters`` is the input JSON Schema,
    ``returns`` the output JSON Schema when the framework knows one."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    returns: Mapping[str, Any] | None = None

    def key(self) -> str:
        """A canonical text of the definition (what the selector cache hashes)."""
        return json.dumps([self.name, self.description, self.parameters, self.returns],
                          sort_keys=True, ensure_ascii=False, default=str)


def provider_tool(entry: Any) -> ToolDef | None:
    """The :class:`ToolDef` of one entry of a provider request's ``tools`` in any of the shapes
    agents send: OpenAI chat ``{"type": "function", "function": {name, description,
    parameters}}``, Responses API ``{"type": "function", "name", "description",
    "parameters"}``, Anthropic ``{name, description, input_schema}``, Bedrock Converse
    ``{"toolSpec": {name, description, inputSchema: {json}}}`` or a bare ``{name, description,
    parameters}``. None for an entry with no client-side function (a provider's own tool such
    as Anthropic's ``web_search_*`` or the Responses API's ``web_search``)."""
    if not isinstance(entry, Mapping):
        return None
    body: Any = entry
    params_key = "parameters"
    if isinstance(entry.get("function"), Mapping):
        body = entry["function"]
    elif isinstance(entry.get("toolSpec"), Mapping):
        body = entry["toolSpec"]
        schema = body.get("inputSchema")
        params = schema.get("json") if isinstance(schema, Mapping) else None
        return _def(body, params)
    elif "input_schema" in entry:
        params_key = "input_schema"
    elif entry.get("type") not in (None, "function", "custom"):
        return None  # a provider-executed tool declared by its type alone
    elif "parameters" not in entry and entry.get("type") != "function":
        return None
    return _def(body, body.get(params_key))


def _def(body: Mapping[str, Any], params: Any) -> ToolDef | None:
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    description = body.get("description")
    returns = body.get("returns", body.get("output_schema", body.get("outputSchema")))
    return ToolDef(name=name, description=description if isinstance(description, str) else "",
                   parameters=params if isinstance(params, Mapping) else None,
                   returns=returns if isinstance(returns, Mapping) else None)


def tool_name(entry: Any) -> str | None:
    """The name of a provider-format tool entry (None when it has none)."""
    found = provider_tool(entry)
    if found is not None:
        return found.name
    name = entry.get("name") if isinstance(entry, Mapping) else None
    return name if isinstance(name, str) else None


def output_schema_of(func: Callable[..., Any]) -> dict[str, Any] | None:
    """The output JSON Schema a Python callable's return annotation gives (hyperplan's
    ``python:`` importer reads it: TypedDicts, models, dataclasses, ``list[X]``...), None when
    it has none or it cannot be read."""
    from hyperplan.errors import HyperplanError
    from hyperplan.importers.python_callables import load_python_callables

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tools = load_python_callables([func], source="integration").tools
    except (HyperplanError, TypeError, ValueError):
        return None
    return dict(tools[0].output_schema) if tools and tools[0].output_schema else None


#: The output given to a tool whose description says what it returns but that has no schema.
GUESSED_OUTPUT: dict[str, Any] = {"type": "object", "properties": {"result": {}}}


def _result_output(description: str) -> dict[str, Any] | None:
    """One untyped output for a tool whose description says what it returns."""
    from hyperplan.graph.text import returns_clause

    return dict(GUESSED_OUTPUT) if returns_clause(description) else None


def to_spec(tool: ToolDef, richer: ToolSpec | None = None) -> ToolSpec | None:
    """The catalog entry of ``tool`` (its schemas, or ``richer``'s when a source describes the
    same tool), None when hyperplan cannot read its input schema or name."""
    from hyperplan.catalog import make_tool
    from hyperplan.errors import HyperplanError

    description = tool.description or (richer.description if richer else "")
    params = dict(tool.parameters) if tool.parameters else {"type": "object", "properties": {}}
    returns = dict(tool.returns) if tool.returns else None
    if richer is not None:
        params = richer.input_schema or params
        returns = returns or (dict(richer.output_schema) if richer.output_schema else None)
    if returns is None:
        returns = _result_output(description)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make_tool(name=tool.name, description=description, input_schema=params,
                             output_schema=returns, source="integration",
                             effects=richer.effects if richer else (),
                             preconditions=richer.preconditions if richer else ())
    except (HyperplanError, ValueError, TypeError):
        return None


def parse_result(value: Any) -> Any:
    """A tool result as JSON-like data: JSON text decoded, models dumped, anything else as
    it is (the session grounds what it can find in it)."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"') or text in ("true", "false", "null"):
            try:
                return json.loads(text)
            except ValueError:
                return value
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:
            return value
    return value


def parse_arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict (JSON text decoded; anything else empty)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


def parsed(call: Call) -> Call:
    """``call`` with its result as JSON-like data (:func:`parse_result`)."""
    return replace(call, result=parse_result(call.result))


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of blocks
    (OpenAI ``{"type": "text"|"input_text", "text"}``, Anthropic text blocks, Bedrock
    ``{"text"}``); tool results and images contribute nothing."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        kind = content.get("type")
        if kind in (None, "text", "input_text", "output_text") and \
                isinstance(content.get("text"), str):
            return str(content["text"])
        return ""
    if isinstance(content, (list, tuple)):
        return "\n".join(t for t in (text_of(c) for c in content) if t)
    return ""


def last_user_text(messages: Any) -> str:
    """The text of the last user message of a provider request's message list (OpenAI chat,
    Responses API input items, Anthropic or Bedrock messages); a user message that carries
    only tool results does not count."""
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, (list, tuple)):
        return ""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user" and \
                message.get("type") in (None, "message"):
            text = text_of(message.get("content")).strip()
            if text:
                return text
    return ""


def turns_in(messages: Any) -> tuple[list[Call], list[Call]]:
    """The calls of a provider request's message list (as :func:`calls_in` reads them) split
    at its last user message with text: this turn's calls and the earlier turns' (for
    ``earlier`` of :meth:`~hyperplan.integrations.host.SelectionHost.narrow`, which
    re-conditions on the new request)."""
    if not isinstance(messages, (list, tuple)):
        return [], []
    start = next((i for i in range(len(messages) - 1, -1, -1)
                  if last_user_text([messages[i]])), 0)
    return calls_in(messages[start:]), calls_in(messages[:start]) if start else []


def calls_in(messages: Any) -> list[Call]:
    """The tool calls of a provider request's message list with their results, in order: OpenAI
    chat ``tool_calls`` + ``tool`` messages, Responses API ``function_call`` +
    ``function_call_output`` items, Anthropic ``tool_use`` + ``tool_result`` blocks, Bedrock
    ``toolUse`` + ``toolResult`` blocks. A call without a result yet is left out."""
    if not isinstance(messages, (list, tuple)):
        return []
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    done: list[Call] = []

    def finish(call_id: Any, result: Any, ok: bool = True) -> None:
        found = pending.pop(str(call_id), None)
        if found is not None:
            done.append(Call(found[0], found[1], result, ok))

    for message in messages:
        if not isinstance(message, Mapping):
            continue
        kind = message.get("type")
        if kind == "function_call":
            pending[str(message.get("call_id"))] = (
                str(message.get("name")), parse_arguments(message.get("arguments")))
            continue
        if kind == "function_call_output":
            finish(message.get("call_id"), _output_text(message.get("output")))
            continue
        for call in message.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(fn, Mapping):
                pending[str(call.get("id"))] = (str(fn.get("name")),
                                                parse_arguments(fn.get("arguments")))
        if message.get("role") == "tool":
            finish(message.get("tool_call_id"), _output_text(message.get("content")))
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                pending[str(block.get("id"))] = (str(block.get("name")),
                                                 parse_arguments(block.get("input")))
            elif block.get("type") == "tool_result":
                finish(block.get("tool_use_id"), _output_text(block.get("content")),
                       not block.get("is_error"))
            elif isinstance(block.get("toolUse"), Mapping):
                use = block["toolUse"]
                pending[str(use.get("toolUseId"))] = (str(use.get("name")),
                                                      parse_arguments(use.get("input")))
            elif isinstance(block.get("toolResult"), Mapping):
                res = block["toolResult"]
                finish(res.get("toolUseId"), _output_text(res.get("content")),
                       res.get("status") != "error")
    return done


def _output_text(content: Any) -> Any:
    """A tool result as a message carries it: text, or blocks of text / JSON."""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and "json" in block:
                return block["json"]
        return text_of(content)
    return content
