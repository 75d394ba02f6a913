"""The LLM layer: one small protocol, a real OpenAI-compatible client, budgets and a test double.

Messages go in; text, parsed structured output, tool calls and usage come out (`LLMResponse`).
This package is *optional* for the deterministic core: graph/, retrieve/ and plan/doe must never
import it.
"""

from hyperplan.llm.budget import Accounting, Budget, BudgetExceeded, ComponentStats
from hyperplan.llm.openai_client import OpenAICompatibleLLM, StructuredMode
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
