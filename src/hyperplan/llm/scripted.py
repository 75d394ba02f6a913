"""`ScriptedLLM`: a deterministic test double for the `LLM` protocol.

Rules are tried in order; the first one that matches (component, role of the last message, regex
on the last user message, regex on the system prompt) and is not used up produces the response.
Every call is recorded in `ScriptedLLM.calls`. When a schema is requested, the scripted reply is
validated exactly like a real client would, so a drifting schema fails the test.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperplan.llm.budget import Accounting
from hyperplan.llm.structured import parse_and_validate
from hyperplan.llm.types import (
    BaseLLM,
    ContextLengthError,
    JSONSchema,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    OfferedTool,
    StructuredOutputError,
    ToolCall,
    ToolChoice,
    Usage,
)

_UNSET: Any = object()


@dataclass(frozen=True)
class ScriptedRule:
    """One scripted response and the conditions under which it is given.

    Give `text`, or `json` (any JSON value, serialised for `text`), and/or `tool_calls`.
    Matching: `component` (exact), `role` (role of the last message, e.g. "tool" after a tool
    result), `pattern` (regex searched in the last user message), `system_pattern` (regex searched
    in the system prompt). `times` bounds how often the rule may fire (None = unlimited).
    """

    text: str | None = None
    json: Any = _UNSET
    tool_calls: tuple[ToolCall, ...] = ()
    component: str | None = None
    role: str | None = None
    pattern: str | None = None
    system_pattern: str | None = None
    times: int | None = None
    usage: Usage | None = None

    def reply_text(self) -> str:
        if self.json is not _UNSET:
            return json.dumps(self.json, sort_keys=True)
        return self.text or ""

    def matches(self, messages: Sequence[Message], component: str) -> bool:
        if self.component is not None and self.component != component:
            return False
        if self.role is not None and (not messages or messages[-1].role != self.role):
            return False
        if self.pattern is not None:
            last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
            if re.search(self.pattern, last_user) is None:
                return False
        if self.system_pattern is not None:
            system = "\n".join(m.content for m in messages if m.role == "system")
            if re.search(self.system_pattern, system) is None:
                return False
        return True


@dataclass(frozen=True)
class ScriptedCall:
    """A recorded call to `ScriptedLLM`."""

    messages: tuple[Message, ...]
    schema: JSONSchema | None
    tools: tuple[OfferedTool, ...]
    tool_choice: ToolChoice
    component: str
    rule_index: int


@dataclass
class ScriptedLLM(BaseLLM):
    """Deterministic `LLM` double. Token usage is estimated as ceil(chars / 4) unless scripted.
    With ``context_window``, messages estimated longer than it raise `ContextLengthError`, as a
    server with that window would (counted as a failed call, no rule consumed)."""

    rules: Sequence[ScriptedRule]
    accounting: Accounting | None = None
    model: str = "scripted"
    context_window: int | None = None
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._used = [0] * len(self.rules)

    def _complete(self, request: LLMRequest) -> LLMResponse:
        """Return the first matching rule's response (see `ScriptedRule`)."""
        messages, component = request.messages, request.component
        if self.accounting is not None:
            self.accounting.check(component)
        prompt_tokens = -(-sum(len(m.content) for m in messages) // 4)
        if self.context_window is not None and prompt_tokens > self.context_window:
            if self.accounting is not None:
                self.accounting.record_call(component, Usage(), 0.0, error=True)
            raise ContextLengthError(
                f"ScriptedLLM: {prompt_tokens} tokens in the messages exceed the context window "
                f"of {self.context_window}", status_code=400, limit=self.context_window,
                prompt_tokens=prompt_tokens)
        with self._lock:
            index = self._pick(messages, component)
            self._used[index] += 1
            self.calls.append(ScriptedCall(tuple(messages), request.schema,
                                           tuple(request.tools or ()), request.tool_choice,
                                           component, index))
        return self._reply(index, prompt_tokens, request)

    async def _acomplete(self, request: LLMRequest) -> LLMResponse:
        """Async variant of `complete` (same rules, same recording)."""
        return self.complete(request.messages, **request.options())

    def _reply(self, index: int, prompt_tokens: int, request: LLMRequest) -> LLMResponse:
        rule = self.rules[index]
        text = rule.reply_text()
        usage = rule.usage or Usage(prompt_tokens=prompt_tokens,
                                    completion_tokens=-(-len(text) // 4))
        if self.accounting is not None:
            self.accounting.record_call(request.component, usage, 0.0)
        parsed: Any = None
        if request.schema is not None and not rule.tool_calls:
            parsed, error = parse_and_validate(text, request.schema)
            if error is not None:
                raise StructuredOutputError(
                    f"scripted reply for rule {index} does not validate: {error}",
                    last_text=text,
                    validation_error=error,
                )
        return LLMResponse(
            text=text, parsed=parsed, tool_calls=rule.tool_calls, usage=usage, model=self.model
        )

    def _pick(self, messages: Sequence[Message], component: str) -> int:
        for i, rule in enumerate(self.rules):
            if rule.times is not None and self._used[i] >= rule.times:
                continue
            if rule.matches(messages, component):
                return i
        last = messages[-1].content[:80] if messages else ""
        raise LLMError(f"ScriptedLLM: no rule matches component={component!r}, last={last!r}")
