"""Reports of a stored run: Markdown, PNG plots and the HTML trace viewer, the latter loaded in
headless Chromium (Debian ``chromium`` + ``chromium-driver``) with Selenium: no console errors
and the graphs of a known run are drawn."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.llm import Budget
from hyperplan_bench.eval.harness import EvalConfig, run_eval
from hyperplan_bench.eval.report import wilson, write_report
from hyperplan_bench.eval.store import RunStore

runner = CliRunner()


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("runs") / "runs.sqlite"
    cfg = EvalConfig(suite="demo", agents=("hyperagent", "hyperagent-goal", "react"),
                     llm="scripted", workers=1, limit=3, budget=Budget(max_calls=10))
    with RunStore(store) as db:
        rid = db.create_run(suite="demo", agents=cfg.agents, llm="scripted", model="",
                            command="pytest", config=cfg.as_dict())
        run_eval(cfg, db, rid)
    return store, rid


def test_wilson_interval() -> None:
    assert wilson(0, 0) == (0.0, 0.0)
    low, high = wilson(8, 10)
    assert 0.44 < low < 0.5 and 0.94 < high < 0.97


def test_report_files(stored_run: tuple[Path, str], tmp_path: Path) -> None:
    store, rid = stored_run
    result = runner.invoke(app, ["eval", "report", rid, "--store", str(store), "--output",
                                 str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "scripted test double" in md and "| hyperagent-goal | 3 | 1.000 |" in md
    for png in ("success_vs_cost.png", "cost_per_agent.png"):
        assert (tmp_path / "r" / png).read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<script src" not in page and "<link" not in page and 'src="http' not in page


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def test_html_report_renders_in_headless_chromium(stored_run: tuple[Path, str],
                                                  tmp_path: Path) -> None:
    found = _chromium()
    if found is None:
        message = "Debian chromium + chromium-driver are not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    store, rid = stored_run
    with RunStore(store) as db:
        page = write_report(db, rid, tmp_path / "r")["html"]
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        driver.get(page.resolve().as_uri())
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        assert driver.find_element(By.ID, "title").text == f"Run {rid}"
        # the first task (hyperagent, LLM-scripted) shows its DAG, context and support graphs
        headings = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#viewer h4")]
        assert any(h.startswith("Task DAG") for h in headings)
        assert any(h.startswith("Tool Context Graph") for h in headings)
        assert any(h.startswith("Support graph") for h in headings)
        assert len(driver.find_elements(By.CSS_SELECTOR, "#viewer svg g.node")) >= 3
        rows = driver.find_elements(By.CSS_SELECTOR, "#results tr.pick")
        rows[-1].click()
        assert "react" in driver.find_element(By.CSS_SELECTOR, "#viewer h2").text
        assert driver.find_elements(By.CSS_SELECTOR, "#viewer details")
    finally:
        driver.quit()
