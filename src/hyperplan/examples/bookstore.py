"""A tiny bookstore as plain Python functions, written the way a user writes tools: bare return
values documented in a sentence, no output schemas. ``hyperplan run --tools
python:hyperplan.examples.bookstore --goal '...'`` plans and calls it LLM-free (README, "Running
the agent on your tools"); the state lives in this module and :func:`reset` clears it.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["add_to_cart", "checkout", "login", "search_books"]  # the tools; not reset/orders

BOOKS = {"b1": "Dune", "b2": "Emma", "b3": "Dune Messiah"}  # book id -> title
_SESSIONS: set[str] = set()
_CARTS: dict[str, list[str]] = {}
_ORDERS: dict[str, list[str]] = {}


class Session(TypedDict):
    access_token: str


def reset() -> None:
    """Forget every session, cart and order (not a tool: called between runs and by tests)."""
    _SESSIONS.clear()
    _CARTS.clear()
    _ORDERS.clear()


def orders() -> dict[str, list[str]]:
    """The placed orders, order id -> book ids (not a tool: for checking a run)."""
    return {k: list(v) for k, v in _ORDERS.items()}


def _check(access_token: str) -> None:
    if access_token not in _SESSIONS:
        raise PermissionError("not logged in")


def login(username: str, password: str) -> Session:
    """Log in to the bookstore and get an access token."""
    if not username or password != "open sesame":
        raise PermissionError("wrong username or password")
    token = f"tok-{username}"
    _SESSIONS.add(token)
    return {"access_token": token}


def search_books(query: str) -> list[str]:
    """Search the catalogue for books whose title contains the query; returns the book ids."""
    return [b for b, title in BOOKS.items() if query.lower() in title.lower()]


def add_to_cart(book_id: str, access_token: str) -> str:
    """Add a book to a new shopping cart; returns the cart id."""
    _check(access_token)
    if book_id not in BOOKS:
        raise KeyError(f"no book {book_id!r}")
    cart = f"c{len(_CARTS) + 1}"
    _CARTS[cart] = [book_id]
    return cart


def checkout(cart_id: str, access_token: str) -> str:
    """Pay for a shopping cart and place the order; returns the order id."""
    _check(access_token)
    if not _CARTS.get(cart_id):
        raise ValueError(f"cart {cart_id!r} is empty or unknown")
    order = f"o{len(_ORDERS) + 1}"
    _ORDERS[order] = _CARTS.pop(cart_id)
    return order
