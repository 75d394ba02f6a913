"""Hermes Agent with the hyperplan plugin, offline: Hermes' real agent loop against a local stub
model that records what it is sent, with 500 registered tools.

Run it with the Python of Hermes' environment (see docs/adapters.md, Hermes):

    ~/hermes-venv/bin/python examples/hermes_plugin.py [--tools 500] [--budget 10]

It prints the tools of each model request and the share of the request's tokens that the tool
definitions take, as Hermes builds the request and as the plugin narrowed it. The first run
builds the tool graph of the tool set (cached on disk: later runs start at once).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REQUEST = "Set the status of the support ticket titled 'Login page broken' to resolved."
KINDS = """ticket order invoice project document meeting employee vendor contract shipment
payment refund customer account subscription device license report budget campaign lead
opportunity quote product warehouse supplier asset incident change release build deployment
server database backup alert dashboard survey course lesson student grade patient appointment
prescription claim policy vehicle trip booking flight hotel room reservation event venue
playlist album track podcast episode article review recipe menu delivery route driver package
repository issue branch""".split()


def tools(n: int) -> list[dict[str, Any]]:
    """``n`` tools over kinds of records: find/create one (both return its id), show, update
    its status, delete, comment on, list its history (the others take the id)."""
    out = []
    for kind in KINDS:
        what = "support ticket" if kind == "ticket" else kind
        idp = {f"{kind}_id": {"type": "string", "description": f"Id of the {what}."}}
        for name, desc, props in [
            (f"find_{kind}", f"Search {what}s by title; returns the {kind} id of the best match.",
             {"title": {"type": "string", "description": f"Title of the {what}."}}),
            (f"create_{kind}", f"Create a {what} with a title; returns the new {kind} id.",
             {"title": {"type": "string", "description": "Title."}}),
            (f"show_{kind}", f"Show every field of a {what}.", idp),
            (f"update_{kind}_status", f"Set the status of a {what} (open, resolved...).",
             {**idp, "status": {"type": "string", "description": "The new status."}}),
            (f"delete_{kind}", f"Delete a {what} for good.", idp),
            (f"comment_on_{kind}", f"Add a comment to a {what}.",
             {**idp, "text": {"type": "string", "description": "The comment."}}),
            (f"list_{kind}_history", f"List the change history of a {what}.", idp)]:
            out.append({"name": name, "description": desc, "parameters": {
                "type": "object", "properties": props, "required": list(props)}})
    return out[:n]


SCRIPT = [{"tool": "find_ticket", "arguments": {"title": "Login page broken"}},
          {"tool": "update_ticket_status", "arguments": {"ticket_id": "T-17",
                                                         "status": "resolved"}},
          {"text": "Done: ticket T-17 is resolved."}]


class StubModel(BaseHTTPRequestHandler):
    """A chat-completions endpoint answering from SCRIPT and recording each request."""

    seen: list[dict[str, Any]] = []  # noqa: RUF012

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("tools"):
            self.seen.append(body)
        step = SCRIPT[min(len(self.seen), len(SCRIPT)) - 1] if body.get("tools") else \
            {"text": "ok"}
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        if "tool" in step:
            message["tool_calls"] = [{"id": f"call_{len(self.seen)}", "type": "function",
                                      "function": {"name": step["tool"],
                                                   "arguments": json.dumps(step["arguments"])}}]
        finish = "tool_calls" if "tool" in step else "stop"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if body.get("stream"):
            if "tool_calls" in message:
                message["tool_calls"][0]["index"] = 0
            chunks = [{"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                       "usage": usage}]
            head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "stub"}
            data = "".join(f"data: {json.dumps({**head, **c})}\n\n" for c in chunks) + \
                "data: [DONE]\n\n"
            self._send(data.encode(), "text/event-stream")
        else:
            self._send(json.dumps({"id": "c", "object": "chat.completion", "created": 0,
                                   "model": "stub", "usage": usage, "choices": [
                                       {"index": 0, "message": message,
                                        "finish_reason": finish}]}).encode())

    def do_GET(self) -> None:
        self._send(json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]})
                   .encode())

    def _send(self, body: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def share(request: dict[str, Any], tool_list: list[Any]) -> tuple[int, int]:
    """(tokens of the tool definitions, tokens of the whole request) with ``tool_list``."""
    from hyperplan.retrieve.serialize import count_tokens

    body = {**request, "tools": tool_list}
    return (count_tokens(json.dumps(tool_list, ensure_ascii=False)),
            count_tokens(json.dumps(body, ensure_ascii=False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--hermes-tool-search", action="store_true",
                        help="leave Hermes' own tool search on (auto)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hermes-home-"))
    # plugins.enabled: what `hermes plugins enable hyperplan` writes. Hermes' own tool search
    # (auto: on past 10% of the context) would hide these tools behind its BM25 bridge
    # before the plugin sees them; off, hyperplan narrows them instead.
    search = "auto" if args.hermes_tool_search else "off"
    (home / "config.yaml").write_text(f"plugins:\n  enabled: [hyperplan]\n"
                                      f"tools:\n  tool_search:\n    enabled: '{search}'\n")
    os.environ.update(HERMES_HOME=str(home), HYPERPLAN_HERMES_BUDGET=str(args.budget))
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    from run_agent import AIAgent
    from tools.registry import registry

    from hyperplan.integrations.hermes import plugin

    for fn in tools(args.tools):
        registry.register(name=fn["name"], toolset="workspace", schema=fn,
                          handler=lambda a, _n=fn["name"], **k: json.dumps(
                              {"ticket_id": "T-17"} if _n == "find_ticket" else {"ok": True}))
    agent = AIAgent(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="none",
                    provider="custom", model="stub", enabled_toolsets=["workspace", "todo"],
                    quiet_mode=True, skip_context_files=True, skip_memory=True, tool_delay=0.0)
    result = agent.run_conversation(REQUEST)
    server.shutdown()
    print(f"Hermes built {len(agent.tools)} tools; the model answered: {result['final_response']}")
    for i, request in enumerate(StubModel.seen, 1):
        names = [t["function"]["name"] for t in request["tools"]]
        print(f"request {i}: {len(names)} tools sent: {', '.join(names)}")
    if plugin.last is not None:
        for tool in plugin.last.selection.tools:
            print(f"  {tool.name}: {tool.why()}")
    first = StubModel.seen[0]
    before, total_before = share(first, agent.tools)
    after, total_after = share(first, first["tools"])
    print(f"tool definitions: {before} of {total_before} request tokens "
          f"({100 * before / total_before:.0f}%) -> {after} of {total_after} "
          f"({100 * after / total_after:.0f}%)")


if __name__ == "__main__":
    main()
