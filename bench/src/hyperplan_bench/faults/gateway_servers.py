"""The misbehaving upstreams of the gateway section of ``hyperplan bench faults`` (issue 36):
a raw JSON-RPC MCP server over stdio (:data:`UPSTREAM_MCP`) whose tools put a secret where the
gateway must redact it, fail with long texts, flood, break the protocol, die while idle, sit on
a write, and a ``python:`` tool module (:data:`TOOLS_MODULE`) whose tool ignores its deadline.

The MCP server is started by the gateway with the SDK's minimal environment, so it reads what
it needs from files of the case's directory (its first argument): ``secret.txt`` (the secret
the case registered, also in the gateway's environment under a credential name). It records
every ``tools/call`` it receives in ``calls.log`` (one tool name a line), every payment that
took effect in ``writes.log`` and every ``echo`` argument in ``echo.log``, so a case can tell a call
never sent from one sent and lost, and count the writes. Every call runs in its own thread:
how many run at once is the gateway's business.
"""

from __future__ import annotations

UPSTREAM_MCP = r'''
"""An MCP server over stdio for the gateway's fault cases
(hyperplan_bench.faults.gateway_servers)."""
import json, os, sys, threading, time

HOME = sys.argv[1]
try:
    with open(os.path.join(HOME, "secret.txt")) as fh:
        SECRET = fh.read().strip()
except OSError:
    SECRET = "no-secret"
LOCK = threading.Lock()


def schema(props=None, required=()):
    return {"type": "object", "properties": props or {}, "required": list(required)}


RO = {"readOnlyHint": True}
TOOLS = [
    {"name": "ping", "description": "Echo a text back with the server's process id.",
     "inputSchema": schema({"text": {"type": "string"}}, ["text"]), "annotations": RO},
    {"name": "echo", "description": "Return the value it is given.",
     "inputSchema": schema({"value": {"type": "number"}}, ["value"]), "annotations": RO},
    {"name": "lookup_record", "description": "Look up a customer record by its id.",
     "inputSchema": schema({"record_id": {"type": "string"},
                            "api_key": {"type": "string", "default": SECRET}}, ["record_id"]),
     "annotations": RO},
    {"name": "fail_long", "description": "Fail with a long error text.",
     "inputSchema": schema({"offset": {"type": "integer"}}), "annotations": RO},
    {"name": "crash_stderr", "description": "Print a long text to stderr and exit.",
     "inputSchema": schema({"offset": {"type": "integer"}})},
    {"name": "big_result", "description": "Return a very large text.",
     "inputSchema": schema({"megabytes": {"type": "integer"}}, ["megabytes"]),
     "annotations": RO},
    {"name": "garble", "description": "Answer, then write a line that is not JSON-RPC.",
     "inputSchema": schema(), "annotations": RO},
    {"name": "save_note", "description": "Save a note (a write).",
     "inputSchema": schema({"text": {"type": "string"}}, ["text"])},
    {"name": "die_idle", "description": "Answer, then exit a moment later.",
     "inputSchema": schema(), "annotations": RO},
    {"name": "send_payment", "description": "Send a payment (a write), then take a minute.",
     "inputSchema": schema({"amount": {"type": "number"}}, ["amount"])},
    {"name": "slow_report", "description": "Build a report; takes half a minute.",
     "inputSchema": schema(), "annotations": RO},
    {"name": "wedge", "description": "Stop reading requests for a minute (a wedged server).",
     "inputSchema": schema(), "annotations": RO},
]


def send(obj):
    data = json.dumps(obj) + "\n"
    with LOCK:
        sys.stdout.write(data)
        sys.stdout.flush()


def log(name, text):
    with LOCK, open(os.path.join(HOME, name), "a") as fh:
        fh.write(text + "\n")


def answer(request, result=None, error=None):
    reply = {"jsonrpc": "2.0", "id": request["id"]}
    reply.update({"error": error} if error else {"result": result})
    send(reply)


def text(value, is_error=False):
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def copies(offset, total):
    """About ``total`` characters: ``offset`` characters of padding, then whole copies of the
    secret, each after a dot (wherever a cut falls among them, it falls inside a copy or right
    beside one; the text itself holds only whole copies)."""
    return "E" * (offset % 41) + ("." + SECRET) * (total // (len(SECRET) + 1)) + "."


def call(request):
    name = request["params"]["name"]
    args = request["params"].get("arguments") or {}
    log("calls.log", name)
    if name == "ping":
        answer(request, text(f"pong {args.get('text')} from {os.getpid()}"))
    elif name == "echo":
        log("echo.log", json.dumps(args))
        answer(request, text(json.dumps(args)))
    elif name == "lookup_record":
        answer(request, text(f"record {args.get('record_id')}: ok"))
    elif name == "fail_long":
        answer(request, text("lookup failed: " + copies(args.get("offset", 0), 1400), True))
    elif name == "crash_stderr":
        sys.stderr.write("fatal: " + copies(args.get("offset", 0), 2400) + "\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "big_result":
        answer(request, text("y" * (int(args["megabytes"]) << 20)))
    elif name == "garble":
        answer(request, text("ok; a broken line follows"))
        time.sleep(0.2)
        with LOCK:
            sys.stdout.write("this line is not JSON-RPC {{{\n")
            sys.stdout.flush()
    elif name == "save_note":
        answer(request, text(f"noted {args.get('text')}"))
    elif name == "die_idle":
        answer(request, text("done; exiting soon"))
        time.sleep(0.3)
        os._exit(0)
    elif name == "send_payment":
        log("writes.log", json.dumps(args))
        time.sleep(60)
        answer(request, text("paid"))
    elif name == "slow_report":
        time.sleep(30)
        answer(request, text("report"))
    else:
        answer(request, error={"code": -32602, "message": f"no tool {name}"})


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if not isinstance(request, dict) or "id" not in request:
        continue  # a notification
    method = request.get("method")
    if method == "initialize":
        answer(request, {"protocolVersion": request["params"]["protocolVersion"],
                         "capabilities": {"tools": {}},
                         "serverInfo": {"name": "faulty", "version": "1"}})
    elif method == "tools/list":
        answer(request, {"tools": TOOLS})
    elif method == "tools/call" and request["params"].get("name") == "wedge":
        log("calls.log", "wedge")
        time.sleep(60)  # in the reading loop: nothing else is read meanwhile
    elif method == "tools/call":
        threading.Thread(target=call, args=(request,), daemon=True).start()
    elif method == "ping":
        answer(request, {})
    else:
        answer(request, error={"code": -32601, "message": f"no method {method}"})
'''

TOOLS_MODULE = '''"""Python tools for the gateway's fault cases: one ignores its deadline."""
import time


def ping(text: str) -> str:
    """Echo a text back."""
    return f"pong {text}"


def crunch_numbers(rounds: int) -> int:
    """Crunch numbers for a long time (a CPU loop that ignores every deadline)."""
    total, end = 0, time.monotonic() + 60
    while time.monotonic() < end:
        total += 1
    return total
'''

TOOLS = "hp_gateway_tools"  # the module name of TOOLS_MODULE in a case's directory
