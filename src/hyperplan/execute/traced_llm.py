"""An :class:`~hyperplan.llm.types.LLM` wrapper that writes every call to a run trace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hyperplan.execute.events import LLMCalled
from hyperplan.execute.trace import TraceWriter
from hyperplan.llm.types import LLM, BaseLLM, LLMRequest, LLMResponse, Message, OfferedTool


class TracedLLM(BaseLLM):
    """Delegates to ``inner`` and emits one ``llm_call`` event per completion (component,
    tokens, latency, the messages and the answer); failures are traced and re-raised."""

    def __init__(self, inner: LLM, tracer: TraceWriter) -> None:
        self.inner = inner
        self.tracer = tracer
        self._doc_tokens: dict[tuple[str, ...], int] = {}  # offered tool names -> tokens

    def _complete(self, request: LLMRequest) -> LLMResponse:
        try:
            resp = self.inner.complete(request.messages, **request.options())
        except Exception as exc:
            self.tracer.emit(LLMCalled(component=request.component, ok=False, error=str(exc),
                                       messages=_messages(request.messages)))
            raise
        self._emit(request.component, request.messages, resp, request.tools)
        return resp

    async def _acomplete(self, request: LLMRequest) -> LLMResponse:
        resp = await self.inner.acomplete(request.messages, **request.options())
        self._emit(request.component, request.messages, resp, request.tools)
        return resp

    def _tool_tokens(self, tools: Sequence[OfferedTool] | None) -> int:
        """Tokens of the tool documentation offered with a call (0 when none), counted once
        per distinct tool set: an agent offers the same tools on every turn."""
        if not tools:
            return 0
        key = tuple(t.name for t in tools)
        if key not in self._doc_tokens:
            from hyperplan.retrieve.serialize import count_tokens

            self._doc_tokens[key] = count_tokens(json.dumps(
                [{"name": t.name, "description": t.description,
                  "parameters": dict(t.parameters)} for t in tools]))
        return self._doc_tokens[key]

    def _emit(self, component: str, messages: Sequence[Message], resp: LLMResponse,
              tools: Sequence[OfferedTool] | None) -> None:
        self.tracer.emit(LLMCalled(
            component=component, ok=True, model=resp.model,
            prompt_tokens=resp.usage.prompt_tokens,
            completion_tokens=resp.usage.completion_tokens,
            latency_s=round(resp.latency_s, 4), messages=_messages(messages), text=resp.text,
            tool_calls=[{"name": c.name, "arguments": dict(c.arguments)}
                        for c in resp.tool_calls],
            tool_doc_tokens=self._tool_tokens(tools),
        ))


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": m.content} for m in messages]

