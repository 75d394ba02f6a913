"""The demo world: seven small apps over one SQLite database, as a tool catalog and callables.

>>> world = DemoWorld()                      # in memory, seeded
>>> tools = world.callables()
>>> tools["profile.show_profile"]()["username"]
'riley.quinn'
>>> len(world.catalog()) == len(tools)
True

Tools are named ``<app>.<tool>`` and carry ``metadata["app"]``. They raise a
:class:`~hyperplan.demo_world.store.DemoWorldError` for a bad token, an unknown id or an
unacceptable value; a tool runtime turns that into an error observation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, build_catalog
from hyperplan.demo_world.apps import APPS, App
from hyperplan.demo_world.store import InvalidArgumentError, Store
from hyperplan.importers.python_callables import load_python_callables

SOURCE = "demo_world"


@functools.cache
def demo_catalog() -> Catalog:
    """The catalog of every demo-world tool (the same for every world instance)."""
    tools: list[ToolSpec] = []
    for app in APPS:
        part = load_python_callables(app.tool_functions(), source=f"{SOURCE}:{app.name}")
        for tool in part.tools:
            tools.append(tool.model_copy(update={
                "name": f"{app.name}.{tool.name}",
                "source": SOURCE,
                "metadata": {**tool.metadata, "app": app.name},
            }))
    return build_catalog(tools, source=SOURCE)


class DemoWorld:
    """An executable world: ``catalog()`` describes the tools, ``callables()`` runs them
    against the database at ``db_path`` (``":memory:"`` or a file).

    A new world is seeded unless the file already holds a world (pass ``fresh=True`` to reset
    it anyway); :meth:`reset` restores the seeded state at any time.
    """

    def __init__(self, db_path: str = ":memory:", *, fresh: bool = False) -> None:
        self.store = Store(db_path)
        self.apps: dict[str, App] = {cls.name: cls(self.store) for cls in APPS}
        initialised = self.store.one(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
        if fresh or initialised is None:
            self.reset()

    # ------------------------------------------------------------------ tools
    def catalog(self) -> Catalog:
        """The tool catalog (``<app>.<tool>`` names, ``metadata["app"]``)."""
        return demo_catalog()

    def callables(self) -> dict[str, Callable[..., Any]]:
        """Tool name -> bound callable acting on this world, in catalog order."""
        return {f"{app.name}.{func.__name__}": func
                for app in self.apps.values() for func in app.tools()}

    def call(self, tool: str, **arguments: Any) -> Any:
        """Run one tool by name (a convenience for scripts and tests)."""
        found = self.callables().get(tool)
        if found is None:
            raise InvalidArgumentError(f"unknown demo-world tool {tool!r}")
        return found(**arguments)

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Restore the seeded initial state (also the clock and the token counter)."""
        self.store.reset()

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """A JSON-able dump of every table, rows ordered by primary key."""
        return self.store.snapshot()

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Rows of a read-only ``SELECT`` (for checkers)."""
        if not sql.lstrip().upper().startswith("SELECT"):
            raise InvalidArgumentError("DemoWorld.rows runs SELECT statements only")
        return self.store.rows(sql, params)

    def advance_clock(self, minutes: int) -> None:
        """Move the logical clock forward; access tokens expire after an hour."""
        self.store.advance_clock(minutes)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> DemoWorld:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
