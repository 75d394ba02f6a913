"""Stated values are there to be used, in the agent (execute/subtask.py, execute/binding.py):
a value stated for a call the shortest plan skips brings that call back, and the input the
plan had grounded with a same-name value takes the new call's output instead."""

from __future__ import annotations

from typing import Any, TypedDict

from hyperplan.catalog import Catalog, build_catalog
from hyperplan.embed import get_embedder
from hyperplan.execute.agent import RunResult, run_goal
from hyperplan.execute.goal import StructuredGoal
from hyperplan.execute.runtimes.python import PythonRuntime
from hyperplan.execute.subtask import RunContext
from hyperplan.execute.trace import TraceWriter
from hyperplan.graph.build import build_graph
from hyperplan.importers.python_callables import load_python_callables
from hyperplan.llm import Accounting


class Due(TypedDict):
    amount: float


class Converted(TypedDict):
    converted: float
    currency: str


class Shop:
    """A sales-tax calculator and a currency converter; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def sales_tax(self, amount: float, tax_rate: float) -> Due:
        """Calculate the sales tax due on a purchase.

        Args:
            amount: The purchase amount.
            tax_rate: The tax rate as a fraction.

        Returns:
            The tax due.
        """
        self.calls.append(("sales_tax", {"amount": amount, "tax_rate": tax_rate}))
        return Due(amount=round(amount * tax_rate, 2))

    def convert_currency(self, amount: float, currency: str) -> Converted:
        """Convert an amount of US dollars into another currency.

        Args:
            amount: The amount in US dollars.
            currency: The currency to convert into.

        Returns:
            The converted amount.
        """
        self.calls.append(("convert_currency", {"amount": amount, "currency": currency}))
        return Converted(converted=round(amount * 0.9, 2), currency=currency)

    def tools(self) -> dict[str, Any]:
        return {"shop.sales_tax": self.sales_tax, "shop.convert_currency": self.convert_currency}


def _catalog(shop: Shop) -> Catalog:
    raw = load_python_callables(list(shop.tools().values()), source="toy")
    return build_catalog([t.model_copy(update={"name": f"shop.{t.name}"}) for t in raw.tools],
                         source="toy")


def _run(values: dict[str, Any]) -> tuple[RunResult, Shop]:
    shop = Shop()
    catalog = _catalog(shop)
    graph = build_graph(catalog, embedder=get_embedder("hashing"))
    ctx = RunContext(graph=graph, catalog=catalog, runtime=PythonRuntime(shop.tools()),
                     accounting=Accounting(None), tracer=TraceWriter(None))
    goal = StructuredGoal.from_dict({"terminals": ["shop.convert_currency"], "values": values})
    return run_goal(ctx, goal), shop


def test_a_value_stated_for_a_skipped_call_brings_it_back() -> None:
    # "the tax on a $500 purchase at 7%, in euros": amount 500 is the purchase's, tax_rate has
    # no other use, so the conversion takes the tax, not the 500
    result, shop = _run({"amount": 500, "tax_rate": 0.07, "currency": "EUR"})
    assert result.status == "success"
    assert shop.calls == [("sales_tax", {"amount": 500, "tax_rate": 0.07}),
                          ("convert_currency", {"amount": 35.0, "currency": "EUR"})]


def test_every_stated_value_used_keeps_the_shortest_plan() -> None:
    result, shop = _run({"amount": 500, "currency": "EUR"})
    assert result.status == "success"
    assert shop.calls == [("convert_currency", {"amount": 500, "currency": "EUR"})]
