"""The in-memory airline backend of the travel domain: seed flights, holds, bookings, charges, and its five tools.

Design decisions, as a real booking API would make them:

- ``hold_flight`` is reversible and idempotent: a hold charges nothing, expires on its own, and holding the same
  flight for the same passenger again returns the existing hold (so a retried hold never takes a second seat).
  It is declared ``idempotent`` to chaoskit, not ``irreversible``.
- ``confirm_booking`` is irreversible: it charges the card and tickets the held fare. Without an idempotency key
  the API cannot tell a retry from a new purchase, so every call tickets and charges again while seats last;
  with a key, the same key gives the first answer back and writes nothing (a key reused for other arguments is a
  409, like Stripe's).
- Invalid operations are refused like an HTTP API: unknown ids raise ``LookupError``, bad arguments
  ``ValueError``, a sold-out flight or a hold of someone else a ``ToolHTTPError`` 409, an unknown card a 402.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from chaoskit import ToolHTTPError

__all__ = ["AIRPORTS", "IDEMPOTENCY_ARGS", "IDEMPOTENT", "IRREVERSIBLE", "TOOLS", "TravelEnv", "make_tools"]

#: the tools, in the order the agent is given them
TOOLS = ("search_flights", "hold_flight", "confirm_booking", "get_booking", "list_bookings")
#: writes with an external effect (a charge), as chaoskit must know them
IRREVERSIBLE = ("confirm_booking",)
#: how each irreversible write takes its idempotency key
IDEMPOTENCY_ARGS = {"confirm_booking": "idempotency_key"}
#: writes whose repeats change nothing (a second hold of the same flight returns the first)
IDEMPOTENT = ("hold_flight",)
AIRPORTS = ("SFO", "OAK", "JFK", "LAX", "BOS")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _flight(fid: str, date: str, depart: str, arrive: str, price: float, seats: int, route: str) -> dict[str, Any]:
    origin, destination = route.split("-")
    return {
        "flight_id": f"{fid}-{date[5:7]}{date[8:]}",
        "airline": fid[:2],
        "origin": origin,
        "destination": destination,
        "date": date,
        "depart": depart,
        "arrive": arrive,
        "price": price,
        "currency": "USD",
        "seats": seats,
    }


def _flights() -> dict[str, dict[str, Any]]:
    # listed by departure time, as the search returns them; on SFO-JFK 2026-12-18 the cheapest fare (AS12, 189)
    # is sold out and the cheapest one with seats (AA177, 219) comes late in the list, so a cut list misses it;
    # as strings, "1045.0" sorts before "219.0", so comparing drifted prices as text picks the wrong flight
    rows = [
        _flight("UA1542", "2026-12-18", "06:05", "14:31", 412.0, 9, "SFO-JFK"),
        _flight("DL318", "2026-12-18", "08:40", "17:02", 389.0, 4, "SFO-JFK"),
        _flight("B6916", "2026-12-18", "11:15", "19:48", 1045.0, 2, "SFO-JFK"),
        _flight("AS12", "2026-12-18", "13:30", "21:55", 189.0, 0, "SFO-JFK"),
        _flight("AA177", "2026-12-18", "15:55", "00:21", 219.0, 3, "SFO-JFK"),
        _flight("UA2210", "2026-12-18", "21:50", "06:12", 298.0, 6, "SFO-JFK"),
        _flight("UA1542", "2026-12-19", "06:05", "14:31", 349.0, 5, "SFO-JFK"),
        _flight("AA177", "2026-12-19", "15:55", "00:21", 259.0, 2, "SFO-JFK"),
        _flight("DL318", "2026-12-19", "08:40", "17:02", 199.0, 1, "SFO-JFK"),
        _flight("WN881", "2026-12-18", "09:10", "10:35", 129.0, 12, "SFO-LAX"),
    ]
    return {r["flight_id"]: r for r in rows}


def _tokens() -> dict[str, str]:
    return {"tok_bob_visa": "Bob Smith", "tok_ana_amex": "Ana Lopez"}


@dataclass
class TravelEnv:
    """One agent's airline: flights, holds, bookings and charges. Plain data, so ``copy.deepcopy`` snapshots it."""

    flights: dict[str, dict[str, Any]] = field(default_factory=_flights)
    holds: dict[str, dict[str, Any]] = field(default_factory=dict)
    bookings: dict[str, dict[str, Any]] = field(default_factory=dict)
    charges: list[dict[str, Any]] = field(default_factory=list)
    payment_tokens: dict[str, str] = field(default_factory=_tokens)
    by_key: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=dict)

    # -- reads -------------------------------------------------------------------------------------------

    def search_flights(self, origin: str, destination: str, date: str) -> dict[str, Any]:
        """Flights from ``origin`` to ``destination`` (IATA codes) on ``date`` (YYYY-MM-DD), by departure time;
        sold-out flights are listed with ``seats`` 0. ``total`` is the number of flights found."""
        origin, destination = _airport(origin, "origin"), _airport(destination, "destination")
        if origin == destination:
            raise ValueError(f"origin and destination are both {origin}")
        if not isinstance(date, str) or not _DATE.match(date):
            raise ValueError(f"date must be YYYY-MM-DD, got {date!r}")
        rows = [
            dict(f)
            for f in self.flights.values()
            if (f["origin"], f["destination"], f["date"]) == (origin, destination, date)
        ]
        return {"origin": origin, "destination": destination, "date": date, "flights": rows, "total": len(rows)}

    def get_booking(self, booking_id: str) -> dict[str, Any]:
        """One booking by its id."""
        if booking_id not in self.bookings:
            raise LookupError(f"no booking {booking_id!r}")
        return dict(self.bookings[booking_id])

    def list_bookings(self, passenger: str) -> dict[str, Any]:
        """Every booking of ``passenger`` (full name), oldest first."""
        name = _passenger(passenger)
        rows = [dict(b) for b in self.bookings.values() if b["passenger"] == name]
        return {"passenger": name, "bookings": rows, "total": len(rows)}

    # -- writes ------------------------------------------------------------------------------------------

    def hold_flight(self, flight_id: str, passenger: str) -> dict[str, Any]:
        """Hold one seat on ``flight_id`` for ``passenger`` (no charge; the hold expires after 20 minutes).
        Holding the same flight for the same passenger again returns the existing hold."""
        name = _passenger(passenger)
        flight = self.flights.get(flight_id)
        if flight is None:
            raise LookupError(f"no flight {flight_id!r}")
        for h in self.holds.values():
            if (h["flight_id"], h["passenger"], h["status"]) == (flight_id, name, "held"):
                return dict(h)
        if flight["seats"] <= 0:
            raise ToolHTTPError(409, f"HTTP 409 Conflict: flight {flight_id} is sold out")
        flight["seats"] -= 1
        hold = {
            "hold_id": f"H-{len(self.holds) + 1}",
            "flight_id": flight_id,
            "passenger": name,
            "price": flight["price"],
            "currency": flight["currency"],
            "status": "held",
            "expires_in_min": 20,
        }
        self.holds[hold["hold_id"]] = hold
        return dict(hold)

    def confirm_booking(
        self, hold_id: str, passenger: str, payment_token: str, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Ticket the held fare for ``passenger`` and charge ``payment_token``. Pass an ``idempotency_key``: a
        retry with the same key returns the first booking; without one, every call charges again."""
        call = (hold_id, passenger, payment_token)
        if idempotency_key is not None and idempotency_key in self.by_key:
            first_call, booking = self.by_key[idempotency_key]
            if first_call != call:
                raise ToolHTTPError(409, "HTTP 409 Conflict: idempotency key reused with different arguments")
            return dict(booking)
        name = _passenger(passenger)
        hold = self.holds.get(hold_id)
        if hold is None:
            raise LookupError(f"no hold {hold_id!r}")
        if hold["passenger"] != name:
            raise ToolHTTPError(409, f"HTTP 409 Conflict: hold {hold_id} is for {hold['passenger']}, not {name}")
        if payment_token not in self.payment_tokens:
            raise ToolHTTPError(402, f"HTTP 402 Payment Required: unknown payment token {payment_token!r}")
        flight = self.flights[hold["flight_id"]]
        if hold["status"] != "held":  # a second ticket on a used hold needs a seat of its own
            if flight["seats"] <= 0:
                raise ToolHTTPError(409, f"HTTP 409 Conflict: flight {flight['flight_id']} is sold out")
            flight["seats"] -= 1
        hold["status"] = "ticketed"
        booking = {
            "booking_id": f"BK-{len(self.bookings) + 1001}",
            "hold_id": hold_id,
            "flight_id": hold["flight_id"],
            "passenger": name,
            "amount": hold["price"],
            "currency": hold["currency"],
            "status": "confirmed",
        }
        self.bookings[booking["booking_id"]] = booking
        self.charges.append(
            {"payment_token": payment_token, "amount": hold["price"], "booking_id": booking["booking_id"]}
        )
        if idempotency_key is not None:
            self.by_key[idempotency_key] = (call, dict(booking))
        return dict(booking)


def _airport(code: Any, what: str) -> str:
    if not isinstance(code, str) or code.strip().upper() not in AIRPORTS:
        raise ValueError(f"unknown {what} airport {code!r}; known: {', '.join(AIRPORTS)}")
    return code.strip().upper()


def _passenger(name: Any) -> str:
    if not isinstance(name, str) or len(name.split()) < 2:
        raise ValueError(f"passenger must be a full name (first and last), got {name!r}")
    return " ".join(name.split())


def make_tools(env: TravelEnv) -> list[Any]:
    """The five tools over ``env`` as LangChain tools (not yet through chaoskit: the graph is instrumented)."""
    from langchain_core.tools import tool

    @tool
    def search_flights(origin: str, destination: str, date: str) -> dict[str, Any]:
        """Search flights from origin to destination (IATA codes) on a date (YYYY-MM-DD); sold out = 0 seats."""
        return env.search_flights(origin, destination, date)

    @tool
    def hold_flight(flight_id: str, passenger: str) -> dict[str, Any]:
        """Hold one seat on a flight for a passenger (full name); no charge. Returns the hold_id."""
        return env.hold_flight(flight_id, passenger)

    @tool
    def confirm_booking(
        hold_id: str, passenger: str, payment_token: str, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Ticket a held fare and charge the payment token. Pass an idempotency_key so a retry is not charged twice."""
        return env.confirm_booking(hold_id, passenger, payment_token, idempotency_key)

    @tool
    def get_booking(booking_id: str) -> dict[str, Any]:
        """Read one booking by its id."""
        return env.get_booking(booking_id)

    @tool
    def list_bookings(passenger: str) -> dict[str, Any]:
        """List every booking of a passenger (full name)."""
        return env.list_bookings(passenger)

    return [search_flights, hold_flight, confirm_booking, get_booking, list_bookings]
