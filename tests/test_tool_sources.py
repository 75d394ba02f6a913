"""The tool-source registry (hyperplan.tool_sources): each kind registered once, with its
catalog, its optional runtime and its close; every entry point (run, graph, the gateway's
upstreams, the selector cache) opens sources through it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hyperplan.connect import tools_from_source
from hyperplan.errors import CatalogError
from hyperplan.execute.runtimes import CompositeRuntime, PythonRuntime
from hyperplan.execute.runtimes.sandbox import Sandbox, SubprocessPythonRuntime
from hyperplan.integrations.mcp_gateway.upstream import UpstreamOptions, load_upstream
from hyperplan.select.cache import load_catalogs
from hyperplan.sources import LOADERS, load_source
from hyperplan.tool_sources import (
    BARE,
    CORE_KINDS,
    KINDS,
    NoRuntime,
    SourceOptions,
    load_catalog,
    open_source,
    resolve,
)

SERVER = Path(__file__).parent / "data" / "runtimes" / "mcp_server.py"


def _openai_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "get_x", "description": "Get x.", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}}}]))
    return path


def test_every_kind_is_registered_once_with_its_runtime() -> None:
    assert set(CORE_KINDS) == {"openai", "openapi", "mcp", "mcp-server", "python"}
    assert set(BARE) == {"demo", "demo-world"}
    runnable = {name for name, kind in {**CORE_KINDS, **BARE}.items() if kind.open}
    assert runnable == {"openapi", "mcp-server", "python", "demo-world"}
    assert set(CORE_KINDS) <= set(KINDS) and set(LOADERS) == set(KINDS)


def test_unknown_kinds_name_the_known_ones() -> None:
    for spec in ("nope:x", "python", "python:", "demo-worlds"):
        with pytest.raises(CatalogError, match="expected KIND:LOCATION with KIND one of"):
            resolve(spec)


def test_a_catalog_only_kind_opens_with_no_runtime(tmp_path: Path) -> None:
    spec = f"openai:{_openai_file(tmp_path)}"
    opened = open_source(spec)
    assert isinstance(opened.runtime, NoRuntime)
    tool = opened.catalog.get("get_x")
    result = opened.runtime.call(tool, {})
    assert not result.ok and "gives no way to run it" in (result.error or "")
    assert load_catalog(spec).names() == load_source(spec).names() == ["get_x"]
    opened.close()


def test_python_opens_in_process_or_in_a_child() -> None:
    spec = "python:hyperplan.examples.bookstore"
    inside = open_source(spec)
    child = open_source(spec, SourceOptions(sandbox=Sandbox.SUBPROCESS.value))
    try:
        assert isinstance(inside.runtime, PythonRuntime) and inside.slots is None
        assert isinstance(child.runtime, SubprocessPythonRuntime) and child.slots == 1
        assert inside.catalog.names() == child.catalog.names()
    finally:
        inside.close()
        child.close()


def test_one_sandbox_enum_under_every_name() -> None:
    """One Sandbox (hyperplan.execute.sandboxing), re-exported where it was; SourceOptions
    makes its value the member and refuses any other value (once run in-process silently)."""
    from hyperplan.cli import serve_cmd
    from hyperplan.execute import runtimes, sandboxing
    assert sandboxing.Sandbox is runtimes.Sandbox is Sandbox is vars(serve_cmd)["Sandbox"]
    with pytest.warns(DeprecationWarning, match="Sandbox.SUBPROCESS"):
        from hyperplan.tool_sources import SUBPROCESS
    assert SUBPROCESS is Sandbox.SUBPROCESS
    assert SourceOptions().sandbox is Sandbox.NONE
    assert SourceOptions(sandbox="subprocess").sandbox is Sandbox.SUBPROCESS
    with pytest.raises(ValueError, match="'subproces' is not a valid Sandbox"):
        SourceOptions(sandbox="subproces")
    with pytest.raises(ValueError, match="'subproces' is not a valid Sandbox"):
        tools_from_source("demo", sandbox="subproces")  # type: ignore[arg-type]


def test_demo_world_opens_with_its_world() -> None:
    opened = open_source("demo-world")
    assert opened.world is not None and opened.catalog.names()
    assert isinstance(opened.runtime, PythonRuntime)


def test_mcp_server_is_one_grammar_for_run_and_the_gateway() -> None:
    spec = f"mcp-server:{sys.executable} {SERVER}"
    opened = open_source(spec)
    try:
        assert "add" in opened.catalog.names()
        assert opened.runtime.call(opened.catalog.get("add"), {"a": 1, "b": 2}).ok
    finally:
        opened.close()
    setup = tools_from_source(["python:hyperplan.examples.bookstore", spec])
    try:
        assert isinstance(setup.runtime, CompositeRuntime)
        assert setup.runtime.call(setup.catalog.get("add"), {"a": 2, "b": 3}).ok
    finally:
        setup.runtime.close()
    upstream = load_upstream([spec], UpstreamOptions(), report=lambda line: None)
    try:
        assert "add" in upstream.names
    finally:
        upstream.close()


def test_the_deprecated_mcp_command_is_one_more_source() -> None:
    with pytest.raises(CatalogError, match=r"^--mcp-command: cannot split"):
        tools_from_source(None, mcp_command="python3 'x")
    setup = tools_from_source(None, mcp_command=f"{sys.executable} {SERVER}")
    try:
        assert "add" in setup.catalog.names()
    finally:
        setup.runtime.close()


def test_the_selector_cache_loads_through_the_registry(tmp_path: Path) -> None:
    spec = f"openai:{_openai_file(tmp_path)}"
    merged = load_catalogs([spec, "demo"])
    assert merged.names()[0] == "get_x" and len(merged.names()) > 1
    assert merged.get("get_x").metadata["server"] == spec
