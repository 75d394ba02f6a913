"""The Hermes Agent plugin in Hermes' real agent loop (``AIAgent.run_conversation``).

Hermes (``hermes-agent`` 0.19.0) pins ``openai==2.24.0`` and its ``[mcp]`` extra ``mcp==1.26.0``,
so it lives in its own virtual environment (``$HYPERPLAN_HERMES_PYTHON``, default
``/tmp/hermes-venv/bin/python``; ``.ci/run`` builds one). The test runs this file as a script
there: it registers 56 workspace tools, points Hermes at a local OpenAI-compatible stub server
on 127.0.0.1 that records every request and answers with scripted tool calls, enables the
``hyperplan`` plugin through its entry point, and prints what the model was sent. The pytest
side (main environment) checks it: the narrowed tools, the producer of the target's id
included, Hermes' core tools kept, the state moving on after each result, and across three
user messages of one session: a follow-up that refers back ("that ticket") keeps using the id
held, one that names another ticket by title is offered the lookup again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from test_integration_catalog import REQUEST, WORKSPACE, workspace_functions

HERMES_PYTHON = os.environ.get("HYPERPLAN_HERMES_PYTHON", "/tmp/hermes-venv/bin/python")


# -- the script run under Hermes' interpreter ------------------------------------------------

SCRIPT = [  # what the stub model answers to each main-loop request, in order
    {"tool": "find_ticket", "arguments": {"title": "Login page broken"}},
    {"tool": "update_ticket_status", "arguments": {"ticket_id": "T-17", "status": "resolved"}},
    {"text": "The ticket 'Login page broken' (T-17) is now resolved."},
    # the second user message of the same session
    {"tool": "comment_on_ticket", "arguments": {"ticket_id": "T-17", "text": "Fixed."}},
    {"text": "Commented."},
    # the third: another ticket, by its title
    {"tool": "find_ticket", "arguments": {"title": "Checkout fails"}},
    {"tool": "update_ticket_status", "arguments": {"ticket_id": "T-18", "status": "closed"}},
    {"text": "Closed."},
]
FOLLOW_UP = "Also add a comment saying Fixed. to that ticket."
THIRD = "Now close the support ticket titled 'Checkout fails' too."


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat-completions endpoint that records each request body."""

    requests: ClassVar[list[dict[str, Any]]] = []
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [{"id": "stub-model", "object": "model",
                                                "context_length": 128000}]}
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b"{}")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with self.lock:
            main = bool(body.get("tools"))
            if main:
                self.requests.append(body)
            step = SCRIPT[min(len(self.requests), len(SCRIPT)) - 1] if main else \
                {"text": "ok"}
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        if "tool" in step:
            message["tool_calls"] = [{
                "id": f"call_{len(self.requests)}", "type": "function",
                "function": {"name": step["tool"], "arguments": json.dumps(step["arguments"])}}]
        finish = "tool_calls" if "tool" in step else "stop"
        if body.get("stream"):
            delta = dict(message)
            if "tool_calls" in delta:
                delta["tool_calls"] = [{**c, "index": 0} for c in delta["tool_calls"]]
            chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0,
                       "model": "stub-model",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {"id": "c", "object": "chat.completion.chunk", "created": 0,
                       "model": "stub-model",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                 "total_tokens": 2}}]
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, text.encode(), "text/event-stream")
            return
        data = {"id": "c", "object": "chat.completion", "created": 0, "model": "stub-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        self._send(200, json.dumps(data).encode())


def run_hermes(home: Path) -> dict[str, Any]:
    """Hermes' agent loop with the plugin, against the stub (runs inside Hermes' venv)."""
    # Hermes' own tool search off: it would defer plugin tools behind its bridge past 10% of
    # the context (not with 56 tools, but the test should not depend on a threshold)
    (home / "config.yaml").write_text("plugins:\n  enabled: [hyperplan]\n"
                                      "tools:\n  tool_search:\n    enabled: 'off'\n")
    os.environ["HERMES_HOME"] = str(home)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    calls: list[dict[str, Any]] = []
    try:
        from run_agent import AIAgent
        from tools.registry import registry

        def handler_for(name: str) -> Any:
            def handle(args: dict[str, Any], **_: Any) -> str:
                calls.append({"tool": name, "arguments": args})
                if name == "find_ticket":
                    number = 17 if args.get("title") == "Login page broken" else 18
                    return json.dumps({"ticket_id": f"T-{number}", "title": args.get("title")})
                return json.dumps({"ok": True})
            return handle

        for fn in workspace_functions():
            registry.register(name=fn["name"], toolset="workspace", schema=fn,
                              handler=handler_for(fn["name"]))
        agent = AIAgent(base_url=f"http://127.0.0.1:{server.server_port}/v1",
                        api_key="stub-key", provider="custom", model="stub-model",
                        enabled_toolsets=["workspace", "todo", "clarify"], quiet_mode=True,
                        skip_context_files=True, skip_memory=True, max_iterations=6,
                        tool_delay=0.0, session_id="hp-test-session")
        from hyperplan.integrations.hermes import plugin

        selections: list[Any] = []
        narrow = plugin.narrow_request

        def spy(request: Any, session: str) -> Any:
            out = narrow(request, session)
            selections.append(plugin.last.selection.as_dict() if plugin.last else None)
            return out

        plugin.narrow_request = spy  # type: ignore[method-assign]
        result = agent.run_conversation(REQUEST)
        second = agent.run_conversation(FOLLOW_UP, conversation_history=result["messages"])
        third = agent.run_conversation(THIRD, conversation_history=second["messages"])
        from hermes_cli.plugins import get_plugin_manager

        loaded = {k: {"enabled": p.enabled, "error": p.error,
                      "middleware": list(p.middleware_registered),
                      "hooks": list(p.hooks_registered)}
                  for k, p in get_plugin_manager()._plugins.items() if k == "hyperplan"}
        recorded = [{"tool": c.tool, "arguments": dict(c.arguments), "ok": c.ok}
                    for c in plugin.recorded("hp-test-session")]
        last = plugin.last.selection.as_dict() if plugin.last else None
        return {"requests": _Stub.requests, "calls": calls, "plugin": loaded,
                "recorded": recorded, "last": last, "formats": other_formats(agent.tools),
                "agent_tools": [t["function"]["name"] for t in agent.tools],
                "final": result.get("final_response"), "selections": selections,
                "second": second.get("final_response"), "third": third.get("final_response"),
                "hermes_search": hermes_tool_search_seen(agent.tools),
                "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                                  ("mcp", "hyperplan"))}
    finally:
        server.shutdown()


def hermes_tool_search_seen(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Hermes' own tool search switched on (its ``assemble_tool_defs``, config ``enabled:
    on``) over the same tools: what a fresh plugin makes of the request that results."""
    from tools.tool_search import ToolSearchConfig, assemble_tool_defs

    from hyperplan.integrations.hermes import HermesPlugin

    assembled = assemble_tool_defs(list(tools),
                                   config=ToolSearchConfig.from_raw({"enabled": "on"}))
    fresh = HermesPlugin(budget=6)
    request = {"model": "m", "tools": assembled.tool_defs,
               "messages": [{"role": "user", "content": REQUEST}]}
    answer = fresh.on_llm_request(request=request, api_mode="chat_completions", session_id="s")
    return {"activated": assembled.activated, "deferred": assembled.deferred_count,
            "seen": fresh.hermes_deferred, "changed": answer is not None,
            "names": [t["function"]["name"] for t in assembled.tool_defs]}


def other_formats(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The plugin's middleware on requests of Hermes' other api_modes, their tools converted
    by Hermes' own adapters: per mode, the names left and the keys of the first entry."""
    from agent.anthropic_adapter import convert_tools_to_anthropic
    from agent.bedrock_adapter import convert_tools_to_converse
    from agent.codex_responses_adapter import _responses_tools

    from hyperplan.integrations.hermes import plugin

    requests = {
        "anthropic_messages": {
            "model": "m", "tools": convert_tools_to_anthropic(tools),
            "messages": [{"role": "user", "content": [{"type": "text", "text": REQUEST}]}]},
        "codex_responses": {
            "model": "m", "instructions": "be brief", "tools": _responses_tools(tools),
            "input": [{"role": "user", "content": [{"type": "input_text", "text": REQUEST}]}]},
        "bedrock_converse": {
            "modelId": "m", "toolConfig": {"tools": convert_tools_to_converse(tools)},
            "messages": [{"role": "user", "content": [{"text": REQUEST}]}]},
    }
    out: dict[str, Any] = {}
    for mode, request in requests.items():
        answer = plugin.on_llm_request(request=request, api_mode=mode, session_id=mode)
        new = answer["request"] if answer else request
        listed = new["toolConfig"]["tools"] if mode == "bedrock_converse" else new["tools"]
        names = [t["toolSpec"]["name"] if "toolSpec" in t else t["name"] for t in listed]
        out[mode] = {"names": names, "keys": sorted(listed[0]), "before": len(tools)}
    return out


# -- the pytest side ----------------------------------------------------------------------


def _bridge(deferred: int) -> list[dict[str, Any]]:
    """Hermes 0.19.0's bridge tools as its ``tools/tool_search.bridge_tool_schemas`` writes them
    (descriptions cut to what the plugin reads)."""
    text = {"tool_search": f"Search {deferred} additional tools that are loaded on demand. "
                           "Returns up to ``limit`` matches with name and description.",
            "tool_describe": "Load the full parameter schema of a tool found by tool_search.",
            "tool_call": "Invoke a tool found by tool_search."}
    return [{"type": "function", "function": {"name": n, "description": d,
                                              "parameters": {"type": "object"}}}
            for n, d in text.items()]


def test_plugin_records_into_its_hosts_conversations() -> None:
    """The plugin's one selection host keeps the calls its hook records per session, until the
    session ends; ``narrower`` is the host's deprecated name."""
    import warnings

    from hyperplan.integrations.hermes import HermesPlugin
    from hyperplan.integrations.host import SelectionHost

    host = SelectionHost(cache_dir=None)
    plugin = HermesPlugin(host=host)
    plugin.on_post_tool_call(tool_name="tool_call", session_id="s", result='{"ticket_id": 1}',
                             args={"name": "find_ticket", "arguments": '{"title": "x"}'})
    plugin.on_post_tool_call(tool_name="close_ticket", args={}, status="error")  # no session
    assert [(c.tool, dict(c.arguments)) for c in plugin.recorded("s")] == \
        [("find_ticket", {"title": "x"})]
    assert len(host.conversations) == 1 and plugin.recorded("") == []
    plugin.on_session_finalize(session_id="s")
    assert host.conversations.get("s") is None and plugin.recorded("s") == []
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert HermesPlugin(narrower=host).narrower is host
    assert [w.category for w in warned] == [DeprecationWarning, DeprecationWarning]


def test_hermes_own_tool_search_is_reported_once(caplog: Any) -> None:
    """Hermes' tool search (``tools.tool_search``, "auto" by default) already replaced the MCP
    and plugin tools by its bridge: the plugin has nothing to narrow, and says so once, naming
    the setting; a user tool that is merely called ``tool_search`` is not taken for it."""
    import logging

    from hyperplan.integrations.hermes import HermesPlugin, hermes_deferred_count

    plugin = HermesPlugin(budget=3, keep="bridges,todo")
    todo = {"type": "function", "function": {"name": "todo", "description": "Track tasks.",
                                             "parameters": {"type": "object"}}}
    request = {"model": "m", "tools": [todo, *_bridge(480)],
               "messages": [{"role": "user", "content": REQUEST}]}
    with caplog.at_level(logging.WARNING, logger="hyperplan.integrations.hermes"):
        for _ in range(3):
            assert plugin.on_llm_request(request=request, session_id="s") is None
    warned = [r.getMessage() for r in caplog.records if "tool search" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "tools.tool_search.enabled" in warned[0] and "480" in warned[0]
    assert "'off'" in warned[0]
    assert plugin.hermes_deferred == 480
    own = [{"name": "tool_search", "description": "Search my tools.", "parameters": {}}]
    assert hermes_deferred_count(own) is None
    assert hermes_deferred_count([todo]) is None



def _hermes_run(tmp_path: Path) -> dict[str, Any]:
    import pytest

    if not Path(HERMES_PYTHON).exists() or subprocess.run(
            [HERMES_PYTHON, "-c", "import run_agent, hyperplan"], capture_output=True,
            timeout=120).returncode != 0:
        message = (f"Hermes Agent with hyperplan is not installed at {HERMES_PYTHON} "
                   "(python3 -m venv /tmp/hermes-venv; see .ci/run)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    home = tmp_path / "hermes-home"
    home.mkdir()
    out = tmp_path / "run.json"
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(tmp_path / "cache"),
           "HYPERPLAN_HERMES_BUDGET": "6", "HERMES_HOME": str(home)}
    proc = subprocess.run([HERMES_PYTHON, __file__, str(home), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_hermes_agent_loop_sends_the_model_only_the_selected_tools(tmp_path: Path) -> None:
    run = _hermes_run(tmp_path)
    assert run["plugin"]["hyperplan"]["enabled"], run["plugin"]
    assert "llm_request" in run["plugin"]["hyperplan"]["middleware"]
    everything = set(run["agent_tools"])
    assert everything >= WORKSPACE
    assert len(everything) >= 56
    sent = [[t["function"]["name"] for t in r["tools"]] for r in run["requests"]]
    assert len(sent) == 8, sent  # find, update, answer; comment, answer; find, update, answer
    workspace = WORKSPACE
    first = set(sent[0])
    # the target and the producer of its ticket_id, within the budget of 6 workspace tools
    assert {"update_ticket_status", "find_ticket"} <= first
    assert len(first & workspace) <= 6
    assert {"todo", "clarify"} <= first  # Hermes' core tools are kept
    assert first <= everything
    # after find_ticket returned the id, the update is still offered
    assert "update_ticket_status" in sent[1]
    turn = ["find_ticket", "update_ticket_status", "comment_on_ticket", "find_ticket",
            "update_ticket_status"]
    assert [c["tool"] for c in run["calls"]] == turn
    # the post_tool_call hook fed the results into the session of this conversation
    assert [c["tool"] for c in run["recorded"]] == turn
    assert all(c["ok"] for c in run["recorded"])
    assert "ticket_id" in run["last"]["held"]  # the last selection knew the id was held
    # the follow-up (a new request, same session): the id is held from the first turn, so
    # nothing is selected to produce it, and the comment tool is offered
    follow = run["selections"][3]
    assert follow["request"] == FOLLOW_UP and "ticket_id" in follow["held"]
    assert "comment_on_ticket" in sent[3]
    assert not [t for t in follow["tools"] if "ticket_id for" in t["why"]], follow["tools"]
    assert run["second"] == "Commented."
    # the third turn names another ticket by title: the id held is the other ticket's, so it
    # no longer grounds the selection and the lookup is offered again
    third = run["selections"][5]
    assert third["request"] == THIRD and "ticket_id" not in third["held"]
    assert {"find_ticket", "update_ticket_status"} <= set(sent[5])
    assert run["third"] == "Closed."
    assert run["final"] and "resolved" in run["final"]
    # the same narrowing in the shapes of Hermes' other api_modes
    for mode, got in run["formats"].items():
        assert set(got["names"]) == first, (mode, got)
        assert got["before"] == len(everything)
    assert run["formats"]["anthropic_messages"]["keys"] == ["description", "input_schema", "name"]
    assert "parameters" in run["formats"]["codex_responses"]["keys"]
    assert run["formats"]["bedrock_converse"]["keys"] == ["toolSpec"]
    # with Hermes' own tool search on, the workspace tools hide behind its bridge: the plugin
    # has nothing to narrow and says so, with the number Hermes deferred
    search = run["hermes_search"]
    assert search["activated"] and {"tool_search", "tool_call"} <= set(search["names"])
    assert search["seen"] == search["deferred"] >= len(WORKSPACE), search
    assert not search["changed"]
    # the plugin pulled in neither hyperplan's MCP gateway nor the mcp package
    assert not [m for m in run["modules"] if m.split(".")[0] == "mcp" or "mcp_gateway" in m]


if __name__ == "__main__":  # under Hermes' interpreter: python this.py HERMES_HOME OUT
    result = run_hermes(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text(json.dumps(result, default=str))
