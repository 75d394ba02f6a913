"""Tool runtimes: execute the tools of a :class:`~hyperplan.catalog.Catalog` and return
:class:`~hyperplan.execute.results.ToolResult` observations.

* :class:`PythonRuntime` - Python callables (in a worker thread, with a timeout).
* :class:`SubprocessPythonRuntime` - Python callables in a child process without network,
  with resource limits and a killed-at-the-deadline process group (``--sandbox subprocess``;
  :class:`Sandbox`, from :mod:`hyperplan.execute.sandboxing`, names where tools run).
* :class:`OpenAPIRuntime` - OpenAPI-imported tools over HTTP (httpx).
* :class:`MCPRuntime` - tools of a stdio MCP server (optional ``mcp`` SDK:
  ``pip install 'hyperplan[mcp]'``).
* :class:`CompositeRuntime` - the first of several runtimes that can run a tool.

Every runtime validates arguments against the tool's input schema first
(:func:`validate_arguments`) and never raises for tool-side failures. Runtimes are context
managers (``with`` calls ``close()``).
"""

from hyperplan.execute.runtimes.composite import CompositeRuntime
from hyperplan.execute.runtimes.http import OpenAPIRuntime, build_request
from hyperplan.execute.runtimes.mcp import MCPRuntime, MCPRuntimeError
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.runtimes.sandbox import SandboxLimits, SubprocessPythonRuntime
from hyperplan.execute.runtimes.validation import validate_arguments
from hyperplan.execute.sandboxing import Sandbox

__all__ = [
    "CompositeRuntime",
    "MCPRuntime",
    "MCPRuntimeError",
    "OpenAPIRuntime",
    "PythonRuntime",
    "Sandbox",
    "SandboxLimits",
    "SubprocessPythonRuntime",
    "build_request",
    "validate_arguments",
]
