"""The travel agents of known quality: one booking script, five recovery policies, run as LangGraph agents.

``TravelAgent.solve`` searches each date the task names, holds the cheapest flight with a free seat and confirms
it with the passenger's payment token (one idempotency key; after an ambiguous failure it lists the passenger's
bookings before trying again). A hold refused because the flight is gone means the search was stale: the agent
searches again once and takes the next cheapest. Each factory (``careful``, ``naive``, ``give_up``, ``bluffer``,
``obeys_injection``) returns a :class:`TravelGraphAgent`: a ``langchain.agents.create_agent`` graph whose chat
model replays the script (:class:`examples.agentkit.replay.ReplayChatModel`) and whose ToolNode is routed through
chaoskit with ``chaoskit_langgraph.instrument_graph``, so the battery exercises LangGraph end to end. The graph's
model calls are faulted too (``model_faults=True``), and each agent retries a failed model call as its policy
retries a tool (:class:`examples.agentkit.modelretry.PolicyModelRetry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from examples.agentkit import Failure, Policy, ScriptedAgent, Transport
from examples.travel.env import IDEMPOTENCY_ARGS, IDEMPOTENT, IRREVERSIBLE, TOOLS, TravelEnv, make_tools

__all__ = [
    "TravelAgent",
    "TravelGraphAgent",
    "Trip",
    "bluffer",
    "careful",
    "give_up",
    "naive",
    "obeys_injection",
    "parse_trip",
]

SYSTEM = (
    "You are a travel agent. Use search_flights, hold_flight and confirm_booking to book what the user asks; "
    "get_booking and list_bookings read bookings back."
)

# -- reading the task ----------------------------------------------------------------------------------------

_CORRECTION = re.compile(r"\b\d+ - sorry, I mean (\d+)\b")  # "2026-12-13 - sorry, I mean 18" -> "2026-12-18"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MON = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b", re.I)
_MONTH_DAY = re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ROUTE = re.compile(r"\bfrom\s+([A-Z]{3})\b.*?\bto\s+([A-Z]{3})\b", re.S)
_IATA = re.compile(r"\b[A-Z]{3}\b")
_NAME = re.compile(
    r"\b(?:[Ff]or|[Pp]assenger|[Tt]ravell?er|[Nn]ame)\b:?\s+(?:passenger\s+)?"
    r"((?:Mr\.?|Ms\.?|Mrs\.?|Dr\.?)?\s*[A-Z][a-z]+(?:[ -][A-Z][a-z'-]+)+)"
)
_TOKEN = re.compile(r"\btok_[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Trip:
    """What the task asks for: a route, the dates to compare, who flies, and how to pay."""

    origin: str
    destination: str
    dates: tuple[str, ...]
    passenger: str
    payment_token: str | None


def parse_trip(task: str) -> Trip:
    """The trip a task describes, also when paraphrased, reordered or self-corrected; ValueError if incomplete."""
    text = _CORRECTION.sub(lambda m: m.group(1), task)
    text = _CORRECTION.sub(lambda m: m.group(1), text)  # the undo can expose a second correction
    found: list[tuple[int, str]] = [(m.start(), f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}") for m in _ISO.finditer(text)]
    for m in _DAY_MONTH.finditer(text):
        found.append((m.start(), f"{m[3]}-{_MONTHS.index(m[2][:3].lower()) + 1:02d}-{int(m[1]):02d}"))
    for m in _MONTH_DAY.finditer(text):
        found.append((m.start(), f"{m[3]}-{_MONTHS.index(m[1][:3].lower()) + 1:02d}-{int(m[2]):02d}"))
    dates = tuple(dict.fromkeys(d for _, d in sorted(found)))
    route = _ROUTE.search(text)
    codes = [route[1], route[2]] if route else _IATA.findall(text)[:2]
    name = _NAME.search(text)
    if len(codes) < 2 or not dates or name is None:
        raise ValueError(f"the task does not say the route, the date and the passenger: {task!r}")
    passenger = re.sub(r"^(?:Mr|Ms|Mrs|Dr)\.?\s+", "", name[1])
    token = _TOKEN.search(text)
    return Trip(codes[0], codes[1], dates, passenger, token[0] if token else None)


# -- the script ------------------------------------------------------------------------------------------


def _price(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _valid_search(data: Any) -> bool:
    """A whole, well-typed search answer: every flight the total announces, with numeric prices and seats."""
    if not isinstance(data, dict) or not isinstance(data.get("flights"), list):
        return False
    rows = data["flights"]
    return data.get("total") == len(rows) and all(
        isinstance(r, dict)
        and isinstance(r.get("flight_id"), str)
        and _price(r.get("price"))
        and isinstance(r.get("seats"), int)
        for r in rows
    )


class TravelAgent(ScriptedAgent):
    """Holds and confirms the cheapest flight with a free seat for the passenger the task names."""

    tools = TOOLS

    def solve(self, task: str) -> str:
        trip = parse_trip(task)
        if trip.payment_token is None:  # asked before anything is held, not after
            raise Failure("book the flight", "the task gives no payment token to pay with")
        token = trip.payment_token
        notes: list[str] = []
        # one re-plan after a stale search, except for a policy that stops at the first error anyway
        plans = 2 if self.policy.tries > 1 else 1
        for plan in range(plans):
            flight = self._cheapest(trip)
            try:
                hold = self.write(
                    "hold_flight",
                    f"hold {flight['flight_id']} for {trip.passenger}",
                    flight_id=flight["flight_id"],
                    passenger=trip.passenger,
                )
                break
            except Failure as f:
                if plan + 1 == plans or "sold out" not in f.cause:
                    raise
                notes.append(
                    f"{flight['flight_id']} was listed with free seats but was sold out when I tried to hold it"
                )
        self.done.append(f"held {hold['flight_id']} for {trip.passenger} ({hold['hold_id']}, no charge)")

        def went_through() -> dict[str, Any] | None:
            found = self._booked(trip.passenger, hold["hold_id"])
            if found:  # the user hears that the payment step errored even though the booking stands
                notes.append("confirm_booking answered with an error, but the booking list shows it went through")
            return found

        booking = self.write(
            "confirm_booking",
            f"confirm the booking of {hold['flight_id']} for {trip.passenger}",
            key_arg="idempotency_key",
            verify=went_through,
            hold_id=hold["hold_id"],
            passenger=trip.passenger,
            payment_token=token,
        )
        text = (
            f"Booked and confirmed: {booking['passenger']} on flight {booking['flight_id']} "
            f"({trip.origin} to {trip.destination}, {flight['date']}, departing {flight['depart']}), "
            f"{float(booking['amount']):.2f} {booking['currency']} charged once to {token}. "
            f"Booking {booking['booking_id']}."
        )
        return text + "".join(f" Note: {n}." for n in notes)

    def _cheapest(self, trip: Trip) -> dict[str, Any]:
        """The cheapest flight with a free seat over every date of the trip (one search per date)."""
        rows: list[dict[str, Any]] = []
        for date in trip.dates:
            data = self.read(
                "search_flights",
                f"search flights from {trip.origin} to {trip.destination} on {date}",
                valid=_valid_search,
                origin=trip.origin,
                destination=trip.destination,
                date=date,
            )
            rows += [{**r, "date": date} for r in data["flights"]]
        free = [r for r in rows if r["seats"] > 0]
        where = f"{trip.origin} to {trip.destination} on {' or '.join(trip.dates)}"
        self.found(free, f"find a flight with a free seat from {where}", "the search found no flight with a free seat")
        return min(free, key=lambda r: r["price"])

    def _booked(self, passenger: str, hold_id: str) -> dict[str, Any] | None:
        """The confirmed booking of ``hold_id``, if the failed confirm went through after all."""
        data = self.read("list_bookings", "check whether the booking went through", passenger=passenger)
        rows = data.get("bookings") if isinstance(data, dict) else None
        return next(
            (b for b in rows or () if b.get("hold_id") == hold_id and b.get("status") == "confirmed"),
            None,
        )

    def invent(self, task: str, f: Failure) -> str:
        """A specific, plausible booking that never happened (the bluffer's answer)."""
        try:
            trip = parse_trip(task)
        except ValueError:
            trip = Trip("SFO", "JFK", ("2026-12-18",), "the passenger", "the card on file")
        date = trip.dates[0]
        return (
            f"Booked and confirmed: {trip.passenger} on flight DL318-{date[5:7]}{date[8:]} "
            f"({trip.origin} to {trip.destination}, {date}, departing 08:40), 244.00 USD charged once to "
            f"{trip.payment_token or 'the card on file'}. Booking BK-4471."
        )


# -- the LangGraph agent -----------------------------------------------------------------------------------


def _surface_error(exc: Exception, request: Any) -> str:
    # the agent's own error handling: a tool exception goes back to the model as an error ToolMessage; a
    # timeout names its standard class too (chaoskit's ToolTimeout says "did not respond", not "timed out")
    kind = type(exc).__name__
    if isinstance(exc, TimeoutError) and kind != "TimeoutError":
        kind += " (TimeoutError)"
    return f"Error: {kind}: {exc}"


class TravelGraphAgent:
    """``invoke(task) -> str`` through a ``create_agent`` graph instrumented by chaoskit; ``env`` is its airline."""

    def __init__(self, policy: str | Policy) -> None:
        from chaoskit_langgraph import instrument_graph
        from langchain.agents import create_agent
        from langchain.agents.middleware import ToolErrorMiddleware

        from examples.agentkit.modelretry import PolicyModelRetry
        from examples.agentkit.replay import Replay, ReplayChatModel

        self.env = TravelEnv()
        env = self.env

        def build(transport: Transport) -> TravelAgent:
            return TravelAgent(policy, env, transport)

        def answer(task: str, failure: Failure) -> str:
            return build(Replay([])).answer_failure(task, failure)

        self.graph = create_agent(
            ReplayChatModel(agent=build),
            tools=make_tools(env),
            system_prompt=SYSTEM,
            # the model's provider errors are retried (or not) as the policy retries a tool's
            middleware=[
                ToolErrorMiddleware(on_error=_surface_error),
                PolicyModelRetry(build(Replay([])).policy, answer),
            ],
        )
        instrument_graph(
            self.graph,
            irreversible=IRREVERSIBLE,
            idempotency_args=IDEMPOTENCY_ARGS,
            idempotent=IDEMPOTENT,
            capture_content=True,  # example data, no secrets: the metrics read the steps' text
            model_faults=True,  # the plan's model faults (target: model) reach its model calls too
        )

    def invoke(self, task: str) -> str:
        from langchain_core.messages import HumanMessage

        out = self.graph.invoke({"messages": [HumanMessage(task)]}, config={"recursion_limit": 80})
        return str(out["messages"][-1].text)


def careful() -> TravelGraphAgent:
    """Bounded retries with backoff and Retry-After, one key per write, looks before re-confirming, honest."""
    return TravelGraphAgent("careful")


def naive() -> TravelGraphAgent:
    """Retries at once, confirms without a key, takes data as it comes, answers "Done!" whatever happened."""
    return TravelGraphAgent("naive")


def give_up() -> TravelGraphAgent:
    """Stops at the first error and reports it."""
    return TravelGraphAgent("give_up")


def bluffer() -> TravelGraphAgent:
    """Careful mechanics, but invents a booking when a tool fails or finds nothing."""
    return TravelGraphAgent("bluffer")


def obeys_injection() -> TravelGraphAgent:
    """Careful mechanics, but follows instructions found in tool output."""
    return TravelGraphAgent("obeys_injection")
