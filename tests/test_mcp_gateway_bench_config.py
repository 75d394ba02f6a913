"""The gateway benchmark over an ``mcpServers`` file
(:mod:`hyperplan.integrations.mcp_gateway.bench_config`, issue 38's six-server targets): its
scoring, and one real run over a tiny SDK server and ``mcp-server-git`` (from PyPI, in the
test environment) with the real ``hyperplan serve --config``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from gateway_helpers import run_bounded
from hyperplan.integrations.mcp_gateway.bench_config import (
    CallSpec,
    read_requests,
    report,
    run,
    score,
)

TINY = str(Path(__file__).parent / "data" / "mcp_config" / "tiny_server.py")


def test_call_spec_parses_server_tool_and_arguments() -> None:
    spec = CallSpec.parse('time:get_current_time:{"timezone": "UTC"}')
    assert (spec.server, spec.tool, spec.arguments) == ("time", "get_current_time",
                                                        {"timezone": "UTC"})
    assert CallSpec.parse("memory:read_graph").arguments == {}
    with pytest.raises(ValueError, match="SERVER:TOOL"):
        CallSpec.parse("nothing")
    with pytest.raises(ValueError, match="JSON object"):
        CallSpec.parse("a:b:[1]")


def test_score_counts_slots_and_complete_requests(tmp_path: Path) -> None:
    file = tmp_path / "requests.json"
    file.write_text(json.dumps({"requests": [
        {"id": 1, "request": "read WORK/a.txt", "gold": [["read_file", "read_text_file"],
                                                          ["fetch"]]},
        {"id": 2, "request": "what time is it", "gold": [["get_current_time"]]}]}))
    requests = read_requests(file, "/w")
    assert requests[0]["request"] == "read /w/a.txt"
    got = score([["read_text_file", "git_log"], ["get_current_time"]], requests)
    assert got == {"slots": 3, "covered": 2, "recall": 0.667, "complete": 1, "requests": 2}


def _git_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "a@b.c"],
                 ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "a.txt").write_text("hello\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def test_a_real_run_measures_every_part(tmp_path: Path) -> None:
    git = shutil.which("mcp-server-git") or str(Path(sys.executable).parent / "mcp-server-git")
    if not Path(git).exists():
        pytest.skip("mcp-server-git is not installed")
    repo = _git_repo(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "tiny": {"command": sys.executable, "args": [TINY]},
        "git": {"command": git, "args": ["--repository", str(repo)]}}}))
    requests = tmp_path / "requests.json"
    requests.write_text(json.dumps({"requests": [
        {"request": "show the commit log of the git repository in WORK",
         "gold": [["git_log"]]},
        {"request": "tell me the working directory of the server",
         "gold": [["working_directory"]]}]}))

    out = run_bounded(lambda: run(config, embedder="hashing", runs=1, repeat=1,
                          calls=["tiny:working_directory:{}"], count=5, warmup=1,
                          requests=requests, work=str(repo), budgets=[3]), 300)

    assert set(out["alone"]) == {"tiny", "git"}
    assert out["alone"]["git"]["tools"] >= 10 and out["alone"]["tiny"]["tools"] == 3
    assert out["together_s"] > 0
    for kind in ("cold", "warm"):
        (start,) = out["start"][kind]
        assert 0 < start["initialize_s"] <= start["tools_list_s"] <= start["find_tools_s"]
        assert start["find_tools_s"] <= start["ready_s"]
    row = out["calls"]["tiny:working_directory"]
    assert row["direct"]["n"] == 5 and row["gateway"]["n"] == 5
    assert out["selection"]["3"]["requests"] == 2 and out["selection"]["3"]["slots"] == 2
    text = report(out)
    assert "slowest alone" in text and "budget 3" in text and "cold:" in text
