"""The selection host: what the MCP gateway and every framework adapter use to select tools.

:class:`SelectionHost` holds the three parts of hosting hyperplan's selection once
(:mod:`.pool`: a selector per tool set, built once and kept, in the caller's thread or in the
background, with a keyword fallback meanwhile; :mod:`.conversation`: the state of each
conversation, bounded and never shared) and the narrowing every adapter does
(:meth:`SelectionHost.narrow`): given the tools an agent would send, the request and the calls
made so far, the tools to send instead.

Tool sets come as a :class:`~hyperplan.catalog.Catalog` (the gateway) or as the tools a
framework hands over (:class:`~hyperplan.integrations._catalog.ToolDef`, read by the
adapters); ``sources`` (``KIND:LOCATION`` strings or catalogs, e.g. the MCP servers the agent
talks to) describe tools better than the framework does: a tool that a source names (also
under an MCP prefix, ``mcp__server__name``) takes the source's schemas, its output schema
included.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hyperplan.integrations.host.conversation import (
    Call,
    ConversationLimits,
    ConversationTable,
    session_of,
)
from hyperplan.integrations.host.pool import DEFAULT_SELECTORS, Builder, Built, SelectorPool
from hyperplan.secrets import redact_cut

if TYPE_CHECKING:
    from hyperplan.catalog import Catalog, ToolSpec
    from hyperplan.embed.base import Embedder
    from hyperplan.integrations._catalog import ToolDef
    from hyperplan.select import Selection, Selector
    from hyperplan.select.selector import SelectConfig

logger = logging.getLogger("hyperplan.integrations")

#: Tools a narrowed list offers beside the kept ones, unless a host is told otherwise.
DEFAULT_BUDGET = 10
#: Conversations an adapter's host remembers at once (least recently used dropped first).
MAX_CONVERSATIONS = 256

Keep = Collection[str] | Callable[[str], bool]
"""Tools a narrowed list always keeps: names, or a predicate on the name."""


@dataclass(frozen=True)
class Narrowed:
    """What a narrowing decided: ``names`` the tools offered to the model, in the order the
    agent listed them; ``selection`` hyperplan's answer (with why each tool is there);
    ``kept`` the names offered because they are always kept or could not be judged."""

    names: tuple[str, ...]
    selection: Selection
    kept: tuple[str, ...] = ()

    def allows(self, name: str) -> bool:
        return name in self.names


def _keeps(keep: Keep) -> Callable[[str], bool]:
    if callable(keep):
        return keep
    names = frozenset(keep)
    return names.__contains__


def _bare(name: str) -> str:
    """A tool's name without the server prefix agents give MCP tools (Hermes' ``mcp__srv__x``,
    the OpenAI Agents SDK's ``srv__x``)."""
    return name.rsplit("__", 1)[-1]


def deprecated_alias(name: str, old: str) -> property:
    """A read-only attribute ``old`` standing for ``name`` that warns it is deprecated (an
    adapter's ``narrower`` before it was its ``host``)."""
    def get(self: Any) -> Any:
        warnings.warn(f"{old} is deprecated: use .{name}", DeprecationWarning, stacklevel=2)
        return getattr(self, name)

    return property(get, doc=f"Deprecated: ``{name}``.")


def tool_set_key(tools: Iterable[ToolDef]) -> str:
    """The key of a set of framework tools (their names and schemas, in any order)."""
    return hashlib.sha256("\x00".join(sorted(t.key() for t in tools)).encode()).hexdigest()


def catalog_key(catalog: Catalog) -> str:
    """The key of a catalog's tool set."""
    return hashlib.sha256(catalog.model_dump_json().encode()).hexdigest()


class SelectionHost:
    """Selection for one host (module doc). ``budget``: tools a narrowed list offers besides
    those in ``keep``; ``embedder``, ``cache_dir``, ``config``: as for
    :func:`hyperplan.select.build_selector` (unless ``build`` makes the selectors);
    ``size``: selectors kept; ``limits``: the conversations kept."""

    def __init__(self, *, budget: int = DEFAULT_BUDGET, keep: Keep = (),
                 embedder: str | Embedder = "auto", cache_dir: str | Path | None = "default",
                 config: SelectConfig | None = None, sources: Sequence[str | Catalog] = (),
                 size: int = DEFAULT_SELECTORS, build: Builder | None = None,
                 limits: ConversationLimits | None = None) -> None:
        if budget < 1:
            raise ValueError(f"budget must be at least 1, got {budget}")
        self.budget = budget
        self.keep = _keeps(keep)
        self.embedder = embedder
        self.cache_dir = cache_dir
        self.config = config
        self.sources = list(sources)
        self.pool = SelectorPool(build or self._build_selector, size=size)
        self.conversations = ConversationTable(
            limits or ConversationLimits(total=MAX_CONVERSATIONS))
        self.last: Narrowed | None = None
        self._known: dict[str, ToolSpec] | None = None
        self._embedder: Embedder | None = None

    # -- selectors ---------------------------------------------------------------------

    def selector(self, tools: Sequence[ToolDef], *, wait: bool = True) -> Built | None:
        """The selector over the framework tools ``tools`` and the names it covers (tools
        whose schemas could not be read are left out), None when it would cover fewer than
        two tools, failed, or (``wait=False``) is still being built."""
        return self.pool.get(tool_set_key(tools), lambda: self._catalog_of(tools), wait=wait)

    def catalog_selector(self, catalog: Catalog, *, wait: bool = True) -> Built | None:
        """The selector over ``catalog`` (as :meth:`selector`)."""
        return self.pool.get(catalog_key(catalog), lambda: catalog, wait=wait)

    def _catalog_of(self, tools: Sequence[ToolDef]) -> Catalog | None:
        from hyperplan.catalog import build_catalog
        from hyperplan.integrations._catalog import to_spec

        known = self._source_tools()
        specs: dict[str, ToolSpec] = {}
        for tool in tools:
            spec = to_spec(tool, known.get(tool.name) or known.get(_bare(tool.name)))
            if spec is not None and spec.name not in specs:
                specs[spec.name] = spec
        if len(specs) < 2:
            return None
        return build_catalog(specs.values(), source="integration")

    def _source_tools(self) -> dict[str, ToolSpec]:
        if self._known is None:
            known: dict[str, ToolSpec] = {}
            if self.sources:
                from hyperplan.select.cache import load_catalogs

                for tool in load_catalogs(self.sources).tools:
                    known.setdefault(tool.name, tool)
                    known.setdefault(_bare(tool.name), tool)
            self._known = known
        return self._known

    def _build_selector(self, catalog: Catalog) -> Selector:
        from hyperplan.select import build_selector

        if self._embedder is None:
            from hyperplan.embed import get_embedder

            self._embedder = get_embedder(self.embedder) if isinstance(self.embedder, str) \
                else self.embedder
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build_selector([catalog], embedder=self._embedder, cache_dir=self.cache_dir,
                                  config=self.config)

    # -- narrowing ---------------------------------------------------------------------

    def narrow(self, tools: Sequence[ToolDef], request: str, calls: Iterable[Call] = (), *,
               also_keep: Collection[str] = (), earlier: Iterable[Call] = ()
               ) -> Narrowed | None:
        """The tools to offer: hyperplan's selection (at most ``budget``, with the producers
        the selected tools need), every tool kept, every tool hyperplan could not read; None
        when the list stays as it is (an empty request, or no more than ``budget`` tools
        besides the kept ones). ``calls``: this user turn's calls; ``earlier``: the calls of
        the conversation's earlier turns (:func:`.session_of`); ``also_keep``: names kept
        this time only (e.g. the tool a ``tool_choice`` forces)."""
        request = request.strip()
        names = [t.name for t in tools]

        def keeps(name: str) -> bool:
            return name in also_keep or self.keep(name)

        candidates = [t for t in tools if not keeps(t.name)]
        if not request or len(candidates) <= self.budget:
            return None
        built = self.selector(candidates)
        if built is None:
            return None
        selection = self.select(built.selector, request, calls, earlier)
        chosen = set(selection.names)
        kept = tuple(n for n in names if keeps(n) or n not in built.covered)
        offered = tuple(dict.fromkeys(n for n in names if n in chosen or n in kept))
        narrowed = Narrowed(names=offered, selection=selection, kept=kept)
        self.last = narrowed
        logger.debug("hyperplan narrowed %d tools to %d for %r: %s", len(names), len(offered),
                     redact_cut(request, 80), ", ".join(t.name + " (" + t.why() + ")"
                                             for t in selection.tools))
        return narrowed

    def select(self, selector: Selector, request: str, calls: Iterable[Call] = (),
               earlier: Iterable[Call] = (), budget: int | None = None) -> Selection:
        """Select over ``selector`` for ``request`` from a history the caller read (its
        results parsed into JSON-like data): :func:`.session_of`."""
        from hyperplan.integrations._catalog import parsed

        return session_of(selector, request, calls, earlier, parse=parsed).select(
            budget=budget or self.budget)
