"""τ² adapters: catalog, gold tasks, agent suite (needs the optional ``tau2`` extra).

Skipped when ``tau2`` is not importable, unless ``CI=true`` and
``HYPERPLAN_TAU2_REQUIRED=1`` (then the tests fail instead).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any

import pytest

from hyperplan.errors import CatalogError
from hyperplan.execute.results import ErrorKind
from hyperplan.graph.effects import write_evidence
from hyperplan_bench.eval.agent_suites import EvalTask, get_suite

_REQUIRED = os.environ.get("CI") == "true" and os.environ.get("HYPERPLAN_TAU2_REQUIRED") == "1"
_HAVE_TAU2 = importlib.util.find_spec("tau2") is not None
if not _HAVE_TAU2 and not _REQUIRED:
    pytest.skip("tau2 not installed (pip install 'hyperplan[tau2]')", allow_module_level=True)

from hyperplan.sources import load_source  # noqa: E402
from hyperplan_bench.importers.tau2 import (  # noqa: E402
    DOMAINS,
    gold_task,
    load_tau2_catalog,
    load_tau2_tasks,
    replay_gold,
    tau2_terminals,
)


def test_tau2_importable() -> None:
    assert _HAVE_TAU2, "tau2 is required here (HYPERPLAN_TAU2_REQUIRED=1)"


@pytest.fixture(scope="module")
def catalogs() -> dict[str, Any]:
    return {d: load_tau2_catalog(d) for d in DOMAINS}


@pytest.fixture(scope="module")
def retail_tasks() -> dict[str, Any]:
    return {str(t.id): t for t in load_tau2_tasks("retail")}


def _gold(domain: str, task: Any, catalog: Any) -> Any:
    schemas = {t.name: t.output_schema for t in catalog.tools}
    return gold_task(domain, task, replay_gold(domain, task), schemas)


@pytest.mark.parametrize("domain", DOMAINS)
def test_catalog_has_output_schemas_and_write_effects(domain: str, catalogs: dict[str, Any]
                                                      ) -> None:
    catalog = catalogs[domain]
    assert len(catalog.tools) >= 12
    for tool in catalog.tools:
        assert tool.name.startswith(f"{domain}.")
        assert tool.metadata["app"] == domain
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
        assert "$defs" not in json.dumps(tool.output_schema)
        assert "$ref" not in json.dumps(tool.output_schema)
        writes = tool.metadata["tool_type"] == "write"
        assert tool.metadata["method"] == ("POST" if writes else "GET")
        assert (write_evidence(tool) is not None) == writes
    assert any(t.metadata["tool_type"] == "write" for t in catalog.tools)


def test_catalog_unwraps_returns(catalogs: dict[str, Any]) -> None:
    tools = {t.name: t for t in catalogs["retail"].tools}
    order = tools["retail.get_order_details"].output_schema
    assert order is not None and "returns" not in order.get("properties", {})
    assert {"order_id", "items", "status"} <= set(order["properties"])
    assert order["properties"]["items"]["items"]["properties"]["item_id"]["type"] == "string"
    assert tools["retail.calculate"].output_schema == {
        "description": "The result of the mathematical expression.", "title": "Returns",
        "type": "string"}


def test_source_kind_and_user_tools() -> None:
    catalog = load_source("tau2:airline")
    assert "airline.book_reservation" in {t.name for t in catalog.tools}
    solo = load_tau2_catalog("telecom", user_tools=True)
    user = [t for t in solo.tools if t.metadata["requestor"] == "user"]
    assert "telecom.toggle_roaming" in {t.name for t in user}
    with pytest.raises(CatalogError, match="unknown τ² domain"):
        load_tau2_catalog("banking")


def test_missing_tau2_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tau2.domains.retail.environment", None)
    with pytest.raises(CatalogError, match=r"hyperplan\[tau2\]"):
        load_tau2_catalog("retail")


def test_gold_hand_checked_retail_task(catalogs: dict[str, Any],
                                       retail_tasks: dict[str, Any]) -> None:
    gold = _gold("retail", retail_tasks["5"], catalogs["retail"])
    assert gold.id == "retail/5"
    assert "water bottle" in gold.text and "28236" in gold.text
    assert [c.tool for c in gold.calls] == [
        "retail.find_user_id_by_name_zip", "retail.get_user_details",
        "retail.get_order_details", "retail.get_product_details",
        "retail.return_delivered_order_items"]
    first, user, order, _, ret = gold.calls
    assert first.literals == (("first_name", '"Mei"'), ("last_name", '"Kovacs"'),
                              ("zip", '"28236"'))
    assert first.referenced == ()
    assert user.referenced == ("user_id",) and order.referenced == ("order_id",)
    assert ret.literals == ()
    assert ret.referenced == ("order_id", "item_ids", "payment_method_id")
    flows = {(f.producer, f.output_path, f.input_param) for f in gold.flows
             if f.consumer == "retail.return_delivered_order_items"}
    assert flows == {("retail.get_user_details", "orders", "order_id"),
                     ("retail.get_order_details", "items[].item_id", "item_ids"),
                     ("retail.get_user_details", "payment_methods", "payment_method_id")}
    assert tau2_terminals(gold, catalogs["retail"]) == ["retail.return_delivered_order_items"]


def test_gold_terminals_are_writes_and_split_is_total(catalogs: dict[str, Any],
                                                      retail_tasks: dict[str, Any]) -> None:
    catalog = catalogs["retail"]
    writes = {t.name for t in catalog.tools if t.metadata["tool_type"] == "write"}
    seen_literal_write = False
    for task_id in [*(str(i) for i in range(8)), "16"]:
        task = retail_tasks[task_id]
        gold = _gold("retail", task, catalog)
        terminals = tau2_terminals(gold, catalog)
        assert set(terminals) == {c.tool for c in gold.calls} & writes
        for call, action in zip(gold.calls, task.evaluation_criteria.actions, strict=True):
            names = [n for n, _ in call.literals]
            assert not set(names) & set(call.referenced)
            assert set(names) | set(call.referenced) == set(action.arguments)
            seen_literal_write |= call.tool in writes and bool(call.literals)
        assert gold.calls[0].referenced == ()  # nothing to reference before the first call
    assert seen_literal_write  # task 16: cancel_pending_order's reason is known, not looked up
    cancel = next(c for c in _gold("retail", retail_tasks["16"], catalog).calls
                  if c.tool == "retail.cancel_pending_order")
    assert cancel.tool == "retail.cancel_pending_order"
    assert cancel.literals == (("reason", '"no longer needed"'),)
    assert cancel.referenced == ("order_id",)


@pytest.fixture(scope="module")
def retail_session() -> Any:
    return get_suite("tau2", domain="retail").open("hashing")


def _replay(session: Any, task_id: str, tasks: dict[str, Any],
            change: dict[str, Any] | None = None) -> bool:
    tools = {t.metadata["original_name"]: t for t in session.catalog.tools}
    task = EvalTask(task_id, "")
    runtime = session.start(task)
    actions = tasks[task_id].evaluation_criteria.actions
    for k, action in enumerate(actions):
        arguments = dict(action.arguments)
        if change and k == len(actions) - 1:
            arguments.update(change)
        result = runtime.call(tools[action.name], arguments)
        assert result.ok, result.error
    runtime.close()
    return bool(session.check(task))


def test_suite_gold_replay_passes_and_wrong_write_fails(retail_session: Any,
                                                        retail_tasks: dict[str, Any]) -> None:
    assert _replay(retail_session, "5", retail_tasks)
    user = retail_tasks["5"].evaluation_criteria.actions[1].arguments["user_id"]
    assert user == "mei_kovacs_8020"
    # same write on another item of the order (the desk lamp): a different end state
    tools = {t.metadata["original_name"]: t for t in retail_session.catalog.tools}
    order = retail_session.start(EvalTask("5", "")).call(tools["get_order_details"],
                                                         {"order_id": "#W6390527"}).value
    other = sorted({i["item_id"] for i in order["items"]} - {"8538875209"})
    assert other
    assert not _replay(retail_session, "5", retail_tasks, {"item_ids": other[:1]})
    # no calls at all
    task = EvalTask("5", "")
    retail_session.start(task)
    assert not retail_session.check(task)


def test_suite_runtime_errors(retail_session: Any) -> None:
    tools = {t.metadata["original_name"]: t for t in retail_session.catalog.tools}
    runtime = retail_session.start(EvalTask("5", ""))
    bad = runtime.call(tools["get_order_details"], {"order": "#W6390527"})
    assert not bad.ok and bad.error_kind is ErrorKind.INVALID_ARGUMENTS
    missing = runtime.call(tools["get_order_details"], {"order_id": "#W0"})
    assert not missing.ok and missing.error_kind is ErrorKind.TOOL_ERROR
    assert "not found" in missing.error
    found = runtime.call(tools["get_order_details"], {"order_id": "#W6390527"})
    assert found.ok and found.value["order_id"] == "#W6390527"


def test_suite_tasks_and_goals() -> None:
    suite = get_suite("tau2", domain="airline")
    tasks = suite.tasks()
    assert len(tasks) == 50
    with_goal = [t for t in tasks if t.goal is not None]
    assert 0 < len(with_goal) < len(tasks)
    for task in with_goal:
        assert task.goal is not None and task.request
        for sub in task.goal.subgoals:
            assert sub.terminals and all(t.startswith("airline.") for t in sub.terminals)


@pytest.mark.parametrize("domain,task_index", [("airline", 1), ("telecom", 3)])
def test_suite_gold_replay_other_domains(domain: str, task_index: int) -> None:
    session = get_suite("tau2", domain=domain).open("hashing")
    tasks = {str(t.id): t for t in load_tau2_tasks(domain)}
    task_id = list(tasks)[task_index]
    assert _replay(session, task_id, tasks)


def test_chains_contract_on_tau2_telecom() -> None:
    from hyperplan.embed import get_embedder
    from hyperplan_bench.eval.chains import evaluate_chains

    result = evaluate_chains("tau2", "telecom", embedder=get_embedder("hashing"))
    assert result["suite"] == "tau2" and result["domain"] == "telecom"
    assert result["n_tasks"] > 0
    for key in ("exact", "producer_recall", "producer_precision", "unsatisfiable"):
        assert 0.0 <= result[key] <= 1.0
    assert set(result["methods"]) == {"doe", "doe_agent_policy", "all_producers", "semantic_topk"}
