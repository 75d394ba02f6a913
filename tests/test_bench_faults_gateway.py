"""The gateway section of ``hyperplan bench faults`` (issue 36, "Done means"): at least 15
cases covering items 1-6, run end to end against the real ``hyperplan serve`` over stdio and
``--http``, counted with the runtime's buckets plus ``isolation_breaks`` and ``auth_bypasses``.

The classifier's new buckets and the fragment secrets are checked on synthetic outcomes; the
end-to-end test runs a few fast cases and checks that each is classified (not that it is
clear: the gateway's fixes land separately; ``hyperplan bench faults --section gateway`` runs
them all)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan_bench.faults import SECTIONS, all_cases, select_cases
from hyperplan_bench.faults.gateway_drive import _messages
from hyperplan_bench.faults.report import section_line, table
from hyperplan_bench.faults.verdict import (
    FRAGMENT_CHARS,
    SUMMARY_KEYS,
    TRACEBACK,
    Check,
    Outcome,
    Step,
    classify,
    fragments,
)

SECRET = "Q7xWv2LpZk9TrBn4HcYs"
# fast cases, one per kind of finding: a refusal at start, raw stdio JSON-RPC, a kill, two
# default SDK clients over HTTP, a bearer token
SUBSET = ["gw-http-remote-needs-token", "gw-stdio-nonfinite-arguments",
          "gw-stdio-kill-leaves-nothing", "gw-http-two-clients-isolated", "gw-http-bearer-token"]


def _step(code: int | None = 0, stdout: str = "", stderr: str = "", **fields: Any) -> Step:
    options: dict[str, Any] = {"seconds": 3.0, "expected_codes": (0,)}
    options.update(fields)
    return Step(args=("serve", "--http"), returncode=code, stdout=stdout, stderr=stderr,
                **options)


# -- the classifier's gateway buckets --------------------------------------------------------------

def test_isolation_breaks_and_auth_bypasses_are_buckets() -> None:
    broke = classify([_step()], Check(True, "B saw A's token", isolation_breaks=2))
    assert broke.outcome is Outcome.ISOLATION_BREAK and "2 isolation break" in broke.detail
    bypassed = classify([_step()], Check(True, "served", auth_bypasses=1))
    assert bypassed.outcome is Outcome.AUTH_BYPASS and "had to be refused" in bypassed.detail
    assert SUMMARY_KEYS[Outcome.ISOLATION_BREAK] == "isolation_breaks"
    assert SUMMARY_KEYS[Outcome.AUTH_BYPASS] == "auth_bypasses"
    # a leak outranks both; both outrank a repeated write
    both = Check(True, "x", isolation_breaks=1, auth_bypasses=1, writes=2)
    assert classify([_step(stdout=SECRET)], both, [SECRET]).outcome is Outcome.LEAK
    assert classify([_step()], both).outcome is Outcome.ISOLATION_BREAK
    assert classify([_step()], Check(True, "x", auth_bypasses=1, writes=2)).outcome \
        is Outcome.AUTH_BYPASS


def test_fragments_of_a_secret_are_a_leak() -> None:
    assert len(fragments(SECRET)) == len(SECRET) - FRAGMENT_CHARS + 1
    assert fragments("abc") == ["abc"]
    cut = f"server stderr (tail): {SECRET[-FRAGMENT_CHARS:]}.***"
    verdict = classify([_step(stdout=cut)], Check(True, "ok"), [SECRET], None, [SECRET])
    assert verdict.outcome is Outcome.LEAK and "characters of a secret" in verdict.detail
    assert SECRET[-FRAGMENT_CHARS:] not in verdict.detail
    # fewer characters, or a plain (non-fragment) secret cut the same way: no leak
    short = f"tail: {SECRET[-FRAGMENT_CHARS + 1:]}.***"
    assert classify([_step(stdout=short)], Check(True, "ok"), [SECRET], None,
                    [SECRET]).outcome is Outcome.CLEAR
    assert classify([_step(stdout=cut)], Check(True, "ok"), [SECRET]).outcome is Outcome.CLEAR
    # what the clients received is searched too
    seen = Check(True, "ok", places={"what the clients received": cut})
    assert classify([_step()], seen, [], None, [SECRET]).outcome is Outcome.LEAK


def test_a_server_the_case_stopped_and_a_client_left_waiting() -> None:
    stopped = _step(code=-15, stopped=True)
    assert classify([stopped], Check(True, "ok")).outcome is Outcome.CLEAR
    assert classify([_step(code=-15)], Check(True, "ok")).outcome is Outcome.CRASH
    # stopped, yet a traceback on the console is still a crash
    traced = _step(code=0, stopped=True, stderr=f"{TRACEBACK}\nValueError: x")
    assert classify([traced], Check(True, "ok")).outcome is Outcome.CRASH
    late = classify([stopped], Check(False, "no answer", late="a client waited 40 s"))
    assert late.outcome is Outcome.HANG and "a client waited 40 s" in late.detail
    killed = classify([_step(code=None)], Check(False, "x", late="no answer to a batch"))
    assert killed.outcome is Outcome.HANG and "no answer to a batch" in killed.detail


# -- the catalogue ---------------------------------------------------------------------------------

def test_the_gateway_section_covers_items_1_to_6_over_both_transports() -> None:
    cases = all_cases("gateway")
    assert len(cases) >= 15 and {c.section for c in cases} == {"gateway"}
    assert {c.item for c in cases} == set(range(1, 7))
    assert any("-stdio-" in c.name for c in cases) and any("-http-" in c.name for c in cases)
    for c in cases:
        assert re.fullmatch(r"gw-(stdio|http)-[a-z0-9-]+", c.name), c.name
        assert re.search(rf"\bgateway\s+item {c.item}\b", c.run.__doc__ or ""), c.name
    assert SECTIONS == ("runtime", "gateway")
    assert all_cases() == all_cases("runtime") + cases  # the runtime's section first
    assert [c.name for c in select_cases(SUBSET, "gateway")] == [c.name for c in cases
                                                                 if c.name in SUBSET]
    with pytest.raises(ValueError, match="unknown case"):
        select_cases(["gw-http-bearer-token"], "runtime")
    with pytest.raises(ValueError, match="unknown section"):
        all_cases("nope")


def test_list_and_section_options() -> None:
    listed = CliRunner().invoke(app, ["bench", "faults", "--list", "--section", "gateway"])
    assert listed.exit_code == 0, listed.output
    assert "gw-http-two-clients-isolated (gateway item 1)" in listed.output
    assert "eval-main-killed-three-times" not in listed.output
    bad = CliRunner().invoke(app, ["bench", "faults", "--section", "nope"])
    assert bad.exit_code == 2 and "unknown section" in bad.output


def test_report_has_a_line_per_section() -> None:
    rows = [{"name": "gw-http-bearer-token", "section": "gateway", "item": 2,
             "outcome": "auth_bypass", "seconds": 1.0, "deadline": None, "run_seconds": None,
             "detail": "served"}]
    counts = {key: 0 for key in SUMMARY_KEYS.values()} | {"auth_bypasses": 1}
    line = section_line("gateway", {"cases": 1, **counts})
    assert line.startswith("gateway: 1 cases: clear_errors 0")
    assert "auth_bypasses 1" in line and "isolation_breaks 0" in line
    assert "lost_results" not in line  # a bucket the section never uses, at 0
    result = {"cases": 1, **counts, "worst_deadline_overrun_s": None, "seconds": 1.0,
              "startup_s": 1.0, "load_average": [0.1, 0.2], "results": rows,
              "sections": {"gateway": {"cases": 1, **counts}}}
    assert "gateway: 1 cases" in str(table(result).caption)


def test_sse_and_json_bodies_are_read() -> None:
    sse = 'event: message\ndata: {"jsonrpc": "2.0", "id": 9, "result": {}}\n\n'
    assert _messages(sse) == [{"jsonrpc": "2.0", "id": 9, "result": {}}]
    assert _messages('[{"id": 1}, 2]') == [{"id": 1}]
    assert _messages("not json") == []


# -- end to end ------------------------------------------------------------------------------------

def test_gateway_subset_is_classified() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "hyperplan", "bench", "faults", "--json",
                           "--section", "gateway", "--only", ",".join(SUBSET)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert TRACEBACK not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    assert result["cases"] == len(SUBSET) == len(result["results"])
    assert set(result["sections"]) == {"gateway"}
    gateway = result["sections"]["gateway"]
    assert {k: gateway[k] for k in SUMMARY_KEYS.values()} == {
        k: result[k] for k in SUMMARY_KEYS.values()}
    assert sum(result[k] for k in SUMMARY_KEYS.values()) == result["cases"]
    for row in result["results"]:
        assert row["section"] == "gateway" and 1 <= row["item"] <= 6
        assert row["outcome"] in {o.value for o in Outcome}
        assert row["detail"] and "\n" not in row["detail"]
        # no case failed for a reason of the benchmark's own
        assert "benchmark error" not in row["detail"], row
        assert row["seconds"] < 60, row
    assert proc.returncode == (0 if result["clear_errors"] == result["cases"] else 1)
