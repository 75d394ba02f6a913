"""Stated values are there to be used, in the agent (execute/subtask.py, execute/binding.py):
a value stated for a call the shortest plan skips brings that call back, and the input the
plan had grounded with a same-name value takes the new call's output instead."""

from __future__ import annotations

from typing import Any, TypedDict

from hyperplan.catalog import build_catalog
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


def _context(tools: dict[str, Any], relevance: dict[str, float] | None = None) -> RunContext:
    """An LLM-free run over Python ``tools`` named ``app.function``, hashing embeddings."""
    app = next(iter(tools)).split(".")[0]
    raw = load_python_callables(list(tools.values()), source="toy")
    catalog = build_catalog([t.model_copy(update={"name": f"{app}.{t.name}"}) for t in raw.tools],
                            source="toy")
    graph = build_graph(catalog, embedder=get_embedder("hashing"))
    return RunContext(graph=graph, catalog=catalog, runtime=PythonRuntime(tools),
                      accounting=Accounting(None), tracer=TraceWriter(None), relevance=relevance)


def _run(values: dict[str, Any]) -> tuple[RunResult, Shop]:
    shop = Shop()
    goal = StructuredGoal.from_dict({"terminals": ["shop.convert_currency"], "values": values})
    return run_goal(_context(shop.tools()), goal), shop


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


class Till:
    """Quote an item, apply a discount, pay; ``add_gift_note`` writes. Records every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def quote(self, item: str) -> Due:
        """Quote the price of an item.

        Args:
            item: The item to price.

        Returns:
            The price.
        """
        self.calls.append("quote")
        return Due(amount=100.0)

    def apply_discount(self, amount: float, percent: float) -> Due:
        """Apply a percentage discount to a price.

        Args:
            amount: The price before the discount.
            percent: The discount in percent.

        Returns:
            The discounted price.
        """
        self.calls.append("apply_discount")
        return Due(amount=amount * (1 - percent / 100))

    def pay(self, amount: float, card: str) -> Converted:
        """Pay an amount with a card.

        Args:
            amount: The amount to pay.
            card: The card to charge.

        Returns:
            The payment.
        """
        self.calls.append(f"pay {amount}")
        return Converted(converted=amount, currency="USD")

    def add_gift_note(self, amount: float, note: str) -> Due:
        """Add a gift note to an order of the given amount.

        Args:
            amount: The amount of the order.
            note: The text of the note.

        Returns:
            The amount of the order.
        """
        self.calls.append("add_gift_note")
        return Due(amount=amount)

    def tools(self) -> dict[str, Any]:
        return {f"till.{f.__name__}": f
                for f in (self.quote, self.apply_discount, self.pay, self.add_gift_note)}


def _run_till(values: dict[str, Any], relevance: bool) -> Till:
    till = Till()
    names = [f"till.{name}" for name in ("quote", "apply_discount", "pay", "add_gift_note")]
    ctx = _context(till.tools(), {name: 0.5 for name in names} if relevance else None)
    goal = StructuredGoal.from_dict({"terminals": ["till.pay"], "values": values})
    assert run_goal(ctx, goal).status == "success"
    return till


def test_a_read_only_claimant_is_favoured_given_a_relevance() -> None:
    # the 10 percent has no use in quote -> pay; apply_discount shares no stated name with that
    # plan, so only favouring it (which needs the request relevance) brings it in
    values = {"item": "lamp", "percent": 10, "card": "visa"}
    assert _run_till(values, relevance=False).calls == ["quote", "pay 100.0"]
    assert _run_till(values, relevance=True).calls == ["quote", "apply_discount", "pay 90.0"]


def test_a_writing_claimant_is_never_added_to_use_a_value() -> None:
    # add_gift_note could sit between quote and pay and use the note, but it changes state
    values = {"item": "lamp", "card": "visa", "note": "Happy birthday"}
    assert _run_till(values, relevance=True).calls == ["quote", "pay 100.0"]


class Capture(TypedDict):
    capture: str


class Stored(TypedDict):
    stored: str


class Mixdown(TypedDict):
    mixdown: str


class Studio:
    """``mix`` needs a track that no linked output supplies; ``record`` (reads) and
    ``upload_file`` (writes) both return a string. Records every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def record(self, seconds: int) -> Capture:
        """Capture sound from the microphone.

        Args:
            seconds: How long to capture.

        Returns:
            The capture.
        """
        self.calls.append("record")
        return Capture(capture="sound.wav")

    def upload_file(self, folder: str) -> Stored:
        """Upload a file to a folder.

        Args:
            folder: The destination folder.

        Returns:
            The stored file.
        """
        self.calls.append("upload_file")
        return Stored(stored="x.bin")

    def mix(self, track: str) -> Mixdown:
        """Mix a track.

        Args:
            track: The track to mix.

        Returns:
            The mix.
        """
        self.calls.append(f"mix {track}")
        return Mixdown(mixdown=f"mixed {track}")

    def tools(self) -> dict[str, Any]:
        return {f"studio.{f.__name__}": f for f in (self.record, self.upload_file, self.mix)}


def _run_studio(relevance: dict[str, float] | None) -> tuple[str, Studio]:
    studio = Studio()
    ctx = _context(studio.tools(), relevance)
    assert not ctx.graph.links_into(ctx.graph.node_index["studio.mix:in:track"])  # no link
    goal = StructuredGoal.from_dict({"terminals": ["studio.mix"],
                                     "values": {"seconds": 30, "folder": "/tmp"}})
    return run_goal(ctx, goal).status, studio


def test_open_world_producer_needs_a_relevance_and_never_writes() -> None:
    # without a relevance the missing link leaves mix unsatisfiable
    status, studio = _run_studio(None)
    assert status == "failed" and studio.calls == []
    # with one, the open-world retry picks the reading producer even though the writing
    # upload_file is the more relevant tool
    relevance = {"studio.record": 0.3, "studio.upload_file": 0.9, "studio.mix": 0.5}
    status, studio = _run_studio(relevance)
    assert status == "success"
    assert studio.calls == ["record", "mix sound.wav"]


def test_the_trace_says_how_each_support_graph_was_found() -> None:
    def via(ctx: RunContext, terminal: str, values: dict[str, Any]) -> list[str]:
        run_goal(ctx, StructuredGoal.from_dict({"terminals": [terminal], "values": values}))
        return [e["via"] for e in ctx.tracer.records if e["type"] == "support_graph"]

    shop = _context(Shop().tools())
    assert via(shop, "shop.convert_currency", {"amount": 5, "currency": "EUR"}) == ["links"]
    shop = _context(Shop().tools())
    assert via(shop, "shop.convert_currency", {"amount": 5, "tax_rate": 0.1, "currency": "EUR"}
               ) == ["links; stated values re-planned"]
    studio = _context(Studio().tools(), {"studio.record": 0.3, "studio.mix": 0.5})
    assert via(studio, "studio.mix", {"seconds": 30}) == ["open-world producers"]


class Info(TypedDict):
    campaign_info: str


class Reach(TypedDict):
    reach: str


class Analysis(TypedDict):
    analysis: str


class Agency:
    """``launch_campaign`` feeds both ``estimate_reach`` and ``analyse_feedback`` (links of
    weight 1); no link leads from the reach estimate anywhere.
    ``create_ad_set`` is a writing twin of ``estimate_reach``. Records every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def launch_campaign(self, country: str) -> Info:
        """Look up the marketing campaign of a country.

        Args:
            country: The target country.

        Returns:
            The campaign information.
        """
        self.calls.append("launch_campaign")
        return Info(campaign_info=f"campaign in {country}")

    def estimate_reach(self, campaign_info: str, ad_type: str) -> Reach:
        """Estimate the reach of one type of ads in a campaign.

        Args:
            campaign_info: The campaign information.
            ad_type: The type of ads.

        Returns:
            The reach estimate.
        """
        self.calls.append("estimate_reach")
        return Reach(reach=f"{ad_type} reach of {campaign_info}")

    def create_ad_set(self, campaign_info: str, ad_format: str) -> Reach:
        """Create a set of ads in a campaign.

        Args:
            campaign_info: The campaign information.
            ad_format: The format of the ads.

        Returns:
            The reach of the new ads.
        """
        self.calls.append("create_ad_set")
        return Reach(reach=f"{ad_format} ads of {campaign_info}")

    def analyse_feedback(self, campaign_info: str) -> Analysis:
        """Analyse the customer feedback on a campaign.

        Args:
            campaign_info: The campaign (or its results) to analyse.

        Returns:
            The analysis.
        """
        self.calls.append(f"analyse_feedback {campaign_info}")
        return Analysis(analysis="positive")

    def tools(self) -> dict[str, Any]:
        return {f"agency.{f.__name__}": f for f in (self.launch_campaign, self.estimate_reach,
                                                    self.create_ad_set, self.analyse_feedback)}


def _run_agency(values: dict[str, Any], relevance: bool) -> Agency:
    agency = Agency()
    names = list(agency.tools())
    ctx = _context(agency.tools(), {name: 0.5 for name in names} if relevance else None)
    graph = ctx.graph
    target = graph.node_index["agency.analyse_feedback:in:campaign_info"]
    assert {graph.node_name(lk.source) for lk in graph.links_into(target)} == {
        "agency.launch_campaign:out:campaign_info"}  # nothing links from reach
    goal = StructuredGoal.from_dict({"terminals": ["agency.analyse_feedback"], "values": values})
    assert run_goal(ctx, goal).status == "success"
    return agency


def test_a_claimant_no_link_leads_from_is_inserted_by_its_open_offer() -> None:
    # ad_type is stated for estimate_reach, whose reach no link leads anywhere: favouring it
    # cannot help, offering its output open-world inserts it before the analysis
    values = {"country": "France", "ad_type": "video"}
    plain = _run_agency(values, relevance=False)
    assert plain.calls == ["launch_campaign", "analyse_feedback campaign in France"]
    inserted = _run_agency(values, relevance=True)
    assert inserted.calls == ["launch_campaign", "estimate_reach",
                              "analyse_feedback video reach of campaign in France"]


def test_a_writing_claimant_is_never_inserted_by_an_open_offer() -> None:
    values = {"country": "France", "ad_format": "banner"}
    calls = _run_agency(values, relevance=True).calls
    assert "create_ad_set" not in calls and len(calls) == 2
