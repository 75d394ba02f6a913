"""The LLM layer: one small protocol, a real OpenAI-compatible client, budgets and a test double.

Messages go in; text, parsed structured output, tool calls and usage come out (`LLMResponse`).
This package is *optional* for the deterministic core: graph/, retrieve/, plan/doe and search/
never import it. Every name below loads on first use (PEP 562, :mod:`hyperplan._lazy`), so
``import hyperplan.llm.types`` (or this package) does not load the OpenAI SDK; only
:class:`OpenAICompatibleLLM` and :class:`StructuredMode` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.llm.budget import Accounting, Budget, BudgetExceeded, ComponentStats
    from hyperplan.llm.openai_client import OpenAICompatibleLLM, StructuredMode
    from hyperplan.llm.scripted import ScriptedCall, ScriptedLLM, ScriptedRule
    from hyperplan.llm.types import (
        LLM,
        BaseLLM,
        ContextLengthError,
        JSONSchema,
        LLMError,
        LLMRequest,
        LLMResponse,
        Message,
        StructuredOutputError,
        ToolCall,
        ToolChoice,
        ToolSpec,
        Usage,
    )

_EXPORTS = {
    "LLM": "types",
    "Accounting": "budget",
    "BaseLLM": "types",
    "Budget": "budget",
    "BudgetExceeded": "budget",
    "ComponentStats": "budget",
    "ContextLengthError": "types",
    "JSONSchema": "types",
    "LLMError": "types",
    "LLMRequest": "types",
    "LLMResponse": "types",
    "Message": "types",
    "OpenAICompatibleLLM": "openai_client",
    "ScriptedCall": "scripted",
    "ScriptedLLM": "scripted",
    "ScriptedRule": "scripted",
    "StructuredMode": "openai_client",
    "StructuredOutputError": "types",
    "ToolCall": "types",
    "ToolChoice": "types",
    "ToolSpec": "types",
    "Usage": "types",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "LLM", "Accounting", "BaseLLM", "Budget", "BudgetExceeded", "ComponentStats",
    "ContextLengthError", "JSONSchema", "LLMError", "LLMRequest", "LLMResponse", "Message",
    "OpenAICompatibleLLM", "ScriptedCall", "ScriptedLLM", "ScriptedRule", "StructuredMode",
    "StructuredOutputError", "ToolCall", "ToolChoice", "ToolSpec", "Usage",
]
