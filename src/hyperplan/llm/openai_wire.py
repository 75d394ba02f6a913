"""The OpenAI chat-completions wire format of
:class:`~hyperplan.llm.openai_client.OpenAICompatibleLLM`: the request body
(:func:`chat_request`), a completion read back (:func:`interpret`, :class:`Step`) and a
server's error text read (:func:`error_detail`, :func:`context_error` for a request too long
for the model's context window). Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from hyperplan.llm.structured import parse_and_validate, with_schema_instruction
from hyperplan.llm.types import (
    ContextLengthError,
    JSONSchema,
    LLMError,
    LLMResponse,
    Message,
    OfferedTool,
    ToolCall,
    ToolChoice,
    Usage,
)

StructuredMode = Literal["json_schema", "json_object", "prompt"]
_DETAIL_WINDOW = 65536  # of an error body read: past it no cut at MAX_DETAIL_CHARS can reach
CONTEXT_ERROR = re.compile(
    r"maximum context length|context[_ ]length[_ ]exceeded|exceed_context_size|"
    r"exceeds the available context|context window|input is too long", re.IGNORECASE)
_CONTEXT_LIMIT = (re.compile(r"maximum context length is (\d+)"),
                  re.compile(r"available context size \((\d+) tokens\)"),
                  re.compile(r'"n_ctx"\s*:\s*(\d+)'))
_CONTEXT_PROMPT = (re.compile(r"\((\d+) in the messages"),
                   re.compile(r"messages resulted in (\d+) tokens"),
                   re.compile(r"request has (\d+) input tokens"),
                   re.compile(r"request \((\d+) tokens\) exceeds"),
                   re.compile(r'"n_prompt_tokens"\s*:\s*(\d+)'))
_CONTEXT_COMPLETION = (re.compile(r"(\d+) in the completion"),
                       re.compile(r"max_completion_tokens' is too large: (\d+)"))


def chat_request(
    model: str,
    temperature: float | None,
    convo: list[Message],
    schema: JSONSchema | None,
    tools: Sequence[OfferedTool] | None,
    tool_choice: ToolChoice,
    mode: StructuredMode | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """The body of one ``chat.completions.create`` call: the conversation (with the schema
    spelled out in the system prompt in the ``json_object`` and ``prompt`` modes), the tools,
    the tool choice and the response format of the structured-output ``mode``."""
    if schema is not None and mode in ("json_object", "prompt"):
        convo = with_schema_instruction(convo, schema)
    request: dict[str, Any] = {
        "model": model,
        "messages": [_message_param(m) for m in convo],
    }
    if temperature is not None:
        request["temperature"] = temperature
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if tools:
        request["tools"] = [_tool_param(t) for t in tools]
    if tool_choice is not None:
        request["tool_choice"] = (
            tool_choice
            if tool_choice in ("auto", "none", "required")
            else {"type": "function", "function": {"name": tool_choice}}
        )
    if schema is not None and mode == "json_schema":
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": dict(schema), "strict": False},
        }
    elif schema is not None and mode == "json_object":
        # The typed SDK parameter has no "schema" key; llama.cpp reads it from the body.
        request["extra_body"] = {
            "response_format": {"type": "json_object", "schema": dict(schema)}
        }
    return request


def interpret(completion: ChatCompletion, schema: JSONSchema | None) -> Step:
    """One completion read: its text, tool calls, usage and, with a ``schema``, the parsed
    reply or the validation error."""
    if not completion.choices:
        raise LLMError("LLM response has no choices")
    message = completion.choices[0].message
    text = message.content or ""
    calls = tuple(
        _tool_call(tc)
        for tc in message.tool_calls or ()
        if isinstance(tc, ChatCompletionMessageFunctionToolCall)
    )
    parsed: Any = None
    error: str | None = None
    if schema is not None and not calls:
        parsed, error = parse_and_validate(text, schema)
    return Step(text, parsed, calls, usage_of(completion), error)


class Step:
    """The interpretation of one completion."""

    __slots__ = ("calls", "error", "parsed", "text", "usage")

    def __init__(
        self, text: str, parsed: Any, calls: tuple[ToolCall, ...], usage: Usage, error: str | None
    ) -> None:
        self.text, self.parsed, self.calls, self.usage, self.error = (
            text,
            parsed,
            calls,
            usage,
            error,
        )

    def response(self, usage: Usage, latency: float, model: str) -> LLMResponse:
        return LLMResponse(self.text, self.parsed, self.calls, usage, latency, model)


def usage_of(completion: ChatCompletion) -> Usage:
    """The token usage a completion reports (zeros when it reports none)."""
    u = completion.usage
    return Usage(u.prompt_tokens, u.completion_tokens) if u is not None else Usage()


def _first_int(patterns: Sequence[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def context_error(detail: str, status: int | None) -> ContextLengthError:
    """A :class:`ContextLengthError` from a server's "too long for the context" reply."""
    limit = _first_int(_CONTEXT_LIMIT, detail)
    prompt = _first_int(_CONTEXT_PROMPT, detail)
    completion = _first_int(_CONTEXT_COMPLETION, detail)
    said = ", ".join(f"{label} {value}" for label, value in (
        ("window", limit), ("messages", prompt), ("completion", completion))
        if value is not None)
    return ContextLengthError(
        f"the request does not fit the model's context window ({said or 'sizes not given'} "
        f"tokens; status {status}): {detail}",
        status_code=status, limit=limit, prompt_tokens=prompt, completion_tokens=completion)


def error_detail(exc: openai.APIError) -> str:
    """The server's reason, uncut (the caller redacts, *then* cuts to
    :data:`~hyperplan.llm.openai_client.MAX_DETAIL_CHARS`); a huge body is read only as far
    as a cut could reach."""
    if isinstance(exc, openai.APIStatusError):
        try:
            body = exc.response.text[:_DETAIL_WINDOW]
        except Exception:
            body = ""
        return f"{exc.message} {body}".strip()
    return f"{type(exc).__name__}: {exc.message}"


def _tool_call(tc: ChatCompletionMessageFunctionToolCall) -> ToolCall:
    raw = tc.function.arguments or "{}"
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        args = None
    if not isinstance(args, dict):
        args = {"_raw_arguments": raw}
    return ToolCall(name=tc.function.name, arguments=args, id=tc.id)


def _message_param(m: Message) -> dict[str, Any]:
    param: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.name is not None:
        param["name"] = m.name
    if m.role == "tool":
        param["tool_call_id"] = m.tool_call_id or ""
    if m.tool_calls:
        param["content"] = m.content or None
        param["tool_calls"] = [
            {
                "id": tc.id or f"call_{i}",
                "type": "function",
                "function": {"name": tc.name, "arguments": tc.arguments_json()},
            }
            for i, tc in enumerate(m.tool_calls)
        ]
    return param


def _tool_param(t: OfferedTool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": dict(t.parameters),
        },
    }
