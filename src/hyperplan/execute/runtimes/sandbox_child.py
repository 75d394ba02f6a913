"""The child process of ``--sandbox subprocess`` (:mod:`hyperplan.execute.runtimes.sandbox`).

Started as ``python -P sandbox_child.py REQUEST_FD RESULT_FD`` - a script, not ``-m``, so it
imports neither hyperplan nor its dependencies (about 40 ms to start instead of 400), and
``-P`` so its own directory (holding ``http.py``) never shadows the standard library. It must
therefore use the standard library only (``pydantic_core``, if importable, converts results
that ``json`` cannot).

Protocol: JSON lines. The first line on ``REQUEST_FD`` configures the process: ``sys_path``,
``limits`` (bytes of address space, bytes per written file, open files) and the parent's pid.
The child then isolates itself - network namespace, resource limits, a watchdog that exits
when the parent is gone - *before* importing any tool code, and answers one ``ready`` line on
``RESULT_FD`` saying whether the network could be isolated. Each further line is a call
(``id``, ``module``, ``qualname``, ``arguments``, ``cpu_seconds``) answered by one line (``id``
and ``value``, or ``error`` / ``error_type`` / ``errno``). The tool's prints go to the
process's own stdout and stderr (pipes the parent reads), flushed before the answer. ``stdin``
is ``/dev/null``: a tool reading it cannot consume the protocol. EOF on ``REQUEST_FD`` ends the
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_WATCHDOG_SECONDS = 1.0


def main(argv: list[str]) -> int:
    requests = os.fdopen(int(argv[1]), "rb")
    results = os.fdopen(int(argv[2]), "wb", buffering=0)
    for fd in (requests.fileno(), results.fileno()):
        os.set_inheritable(fd, False)  # programs a tool starts do not get the protocol
    config = json.loads(requests.readline() or b"{}")
    network = isolate_network()
    problems = apply_limits(config.get("limits", {}))
    sys.path[:] = [str(p) for p in config.get("sys_path", sys.path)]
    _watch_parent(int(config.get("parent", os.getppid())))
    results.write(encode({"ready": True, "pid": os.getpid(), "network": network,
                          "limit_problems": problems}))
    cache: dict[tuple[str, str], Callable[..., Any]] = {}
    while True:
        line = requests.readline()
        if not line:
            return 0
        request = json.loads(line)
        reply = serve(request, cache)
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        try:
            answer = encode({"id": request.get("id"), **reply})
        except BaseException as exc:  # e.g. MemoryError writing a huge value
            answer = encode({"id": request.get("id"), "error_type": type(exc).__name__,
                             "error": f"cannot send the result: {_describe(exc)}"})
        results.write(answer)


def encode(message: dict[str, Any]) -> bytes:
    """One JSON line; values ``json`` cannot write go through ``pydantic_core`` (as the
    in-process runtime converts them), else ``str``."""
    try:
        text = json.dumps(message)
    except (TypeError, ValueError):
        text = json.dumps(_jsonable(message), default=str)
    return text.encode("utf-8", "replace") + b"\n"


def _jsonable(value: Any) -> Any:
    try:
        from pydantic_core import to_jsonable_python
    except ImportError:
        return value
    return to_jsonable_python(value, fallback=str)


def _flush(stream: Any) -> None:
    with contextlib.suppress(Exception):  # a tool may have closed or replaced it
        stream.flush()


def isolate_network() -> str:
    """Move into a new, empty network namespace (only a down loopback): ``"isolated"``, or
    ``"unavailable: <reason>"`` when the kernel refuses. Root needs only ``CLONE_NEWNET``;
    another user also needs a user namespace, mapped to itself so files keep their owner."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNET if uid == 0 else CLONE_NEWNET | CLONE_NEWUSER
    try:
        _unshare(flags)
    except OSError as exc:
        return f"unavailable: unshare failed ({exc.strerror or exc})"
    if uid != 0:
        try:
            _map_ids(uid, gid)
        except OSError as exc:
            return f"unavailable: cannot map the user into its namespace ({exc.strerror})"
    return "isolated"


def _unshare(flags: int) -> None:
    unshare = getattr(os, "unshare", None)  # Python 3.12+
    if unshare is not None:
        unshare(flags)
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "unshare"):
        raise OSError(0, "no unshare() on this system")
    if libc.unshare(flags) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _map_ids(uid: int, gid: int) -> None:
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                       ("/proc/self/gid_map", f"{gid} {gid} 1")):
        with open(path, "w") as handle:
            handle.write(text)


def apply_limits(limits: dict[str, Any]) -> list[str]:
    """Address space, size of a written file, open files, no core dumps (``RLIMIT_CPU`` is
    set per call in :func:`serve`); the limits that could not be set, as text."""
    problems = []
    for name, key in (("RLIMIT_AS", "memory_bytes"), ("RLIMIT_FSIZE", "file_bytes"),
                      ("RLIMIT_NOFILE", "open_files"), ("RLIMIT_CORE", "core_bytes")):
        value = limits.get(key, 0 if key == "core_bytes" else None)
        which = getattr(resource, name, None)
        if value is None or which is None:
            continue
        try:
            _, hard = resource.getrlimit(which)
            capped = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
            resource.setrlimit(which, (capped, capped))
        except (ValueError, OSError) as exc:
            problems.append(f"{name}: {exc}")
    return problems


def _cpu_limit(seconds: float) -> None:
    """Soft ``RLIMIT_CPU``: the CPU time used so far plus ``seconds`` (``SIGXCPU`` ends the
    process past it)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _watch_parent(parent: int) -> None:
    """Exit when the parent is gone (killed without closing us)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_WATCHDOG_SECONDS)
        os._exit(70)

    threading.Thread(target=watch, name="hyperplan-sandbox-watchdog", daemon=True).start()


def serve(request: dict[str, Any], cache: dict[tuple[str, str], Callable[..., Any]]
          ) -> dict[str, Any]:
    """Run one call: every exception the tool raises, ``BaseException`` included, is an
    answer (``error``), never the end of the process."""
    _cpu_limit(float(request.get("cpu_seconds", 60)))
    try:
        func = _callable(str(request["module"]), str(request["qualname"]), cache)
    except BaseException as exc:
        return {"error": f"cannot load the tool in the sandbox: {_describe(exc)}",
                "error_type": "load"}
    try:
        value = func(**dict(request.get("arguments") or {}))
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
    except BaseException as exc:
        return {"error": _describe(exc), "error_type": type(exc).__name__,
                "errno": getattr(exc, "errno", None)}
    return {"value": value}


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _callable(module: str, qualname: str, cache: dict[tuple[str, str], Callable[..., Any]]
              ) -> Callable[..., Any]:
    found = cache.get((module, qualname))
    if found is None:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{module}.{qualname} is not callable")
        found = cache[(module, qualname)] = by_keyword(target)
    return found


def by_keyword(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, or a wrapper passing its positional-only parameters given by keyword
    positionally (the in-process twin is ``python_callables._by_keyword``; this module cannot
    import hyperplan)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (ValueError, TypeError):
        return func
    positional = [p for p in params if p.kind is p.POSITIONAL_ONLY]
    if not positional:
        return func

    @functools.wraps(func)
    def call(**kwargs: Any) -> Any:
        given = [p.name in kwargs for p in positional]
        front: list[Any] = []
        for index, param in enumerate(positional):
            if param.name in kwargs:
                front.append(kwargs.pop(param.name))
            elif param.default is not param.empty and any(given[index:]):
                front.append(param.default)
            else:
                break
        return func(*front, **kwargs)

    return call


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:
        message = "(message could not be printed)"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main(sys.argv))
