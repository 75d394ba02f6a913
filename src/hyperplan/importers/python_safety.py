"""What a ``python:`` tool source may expose to a model, and importing it safely (fault
items 5 and 6 of docs/benchmarks.md, "Runtime trust under faults").

**Host-acting modules are refused.** A model choosing the calls of ``os.system`` or
``shutil.rmtree`` is a remote shell, so a source naming a module of :data:`UNSAFE_MODULES`
(``python:os``), a module inside one (``python:urllib.request``), or a callable that comes
from one (``python:os:system``, ``python:mymod:run`` where ``mymod.run is os.system``, a
``functools.partial`` of it, a bound method of ``os.environ``) is refused with one line
naming ``--allow-unsafe-tools``. Where a callable comes from is read from the object, not
from the name it was found under (:func:`origins`): ``__module__`` of the function (through
``functools.partial``, ``__wrapped__`` and ``__func__``), the module a C builtin belongs to
(``__self__``) and the class of a bound method's object. Code the user wrote that *calls*
such routines (``def run(cmd): os.system(cmd)`` in their own module) is their tool, not an
exposed OS routine, and is not inspected.

The list names standard-library modules (and their C twins: ``posix`` behind ``os``,
``_socket`` behind ``socket``) whose routines run programs, write or delete files, open
network connections, signal processes, run code given as text or reach the interpreter's
state, plus a few third-party ones that do the same. :data:`HARMLESS_MODULES` are exceptions
inside a listed namespace: ``os.path`` (``posixpath``/``ntpath``/``genericpath``: path string
helpers and ``stat`` queries such as ``exists``/``getsize``; they read metadata the sandbox
does not hide either and write nothing), ``urllib.parse`` and ``urllib.error``. ``inspect`` is
not listed: with JSON arguments its functions only see strings and numbers.

**Imports are bounded** (:func:`import_with_limit`): the module is imported in a daemon
thread and waited for at most ``HYPERPLAN_IMPORT_TIMEOUT`` seconds (default 30). An import
that loops is reported in one line and left behind (the process still exits: the thread is a
daemon); ``SyntaxError`` (with file and line), any exception, ``sys.exit`` and
``KeyboardInterrupt`` raised at import are one :class:`~hyperplan.errors.CatalogError` naming
the module. What the module prints while it is imported goes to stderr, never to stdout. A
module that installs signal handlers at import (``signal.signal`` works only in the main
thread) fails with that error, named. A loop inside one C call that never releases the GIL
cannot be waited out by any thread: only ``--sandbox subprocess`` isolates that (for calls).
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
import traceback
from collections.abc import Mapping
from types import MappingProxyType, ModuleType
from typing import Any

from hyperplan.errors import CatalogError
from hyperplan.streams import stdout_to_stderr

IMPORT_TIMEOUT_S = 30.0
IMPORT_TIMEOUT_ENV = "HYPERPLAN_IMPORT_TIMEOUT"
ALLOW_FLAG = "--allow-unsafe-tools"

# why a model must not choose the calls of these modules (each with everything inside it)
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runs programs, deletes and writes files, kills processes", ("os", "posix", "nt")),
    ("runs programs", ("subprocess", "_posixsubprocess", "_winapi", "pty", "webbrowser",
                       "antigravity", "platform", "pydoc", "venv", "sh", "pexpect", "plumbum",
                       "fabric", "invoke", "docker")),
    ("writes, moves or deletes files", ("shutil", "pathlib", "io", "_io", "tempfile",
                                        "fileinput", "codecs", "mmap", "sqlite3", "_sqlite3",
                                        "zipfile", "tarfile", "zipapp", "shelve", "dbm",
                                        "compileall", "py_compile", "logging", "readline",
                                        "faulthandler")),
    ("lists any directory of the host", ("glob",)),
    ("opens network connections", ("socket", "_socket", "ssl", "_ssl", "select",
                                   "selectors", "socketserver", "http", "urllib", "ftplib",
                                   "smtplib", "telnetlib", "poplib", "imaplib", "nntplib",
                                   "xmlrpc", "wsgiref", "asyncio", "_asyncio", "requests",
                                   "httpx", "urllib3", "aiohttp", "paramiko")),
    ("signals, kills or starts processes", ("signal", "_signal", "multiprocessing",
                                            "_multiprocessing", "_posixshmem", "psutil")),
    ("changes or ends the interpreter itself", ("sys", "threading", "_thread", "gc",
                                                "atexit", "site", "resource", "fcntl",
                                                "termios", "tty", "msvcrt", "winreg",
                                                "_testcapi")),
    ("runs code given as text or imports any module", (
        "builtins", "importlib", "_imp", "_frozen_importlib", "_frozen_importlib_external",
        "zipimport", "pkgutil", "runpy", "code", "codeop", "pdb", "bdb", "trace", "cProfile",
        "profile", "timeit", "doctest", "pip", "ensurepip")),
    ("calls native code and writes raw memory", ("ctypes", "_ctypes")),
    ("runs code while loading data", ("pickle", "_pickle", "marshal", "dill", "cloudpickle",
                                      "joblib")),
)
_REASONS: Mapping[str, str] = MappingProxyType(
    {module: why for why, modules in _GROUPS for module in modules})
UNSAFE_MODULES: frozenset[str] = frozenset(_REASONS)
HARMLESS_MODULES: frozenset[str] = frozenset({
    "os.path", "posixpath", "ntpath", "genericpath", "urllib.parse", "urllib.error",
})
_MAX_ORIGIN_STEPS = 16  # partial / __wrapped__ / __func__ links followed, at most


def unsafe_reason(module: str) -> tuple[str, str] | None:
    """``(listed name, why)`` when ``module`` is, or is inside, a module of
    :data:`UNSAFE_MODULES` and not in :data:`HARMLESS_MODULES`; else None."""
    parts = module.split(".")
    prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
    if any(p in HARMLESS_MODULES for p in prefixes):
        return None
    for prefix in prefixes:
        if prefix in _REASONS:
            return prefix, _REASONS[prefix]
    return None


def origins(obj: Any) -> tuple[str, ...]:
    """The modules ``obj`` comes from (module doc): ``__module__`` through partials,
    wrappers and bound methods, a C builtin's module, a bound method's object's class."""
    found: list[str] = []
    todo, seen = [obj], set[int]()
    while todo and len(seen) < _MAX_ORIGIN_STEPS:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ModuleType):
            found.append(current.__name__)
            continue
        if isinstance(current, functools.partial | functools.partialmethod):
            todo.append(current.func)
            continue
        name = _attr(current, "__module__")
        if isinstance(name, str):
            found.append(name)
        owner = _attr(current, "__self__")
        if owner is not None and not isinstance(owner, ModuleType):
            found.append(type(owner).__module__)
        elif owner is not None:
            todo.append(owner)
        todo += [x for x in (_attr(current, "__func__"), _attr(current, "__wrapped__"))
                 if x is not None]
    return tuple(dict.fromkeys(found))


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # a __getattr__ that raises something else than AttributeError
        return None


def refuse_unsafe_module(source: str, module: str) -> None:
    """Raise the one-line refusal when ``module`` acts on the host (:func:`unsafe_reason`)."""
    found = unsafe_reason(module)
    if found is not None:
        listed, why = found
        named = f"module {module!r}" if listed == module else f"module {module!r} (in {listed})"
        raise CatalogError(f"{named} acts on the host ({why}); refused — pass {ALLOW_FLAG} to "
                           "expose it anyway", file=source, field="module")


def refuse_unsafe_callable(source: str, name: str, obj: Any) -> None:
    """Raise the one-line refusal when ``obj`` (exposed as tool ``name``) comes from a module
    that acts on the host (:func:`origins`)."""
    for module in origins(obj):
        found = unsafe_reason(module)
        if found is not None:
            raise CatalogError(
                f"{name!r} comes from module {module!r}, which acts on the host ({found[1]}); "
                f"refused — pass {ALLOW_FLAG} to expose it anyway",
                file=source, tool=name, field="callable")


def import_timeout(limit: float | None = None) -> float:
    """``limit``, else ``HYPERPLAN_IMPORT_TIMEOUT``, else :data:`IMPORT_TIMEOUT_S` seconds."""
    if limit is not None:
        return limit
    text = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not text:
        return IMPORT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CatalogError(f"{IMPORT_TIMEOUT_ENV} must be a positive number of seconds, got "
                           f"{text!r}")
    return value


_STILL_IMPORTING: set[str] = set()  # imports that timed out and may still be running
_STILL_LOCK = threading.Lock()


def import_with_limit(module: str, source: str, limit: float | None = None) -> ModuleType:
    """Import ``module`` within ``limit`` seconds (:func:`import_timeout`) in a daemon thread;
    every failure is one :class:`CatalogError` naming ``source`` and the module (module
    doc). A module whose import timed out is not waited for again in this process."""
    wait = import_timeout(limit)
    with _STILL_LOCK:
        if module in _STILL_IMPORTING:
            raise CatalogError(f"{source}: importing module {module!r} did not finish "
                               "earlier and may still be running; not waited for again")
    box: dict[str, Any] = {}

    def work() -> None:
        with stdout_to_stderr():
            try:
                box["module"] = importlib.import_module(module)
            except BaseException as exc:  # an import must not end the process
                box["error"] = exc
        with _STILL_LOCK:
            _STILL_IMPORTING.discard(module)

    thread = threading.Thread(target=work, name=f"hyperplan-import-{module}", daemon=True)
    with _STILL_LOCK:
        _STILL_IMPORTING.add(module)
    thread.start()
    thread.join(wait)
    if thread.is_alive():
        raise CatalogError(f"{source}: importing module {module!r} did not finish within "
                           f"{wait:g} s (it may loop at import)")
    error = box.get("error")
    if error is not None:
        raise CatalogError(f"{source}: importing module {module!r} failed: "
                           f"{import_problem(error)}")
    found: ModuleType = box["module"]
    return found


def import_problem(exc: BaseException) -> str:
    """One line for an exception raised while importing: its type, message and where."""
    if isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {exc.msg} ({exc.filename}, line {exc.lineno})"
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) at import"
    try:
        text = " ".join(str(exc).split())
    except Exception:
        text = "(unprintable message)"
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename and "<frozen" not in f.filename]
    if isinstance(exc, ModuleNotFoundError) or not frames:
        return described
    return f"{described} ({frames[-1].filename}, line {frames[-1].lineno})"
