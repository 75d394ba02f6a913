"""Tasks about people: contacts, payments and messaging, including cross-app chains
(contact lookup -> payment or message)."""

from __future__ import annotations

from hyperplan.demo_world.taskkit import (
    DemoTask,
    balance,
    chain,
    contact,
    sent_money,
    single,
    sub,
    texts_to,
)
from hyperplan.demo_world.world import DemoWorld

PAYMENTS = {"app_name": "payments"}
MESSAGING = {"app_name": "messaging"}
BOB, MARIA, CARLOS = "bob.lee@example.com", "maria.garcia@example.com", "carlos.diaz@example.com"


def _priya_added(world: DemoWorld) -> bool:
    found = contact(world, "Priya Patel")
    return len(found) == 1 and (found[0]["email"], found[0]["phone_number"]) == (
        "priya.patel@example.com", "+1-555-0142")


def _maria_phone(world: DemoWorld) -> bool:
    return [c["phone_number"] for c in contact(world, "Maria Garcia")] == ["+1-555-0199"]


def _request_sent(world: DemoWorld) -> bool:
    rows = world.rows("SELECT amount, note, status FROM payment_requests "
                      "WHERE direction = 'outgoing' AND counterparty_email = ?", CARLOS)
    return [(r["amount"], r["note"], r["status"]) for r in rows] == [(15.0, "pizza", "pending")]


def _request_paid(world: DemoWorld) -> bool:
    status = world.rows("SELECT payment_request_id, status FROM payment_requests "
                        "WHERE status = 'paid' ORDER BY 1")
    return ([r["payment_request_id"] for r in status] == [1, 3]
            and sent_money(world, BOB) == [(18.5, "movie tickets")])


def _topped_up(world: DemoWorld) -> bool:
    rows = world.rows("SELECT amount, note FROM transactions WHERE kind = 'top-up'")
    return balance(world) == 350.0 and [(r["amount"], r["note"]) for r in rows] == [
        (100.0, "from card Travel Visa")]


def _message_deleted(world: DemoWorld) -> bool:
    return [r["message_id"] for r in world.rows("SELECT message_id FROM messages")] == [1, 3, 4]


def _paid_and_texted(world: DemoWorld) -> bool:
    return (sent_money(world, CARLOS) == [(20.0, "lunch")]
            and texts_to(world, "+1-555-0109") == ["Sent you $20 for lunch"])


def _contact_tasks() -> list[DemoTask]:
    """Contacts (t09, t10)."""
    return [
        DemoTask(
            "t09_add_contact",
            "Add Priya Patel to my contacts: priya.patel@example.com, +1-555-0142.",
            single("contacts.add_contact", {"name": "Priya Patel",
                                            "email": "priya.patel@example.com",
                                            "phone_number": "+1-555-0142"}),
            1, _priya_added, notes="every input is known: one call"),
        DemoTask(
            "t10_update_contact_phone",
            "Maria Garcia has a new phone number, +1-555-0199. Update her contact.",
            single("contacts.update_contact_phone_number", {
                "query": "Maria Garcia", "name": "Maria Garcia", "phone_number": "+1-555-0199"}),
            2, _maria_phone, notes="contacts needs no login"),
    ]


def _payment_tasks() -> list[DemoTask]:
    """Payments (t11-t16, one ambiguous)."""
    return [
        DemoTask(
            "t11_send_money",
            "Send $25 to Bob Lee for the concert tickets.",
            single("payments.send_money", {**PAYMENTS, "query": "Bob Lee", "amount": 25,
                                           "note": "concert tickets"}),
            5, lambda w: sent_money(w, BOB) == [(25.0, "concert tickets")],
            notes="cross-app: contacts email -> payments receiver_email; one search result"),
        DemoTask(
            "t12_send_money_to_sister",
            "Send $40 to my sister Jane for dinner.",
            single("payments.send_money", {**PAYMENTS, "query": "Jane", "relationship": "sister",
                                           "amount": 40, "note": "dinner"}),
            5, lambda w: (sent_money(w, "jane.smith@example.com") == [(40.0, "dinner")]
                          and not sent_money(w, "jane.doe@example.com")),
            notes="two contacts match 'Jane'; relationship picks Jane Smith"),
        DemoTask(
            "t13_request_money",
            "Ask Carlos Diaz to pay me $15 for the pizza.",
            single("payments.request_money", {**PAYMENTS, "query": "Carlos Diaz", "amount": 15,
                                              "note": "pizza"}),
            5, _request_sent, notes="contacts email -> payments payer_email"),
        DemoTask(
            "t14_approve_request",
            "Pay Bob's pending payment request for the movie tickets.",
            single("payments.approve_payment_request", {**PAYMENTS, "note": "movie tickets"}),
            5, _request_paid, notes="note picks the request among the listed ones"),
        DemoTask(
            "t15_add_funds",
            "Add $100 to my wallet from my 'Travel Visa' card.",
            single("payments.add_funds", {**PAYMENTS, "card_name": "Travel Visa",
                                          "amount": 100}),
            5, _topped_up, notes="card_name picks the card"),
        DemoTask(
            "t16_send_money_to_alex",
            "Send $30 to Alex from work for the taxi.",
            single("payments.send_money", {**PAYMENTS, "query": "Alex", "amount": 30,
                                           "note": "taxi"}),
            5, lambda w: (sent_money(w, "alex.chen@example.com") == [(30.0, "taxi")]
                          and not sent_money(w, "alex.morgan@example.com")),
            ambiguous=True,
            notes="two contacts are called Alex (Alex Chen, coworker; Alex Morgan, cousin); "
                  "only the request says 'from work'"),
    ]


def _messaging_tasks() -> list[DemoTask]:
    """Messaging, and a payment followed by a text (t17-t20, one ambiguous)."""
    return [
        DemoTask(
            "t17_send_message",
            "Text Maria Garcia: 'Running 10 minutes late'.",
            single("messaging.send_message", {**MESSAGING, "query": "Maria Garcia",
                                              "text": "Running 10 minutes late"}),
            5, lambda w: texts_to(w, "+1-555-0102") == ["Running 10 minutes late"],
            notes="contacts phone_number -> messaging phone_number"),
        DemoTask(
            "t18_text_brother_sam",
            "Text my brother Sam: 'Happy birthday!'",
            single("messaging.send_message", {**MESSAGING, "query": "Sam",
                                              "text": "Happy birthday!"}),
            5, lambda w: (texts_to(w, "+1-555-0107")[-1:] == ["Happy birthday!"]
                          and not texts_to(w, "+1-555-0108")),
            ambiguous=True,
            notes="two contacts are called Sam (Sam Taylor, brother; Sam Wilson, neighbor); "
                  "the goal omits the relationship"),
        DemoTask(
            "t19_delete_message",
            "Delete the message where I told Bob to call me later.",
            single("messaging.delete_message", {**MESSAGING, "query": "call me later"}),
            5, _message_deleted, notes="the message search returns exactly one message"),
        DemoTask(
            "t20_pay_then_text",
            "Send $20 to Carlos Diaz for lunch, then text him 'Sent you $20 for lunch'.",
            chain(
                sub("g1", "payments.send_money", {**PAYMENTS, "query": "Carlos Diaz",
                                                  "amount": 20, "note": "lunch"}),
                sub("g2", "messaging.send_message", {**MESSAGING,
                                                     "text": "Sent you $20 for lunch"},
                    depends_on=("g1",))),
            8, _paid_and_texted,
            notes="g2 reuses the username and Carlos's phone number found in g1"),
    ]


def people_tasks() -> list[DemoTask]:
    """Contacts, payments and messaging tasks (12, two ambiguous)."""
    return [*_contact_tasks(), *_payment_tasks(), *_messaging_tasks()]
