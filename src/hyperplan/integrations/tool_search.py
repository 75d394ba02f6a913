"""hyperplan as the search behind the hosts' client-side tool-search hooks.

The hosts defer tool definitions and let the model search for them; where the search runs on
the client, hyperplan can answer it, with the producers the found tools need (the context graph
and Deficit-Oriented Expansion, Definition 6, of the HyperAgent paper) and the state of the
conversation (Definition 4: producers of values already held drop out), and with an explicit
"no tool matches" when nothing is relevant, so that the model stops re-searching:

* Anthropic Messages API: the tools are sent with ``defer_loading: true`` beside a client tool
  (:meth:`ToolSearch.anthropic_tool`); when the model calls it, :meth:`ToolSearch.anthropic_result`
  is the ``tool_result`` whose content is ``tool_reference`` blocks (``{"type":
  "tool_reference", "tool_name"}``), which load those definitions;
* OpenAI Responses API: ``{"type": "tool_search", "execution": "client"}``
  (:meth:`ToolSearch.openai_tool`) beside functions with ``defer_loading: true``; a
  ``tool_search_call`` output item is answered by :meth:`ToolSearch.openai_items`, a
  ``tool_search_output`` item carrying the found functions (and, when nothing matches, a
  developer message saying so: the output item has no text of its own);
* pydantic-ai's ``ToolSearch`` capability: :mod:`hyperplan.integrations.pydantic_search`.

Everything here is plain dicts in the shapes of the SDKs' own types (``anthropic.types.
ToolReferenceBlockParam``, ``openai.types.responses.ResponseToolSearchOutputItemParamParam``);
no SDK is imported. hyperplan's numeric stack loads on the first search.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperplan.integrations._catalog import Call, ToolDef, provider_tool
from hyperplan.integrations.host.host import SelectionHost

if TYPE_CHECKING:
    from hyperplan.embed.base import Embedder
    from hyperplan.select.model import Selection

#: The name of the client-side search tool the adapters declare.
SEARCH_TOOL = "tool_search"
DEFAULT_LIMIT = 5
#: Below this cosine similarity between the query and every tool, with no word of the query in
#: any tool's name or description, the search answers "no tool matches".
MIN_SIMILARITY = 0.3
SEARCH_DESCRIPTION = (
    "Search the tools that are loaded on demand. Describe what you need to do in a few words; "
    "the tools found are loaded, with the tools that produce their inputs. If nothing matches, "
    "do not search again with other words: answer without a tool.")
QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string",
                             "description": "What the tool should do, in a few words."}},
    "required": ["query"],
}
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by can do does for from get give how i in into is it "
                  "its me my of on or please that the this to tool tools use want what which "
                  "with you your".split())


@dataclass(frozen=True)
class Found:
    """The answer to one search: ``names`` the tools to load (best first, producers
    included), empty when nothing matches; ``message`` the text for the model;
    ``selection`` hyperplan's selection (why each tool is there), None when nothing
    matched."""

    query: str
    names: tuple[str, ...]
    message: str
    selection: Selection | None = None

    @property
    def matched(self) -> bool:
        return bool(self.names)


def no_match_message(query: str) -> str:
    return (f"No tool matches {query!r}. None of the available tools does this: do not search "
            "again with other words; answer with what you have or say it cannot be done.")


class ToolSearch:
    """hyperplan's selection over a set of deferred tools, as a search (module doc).

    ``tools``: the deferred tools, as :class:`ToolDef` or in any provider shape
    (:func:`~hyperplan.integrations._catalog.provider_tool`); ``limit``: tools per answer,
    producers included; ``min_similarity``: see :data:`MIN_SIMILARITY`; ``host``: the
    :class:`~hyperplan.integrations.host.SelectionHost` whose selectors answer."""

    def __init__(self, tools: Iterable[ToolDef | Mapping[str, Any]] = (), *,
                 limit: int = DEFAULT_LIMIT, min_similarity: float = MIN_SIMILARITY,
                 embedder: str | Embedder = "auto", cache_dir: str | None = "default",
                 sources: Sequence[str] = ()) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.tools = _defs(tools)
        self.limit = limit
        self.min_similarity = min_similarity
        self.host = SelectionHost(budget=limit, embedder=embedder, cache_dir=cache_dir,
                                  sources=sources)
        self._lock = threading.Lock()

    def search(self, query: str, *, calls: Iterable[Call] = (),
               tools: Iterable[ToolDef | Mapping[str, Any]] | None = None) -> Found:
        """The tools for ``query`` given the ``calls`` made so far (their results are the
        values held); ``tools`` replaces the deferred set for this search."""
        query = " ".join(str(query or "").split())
        pool = self.tools if tools is None else _defs(tools)
        if not query or not pool:
            return Found(query, (), no_match_message(query))
        built = self.host.selector(pool)
        if built is None:  # fewer than two readable tools: the words decide
            names = tuple(t.name for t in pool if _words(query) & _words(_text(t)))
            return Found(query, names, _found_message(names) if names
                         else no_match_message(query))
        if not self._relevant(built.selector, query, pool):
            return Found(query, (), no_match_message(query))
        selection = self.host.select(built.selector, query, calls, budget=self.limit)
        names = producers_first(selection, self.limit)
        return Found(query, names, _found_message(names), selection)

    def _relevant(self, selector: Any, query: str, pool: Sequence[ToolDef]) -> bool:
        """Whether any tool is about ``query``: a word of it in a tool's name or description,
        or a cosine similarity of at least ``min_similarity``."""
        import numpy as np

        from hyperplan.embed.base import l2_normalize

        asked = _words(query)
        if any(asked & _words(_text(t)) for t in pool):
            return True
        vector = l2_normalize(selector.embedder.embed([query]))[0]
        best = float(np.max(selector.index.tool_vecs @ vector))
        return best >= self.min_similarity

    # -- Anthropic Messages API --------------------------------------------------------

    def anthropic_tool(self, name: str = SEARCH_TOOL) -> dict[str, Any]:
        """The client tool the model calls to search (a ``ToolParam``)."""
        return {"name": name, "description": SEARCH_DESCRIPTION, "input_schema": QUERY_SCHEMA}

    def anthropic_tools(self, name: str = SEARCH_TOOL) -> list[dict[str, Any]]:
        """The search tool and every deferred tool with ``defer_loading: true``."""
        return [self.anthropic_tool(name),
                *({"name": t.name, "description": t.description,
                   "input_schema": dict(t.parameters or {"type": "object"}),
                   "defer_loading": True} for t in self.tools)]

    def anthropic_result(self, tool_use: Any, *, calls: Iterable[Call] = ()) -> dict[str, Any]:
        """The ``tool_result`` block answering a ``tool_use`` of the search tool (an SDK
        ``ToolUseBlock`` or its dict): ``tool_reference`` blocks, or the no-match text."""
        found = self.search(str(_input(tool_use).get("query", "")), calls=calls)
        content: list[dict[str, Any]] = [{"type": "tool_reference", "tool_name": n}
                                         for n in found.names]
        if not content:
            content = [{"type": "text", "text": found.message}]
        return {"type": "tool_result", "tool_use_id": _field(tool_use, "id"),
                "content": content}

    # -- OpenAI Responses API ----------------------------------------------------------

    def openai_tool(self) -> dict[str, Any]:
        """The client-executed ``tool_search`` tool (a ``ToolSearchToolParam``)."""
        return {"type": "tool_search", "execution": "client",
                "description": SEARCH_DESCRIPTION, "parameters": QUERY_SCHEMA}

    def openai_tools(self) -> list[dict[str, Any]]:
        """``tool_search`` and every deferred tool as a function with ``defer_loading``."""
        return [self.openai_tool(), *({**self.openai_function(t), "defer_loading": True}
                                      for t in self.tools)]

    @staticmethod
    def openai_function(tool: ToolDef) -> dict[str, Any]:
        return {"type": "function", "name": tool.name, "description": tool.description,
                "parameters": dict(tool.parameters or {"type": "object", "properties": {}}),
                "strict": False}

    def openai_items(self, call: Any, *, calls: Iterable[Call] = ()) -> list[dict[str, Any]]:
        """The input items answering a ``tool_search_call`` (SDK object or dict): its
        ``tool_search_output``, then, when nothing matches, a developer message saying so."""
        arguments = _field(call, "arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {"query": arguments}
        query = arguments.get("query", "") if isinstance(arguments, Mapping) else ""
        found = self.search(str(query), calls=calls)
        by_name = {t.name: t for t in self.tools}
        items: list[dict[str, Any]] = [{
            "type": "tool_search_output", "call_id": _field(call, "call_id"),
            "execution": "client", "status": "completed",
            "tools": [self.openai_function(by_name[n]) for n in found.names if n in by_name]}]
        if not found.matched:
            items.append({"type": "message", "role": "developer", "content": found.message})
        return items


def producers_first(selection: Selection, limit: int) -> tuple[str, ...]:
    """The selected names with the best tool's producers (its steps of DOE's chain,
    Definition 6) right after it, so that a small limit never cuts the producers of what the
    search found first; then the rest of the selection, at most ``limit`` in all."""
    names = selection.names
    if not names:
        return ()
    reads = {step.tool: step.reads for step in selection.chain}
    ordered = [names[0]]
    queue = [names[0]]
    while queue:  # the producers of the best tool, and theirs, in chain order
        for _, producer, _ in reads.get(queue.pop(0), ()):
            if producer not in ordered:
                ordered.append(producer)
                queue.append(producer)
    ordered += [n for n in names if n not in ordered]
    return tuple(ordered[:limit])


def _defs(tools: Iterable[ToolDef | Mapping[str, Any]]) -> list[ToolDef]:
    out: dict[str, ToolDef] = {}
    for tool in tools:
        found = tool if isinstance(tool, ToolDef) else provider_tool(tool)
        if found is not None:
            out.setdefault(found.name, found)
    return list(out.values())


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _input(tool_use: Any) -> Mapping[str, Any]:
    value = _field(tool_use, "input")
    return value if isinstance(value, Mapping) else {}


def _text(tool: ToolDef) -> str:
    return f"{tool.name.replace('_', ' ')} {tool.description}"


def _words(text: str) -> set[str]:
    """The content words of ``text``, cut to five letters (a crude stem)."""
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def _found_message(names: Sequence[str]) -> str:
    return "Loaded: " + ", ".join(names) + "."
