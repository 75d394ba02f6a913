"""Cases of ``hyperplan bench faults`` that run tools (fault items 1-6 of docs/benchmarks.md,
"Runtime trust under faults"): writes against a server that never answers, secrets echoed back,
deadlines against slow servers, tools and models, unbounded bodies, host-acting tool sources,
tools that end the process.

Every case runs ``hyperplan run`` the way ``tests/test_runtime_trust.py``,
``tests/test_faults.py``, ``tests/test_python_tools_safety.py`` and ``tests/test_sandbox.py``
do: an LLM-free ``--goal`` naming the terminal tool (or a request and ``--llm`` pointing at
the lab's fake model), ``--json`` and ``--trace``.
"""

from __future__ import annotations

import shlex
import sys

from hyperplan_bench.faults.common import (
    case,
    expect_error,
    expect_run,
    first_request_at,
    goal,
    line_count,
    mcp_command,
    secret_value,
    time_in,
    tool_calls,
    tool_module,
    trace_events,
    write,
    write_spec,
)
from hyperplan_bench.faults.runner import CaseContext
from hyperplan_bench.faults.servers import (
    EXIT_AT_IMPORT,
    LAB_MODEL,
    LOOP_AT_IMPORT,
    MUTE_MCP_SERVER,
)
from hyperplan_bench.faults.verdict import Check, Step

DEADLINE = 3.0  # --max-seconds of the deadline cases
# --max-seconds of the cases that start an MCP server: its interpreter's start-up and the SDK's
# import are inside the run's budget, and take seconds on a busy machine
MCP_DEADLINE = 8.0
STOPPED = ("failed", "budget_exhausted")  # what a run cut by a fault may end with


def _run(ctx: CaseContext, source: str, terminal: str, values: dict[str, object] | None = None,
         *extra: str, deadline: float | None = None, expect: tuple[int, ...] = (2,),
         env: dict[str, str] | None = None, json_out: bool = True) -> Step:
    """``run --tools SOURCE --goal ... --trace t.jsonl [--json] EXTRA [--max-seconds D]``."""
    args = ["run", "--tools", source, "--goal", goal(terminal, values), "--trace", "t.jsonl",
            *(["--json"] if json_out else []), *extra]
    if deadline is not None:
        args += ["--max-seconds", f"{deadline:g}"]
    return ctx.cli(*args, deadline=deadline, expect=expect, env=env)


# -- item 1: a write is executed once -------------------------------------------------------------

@case("post-never-answers", 1, timed=True)
def post_never_answers(ctx: CaseContext) -> Check:
    """An OpenAPI POST whose server never answers, ``run --max-seconds 3``: sent once and
    reported ``outcome_unknown``, never re-sent (item 1; before the fix: 3 POSTs)."""
    step = _run(ctx, write_spec(ctx), "create_payment", {"amount": 5}, deadline=DEADLINE)
    writes = ctx.lab.applied_writes(ctx.name, "/payments")
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"), ["outcome_unknown"],
                      also=writes == 1, note=f"{writes} POST applied", writes=writes)


@case("post-idempotency-key", 1, timed=True)
def post_idempotency_key(ctx: CaseContext) -> Check:
    """The same POST with ``--idempotency-key-header Idempotency-Key``: it may be retried,
    but every attempt carries the planned call's one key, so the write takes effect once
    (item 1)."""
    step = _run(ctx, write_spec(ctx), "create_payment", {"amount": 5},
                "--idempotency-key-header", "Idempotency-Key", deadline=DEADLINE)
    posts = [r for r in ctx.lab.requests(ctx.name) if r.method == "POST"]
    writes = ctx.lab.applied_writes(ctx.name, "/payments")
    keyed = all(r.idempotency_key for r in posts)
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"), also=keyed and writes == 1,
                      note=f"{len(posts)} POST(s) {'all keyed' if keyed else 'NOT all keyed'}, "
                      f"{writes} applied", writes=writes)


@case("post-answered-500", 1)
def post_answered_500(ctx: CaseContext) -> Check:
    """A POST answered by HTTP 500: a tool error, not retried (the server may have acted
    before failing) (item 1)."""
    step = _run(ctx, write_spec(ctx), "create_refund", {"amount": 3})
    writes = ctx.lab.applied_writes(ctx.name, "/refunds")
    return expect_run(step, ("failed",), tool_calls(ctx.work / "t.jsonl"), ["tool_error"],
                      also=writes == 1, note=f"{writes} POST applied", writes=writes)


@case("mcp-write-deadline", 1, timed=True)
def mcp_write_deadline(ctx: CaseContext) -> Check:
    """An MCP tool that records a payment and then sits for a minute, ``--max-seconds 8``:
    called once, ``outcome_unknown``, the run stops at its deadline (items 1 and 3)."""
    step = ctx.cli("run", "--tools", "mcp-server:" + mcp_command(ctx), "--goal",
                   goal("send_payment", {"amount": 5}), "--json", "--trace", "t.jsonl",
                   "--max-seconds", f"{MCP_DEADLINE:g}", deadline=MCP_DEADLINE, expect=(2,))
    writes = line_count(ctx, "mcp_writes.log")
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"), ["outcome_unknown"],
                      also=writes == 1, note=f"tool ran {writes} time(s)", writes=writes)


@case("python-write-deadline", 1, timed=True)
def python_write_deadline(ctx: CaseContext) -> Check:
    """A Python tool that books a slot and then sleeps a minute, ``--max-seconds 3``: called
    once, abandoned at the deadline, ``outcome_unknown`` (items 1 and 3)."""
    step = _run(ctx, tool_module(ctx), "book_slot", {"slot": "s1"}, deadline=DEADLINE)
    writes = line_count(ctx, "writes.log")
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"), ["outcome_unknown"],
                      also=writes == 1, note=f"tool ran {writes} time(s)", writes=writes)


# -- item 2: secrets are never printed ----------------------------------------------------------

def _echo_secret(ctx: CaseContext, json_out: bool) -> Check:
    token = ctx.secret(f"Bearer {secret_value()}")
    ctx.secret(token.split()[1])
    step = _run(ctx, write_spec(ctx), "echo_request", {"note": "hello"},
                "--header", "Authorization: $HP_LAB_AUTH", expect=(0,),
                env={"HP_LAB_AUTH": token}, json_out=json_out)
    calls = tool_calls(ctx.work / "t.jsonl")
    sent = any(r.path == "/echo" for r in ctx.lab.requests(ctx.name))
    redacted = "***" in (ctx.work / "t.jsonl").read_text() if calls else False
    note = (f"echo {'reached' if sent else 'NOT reached'}, trace "
            f"{'redacted' if redacted else 'NOT redacted'}")
    if not json_out:
        ok = step.returncode == 0 and sent and redacted
        return Check(ok, f"text output; {note}")
    return expect_run(step, ("success",), calls, [None], also=sent and redacted, note=note)


@case("secret-header-echoed-json", 2)
def secret_header_echoed_json(ctx: CaseContext) -> Check:
    """``--header 'Authorization: $HP_LAB_AUTH'`` against a server that echoes the request's
    headers, ``--json --trace``: the token appears nowhere (item 2; before the fix: ``Bearer
    sk-...`` on stdout and in the trace). The variable's name is not credential-like, so only
    redaction by value can catch it."""
    return _echo_secret(ctx, json_out=True)


@case("secret-header-echoed-text", 2)
def secret_header_echoed_text(ctx: CaseContext) -> Check:
    """The echoed header again, with the human-readable output instead of ``--json``
    (item 2)."""
    return _echo_secret(ctx, json_out=False)


@case("secret-goal-value", 2)
def secret_goal_value(ctx: CaseContext) -> Check:
    """A goal value marked secret (``"secrets": ["note"]``) that the server echoes back in its
    body: redacted from stdout, stderr and the trace (item 2)."""
    pin = ctx.secret(secret_value("pin"))
    step = ctx.cli("run", "--tools", write_spec(ctx), "--goal",
                   goal("echo_request", {"note": pin}, ["note"]), "--json", "--trace",
                   "t.jsonl", expect=(0,))
    return expect_run(step, ("success",), tool_calls(ctx.work / "t.jsonl"), [None])


@case("secret-in-error-body", 2)
def secret_in_error_body(ctx: CaseContext) -> Check:
    """A 500 whose body quotes the request's ``Authorization`` header: the error, the trace
    and the output carry no token (item 2)."""
    token = ctx.secret(f"Bearer {secret_value()}")
    ctx.secret(token.split()[1])
    step = _run(ctx, write_spec(ctx), "get_status", None, "--header",
                "Authorization: $HP_LAB_AUTH", env={"HP_LAB_AUTH": token})
    return expect_run(step, ("failed",), tool_calls(ctx.work / "t.jsonl"), ["tool_error"])


@case("secret-llm-key-echoed", 2)
def secret_llm_key_echoed(ctx: CaseContext) -> Check:
    """A model that repeats the Authorization header it was sent (the LLM key) in its
    answer: the key appears nowhere, trace included (item 2)."""
    key = ctx.secret(secret_value())
    step = ctx.cli("run", "Echo the request with the note hello", "--tools", write_spec(ctx),
                   "--llm", f"{ctx.url}/llm-echo", "--model", LAB_MODEL, "--json", "--trace",
                   "t.jsonl", "--max-seconds", "15", expect=(0, 2),
                   env={"HP_LAB_KEY_VALUE": key, "HYPERPLAN_LLM_API_KEY": key})
    said = any(r.path.endswith("/chat/completions") for r in ctx.lab.requests(ctx.name))
    return expect_run(step, ("success", "failed", "blocked", "budget_exhausted"),
                      tool_calls(ctx.work / "t.jsonl"), also=said,
                      note="model asked" if said else "model NOT asked")


# -- item 3: deadlines are deadlines -------------------------------------------------------------

def _deadline_run(ctx: CaseContext, terminal: str, values: dict[str, object] | None,
                  source: str, *extra: str) -> Check:
    step = _run(ctx, source, terminal, values, *extra, deadline=DEADLINE)
    calls = tool_calls(ctx.work / "t.jsonl")
    kinds = [c.get("error_kind") for c in calls]
    return expect_run(step, STOPPED, calls, also=bool(kinds) and None not in kinds,
                      note=f"ran {step.run_seconds:.1f} s ({step.timing})")


@case("http-drip-deadline", 3, timed=True)
def http_drip_deadline(ctx: CaseContext) -> Check:
    """A server sending one byte every 0.2 s, ``--max-seconds 3``: the run ends at its
    deadline (item 3; before the fix: 202 s at ``--max-seconds 10``)."""
    return _deadline_run(ctx, "drip", None, write_spec(ctx))


@case("http-slow-read-deadline", 3, timed=True)
def http_slow_read_deadline(ctx: CaseContext) -> Check:
    """A GET answered after a minute (retries allowed, being a read), ``--max-seconds 3``:
    every retry shares the one deadline (item 3)."""
    return _deadline_run(ctx, "slow_read", {"s": "60"}, write_spec(ctx))


@case("python-loop-deadline", 3, timed=True)
def python_loop_deadline(ctx: CaseContext) -> Check:
    """A Python tool looping for ever, in-process, ``--max-seconds 3``: abandoned in its
    thread, the run stops and the process exits (item 3)."""
    return _deadline_run(ctx, "spin", {"rounds": 1}, tool_module(ctx))


@case("sandbox-loop-deadline", 3, timed=True)
def sandbox_loop_deadline(ctx: CaseContext) -> Check:
    """The looping tool under ``--sandbox subprocess``, ``--max-seconds 3``: its process
    group is killed at the deadline (items 3 and 5)."""
    return _deadline_run(ctx, "spin", {"rounds": 1}, tool_module(ctx), "--sandbox", "subprocess")


@case("mcp-slow-deadline", 3, timed=True)
def mcp_slow_deadline(ctx: CaseContext) -> Check:
    """An MCP tool sleeping a minute, ``--max-seconds 8``: the request gets the time left,
    not the SDK's timeout (item 3)."""
    step = ctx.cli("run", "--tools", "mcp-server:" + mcp_command(ctx), "--goal",
                   goal("nap", {"seconds": 60}), "--json", "--trace", "t.jsonl",
                   "--max-seconds", f"{MCP_DEADLINE:g}", deadline=MCP_DEADLINE, expect=(2,))
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"), ["outcome_unknown"],
                      note=f"ran {step.run_seconds:.1f} s ({step.timing})")


@case("mcp-handshake-never-completes", 3, timed=True)
def mcp_handshake_never_completes(ctx: CaseContext) -> Check:
    """An MCP server that starts and never answers ``initialize``, ``--max-seconds 3``: one
    clear line once the handshake's share of the deadline is spent, and the run ends at its
    deadline (item 3: "an MCP request and its handshake")."""
    server = write(ctx, "mute_server.py", MUTE_MCP_SERVER)
    command = shlex.join([sys.executable, str(server), str(ctx.work / "mute_started")])
    step = ctx.cli("run", "--tools", "mcp-server:" + command, "--goal", goal("nap", {"seconds": 1}),
                   "--json", "--max-seconds", f"{DEADLINE:g}", deadline=DEADLINE,
                   expect=(1, 2))
    step = ctx.witness(step, time_in(ctx, "mute_started"))
    note = f"ran {step.run_seconds:.1f} s ({step.timing})"
    if step.returncode == 1:
        return expect_error(step, "handshake", note=note)
    return expect_run(step, STOPPED, [], note=note)


@case("llm-slow-deadline", 3, timed=True)
def llm_slow_deadline(ctx: CaseContext) -> Check:
    """A model that never answers a chat completion, ``run REQUEST --llm URL --max-seconds
    3``: the request is cut to the time left and the run ends at its deadline (item 3; before
    the fix: 63 s at a 20 s budget)."""
    step = ctx.cli("run", "Echo the request", "--tools", write_spec(ctx), "--llm",
                   f"{ctx.url}/llm-slow", "--model", LAB_MODEL, "--json", "--trace", "t.jsonl",
                   "--max-seconds", f"{DEADLINE:g}", deadline=DEADLINE, expect=(1, 2))
    step = ctx.witness(step, first_request_at(ctx))
    if step.returncode == 1:
        return expect_error(step, note=f"ran {step.run_seconds:.1f} s ({step.timing})")
    return expect_run(step, STOPPED, tool_calls(ctx.work / "t.jsonl"),
                      note=f"ran {step.run_seconds:.1f} s ({step.timing})")


@case("llm-slow-model-list", 3, timed=True)
def llm_slow_model_list(ctx: CaseContext) -> Check:
    """An LLM endpoint whose model list never comes, ``run REQUEST --llm URL --max-seconds 3``
    without ``--model`` (the list is asked for at start-up): the deadline holds there too
    (item 3)."""
    step = ctx.cli("run", "Echo the request", "--tools", write_spec(ctx), "--llm",
                   f"{ctx.url}/llm-slow-models", "--json", "--max-seconds", f"{DEADLINE:g}",
                   deadline=DEADLINE, expect=(1, 2))
    step = ctx.witness(step, first_request_at(ctx))
    if step.returncode == 1:
        return expect_error(step, note=f"ran {step.run_seconds:.1f} s ({step.timing})")
    return expect_run(step, STOPPED, [], note=f"ran {step.run_seconds:.1f} s ({step.timing})")


# -- item 4: bounded responses ---------------------------------------------------------------------

@case("http-huge-body", 4)
def http_huge_body(ctx: CaseContext) -> Check:
    """A 200 MB chunked body with ``--max-response-bytes 1000000 --trace-max-chars 2000``:
    reading stops at the cap, the value is marked truncated, the trace stays small and so
    does the process (item 4; before the fix: 5.3 GB resident and a 1 GiB trace)."""
    step = _run(ctx, write_spec(ctx), "huge", {"mb": "200"}, "--max-response-bytes", "1000000",
                "--trace-max-chars", "2000", expect=(0, 2))
    calls = tool_calls(ctx.work / "t.jsonl")
    size = (ctx.work / "t.jsonl").stat().st_size if (ctx.work / "t.jsonl").exists() else 0
    marked = any(c.get("truncated") or "truncated" in str(c.get("metadata", "")) or
                 "[truncated at" in str(c.get("value", "")) for c in calls)
    small = size < 200_000 and (step.peak_mb or 0) < 1024
    return expect_run(step, ("success", "failed"), calls, also=bool(calls) and small,
                      note=f"trace {size:,} bytes, peak {step.peak_mb} MB"
                      f"{', marked truncated' if marked else ''}")


# -- item 5: tool sources that act on the host --------------------------------------------------

@case("python-os-system", 5)
def python_os_system(ctx: CaseContext) -> Check:
    """``run --tools python:os:system`` with a goal asking it to run a shell command:
    refused in one line naming ``--allow-unsafe-tools``; the command never runs (item 5)."""
    marker = ctx.work / "HOST_COMMAND_RAN"
    step = ctx.cli("run", "--tools", "python:os:system", "--goal",
                   goal("system", {"command": f"touch {marker}"}), "--json")
    return expect_error(step, "--allow-unsafe-tools", also=not marker.exists() and
                        not step.stdout.strip(), note="the shell command RAN"
                        if marker.exists() else "")


@case("python-subprocess-module", 5)
def python_subprocess_module(ctx: CaseContext) -> Check:
    """``graph build python:subprocess``: a module that acts on the host is refused in one
    line (item 5)."""
    step = ctx.cli("graph", "build", "python:subprocess", "-o", "g.json", "--embedder", "none")
    return expect_error(step, "--allow-unsafe-tools", also=not (ctx.work / "g.json").exists())


@case("sandbox-no-network", 5)
def sandbox_no_network(ctx: CaseContext) -> Check:
    """A tool fetching the lab server's URL under ``--sandbox subprocess``: the child has no
    network, the server never sees the request (item 5; where the kernel refuses isolation,
    the run must say so)."""
    step = _run(ctx, tool_module(ctx), "probe", {"url": f"{ctx.url}/probe"}, "--sandbox",
                "subprocess", expect=(0, 2))
    reached = any(r.path == "/probe" for r in ctx.lab.requests(ctx.name))
    warned = "network isolation unavailable" in step.stderr
    if reached:
        return Check(warned, "the server was reached: isolation unavailable and "
                     + ("warned" if warned else "NOT warned"))
    return expect_run(step, ("failed",), tool_calls(ctx.work / "t.jsonl"), ["tool_error"],
                      note="server not reached")


@case("sandbox-memory-hog", 5)
def sandbox_memory_hog(ctx: CaseContext) -> Check:
    """A tool allocating 2 GiB under ``--sandbox subprocess``: a ``MemoryError`` observation
    (the child's address-space cap), the run goes on to its end (item 5)."""
    step = _run(ctx, tool_module(ctx), "hog", {"gib": 2}, "--sandbox", "subprocess")
    calls = tool_calls(ctx.work / "t.jsonl")
    memory = any("MemoryError" in str(c.get("error", "")) for c in calls)
    return expect_run(step, ("failed",), calls, ["tool_error"], also=memory,
                      note="MemoryError" if memory else "no MemoryError")


# -- item 6: a tool cannot end the run ------------------------------------------------------------

def _ending_tool(ctx: CaseContext, tool: str, error: str) -> Check:
    step = _run(ctx, tool_module(ctx), tool, {"code": 3})
    calls = tool_calls(ctx.work / "t.jsonl")
    events = [e.get("type") for e in trace_events(ctx.work / "t.jsonl")]
    observed = bool(calls) and str(calls[0].get("error", "")).startswith(error)
    whole = bool(events) and events[-1] == "run_end"
    return expect_run(step, ("failed",), calls, ["tool_error"], also=observed and whole,
                      note=f"{error} observed" if observed else f"no {error} observation")


@case("tool-raises-system-exit", 6)
def tool_raises_system_exit(ctx: CaseContext) -> Check:
    """A tool raising ``SystemExit(3)``: an observation; ``--json`` whole, the trace ends with
    ``run_end`` (item 6; before the fix: rc 5 and no output)."""
    return _ending_tool(ctx, "quit_now", "SystemExit")


@case("tool-raises-keyboard-interrupt", 6)
def tool_raises_keyboard_interrupt(ctx: CaseContext) -> Check:
    """A tool raising ``KeyboardInterrupt``: an observation, not exit code 130 (item 6)."""
    return _ending_tool(ctx, "interrupt", "KeyboardInterrupt")


@case("tool-prints-to-stdout", 6)
def tool_prints_to_stdout(ctx: CaseContext) -> Check:
    """A tool printing to stdout during ``run --json``: stdout stays one JSON object, the
    print lands in the trace (item 6)."""
    step = _run(ctx, tool_module(ctx), "chatty", {"text": "x"}, expect=(0,))
    trace = (ctx.work / "t.jsonl").read_text() if (ctx.work / "t.jsonl").exists() else ""
    clean = "HELLO FROM TOOL" not in step.stdout
    kept = "HELLO FROM TOOL x" in trace
    return expect_run(step, ("success",), tool_calls(ctx.work / "t.jsonl"), [None],
                      also=clean and kept, note=("print kept in the trace" if kept else
                                                 "print NOT in the trace"))


@case("import-calls-sys-exit", 6)
def import_calls_sys_exit(ctx: CaseContext) -> Check:
    """``graph build python:M`` where M calls ``sys.exit(4)`` at import: one line naming the
    module (item 6; before the fix: a silent exit)."""
    write(ctx, "hp_fault_exits.py", EXIT_AT_IMPORT)
    step = ctx.cli("graph", "build", "python:hp_fault_exits", "-o", "g.json", "--embedder", "none")
    return expect_error(step, "hp_fault_exits", "sys.exit(4)")


@case("import-loops", 6, timed=True)
def import_loops(ctx: CaseContext) -> Check:
    """``graph build python:M`` where M loops for ever at import, ``HYPERPLAN_IMPORT_TIMEOUT=1``:
    one line after the limit, the process exits despite the looping thread (item 6; before
    the fix it hung for ever)."""
    write(ctx, "hp_fault_loops.py", LOOP_AT_IMPORT)
    step = ctx.cli("graph", "build", "python:hp_fault_loops", "-o", "g.json", "--embedder", "none",
                   env={"HYPERPLAN_IMPORT_TIMEOUT": "1"}, deadline=1.0)
    step = ctx.witness(step, time_in(ctx, "import_started"))
    return expect_error(step, "hp_fault_loops", "did not finish within 1 s",
                        also=not step.stdout.strip())
