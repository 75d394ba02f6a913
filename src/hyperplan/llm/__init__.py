"""The LLM layer: one small protocol, a real OpenAI-compatible client, budgets and a test double.

Messages go in; text, parsed structured output, tool calls and usage come out (`LLMResponse`).
This package is *optional* for the deterministic core: graph/, retrieve/ and plan/doe must never
import it. The OpenAI SDK behind :class:`OpenAICompatibleLLM` loads on first use of that name
(PEP 562), so importing the protocol, budgets or the test double stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hyperplan.llm.budget import Accounting, Budget, BudgetExceeded, ComponentStats
from hyperplan.llm.scripted import ScriptedCall, ScriptedLLM, ScriptedRule
from hyperplan.llm.types import (
    LLM,
    ContextLengthError,
    JSONSchema,
    LLMError,
    LLMResponse,
    Message,
    StructuredOutputError,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    from hyperplan.llm.openai_client import OpenAICompatibleLLM, StructuredMode

__all__ = [
    "LLM",
    "Accounting",
    "Budget",
    "BudgetExceeded",
    "ComponentStats",
    "ContextLengthError",
    "JSONSchema",
    "LLMError",
    "LLMResponse",
    "Message",
    "OpenAICompatibleLLM",
    "ScriptedCall",
    "ScriptedLLM",
    "ScriptedRule",
    "StructuredMode",
    "StructuredOutputError",
    "ToolCall",
    "ToolChoice",
    "ToolSpec",
    "Usage",
]


def __getattr__(name: str) -> Any:
    if name in ("OpenAICompatibleLLM", "StructuredMode"):
        from hyperplan.llm import openai_client

        return getattr(openai_client, name)
    raise AttributeError(f"module 'hyperplan.llm' has no attribute {name!r}")
