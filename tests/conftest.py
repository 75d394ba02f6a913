"""Shared fixtures. Tests that read ../shared/data fail (not skip) when CI=true and the data
is missing; outside CI they skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _shared_data_dir() -> Path:
    """``$HYPERPLAN_DATA`` (the old ``$HYPERPLAN_SHARED_DATA`` with a warning), else
    ``shared/data`` beside the checkout, else ``/work/shared/data``."""
    from hyperplan_bench.eval.suite_api import data_variable

    env = data_variable()
    if env:
        return env
    beside = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if beside.exists():
        return beside
    return Path("/work/shared/data")


SHARED_DATA = _shared_data_dir()


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; fails in CI and skips elsewhere when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"shared data missing: {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def llm_server_url() -> str:
    """The base URL of the real local LLM server (``HYPERPLAN_LLM_TEST_URL``, which
    ``.ci/run`` starts); its tests fail when it is required in CI and missing, else skip."""
    url = os.environ.get("HYPERPLAN_LLM_TEST_URL")
    if not url:
        message = "HYPERPLAN_LLM_TEST_URL is not set (start scripts/start-llm-server.sh PORT)"
        if os.environ.get("CI") == "true" and os.environ.get("HYPERPLAN_LLM_TEST_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return url


@pytest.fixture(scope="module")
def demo_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo catalog's graph, built once per test module with the hashing embedder."""
    from typer.testing import CliRunner

    from hyperplan.cli import app
    from hyperplan.sources import demo_catalog_path

    path = tmp_path_factory.mktemp("g") / "demo.json"
    result = CliRunner().invoke(app, ["graph", "build", f"openai:{demo_catalog_path()}", "-o",
                                      str(path), "--embedder", "hashing"])
    assert result.exit_code == 0, result.output
    return path
