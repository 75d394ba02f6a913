"""`OpenAICompatibleLLM`: the `LLM` protocol over any OpenAI-compatible chat endpoint.

Works with OpenAI, vLLM, Ollama and the llama.cpp server through the official `openai` package.

* Configuration: arguments, else ``HYPERPLAN_LLM_BASE_URL`` / ``OPENAI_BASE_URL``,
  ``HYPERPLAN_LLM_API_KEY`` / ``OPENAI_API_KEY`` (a placeholder key is used for local servers),
  ``HYPERPLAN_LLM_MODEL`` and ``HYPERPLAN_LLM_TIMEOUT`` (seconds, default 60).
* Retries: the SDK's own retries are disabled (``max_retries=0``); this class retries 408/409/429,
  5xx and connection errors/timeouts itself with exponential backoff (honouring ``Retry-After``),
  so that every request is budget-checked and counted by `Accounting`.
* Structured output: the mode is detected per (base URL, model) and cached for the process:
  ``json_schema`` (OpenAI, vLLM) → ``json_object`` + ``schema`` (llama.cpp server) → ``prompt``
  (schema in the system prompt). A 400/422/500 whose body names the response format triggers the
  next mode. Every reply is validated with `jsonschema`; an invalid reply is re-asked at most
  `max_reasks` times with the exact validation error fed back.
* Context window: a request the server rejects as too long for the model raises
  :class:`~hyperplan.llm.types.ContextLengthError` with the window and token counts the server
  gave (OpenAI, vLLM, llama-cpp-python and llama.cpp's own server wordings). When only the
  completion cap does not fit (the messages leave at least ``MIN_COMPLETION_TOKENS``), the
  request is sent once more with ``max_tokens`` lowered to what is left; a caller that must
  shorten its messages (the planner's context graph) catches the error.
* Secrets: the API key never appears in ``repr``, log records or raised exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletion

from hyperplan.llm.budget import Accounting
from hyperplan.llm.openai_wire import (
    CONTEXT_ERROR,
    Step,
    StructuredMode,
    chat_request,
    context_error,
    error_detail,
    interpret,
    usage_of,
)
from hyperplan.llm.structured import reask_message
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
    ToolChoice,
    Usage,
)
from hyperplan.secrets import SECRETS, redact_cut

log = logging.getLogger(__name__)

__all__ = ["MAX_DETAIL_CHARS", "MIN_COMPLETION_TOKENS", "OpenAICompatibleLLM", "StructuredMode"]

_NEXT_MODE: dict[StructuredMode, StructuredMode] = {
    "json_schema": "json_object",
    "json_object": "prompt",
}
_MODE_CACHE: dict[tuple[str, str], StructuredMode] = {}
_MODE_LOCK = threading.Lock()
_RETRYABLE = frozenset({408, 409, 429})
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")
_PLACEHOLDER_KEY = "sk-no-key-required"
MIN_COMPLETION_TOKENS = 256
"""The least completion room worth a second request with a lowered ``max_tokens``."""
MAX_DETAIL_CHARS = 500  # of a server's error text quoted in an LLMError (after redaction)


@dataclass
class _Exchange:
    """The mutable state of one `complete` call: conversation so far (with re-asks), the
    structured-output mode in use, and usage/latency summed over every request."""

    convo: list[Message]
    schema: JSONSchema | None
    tools: Sequence[OfferedTool] | None
    tool_choice: ToolChoice
    mode: StructuredMode | None
    max_tokens: int | None
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    reasks: int = 0
    refitted: bool = False
    rejected: Step | None = None  # the last reply that failed validation (re-asked)

    @classmethod
    def start(cls, request: LLMRequest, mode: StructuredMode | None,
              max_tokens: int | None) -> _Exchange:
        """The exchange of ``request`` before its first completion (``mode`` with a schema)."""
        return cls(list(request.messages), request.schema, request.tools, request.tool_choice,
                   mode if request.schema is not None else None, max_tokens)

    def refit(self, exc: ContextLengthError) -> None:
        """Lower the completion cap to the room the messages leave, once, when that room is
        at least ``MIN_COMPLETION_TOKENS``; otherwise re-raise ``exc``. A re-ask that does not
        fit ends the exchange as a :class:`StructuredOutputError`: the caller's messages did
        fit."""
        if self.rejected is not None:  # the re-ask outgrew the window, not the caller's messages
            error = cast(str, self.rejected.error)
            raise StructuredOutputError(
                f"no schema-valid reply after {self.reasks} attempt(s), and the re-ask does not "
                f"fit the context window: {error}",
                last_text=self.rejected.text, validation_error=error) from None
        room = (exc.limit - exc.prompt_tokens
                if exc.limit is not None and exc.prompt_tokens is not None else None)
        if self.refitted or room is None or room < MIN_COMPLETION_TOKENS:
            raise exc
        if self.max_tokens is not None and room >= self.max_tokens:
            raise exc  # the cap was not what overflowed: nothing to lower
        log.info("completion cap %s does not fit the context window of %d tokens "
                 "(%d in the messages); retrying with max_tokens=%d",
                 self.max_tokens, exc.limit, exc.prompt_tokens, room)
        self.max_tokens, self.refitted = room, True

    def reask(self, step: Step, max_reasks: int) -> None:
        """Queue a re-ask for ``step``'s schema-invalid reply, or raise
        :class:`StructuredOutputError` when ``max_reasks`` re-asks were made."""
        error = cast(str, step.error)
        if self.reasks >= max_reasks:
            raise StructuredOutputError(
                f"no schema-valid reply after {self.reasks + 1} attempt(s): {error}",
                last_text=step.text,
                validation_error=error,
            )
        log.debug("re-asking for schema-valid JSON: %s", error)
        self.reasks += 1
        self.rejected = step
        self.convo += [Message.assistant(step.text), reask_message(error)]


class _ModeRejected(Exception):
    """The endpoint rejected the current structured-output mode."""


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class OpenAICompatibleLLM(BaseLLM):
    """A thread-safe `LLM` for OpenAI-compatible ``/v1/chat/completions`` endpoints."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_reasks: int = 2,
        structured_mode: StructuredMode | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        accounting: Accounting | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        resolved_model = model or _env("HYPERPLAN_LLM_MODEL")
        if not resolved_model:
            raise LLMError("no model given (argument or HYPERPLAN_LLM_MODEL)")
        self.model = resolved_model
        self.base_url = base_url or _env("HYPERPLAN_LLM_BASE_URL", "OPENAI_BASE_URL")
        self.timeout = (
            timeout if timeout is not None else float(_env("HYPERPLAN_LLM_TIMEOUT") or 60.0)
        )
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_reasks = max_reasks
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.accounting = accounting
        self._forced_mode = structured_mode
        self._sleep = sleep
        self.__secret = api_key or _env("HYPERPLAN_LLM_API_KEY", "OPENAI_API_KEY") or ""
        SECRETS.add(self.__secret)  # redacted by value from every output (hyperplan.secrets)
        self._client = openai.OpenAI(
            api_key=self.__secret or _PLACEHOLDER_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
        )
        self._aclient: openai.AsyncOpenAI | None = None
        self._alock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key={'***' if self.__secret else None})"
        )

    # -- public API ----------------------------------------------------------------------------
    def _complete(self, request: LLMRequest) -> LLMResponse:
        """Complete a chat; see the module docstring for retries, fallbacks and re-asks."""
        ex = _Exchange.start(request, self.structured_mode(), self.max_tokens)
        while True:
            try:
                completion, dt = self._send(self._request(ex), request.component, ex.mode)
            except (_ModeRejected, ContextLengthError) as exc:
                self._recover(ex, exc)
                continue
            done = self._absorb(ex, completion, dt)
            if done is not None:
                return done

    async def _acomplete(self, request: LLMRequest) -> LLMResponse:
        """Async variant of `complete` (uses `openai.AsyncOpenAI`)."""
        ex = _Exchange.start(request, self.structured_mode(), self.max_tokens)
        while True:
            try:
                completion, dt = await self._asend(self._request(ex), request.component, ex.mode)
            except (_ModeRejected, ContextLengthError) as exc:
                self._recover(ex, exc)
                continue
            done = self._absorb(ex, completion, dt)
            if done is not None:
                return done

    def _recover(self, ex: _Exchange, exc: Exception) -> None:
        """After a failed request: fall back to the next structured-output mode, or lower
        the completion cap (:meth:`_Exchange.refit`), or re-raise."""
        if isinstance(exc, ContextLengthError):
            ex.refit(exc)
        else:
            ex.mode = self._downgrade(cast(StructuredMode, ex.mode))

    def _request(self, ex: _Exchange) -> dict[str, Any]:
        return chat_request(self.model, self.temperature, ex.convo, ex.schema, ex.tools,
                            ex.tool_choice, ex.mode, ex.max_tokens)

    def structured_mode(self) -> StructuredMode:
        """The structured-output mode currently used for this endpoint and model."""
        if self._forced_mode is not None:
            return self._forced_mode
        with _MODE_LOCK:
            return _MODE_CACHE.get(self._cache_key(), "json_schema")

    def close(self) -> None:
        """Close the synchronous HTTP client."""
        self._client.close()

    async def aclose(self) -> None:
        """Close the asynchronous HTTP client, if it was created."""
        with self._alock:
            client, self._aclient = self._aclient, None
        if client is not None:
            await client.close()

    # -- transport -----------------------------------------------------------------------------
    def _send(
        self, request: dict[str, Any], component: str, mode: StructuredMode | None
    ) -> tuple[ChatCompletion, float]:
        attempt = 0
        while True:
            if self.accounting is not None:
                self.accounting.check(component)
            start = time.perf_counter()
            try:
                completion = self._client.chat.completions.create(
                    **request, timeout=self._request_timeout())
            except openai.APIError as exc:
                delay = self._on_error(exc, component, mode, attempt, time.perf_counter() - start)
                self._sleep(self._bounded(delay))
                attempt += 1
                continue
            return completion, self._on_success(completion, component, start)

    def _request_timeout(self) -> float:
        """The client timeout, cut to the time left in the run's wall budget (a
        request never outlives ``--max-seconds``; the next ``check`` then stops the run)."""
        if self.accounting is None:
            return self.timeout
        left = self.accounting.deadline(self.timeout)
        return max(0.05, left if left is not None else self.timeout)

    def _bounded(self, delay: float) -> float:
        """A retry delay that does not sleep past the wall budget."""
        left = self.accounting.remaining_s() if self.accounting is not None else None
        return delay if left is None else min(delay, left)

    async def _asend(
        self, request: dict[str, Any], component: str, mode: StructuredMode | None
    ) -> tuple[ChatCompletion, float]:
        client = self._async_client()
        attempt = 0
        while True:
            if self.accounting is not None:
                self.accounting.check(component)
            start = time.perf_counter()
            try:
                completion = await client.chat.completions.create(
                    **request, timeout=self._request_timeout())
            except openai.APIError as exc:
                delay = self._on_error(exc, component, mode, attempt, time.perf_counter() - start)
                await asyncio.sleep(self._bounded(delay))
                attempt += 1
                continue
            return completion, self._on_success(completion, component, start)

    def _on_success(self, completion: ChatCompletion, component: str, start: float) -> float:
        latency = time.perf_counter() - start
        if self.accounting is not None:
            self.accounting.record_call(component, usage_of(completion), latency)
        log.debug("llm call ok component=%s model=%s latency=%.3fs", component, self.model, latency)
        return latency

    def _on_error(
        self,
        exc: openai.APIError,
        component: str,
        mode: StructuredMode | None,
        attempt: int,
        latency: float,
    ) -> float:
        """Record a failed request; raise, signal a mode fallback, or return a retry delay."""
        if self.accounting is not None:
            self.accounting.record_call(component, Usage(), latency, error=True)
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        detail = redact_cut(self._redact(error_detail(exc)), MAX_DETAIL_CHARS)  # then cut
        log.debug("llm call failed component=%s status=%s: %s", component, status, detail)
        if status in (400, 413) and CONTEXT_ERROR.search(detail):
            raise context_error(detail, status) from None
        if (
            mode in _NEXT_MODE
            and status in (400, 422, 500)
            and any(word in detail.lower() for word in _FORMAT_WORDS)
        ):
            raise _ModeRejected from None
        retryable = status is None or status in _RETRYABLE or status >= 500
        if not retryable or attempt >= self.max_retries:
            tries = attempt + 1
            raise LLMError(
                f"LLM request failed after {tries} attempt(s) (status {status}): {detail}",
                status_code=status,
            ) from None
        delay: float = min(self.max_backoff_s, self.backoff_s * 2**attempt)
        if isinstance(exc, openai.APIStatusError):
            retry_after = str(exc.response.headers.get("retry-after", ""))
            with contextlib.suppress(ValueError):
                delay = min(self.max_backoff_s, max(0.0, float(retry_after)))
        return delay

    def _async_client(self) -> openai.AsyncOpenAI:
        with self._alock:
            if self._aclient is None:
                self._aclient = openai.AsyncOpenAI(
                    api_key=self.__secret or _PLACEHOLDER_KEY,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=0,
                )
            return self._aclient

    def _absorb(self, ex: _Exchange, completion: ChatCompletion, dt: float) -> LLMResponse | None:
        """Account one completion; the response when it is valid, else queue a re-ask."""
        step = interpret(completion, ex.schema)
        ex.usage, ex.latency = ex.usage + step.usage, ex.latency + dt
        if step.error is None:
            return step.response(ex.usage, ex.latency, self.model)
        ex.reask(step, self.max_reasks)
        return None

    def _downgrade(self, mode: StructuredMode) -> StructuredMode:
        new = _NEXT_MODE[mode]
        log.info("endpoint rejected %s structured output; falling back to %s", mode, new)
        if self._forced_mode is None:
            with _MODE_LOCK:
                _MODE_CACHE[self._cache_key()] = new
        else:
            self._forced_mode = new
        return new

    def _cache_key(self) -> tuple[str, str]:
        return (self.base_url or "https://api.openai.com/v1", self.model)

    def _redact(self, text: str) -> str:
        return text.replace(self.__secret, "***") if self.__secret else text


