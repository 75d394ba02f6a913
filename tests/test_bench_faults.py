"""``hyperplan bench faults`` (issue 22, "Done means"): the fault-injection benchmark runs its
cases end to end through the command line and meets the targets (no crash, hang, leak,
repeated write or lost result); its classifier puts synthetic outcomes in the right bucket.

The end-to-end test runs a subset of the catalogue (``--only``), one case per kind of fault
and one timed case, to stay under a minute and a half; ``hyperplan bench faults --json`` runs
all of it (docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan_bench.faults import all_cases, select_cases
from hyperplan_bench.faults.servers import LabServer
from hyperplan_bench.faults.verdict import (
    SUMMARY_KEYS,
    TRACEBACK,
    Check,
    Outcome,
    Step,
    classify,
    one_error,
    one_line,
)

SECRET = "sk-lab-0123456789abcdef"
# one case per bad bucket the targets are about (a write counted, a secret echoed, a timed
# deadline, a tool ending the run, a tampered file, a protected output, a killed worker and
# its --resume, an escape-injecting name)
SUBSET = ["post-answered-500", "secret-header-echoed-json", "import-loops",
          "tool-raises-system-exit", "matrix-file-dev-zero", "output-is-the-source",
          "eval-worker-killed", "tool-name-escape"]
BAD = ("crashes", "hangs", "leaks", "repeated_writes", "lost_results")


def _step(code: int | None = 1, stdout: str = "", stderr: str = "error: refused",
          **fields: Any) -> Step:
    options: dict[str, Any] = {"seconds": 3.0, "expected_codes": (1,)}
    options.update(fields)
    return Step(args=("graph", "stats", "g.json"), returncode=code, stdout=stdout,
                stderr=stderr, **options)


OK = Check(True, "refused")


# -- the classifier on synthetic outcomes ---------------------------------------------------------

def test_a_clean_refusal_is_clear() -> None:
    verdict = classify([_step()], OK, [SECRET])
    assert (verdict.outcome, verdict.detail) == (Outcome.CLEAR, "refused")


def test_a_traceback_is_a_crash_even_with_the_right_exit_code() -> None:
    stderr = f"{TRACEBACK}:\n  File \"x.py\", line 1\nIndexError: index 9 out of range\n"
    verdict = classify([_step(stderr=stderr)], OK)
    assert verdict.outcome is Outcome.CRASH and "IndexError" in verdict.detail
    assert classify([_step(code=0, stdout=TRACEBACK, expected_codes=(0,))], OK).outcome \
        is Outcome.CRASH


@pytest.mark.parametrize(("code", "expected", "outcome"), [
    (5, (1,), Outcome.CRASH),  # SystemExit(5) ending the run
    (130, (2,), Outcome.CRASH),  # KeyboardInterrupt where none was expected
    (130, (130,), Outcome.CLEAR),
    (-9, (1,), Outcome.CRASH),  # killed by a signal (the OOM killer)
    (0, (1,), Outcome.UNCLEAR),  # a refusal that did not happen
    (2, (0,), Outcome.UNCLEAR),
])
def test_exit_codes(code: int, expected: tuple[int, ...], outcome: Outcome) -> None:
    assert classify([_step(code=code, expected_codes=expected)], OK).outcome is outcome


@pytest.mark.parametrize("where", ["stdout", "stderr", "file", "place"])
def test_a_secret_anywhere_is_a_leak(where: str) -> None:
    text = f"Authorization: Bearer {SECRET}"
    step = _step(stdout=text if where == "stdout" else "",
                 stderr=text if where == "stderr" else "error: refused")
    written = {"t.jsonl": text.encode()} if where == "file" else {}
    check = Check(True, "ok", places={"report": text}) if where == "place" else OK
    verdict = classify([step], check, [SECRET], written)
    assert verdict.outcome is Outcome.LEAK
    assert {"stdout": "stdout", "stderr": "stderr", "file": "t.jsonl",
            "place": "report"}[where] in verdict.detail
    assert SECRET not in verdict.detail  # the report itself never quotes it


def test_a_redacted_secret_is_no_leak() -> None:
    assert classify([_step(stdout="Authorization: ***")], OK, [SECRET]).outcome \
        is Outcome.CLEAR


def test_hangs() -> None:
    killed = _step(code=None, deadline=3.0)
    assert classify([killed], OK).outcome is Outcome.HANG
    late = _step(code=2, deadline=3.0, run_seconds=5.5, timing="json", expected_codes=(2,))
    verdict = classify([late], OK)
    assert verdict.outcome is Outcome.HANG and "5.5 s, deadline 3 s" in verdict.detail
    in_time = _step(code=2, deadline=3.0, run_seconds=4.9, timing="json", expected_codes=(2,))
    assert classify([in_time], OK).outcome is Outcome.CLEAR
    assert classify([_step(leftovers=(1234,))], OK).outcome is Outcome.HANG
    # a step the case killed on purpose (kill -9 scenarios) is neither a hang nor a crash
    assert classify([_step(code=-9, killed_by_case=True)], OK).outcome is Outcome.CLEAR


def test_writes_and_results() -> None:
    assert classify([_step()], Check(True, "x", writes=3)).outcome is Outcome.REPEATED_WRITES
    assert classify([_step()], Check(True, "x", writes=1)).outcome is Outcome.CLEAR
    assert classify([_step()], Check(True, "x", lost=2)).outcome is Outcome.LOST_RESULTS
    assert classify([_step()], Check(False, "wrong status")).outcome is Outcome.UNCLEAR


def test_exactly_one_bucket_first_match_wins() -> None:
    """A hung step that also printed a traceback and a secret counts once, as a hang."""
    step = _step(code=None, stderr=f"{TRACEBACK}\n{SECRET}")
    assert classify([step], Check(False, "x", writes=2, lost=1), [SECRET]).outcome \
        is Outcome.HANG
    assert set(SUMMARY_KEYS) == set(Outcome)


def test_one_error_and_one_line() -> None:
    assert one_error(_step(stderr="warning: w\nerror: bad")) == "error: bad"
    assert one_error(_step(stderr="error: a\nerror: b")) is None
    assert one_error(_step(code=0, stderr="error: a")) is None
    assert one_line("evil\x1b[31m\x07\nname") == "evil\\x1b[31m\\x07 name"
    assert len(one_line("x" * 500)) == 200


# -- the catalogue and the lab ---------------------------------------------------------------------

def test_every_item_has_cases_and_every_case_cites_its_item() -> None:
    cases = all_cases()
    assert len({c.name for c in cases}) == len(cases)
    assert {c.item for c in cases} == set(range(1, 11))
    for c in cases:
        assert re.search(rf"\bitems? (\d+ and )?{c.item}\b", c.run.__doc__ or ""), c.name
        assert re.fullmatch(r"[a-z0-9-]+", c.name)
    with pytest.raises(ValueError, match="unknown case"):
        select_cases(["post-never-answers", "no-such-case"])
    assert [c.name for c in select_cases(SUBSET)] == [c.name for c in cases
                                                      if c.name in SUBSET]


def test_lab_counts_a_keyed_retry_as_one_write() -> None:
    with LabServer() as lab:
        for key in (None, None, "k1", "k1", "k2"):
            request = urllib.request.Request(f"{lab.case_url('c')}/refunds", data=b"{}",
                                             method="POST")
            if key:
                request.add_header("Idempotency-Key", key)
            with pytest.raises(urllib.error.HTTPError):  # the lab answers 500
                urllib.request.urlopen(request, timeout=5)
        with urllib.request.urlopen(f"{lab.case_url('c')}/echo?note=x", timeout=5) as answer:
            assert json.loads(answer.read())["query"] == {"note": ["x"]}
        assert lab.applied_writes("c", "/refunds") == 4
        assert lab.applied_writes("other", "/refunds") == 0
        assert [r.method for r in lab.requests("c")] == ["POST"] * 5 + ["GET"]


# -- end to end through the command line -----------------------------------------------------------

def test_bench_faults_subset_meets_the_targets() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "hyperplan", "bench", "faults", "--json",
                           "--only", ",".join(SUBSET)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert TRACEBACK not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    details = {r["name"]: (r["outcome"], r["detail"]) for r in result["results"]
               if r["outcome"] != "clear"}
    assert result["cases"] == len(SUBSET) == len(result["results"])
    assert {k: result[k] for k in BAD} == dict.fromkeys(BAD, 0), details
    assert result["clear_errors"] == len(SUBSET), details
    assert proc.returncode == 0
    assert sum(result[k] for k in SUMMARY_KEYS.values()) == result["cases"]
    for row in result["results"]:
        assert row["outcome"] in {o.value for o in Outcome}
        assert 1 <= row["item"] <= 10 and row["detail"] and "\n" not in row["detail"]
    timed = [r for r in result["results"] if r["deadline"] is not None]
    assert timed and all(r["run_seconds"] - r["deadline"] <= 2 for r in timed)
    assert result["worst_deadline_overrun_s"] <= 2
    assert isinstance(result["seconds"], float)


def test_bench_faults_table_and_progress() -> None:
    result = CliRunner().invoke(app, ["bench", "faults", "--only", "trace-show-empty"])
    assert result.exit_code == 0, result.output
    assert "clear trace-show-empty (item 10" in result.output  # the progress line
    assert "bench faults" in result.output and "empty trace" in result.output
    listed = CliRunner().invoke(app, ["bench", "faults", "--list"])
    assert listed.exit_code == 0 and "eval-main-killed-three-times (item 9)" in listed.output
    unknown = CliRunner().invoke(app, ["bench", "faults", "--only", "nope"])
    assert unknown.exit_code == 2 and "unknown case" in unknown.output
