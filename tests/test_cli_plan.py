"""``hyperplan plan support`` runs the one planning policy (plan/support.py) on a saved graph:
the agent's by default, any named preset with --policy, the request relevance computed from
--request as ``hyperplan run`` computes it, and the steps whose plan was kept in its output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.execute.subtask import AgentConfig
from hyperplan.graph.io import load_graph
from hyperplan.plan.doe import select_support_graph
from hyperplan.plan.grounding import ground
from hyperplan.plan.support import AGENT, CHAINS, PAPER, SELECTOR, PolicyName

runner = CliRunner()
REQUEST = "Like the song Yesterday on my music account"
KNOWN = "query,username,password"


def support(graph: Path, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", "support", str(graph), *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_the_presets_are_the_named_policies() -> None:
    assert [p.policy for p in PolicyName] == [PAPER, AGENT, SELECTOR, CHAINS]
    assert AgentConfig().policy is PolicyName.AGENT.policy  # the default is what run runs


def test_the_paper_policy_is_plain_doe(demo_graph: Path) -> None:
    doc = support(demo_graph, "music.like_song", "--known", KNOWN, "--policy", "paper")
    graph = load_graph(demo_graph)
    plain = select_support_graph(graph, ["music.like_song"], ground(graph, KNOWN.split(",")))
    assert plain.chosen is not None
    assert doc["tools"] == [graph.tools[t].name for t in plain.chosen.tools]
    assert doc["policy"] == "paper" and doc["steps"] == [] and doc["attached"] == []


def test_the_request_turns_on_the_agents_repairs(demo_graph: Path) -> None:
    """Without a request the stated search query is left unused (the playlist library
    supplies the song id); with it, the agent's policy favours the tool the query was stated
    for (music.search_songs) and says which step found the plan."""
    blind = support(demo_graph, "music.like_song", "--known", KNOWN)
    assert blind["policy"] == "agent" and blind["steps"] == []
    assert "music.search_songs" not in blind["tools"]
    asked = support(demo_graph, "music.like_song", "--known", KNOWN, "--request", REQUEST,
                    "--embedder", "hashing")
    assert asked["steps"] == ["favour_claimants"]
    assert asked["tools"][0] == "music.login" and asked["tools"][-1] == "music.like_song"
    assert asked["tools"].index("music.search_songs") < asked["tools"].index("music.show_song")
    paper = support(demo_graph, "music.like_song", "--known", KNOWN, "--request", REQUEST,
                    "--embedder", "hashing", "--policy", "paper")
    assert paper["tools"] == blind["tools"] and paper["steps"] == []


def test_open_world_producers_plan_an_unsatisfiable_goal(demo_graph: Path) -> None:
    blind = runner.invoke(app, ["plan", "support", str(demo_graph), "mail.send_email"])
    assert blind.exit_code == 2 and "unsatisfiable: mail.send_email:in:subject" in blind.output
    result = runner.invoke(app, ["plan", "support", str(demo_graph), "mail.send_email",
                                 "--request", "send an email to Bob about lunch",
                                 "--embedder", "hashing"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("execution order: ") and lines[0].endswith("-> mail.send_email")
    assert lines[-1] == "steps (policy agent): open_world_producers"


def test_an_unknown_policy_is_refused(demo_graph: Path) -> None:
    result = runner.invoke(app, ["plan", "support", str(demo_graph), "music.like_song",
                                 "--policy", "greedy"])
    assert result.exit_code == 2 and "greedy" in result.output
