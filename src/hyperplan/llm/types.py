"""Provider-neutral value types, the `LLM` protocol and `BaseLLM`, which implements it once.

Messages go in; an `LLMResponse` (text, parsed structured output, tool calls, usage, latency)
comes out. Everything here is a frozen dataclass so responses can be cached, compared and logged.
The deterministic core (graph/, retrieve/, plan/doe) must never import this package.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hyperplan._lazy import renamed_names

Role = Literal["system", "user", "assistant", "tool"]

JSONSchema = Mapping[str, Any]
"""A JSON Schema (draft 2020-12 or earlier) as a mapping."""

ToolChoice = str | None
"""`None` (provider default), ``"auto"``, ``"none"``, ``"required"`` or a tool name to force."""


class LLMError(RuntimeError):
    """An LLM call failed (transport, HTTP status, or malformed response). Never carries secrets."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ContextLengthError(LLMError):
    """The request does not fit the model's context window. ``limit`` is the window and
    ``prompt_tokens`` / ``completion_tokens`` what the request asked for, in the model's own
    tokens, as far as the server said (None when it did not)."""

    def __init__(self, message: str, *, status_code: int | None = None, limit: int | None = None,
                 prompt_tokens: int | None = None,
                 completion_tokens: int | None = None) -> None:
        super().__init__(message, status_code=status_code)
        self.limit = limit
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class StructuredOutputError(LLMError):
    """The model did not produce JSON that validates against the schema within the re-ask bound."""

    def __init__(self, message: str, *, last_text: str, validation_error: str) -> None:
        super().__init__(message)
        self.last_text = last_text
        self.validation_error = validation_error


@dataclass(frozen=True)
class ToolCall:
    """A tool (function) call requested by the model; `arguments` is the decoded JSON object."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def arguments_json(self) -> str:
        """The arguments as a compact JSON string (the wire format)."""
        return json.dumps(dict(self.arguments), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Message:
    """One chat message. `tool_calls` is for assistant turns, `tool_call_id` for tool results."""

    role: Role
    content: str = ""
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @staticmethod
    def system(content: str) -> Message:
        return Message("system", content)

    @staticmethod
    def user(content: str) -> Message:
        return Message("user", content)

    @staticmethod
    def assistant(content: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return Message("assistant", content, tool_calls=tuple(tool_calls))

    @staticmethod
    def tool(content: str, tool_call_id: str, name: str | None = None) -> Message:
        return Message("tool", content, name=name, tool_call_id=tool_call_id)


@dataclass(frozen=True)
class OfferedTool:
    """A tool definition sent to the model: name, description and a JSON Schema for its
    arguments (the function-calling "tools" of a request). Formerly ``ToolSpec``, a name that
    now means only :class:`hyperplan.catalog.ToolSpec`, a catalog's tool."""

    name: str
    description: str = ""
    parameters: JSONSchema = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Usage:
    """Token usage of one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class LLMResponse:
    """The result of `LLM.complete`.

    `parsed` is the decoded, schema-validated JSON value when a schema was requested (else None).
    `usage` and `latency_s` cover every HTTP request made for this completion (retries, mode
    fallbacks and re-asks included).
    """

    text: str
    parsed: Any = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""


@runtime_checkable
class LLM(Protocol):
    """The one interface the planning layers use. Implementations must be thread-safe."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: JSONSchema | None = None,
        tools: Sequence[OfferedTool] | None = None,
        tool_choice: ToolChoice = None,
        component: str = "",
    ) -> LLMResponse:
        """Complete a chat; `component` names the caller for accounting (e.g. "planner")."""
        ...

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: JSONSchema | None = None,
        tools: Sequence[OfferedTool] | None = None,
        tool_choice: ToolChoice = None,
        component: str = "",
    ) -> LLMResponse:
        """Async variant of `complete`."""
        ...


@dataclass(frozen=True)
class LLMRequest:
    """The arguments of one `LLM.complete` / `LLM.acomplete` call."""

    messages: Sequence[Message]
    schema: JSONSchema | None = None
    tools: Sequence[OfferedTool] | None = None
    tool_choice: ToolChoice = None
    component: str = ""

    def options(self) -> dict[str, Any]:
        """The keyword arguments, to hand the request to another `LLM`."""
        return {"schema": self.schema, "tools": self.tools, "tool_choice": self.tool_choice,
                "component": self.component}


class BaseLLM(ABC):
    """`LLM`'s two methods, written once for every implementation: they pack their arguments
    into an `LLMRequest` for `_complete` (and `_acomplete`, which by default runs
    `_complete`)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: JSONSchema | None = None,
        tools: Sequence[OfferedTool] | None = None,
        tool_choice: ToolChoice = None,
        component: str = "",
    ) -> LLMResponse:
        """Complete a chat; `component` names the caller for accounting (e.g. "planner")."""
        return self._complete(LLMRequest(messages, schema, tools, tool_choice, component))

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: JSONSchema | None = None,
        tools: Sequence[OfferedTool] | None = None,
        tool_choice: ToolChoice = None,
        component: str = "",
    ) -> LLMResponse:
        """Async variant of `complete`."""
        return await self._acomplete(LLMRequest(messages, schema, tools, tool_choice, component))

    @abstractmethod
    def _complete(self, request: LLMRequest) -> LLMResponse:
        """One completion of ``request``."""

    async def _acomplete(self, request: LLMRequest) -> LLMResponse:
        return self._complete(request)


__getattr__ = renamed_names(__name__, {"ToolSpec": "OfferedTool"})
