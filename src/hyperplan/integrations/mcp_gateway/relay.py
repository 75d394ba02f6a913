"""The MCP handlers of resources, resource templates and prompts, passed through to the
upstreams (:mod:`.passthrough`), for :class:`~.server.GatewayServer`.

``resources/list``, ``resources/templates/list`` and ``prompts/list`` are the union of the
upstreams' lists (an upstream that fails is left out and named in the result's ``_meta``
under :data:`PASSTHROUGH_ERRORS`), ``resources/read`` and ``prompts/get`` go to the upstream
that owns the URI or name, each upstream request under the same slots, deadline, size bound
and redaction as a tool call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import ValidationError

from hyperplan.integrations.mcp_gateway.binding import client_of
from hyperplan.integrations.mcp_gateway.config import GatewayConfig
from hyperplan.integrations.mcp_gateway.loading import GatewayLoader
from hyperplan.integrations.mcp_gateway.modes import Gateway
from hyperplan.integrations.mcp_gateway.passthrough import Kind, McpSession, PassthroughError
from hyperplan.integrations.mcp_gateway.workers import Workers

_T = TypeVar("_T")
PASSTHROUGH_ERRORS = "io.hyperplan/upstream-errors"  # _meta key: upstreams left out of a list
_LIST_RESULTS: dict[Kind, tuple[type[Any], type[Any], str]] = {
    Kind.RESOURCES: (types.ListResourcesResult, types.Resource, "resources"),
    Kind.TEMPLATES: (types.ListResourceTemplatesResult, types.ResourceTemplate,
                     "resource_templates"),
    Kind.PROMPTS: (types.ListPromptsResult, types.Prompt, "prompts"),
}


class Relay:
    """The passthrough handlers (module doc) over the gateway ``loader`` serves."""

    def __init__(self, loader: GatewayLoader, workers: Workers, config: GatewayConfig) -> None:
        self.loader = loader
        self.workers = workers
        self.config = config

    async def list_resources(self, ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        result: types.ListResourcesResult = await self.merged(ctx, Kind.RESOURCES)
        return result

    async def list_resource_templates(self, ctx: ServerRequestContext[Any],
                                      params: types.PaginatedRequestParams | None
                                      ) -> types.ListResourceTemplatesResult:
        result: types.ListResourceTemplatesResult = await self.merged(ctx, Kind.TEMPLATES)
        return result

    async def list_prompts(self, ctx: ServerRequestContext[Any],
                           params: types.PaginatedRequestParams | None
                           ) -> types.ListPromptsResult:
        result: types.ListPromptsResult = await self.merged(ctx, Kind.PROMPTS)
        return result

    async def read_resource(self, ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        gateway, passthrough = await self.loader.passthrough_now()
        uri = str(params.uri)
        if not passthrough.listed(Kind.RESOURCES):  # the routes come from the lists
            await self.merged(ctx, Kind.RESOURCES)
            await self.merged(ctx, Kind.TEMPLATES)
        session, upstream_uri = await self._route(
            gateway, functools.partial(passthrough.route_uri, uri))
        data = await self._send(ctx, gateway, session, f"resources/read {uri!r}",
                                lambda left: passthrough.read(session, upstream_uri, left))
        return types.ReadResourceResult.model_validate(data)

    async def get_prompt(self, ctx: ServerRequestContext[Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        gateway, passthrough = await self.loader.passthrough_now()
        if not passthrough.listed(Kind.PROMPTS):
            await self.merged(ctx, Kind.PROMPTS)
        session, name = await self._route(
            gateway, functools.partial(passthrough.route_prompt, params.name))
        arguments = dict(params.arguments) if params.arguments is not None else None
        data = await self._send(
            ctx, gateway, session, f"prompts/get {params.name!r}",
            lambda left: passthrough.get_prompt(session, name, arguments, left))
        return types.GetPromptResult.model_validate(data)

    async def merged(self, ctx: ServerRequestContext[Any], kind: Kind) -> Any:
        """The union of the upstreams' lists of ``kind`` (:meth:`.Passthrough.merge`): each
        upstream asked at once, under its slots; one that fails is left out and named in
        the result's ``_meta``."""
        gateway, passthrough = await self.loader.passthrough_now()
        sessions = await self._route(gateway, functools.partial(passthrough.offering, kind))
        lists: list[tuple[McpSession, list[dict[str, Any]]] | str] = [""] * len(sessions)

        async def ask(i: int, session: McpSession) -> None:
            try:
                lists[i] = (session, await self._send(
                    ctx, gateway, session, kind.value,
                    lambda left: passthrough.list_from(session, kind, left)))
            except MCPError as exc:
                lists[i] = exc.error.message

        async with anyio.create_task_group() as group:
            for i, session in enumerate(sessions):
                group.start_soon(ask, i, session)
        merged = passthrough.merge(kind, [x for x in lists if not isinstance(x, str)])
        result_type, item_type, field = _LIST_RESULTS[kind]
        items = []
        for item in merged:
            try:
                items.append(item_type.model_validate(item))
            except ValidationError:  # an odd upstream entry: left out, not the whole list
                continue
        errors = [x for x in lists if isinstance(x, str)]
        meta = {PASSTHROUGH_ERRORS: errors} if errors else None
        return result_type(**{field: items}, meta=meta)

    async def _route(self, gateway: Gateway, func: Callable[[], _T], *,
                     call: bool = False) -> _T:
        """``func`` in a worker thread (a routing step, which may ask an upstream for its
        capabilities, or with ``call`` an upstream request holding its slots); a
        :class:`PassthroughError` becomes the JSON-RPC error."""
        slots = self.workers.slots(gateway)
        try:
            result = await self.workers.run(
                slots.call_threads if call else slots.selection_threads, func)
        except PassthroughError as exc:
            raise MCPError(exc.code, str(exc)) from None
        if result is None:
            raise MCPError(INTERNAL_ERROR, f"no answer within {self.workers.deadline:g} s")
        return result

    async def _send(self, ctx: ServerRequestContext[Any], gateway: Gateway,
                    session: McpSession, what: str, request: Callable[[float], _T]) -> _T:
        """``request(seconds left)`` on ``session`` once it holds a slot of its client and
        of its upstream, inside the call deadline, as a tool call."""
        slots = self.workers.slots(gateway)
        async with slots.slot(session.index, client_of(ctx), self.config.call_timeout) as left:
            if left is None:
                raise MCPError(INTERNAL_ERROR, (
                    f"{what}: not sent: this server's calls (or yours) are all in progress "
                    f"and none finished within the {self.config.call_timeout:g} s deadline; "
                    "try again later"))
            seconds = left
            return await self._route(gateway, lambda: request(seconds), call=True)
