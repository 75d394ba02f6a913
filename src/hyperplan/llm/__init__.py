"""The LLM layer: one small protocol, a real OpenAI-compatible client, budgets and a test double.

Messages go in; text, parsed structured output, tool calls and usage come out (`LLMResponse`).
This package is *optional* for the deterministic core: graph/, retrieve/, plan/doe and search/
never import it. Every name below loads on first use (PEP 562, :mod:`hyperplan._lazy`), so
``import hyperplan.llm.types`` (or this package) does not load the OpenAI SDK; only
:class:`OpenAICompatibleLLM` and :class:`StructuredMode` do. ``ToolSpec``, the old name of
:class:`OfferedTool` (a tool definition sent to the model), still resolves, with a
DeprecationWarning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import by_submodule, lazy_exports

if TYPE_CHECKING:
    from hyperplan.llm.budget import Accounting as Accounting
    from hyperplan.llm.budget import Budget as Budget
    from hyperplan.llm.budget import BudgetExceeded as BudgetExceeded
    from hyperplan.llm.budget import ComponentStats as ComponentStats
    from hyperplan.llm.openai_client import OpenAICompatibleLLM as OpenAICompatibleLLM
    from hyperplan.llm.openai_client import StructuredMode as StructuredMode
    from hyperplan.llm.scripted import ScriptedCall as ScriptedCall
    from hyperplan.llm.scripted import ScriptedLLM as ScriptedLLM
    from hyperplan.llm.scripted import ScriptedRule as ScriptedRule
    from hyperplan.llm.types import LLM as LLM
    from hyperplan.llm.types import BaseLLM as BaseLLM
    from hyperplan.llm.types import ContextLengthError as ContextLengthError
    from hyperplan.llm.types import JSONSchema as JSONSchema
    from hyperplan.llm.types import LLMError as LLMError
    from hyperplan.llm.types import LLMRequest as LLMRequest
    from hyperplan.llm.types import LLMResponse as LLMResponse
    from hyperplan.llm.types import Message as Message
    from hyperplan.llm.types import OfferedTool as OfferedTool
    from hyperplan.llm.types import StructuredOutputError as StructuredOutputError
    from hyperplan.llm.types import ToolCall as ToolCall
    from hyperplan.llm.types import ToolChoice as ToolChoice
    from hyperplan.llm.types import Usage as Usage

_EXPORTS = by_submodule({
    "budget": ("Accounting", "Budget", "BudgetExceeded", "ComponentStats"),
    "openai_client": ("OpenAICompatibleLLM", "StructuredMode"),
    "scripted": ("ScriptedCall", "ScriptedLLM", "ScriptedRule"),
    "types": ("LLM", "BaseLLM", "ContextLengthError", "JSONSchema", "LLMError", "LLMRequest",
              "LLMResponse", "Message", "OfferedTool", "StructuredOutputError", "ToolCall",
              "ToolChoice", "Usage"),
})
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, renamed={"ToolSpec": "OfferedTool"})
__all__ = sorted(_EXPORTS)
