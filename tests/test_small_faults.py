"""Issue 22, item 10: the smaller crashes and silent drops, each fixed by mechanism.

1. an MCP command that cannot be split (``--mcp-command``, ``mcp-server:``) is one line;
2. control and bidi characters in tool or parameter names are refused by the catalog model,
   and no catalog text breaks out of a DOT or Mermaid export;
3. ``required`` names missing from ``properties`` are warned about, once per tool;
4. ``--tools`` and ``--mcp-command`` together use both (merged catalog, one runtime);
5. unknown keys of JSON catalogs (OpenAI functions, MCP tools/list) are one warning per file;
6. ``trace show`` on a trace with no events fails in one line.

Command-line cases run ``python -m hyperplan`` as a user would: exit code, one ``error:``
line, no traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_path
from hyperplan.catalog import CONTROL_CHARS, CatalogWarning, make_tool, merge_catalogs
from hyperplan.cli.run_cmds import check_graph_tools
from hyperplan.connect import tools_from_source
from hyperplan.errors import CatalogError, HyperplanError
from hyperplan.execute.runtimes import CompositeRuntime
from hyperplan.graph import build_graph
from hyperplan.graph.export import to_dot, to_mermaid
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge
from hyperplan.importers.mcp import load_mcp_tools
from hyperplan.importers.openai_functions import load_openai_functions
from hyperplan.sources import load_source
from hyperplan_bench.importers.appworld import load_appworld
from hyperplan_bench.importers.nestful import load_nestful
from hyperplan_bench.importers.nestools import load_nestools
from hyperplan_bench.importers.stabletoolbench import load_stabletoolbench


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(cwd), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "HYPERPLAN_EMBEDDER": "hashing", "PYTHONPATH": path,
           "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "hyperplan", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=cwd)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (exit 1, no traceback, nothing else)."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _warning_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("warning:")]


def _openai(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(entries))
    return path


def _fn(name: str, props: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props or {}}
    schema.update(extra)
    return {"name": name, "description": f"The {name} tool.", "parameters": schema}


def _catalog_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CatalogWarning)]


# -- 1. an unsplittable MCP command ------------------------------------------------------------

def test_unsplittable_mcp_command_is_one_line(tmp_path: Path) -> None:
    proc = _cli("run", "--mcp-command", "python3 'unterminated", "--goal",
                '{"terminals": ["x"]}', cwd=tmp_path)
    deprecated, line = proc.stderr.splitlines()  # the deprecated option says so first
    assert deprecated == ("warning: --mcp-command CMD is deprecated; use --tools "
                          "'mcp-server:CMD'")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert line == ("error: --mcp-command: cannot split \"python3 'unterminated\": "
                    "No closing quotation")
    line = _one_error(_cli("run", "--tools", "mcp-server:python3 'unterminated", "--goal",
                           '{"terminals": ["x"]}', cwd=tmp_path))
    assert line == ("error: mcp-server: cannot split \"python3 'unterminated\": "
                    "No closing quotation")


def test_unsplittable_mcp_server_source_is_one_line(tmp_path: Path) -> None:
    line = _one_error(_cli("graph", "build", "mcp-server:python3 'x", "-o", "g.json",
                           "--embedder", "none", cwd=tmp_path))
    assert line == "error: mcp-server: cannot split \"python3 'x\": No closing quotation"
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize("command", ['python3 "a', "python3 a\\", "python3 'x"])
def test_unsplittable_commands_raise_hyperplan_errors(command: str) -> None:
    with pytest.raises(HyperplanError, match="cannot split"):
        tools_from_source(None, mcp_command=command)
    with pytest.raises(CatalogError, match=r"^mcp-server: cannot split"):
        load_source(f"mcp-server:{command}")


# -- 2. control and bidi characters ------------------------------------------------------------

BAD_CHARS = ["\x00", "\x07", "\x08", "\x1b", "\x1f", "\x7f", "\x85", "\x9b", "\u202a",
             "\u202e", "\u2066", "\u2069"]


@pytest.mark.parametrize("char", BAD_CHARS, ids=[f"U+{ord(c):04X}" for c in BAD_CHARS])
@pytest.mark.parametrize("where", ["middle", "end"])
def test_tool_names_with_control_characters_are_refused(char: str, where: str) -> None:
    name = f"get{char}x" if where == "middle" else f"get_x{char}"
    with pytest.raises(CatalogError) as info:
        make_tool(file="tools.json", name=name, description="d")
    message = str(info.value)
    assert message.startswith(f"file tools.json, tool {name!r}, field 'name': ")
    assert repr(char) in message and "control character" in message
    assert not CONTROL_CHARS.search(message)  # the error itself injects nothing


def test_surrounding_blanks_are_stripped_and_unicode_names_kept() -> None:
    assert make_tool(name="  get_x\n", description="").name == "get_x"
    assert make_tool(name="café.réserver_日本", description="").name == "café.réserver_日本"


@pytest.mark.parametrize("field, schema", [
    ("input_schema", {"type": "object", "properties": {"a\x1bb": {"type": "string"}}}),
    ("input_schema", {"type": "object", "properties": {"user": {
        "type": "object", "properties": {"na\u202eme": {"type": "string"}}}}}),
    ("output_schema", {"type": "object", "properties": {"rows": {
        "type": "array", "items": {"type": "object", "properties": {"i\x07d": {}}}}}}),
    ("output_schema", {"anyOf": [{"type": "object", "properties": {"x\x00": {}}}]}),
], ids=["input", "nested-input", "output-items", "output-anyOf"])
def test_parameter_names_with_control_characters_are_refused(
        field: str, schema: dict[str, Any]) -> None:
    with pytest.raises(CatalogError) as info:
        make_tool(file="tools.json", name="get_x", **{field: schema})
    message = str(info.value)
    assert message.startswith(f"file tools.json, tool 'get_x', field '{field}': property name ")
    assert "control character" in message and not CONTROL_CHARS.search(message)


def test_a_recursive_schema_is_checked_to_the_end() -> None:
    node: dict[str, Any] = {"type": "object", "properties": {}}
    node["properties"]["child"] = node  # a Python-level cycle, as $ref resolution can leave
    node["properties"]["leaf"] = {"type": "object", "properties": {"b\x1bad": {}}}
    with pytest.raises(CatalogError, match=re.escape(repr("b\x1bad"))):
        make_tool(name="tree", output_schema=node)


@pytest.mark.parametrize("importer", ["openai", "mcp"])
def test_importers_refuse_escape_names_in_one_line(tmp_path: Path, importer: str) -> None:
    name = "evil\x1b[31m\x07"
    if importer == "openai":
        body: Any = [_fn(name)]
    else:
        body = {"tools": [{"name": name, "inputSchema": {"type": "object"}}]}
    (tmp_path / "tools.json").write_text(json.dumps(body))
    line = _one_error(_cli("graph", "build", f"{importer}:tools.json", "-o", "g.json",
                           "--embedder", "none", cwd=tmp_path))
    assert line.startswith("error: file tools.json, tool 'evil\\x1b[31m\\x07', field 'name'")
    assert not CONTROL_CHARS.search(line)


HOSTILE = ['esc\x1b[2J', 'nl\nline', 'quote"} x -> y [label="z', 'back\\', '<b>&#x1b;</b>',
           'bidi\u202eevil', 'sep\u2028x', 'tick`md`', 'pipe|#;{}']


@pytest.fixture()
def hostile_graph() -> Hypergraph:
    """A graph whose names no catalog would pass (as an edited graph file could hold)."""
    nodes = [SchemaNode(0, NodeKind.INPUT, 1, HOSTILE[2]),
             SchemaNode(1, NodeKind.OUTPUT, 0, HOSTILE[1]),
             SchemaNode(2, NodeKind.OUTPUT, 1, HOSTILE[6])]
    tools = [ToolEdge(0, HOSTILE[0] + HOSTILE[3], "", (), (1,), ()),
             ToolEdge(1, HOSTILE[4] + HOSTILE[5] + HOSTILE[7] + HOSTILE[8], "", (0,), (2,), ())]
    return Hypergraph.from_parts(nodes, tools, [Link(1, 0, 0.9)])


def _dot_strings(text: str) -> list[str]:
    """The quoted strings of DOT text, read with DOT's escapes (``\\"``, ``\\\\``)."""
    return [re.sub(r"\\(.)", r"\1", s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text)]


def test_dot_export_stays_inert(hostile_graph: Hypergraph) -> None:
    text = to_dot(hostile_graph)
    assert not re.search(f"{CONTROL_CHARS.pattern}|[\u2028\u2029]", text.replace("\n", ""))
    lines = text.splitlines()
    assert len(lines) == 3 + 2 + 1 + 1  # header, two tools, one edge, closing brace
    assert re.fullmatch(r'  t0 \[label="(?:[^"\\]|\\.)*"\];', lines[3])
    assert re.fullmatch(r'  t0 -> t1 \[label="(?:[^"\\]|\\.)*", fontsize=8\];', lines[5])
    labels = _dot_strings(text)
    assert labels[0] == "esc [2Jback\\()"  # ESC gone, the backslash itself kept
    assert "&amp;#x1b;" in labels[1]  # Graphviz decodes entities: '&' is written as &amp;
    assert labels[2].startswith("nl line -> quote\"} x -> y [label=\"z")


def test_mermaid_export_stays_inert(hostile_graph: Hypergraph) -> None:
    text = to_mermaid(hostile_graph)
    assert not re.search(f"{CONTROL_CHARS.pattern}|[\u2028\u2029]", text.replace("\n", ""))
    lines = text.splitlines()
    assert lines[0] == "flowchart LR" and len(lines) == 4
    assert re.fullmatch(r'  t0\["[^"\[\]`<>&]*"\]', lines[1])
    assert re.fullmatch(r'  t1\["[^"\[\]`<>&]*"\]', lines[2])
    assert re.fullmatch(r'  t0 -->\|"[^"\[\]|`<>&]*"\| t1', lines[3])
    assert "#38;" in lines[2] and "#96;md#96;" in lines[2]  # shown as & and backticks


# -- 3. required names missing from properties -------------------------------------------------

def test_missing_required_names_are_warned_once_per_tool(tmp_path: Path) -> None:
    path = _openai(tmp_path / "tools.json", [
        _fn("get_x", {"a": {"type": "string"}}, required=["a", "b", "c"]),
        _fn("get_y", {}, required=["z"]),
        _fn("get_ok", {"a": {"type": "string"}}, required=["a"]),
    ])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        catalog = load_openai_functions(path)
    assert catalog.get("get_x").required_inputs == ("a", "b", "c")  # kept in the catalog
    messages = _catalog_warnings(caught)
    assert messages == [
        f"{path}: tool 'get_x': 'required' names 'b', 'c', not in 'properties' (ignored: no "
        "input is made for them)",
        f"{path}: tool 'get_y': 'required' names 'z', not in 'properties' (ignored: no input "
        "is made for them)",
    ]


# -- 4. --tools and --mcp-command together -----------------------------------------------------

SERVER = '''
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("small-faults")
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(os.getpid()))


@server.tool()
def shout(code: str) -> str:
    """Shout a code: the code in capitals with an exclamation mark."""
    return code.upper() + "!"


if "--clash" in sys.argv:
    @server.tool()
    def make_code(word: str) -> str:
        """Another make_code."""
        return word


if __name__ == "__main__":
    server.run("stdio")
'''

MODULE = '''
"""Python tools for the --tools + --mcp-command tests."""

from typing import TypedDict


class Code(TypedDict):
    code: str


def make_code(word: str) -> Code:
    """Make the code of a word."""
    return {"code": f"c-{word}"}
'''


@pytest.fixture()
def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tiny stdio MCP server (``server.py PIDFILE [--clash]``) and a Python tool module
    (``small_faults_tools``) in ``tmp_path``, importable from it."""
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "small_faults_tools.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("small_faults_tools", None)


def _server_command(where: Path, *extra: str) -> str:
    return f"{sys.executable} {where / 'server.py'} {where / 'pid'} {' '.join(extra)}".strip()


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our zombie child
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_tools_and_mcp_command_are_merged_in_order(both: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        setup = tools_from_source("python:small_faults_tools", mcp_command=_server_command(both))
    try:
        assert _catalog_warnings(caught) == []  # a live tools/list has no unknown keys
        assert setup.catalog.names() == ["make_code", "shout"]  # --tools first, then MCP
        assert isinstance(setup.runtime, CompositeRuntime)
        made = setup.runtime.call(setup.catalog.get("make_code"), {"word": "hi"})
        shouted = setup.runtime.call(setup.catalog.get("shout"), {"code": "c-hi"})
        assert made.ok and made.value == {"code": "c-hi"}
        assert shouted.ok and shouted.value == {"result": "C-HI!"}
        again = tools_from_source("python:small_faults_tools", mcp_command=_server_command(both))
        try:  # deterministic order: a graph built from one setup fits the next
            check_graph_tools(build_graph(setup.catalog, embedder=None), again.catalog.names(),
                              both / "g.json")
        finally:
            again.runtime.close()
    finally:
        setup.runtime.close()


def test_a_name_clash_is_one_error_and_stops_the_server(both: Path) -> None:
    with pytest.raises(CatalogError) as info:
        tools_from_source("python:small_faults_tools",
                          mcp_command=_server_command(both, "--clash"))
    assert str(info.value) == ("1 tool name is defined twice: 'make_code' (--tools "
                               "python:small_faults_tools and --mcp-command); rename one side "
                               "of each")
    assert _gone(int((both / "pid").read_text()))


def test_merge_lists_every_clash() -> None:
    one = load_openai_functions([_fn("a"), _fn("b"), _fn("c")])
    two = load_openai_functions([_fn("c"), _fn("a"), _fn("d")])
    with pytest.raises(CatalogError) as info:
        merge_catalogs([one, two], labels=["first", "second"])
    assert str(info.value) == ("2 tool names are defined twice: 'c' (first and second), "
                               "'a' (first and second); rename one side of each")


@pytest.mark.parametrize("server_option", [("--tools", "mcp-server:"), ("--mcp-command", "")])
def test_run_uses_both_sources(both: Path, server_option: tuple[str, str]) -> None:
    goal = {"terminals": ["shout"], "values": {"word": "hi"}}
    option, prefix = server_option  # one grammar; --mcp-command CMD is its deprecated alias
    proc = _cli("run", "--tools", "python:small_faults_tools", option,
                prefix + _server_command(both), "--goal", json.dumps(goal), "--json",
                "--trace", "t.jsonl", cwd=both)
    assert proc.returncode == 0, proc.stderr
    assert ("--mcp-command CMD is deprecated" in proc.stderr) == (option == "--mcp-command")
    assert json.loads(proc.stdout)["status"] == "success"
    events = [json.loads(line) for line in (both / "t.jsonl").read_text().splitlines()]
    calls = [(e["tool"], e["ok"]) for e in events if e["type"] == "tool_call"]
    assert calls == [("make_code", True), ("shout", True)]


# -- 5. unknown keys of a catalog --------------------------------------------------------------

def test_openai_unknown_keys_are_one_warning_per_catalog(tmp_path: Path) -> None:
    path = _openai(tmp_path / "tools.json", [
        {"type": "function", "returns": {"type": "object"}, "function": _fn("get_x")},
        {**_fn("get_y"), "paramters": {}, "x-effects": ["y.done"]},
        {"type": "function", "function": {**_fn("get_z"), "x-preconditions": ["z.ready"]}},
    ])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_openai_functions(path)
    assert _catalog_warnings(caught) == [
        f"{path}: tool 'get_x': unknown key 'returns' beside 'function' (ignored; did you "
        "mean function.returns?); tool 'get_y': unknown key 'paramters' (ignored; did you "
        "mean 'parameters'?)"]


def test_mcp_unknown_keys_are_one_warning_per_catalog(tmp_path: Path) -> None:
    known = {"name": "full", "title": "Full", "description": "d",
             "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": True}, "_meta": {}, "icons": [],
             "execution": {"taskSupport": "optional"}}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [
        known, {"name": "m", "inputSchema": {"type": "object"}, "parameters": {}, "foo": 1}]}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_mcp_tools(path)
    assert _catalog_warnings(caught) == [
        f"{path}: tool 'm': unknown keys 'foo', 'parameters' (ignored; did you mean "
        "'inputSchema' for 'parameters'?)"]


def test_unknown_keys_warning_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    _openai(tmp_path / "tools.json", [
        {"type": "function", "returns": {"type": "object"}, "function": _fn(f"get_{i}")}
        for i in range(8)])
    proc = _cli("graph", "build", "openai:tools.json", "-o", "g.json", "--embedder", "none",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _warning_lines(proc) == [
        "warning: tools.json: " + "; ".join(
            f"tool 'get_{i}': unknown key 'returns' beside 'function' (ignored; did you mean "
            "function.returns?)" for i in range(5)) + "; and 3 more tools"]


@pytest.mark.parametrize("load, parts", [
    (load_appworld, ("appworld", "api_docs")),
    (load_nestools, ("nestools", "test_data_dev.jsonl")),
    (load_nestful, ("nestful", "data", "executable", "executable-spec.json")),
    (load_nestful, ("nestful", "data", "non-executable", "non-executable-sgd-spec.json")),
    (load_stabletoolbench, ("stabletoolbench", "G1_instruction.json")),
    (load_openai_functions, ("deepplanning", "shopping_tool_schema.json")),
], ids=["appworld", "nestools", "nestful", "nestful-sgd", "stabletoolbench", "deepplanning"])
def test_benchmark_catalogs_load_without_catalog_warnings(load: Any,
                                                          parts: tuple[str, ...]) -> None:
    path = shared_path(*parts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        catalog = load(path)
    assert len(catalog) > 0
    assert _catalog_warnings(caught) == []


# -- 6. trace show on a trace with no events ---------------------------------------------------

@pytest.mark.parametrize("content", ["", "\n  \n\n"], ids=["empty", "blank-lines"])
def test_trace_show_without_events_fails(tmp_path: Path, content: str) -> None:
    (tmp_path / "t.jsonl").write_text(content)
    assert _one_error(_cli("trace", "show", "t.jsonl", cwd=tmp_path)) == \
        "error: t.jsonl: empty trace (no events)"


def test_graph_show_prints_descriptions_without_controls_or_markup(tmp_path: Path) -> None:
    """A catalog author's description with an escape sequence, a bell and rich markup
    (``[/]`` used to raise a MarkupError) is shown as text, escapes visible."""
    from hyperplan.catalog import printable

    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps([{"type": "function", "function": {
        "name": "t1", "description": "evil \x1b[31mRED\x1b[0m [/] [bold]x\x07\nnext",
        "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}]))
    graph = tmp_path / "g.json"
    build = subprocess.run([sys.executable, "-m", "hyperplan", "graph", "build",
                            f"openai:{catalog}", "-o", str(graph), "--embedder", "hashing"],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    shown = subprocess.run([sys.executable, "-m", "hyperplan", "graph", "show", str(graph),
                            "t1"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "\\x1b[31mRED" in shown.stdout and "[/] [bold]x\\x07" in shown.stdout
    assert printable("a\tb\nc\x00") == "a\tb\nc\\x00"


def test_a_catalog_where_no_pair_can_link_builds() -> None:
    """Regression: with an embedder, a catalog whose inputs and outputs offer no candidate pair
    that can reach the minimum weight (the fault lab's OpenAPI service) raised ``need at least
    one array to concatenate`` in link inference."""
    from hyperplan.embed import HashingEmbedder
    from hyperplan.importers.openapi import load_openapi
    from hyperplan_bench.faults.servers import openapi_spec

    catalog = load_openapi(openapi_spec("http://127.0.0.1:1"))
    graph = build_graph(catalog, embedder=HashingEmbedder())
    assert graph.n_tools == len(catalog)
