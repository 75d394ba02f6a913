"""Helpers shared by the gateway tests: run a scenario under a deadline, read a tool result,
find a free port on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp_types import CallToolResult

_T = TypeVar("_T")


def run_bounded(make: Callable[[], Awaitable[_T]], limit: float) -> _T:
    """``asyncio.run`` of ``make()``, failing after ``limit`` seconds."""
    async def bounded() -> _T:
        return await asyncio.wait_for(make(), limit)
    return asyncio.run(bounded())


def result_text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def result_data(result: CallToolResult) -> dict[str, Any]:
    """The JSON object a successful call returned (the call must not be an error)."""
    assert not result.is_error, result_text(result)
    data: dict[str, Any] = json.loads(result_text(result))
    return data


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(process: Any, port: int, limit: float = 30.0) -> None:
    """Return once ``port`` on loopback accepts connections; fail with the stderr of
    ``process`` (a ``subprocess.Popen`` with text stderr) if it exits first, or after
    ``limit`` seconds."""
    import time

    deadline = time.monotonic() + limit
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, f"nothing listened on port {port}"
            time.sleep(0.1)
