"""The runnable examples of docs/adapters.md ("Using hyperplan in your agent") still run offline
and send the model the target with its producer (small tool sets here; the examples default to
more)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_integration_catalog import require

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("examples-cache")


def _run(python: str, script: str, cache: Path, *args: str,
         path: str | None = None) -> str:
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": str(cache)}
    if path:
        env["PYTHONPATH"] = path
    proc = subprocess.run([python, str(EXAMPLES / script), "--tools", "70", *args], env=env,
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _first_call(out: str, prefix: str) -> set[str]:
    line = next(line for line in out.splitlines() if line.strip().startswith(prefix))
    return {n.strip() for n in line.split(":", 1)[1].split(",")}


def test_openai_agents_example(cache: Path) -> None:
    require("agents", "openai-agents")
    out = _run(sys.executable, "openai_agents_filter.py", cache)
    assert "Done: ticket T-17 is resolved." in out
    assert {"find_ticket", "update_ticket_status"} <= _first_call(out, "model call 1:")


def test_pydantic_ai_example(cache: Path) -> None:
    require("pydantic_ai", "pydantic-ai")
    out = _run(sys.executable, "pydantic_ai_prepare.py", cache)
    assert "Done: ticket T-17 is resolved." in out
    assert {"find_ticket", "update_ticket_status"} <= _first_call(out, "model request 1:")


def test_langgraph_example(cache: Path) -> None:
    require("langgraph", "langgraph")
    out = _run(sys.executable, "langgraph_bigtool_agent.py", cache)
    assert "create_react_agent: Done: ticket T-17 is resolved." in out
    assert {"find_ticket", "update_ticket_status"} <= _first_call(out, "model call 1:")


def test_langgraph_bigtool_example(cache: Path) -> None:
    path = os.environ.get("HYPERPLAN_BIGTOOL_PATH", "/tmp/bigtool-langgraph")
    if not (Path(path) / "langgraph_bigtool").is_dir():
        pytest.skip(f"langgraph-bigtool with langgraph 0.6 is not at {path}")
    out = _run(sys.executable, "langgraph_bigtool_agent.py", cache, path=path)
    assert "bigtool: Done: ticket T-17 is resolved." in out
    assert {"find_ticket", "update_ticket_status"} <= _first_call(out, "model call 2:")


def test_hermes_example(cache: Path) -> None:
    python = os.environ.get("HYPERPLAN_HERMES_PYTHON", "/tmp/hermes-venv/bin/python")
    if not Path(python).exists():
        pytest.skip(f"no Hermes environment at {python}")
    out = _run(python, "hermes_plugin.py", cache, "--budget", "6")
    assert "the model answered: Done: ticket T-17 is resolved." in out
    assert {"find_ticket", "update_ticket_status"} <= _first_call(out, "request 1:")
    assert "tool definitions:" in out
