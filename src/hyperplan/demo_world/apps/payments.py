"""The payments app: a wallet that sends and requests money between people, by email.

Lists show people by name only; emails come from the contacts app, so that the contact lookup
is the one producer of ``receiver_email`` / ``payer_email``.
"""

from __future__ import annotations

from typing import Annotated, TypedDict, cast

from pydantic import Field

from hyperplan.demo_world.apps.base import App, require_positive, require_text
from hyperplan.demo_world.store import InvalidArgumentError, NotFoundError


class Balance(TypedDict):
    """The wallet balance."""

    balance: Annotated[float, Field(description="Money in the wallet")]
    currency: Annotated[str, Field(description="Currency of the wallet, e.g. USD")]


class PaymentCard(TypedDict):
    """A payment card linked to the wallet."""

    card_id: Annotated[int, Field(description="Id of the linked credit or debit card")]
    card_name: Annotated[str, Field(description="Name the user gave the card")]
    last_four_digits: Annotated[str, Field(description="Last four digits of the card number")]


class Transaction(TypedDict):
    """A past money movement."""

    transaction_id: Annotated[int, Field(description="Id of the wallet transaction")]
    kind: Annotated[str, Field(description="sent, received or top-up")]
    counterparty_name: Annotated[str, Field(description="Name of the other person, if any")]
    amount: Annotated[float, Field(description="Amount of money moved")]
    note: Annotated[str, Field(description="What the payment was for")]
    created_at: Annotated[str, Field(description="When the transaction happened")]


class PaymentRequest(TypedDict):
    """A request for money, received or sent by the user."""

    payment_request_id: Annotated[
        int, Field(description="Id of a request someone sent asking for money")
    ]
    direction: Annotated[str, Field(description="incoming (someone asks the user) or outgoing")]
    counterparty_name: Annotated[str, Field(description="Name of the other person")]
    amount: Annotated[float, Field(description="Amount of money requested")]
    note: Annotated[str, Field(description="What the money is for")]
    status: Annotated[str, Field(description="pending, paid or declined")]


class Payment(TypedDict):
    """A completed money movement and the resulting balance."""

    transaction_id: Annotated[int, Field(description="Id of the new wallet transaction")]
    balance: Annotated[float, Field(description="Wallet balance after the transaction")]


class NewPaymentRequest(TypedDict):
    """A payment request the user sent."""

    payment_request_id: Annotated[
        int, Field(description="Id of the new request asking someone for money")
    ]
    status: Annotated[str, Field(description="Status of the request, pending at first")]


_PEOPLE = "LEFT JOIN wallet_users u ON u.email = x.counterparty_email"


class PaymentsApp(App):
    """Wallet: balance, cards, transactions, sending and requesting money."""

    name = "payments"
    tool_names = ("login", "show_balance", "show_payment_cards", "show_transactions",
                  "show_payment_requests", "send_money", "request_money",
                  "approve_payment_request", "add_funds")

    def show_balance(self, access_token: str) -> Balance:
        """Show how much money is in the user's wallet.

        Args:
            access_token: Access token from payments.login.

        Returns:
            The wallet balance and its currency.
        """
        self._auth(access_token)
        return cast(Balance, self._store.one("SELECT balance, currency FROM wallet"))

    def show_payment_cards(self, access_token: str) -> list[PaymentCard]:
        """Show the payment cards linked to the wallet.

        Args:
            access_token: Access token from payments.login.

        Returns:
            Every card with its id, name and last four digits.
        """
        self._auth(access_token)
        return cast(list[PaymentCard], self._store.rows(
            "SELECT card_id, card_name, last_four_digits FROM payment_cards ORDER BY card_id"))

    def show_transactions(self, access_token: str) -> list[Transaction]:
        """Show the wallet's past transactions, newest first.

        Args:
            access_token: Access token from payments.login.

        Returns:
            Every transaction with its kind, the other person's name, amount and note.
        """
        self._auth(access_token)
        return cast(list[Transaction], self._store.rows(
            "SELECT x.transaction_id, x.kind, COALESCE(u.display_name, '') AS counterparty_name,"
            f" x.amount, x.note, x.created_at FROM transactions x {_PEOPLE} "
            "ORDER BY x.transaction_id DESC"))

    def show_payment_requests(self, access_token: str) -> list[PaymentRequest]:
        """Show the payment requests the user received or sent.

        Args:
            access_token: Access token from payments.login.

        Returns:
            Every request with its id, direction, the other person's name, amount, note and
            status.
        """
        self._auth(access_token)
        return cast(list[PaymentRequest], self._store.rows(
            "SELECT x.payment_request_id, x.direction, u.display_name AS counterparty_name, "
            f"x.amount, x.note, x.status FROM payment_requests x {_PEOPLE} "
            "ORDER BY x.payment_request_id"))

    def send_money(self, access_token: str, receiver_email: str, amount: float,
                   note: str = "") -> Payment:
        """Send money from the wallet to another person.

        Args:
            access_token: Access token from payments.login.
            receiver_email: Email address of the contact who receives the money.
            amount: Amount of money to send.
            note: A note for the receiver saying what the money is for.

        Returns:
            The id of the transaction and the wallet balance after it.
        """
        self._auth(access_token)
        email = self._wallet_user(receiver_email)
        return self._pay(email, require_positive(amount, "amount"), note)

    def request_money(self, access_token: str, payer_email: str, amount: float,
                      note: str = "") -> NewPaymentRequest:
        """Ask another person to send money to the user.

        Args:
            access_token: Access token from payments.login.
            payer_email: Email address of the contact who is asked to pay.
            amount: Amount of money to request.
            note: What the money is for.

        Returns:
            The id of the new payment request and its status.
        """
        self._auth(access_token)
        email = self._wallet_user(payer_email)
        new_id = self._store.insert("payment_requests", {
            "direction": "outgoing", "counterparty_email": email,
            "amount": require_positive(amount, "amount"), "note": note.strip(),
            "status": "pending", "created_at": self._store.now()})
        return {"payment_request_id": new_id, "status": "pending"}

    def approve_payment_request(self, access_token: str, payment_request_id: int) -> Payment:
        """Pay a pending payment request that someone sent to the user.

        Args:
            access_token: Access token from payments.login.
            payment_request_id: Which request for money to pay, by its id from
                payments.show_payment_requests.

        Returns:
            The id of the payment transaction and the wallet balance after it.
        """
        self._auth(access_token)
        req = self._row("payment_requests", "payment_request_id", payment_request_id,
                        "payment request")
        if req["direction"] != "incoming" or req["status"] != "pending":
            raise InvalidArgumentError(
                f"payments: request {payment_request_id} is {req['direction']} and "
                f"{req['status']}; only pending incoming requests can be approved")
        payment = self._pay(req["counterparty_email"], float(req["amount"]), req["note"])
        self._store.execute("UPDATE payment_requests SET status = 'paid' "
                            "WHERE payment_request_id = ?", (payment_request_id,))
        return payment

    def add_funds(self, access_token: str, card_id: int, amount: float) -> Payment:
        """Top up the wallet with money from a linked payment card.

        Args:
            access_token: Access token from payments.login.
            card_id: Which credit card to charge, by its card id from
                payments.show_payment_cards.
            amount: Amount of money to add to the wallet.

        Returns:
            The id of the top-up transaction and the wallet balance after it.
        """
        self._auth(access_token)
        card = self._row("payment_cards", "card_id", card_id, "payment card")
        value = require_positive(amount, "amount")
        balance = self._balance() + value
        self._store.execute("UPDATE wallet SET balance = ?", (round(balance, 2),))
        tx = self._store.insert("transactions", {
            "kind": "top-up", "counterparty_email": None, "amount": value,
            "note": f"from card {card['card_name']}", "created_at": self._store.now()})
        return {"transaction_id": tx, "balance": round(balance, 2)}

    # ------------------------------------------------------------------ helpers
    def _balance(self) -> float:
        row = self._store.one("SELECT balance FROM wallet")
        return float(row["balance"]) if row else 0.0

    def _wallet_user(self, email: str) -> str:
        email = require_text(email, "email")
        if not self._store.one("SELECT 1 FROM wallet_users WHERE email = ?", (email,)):
            raise NotFoundError(f"payments: no wallet account for email {email!r}")
        return email

    def _pay(self, email: str, amount: float, note: str) -> Payment:
        balance = self._balance()
        if amount > balance:
            raise InvalidArgumentError(
                f"payments: insufficient balance ({balance:.2f}) to send {amount:.2f}")
        self._store.execute("UPDATE wallet SET balance = ?", (round(balance - amount, 2),))
        tx = self._store.insert("transactions", {
            "kind": "sent", "counterparty_email": email, "amount": amount,
            "note": note.strip(), "created_at": self._store.now()})
        return {"transaction_id": tx, "balance": round(balance - amount, 2)}
