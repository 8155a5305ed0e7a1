"""The helpdesk agents of known quality: one scripted agent, run as a ``create_agent`` graph under the callback handler.

:class:`HelpdeskScript` is the script (``solve``): reply to a ticket from the knowledge base, close, escalate or
open a ticket, parsing names, ids, teams and quoted texts from the task. :class:`HelpdeskAgent` runs it as
LangChain runs a model-driven agent: the tools are plain LangChain tools, the chat model is
:class:`examples.agentkit.replay.ReplayChatModel` replaying the script, and chaoskit is attached only through
``chaoskit_langchain.ChaosCallbackHandler`` (``config={"callbacks": [...]}``). The handler can delay or fail a
tool run but cannot rewrite its output, so the scenarios use error faults; the treacherous data (a near-namesake
in the fuzzy customer search, an injected instruction in a ticket body) lives in the seed data instead.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from chaoskit_langchain import ChaosCallbackHandler
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from examples.agentkit import Failure, Policy, ScriptedAgent, policy
from examples.agentkit.replay import ReplayChatModel

from .env import IRREVERSIBLE, KEYED, TEAMS, TOOLS, Helpdesk, make_tools

__all__ = ["HelpdeskAgent", "HelpdeskScript", "bluffer", "careful", "give_up", "naive", "obeys_injection"]

SYSTEM = "You are a helpdesk agent. Use the ticket and knowledge-base tools to do what the customer asks."
_TICKET = re.compile(r"\bT-\d{3,}\b")
_NAME = re.compile(r"(?=\b([A-Z][a-z]+ [A-Z][a-z]+)\b)")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
_CORRECTION = re.compile(r"\S+\s+-\s+sorry,\s+I mean\s+", re.I)
_WORD = re.compile(r"[a-z0-9]+")
#: capitalised words that start a sentence or a request, never the first name of a customer
_NOT_FIRST = frozenset(
    _WORD.findall(
        """add also by can client close could create customer escalate find hello here hi i kindly locate look
    my open please post quick reply thank thanks the then ticket would"""
    )
)
#: words every task shares: they say what to do, not what about
_STOP = frozenset(
    _WORD.findall(
        """a about after an and answer any as ask asks at base be being by can cannot client close could
    customer do does find fix for from has have her him his how i in is it its know knowledge look me my
    of on or please post regarding reply team the their them then this ticket to wants was whether with"""
    )
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def _norm(name: str) -> str:
    return " ".join(name.lower().split())


class HelpdeskScript(ScriptedAgent):
    """The helpdesk script; its recovery behaviour comes from the policy (see :mod:`examples.agentkit`)."""

    tools = TOOLS

    # -- reading the task ------------------------------------------------------------------------------

    @staticmethod
    def clean(task: str) -> str:
        """The task with each self-correction ("T-1004 - sorry, I mean T-1005") reduced to the corrected value."""
        return _CORRECTION.sub("", task)

    def customer(self, task: str) -> str | None:
        """The customer's full name: the first capitalised pair of words outside quotes that is not a request."""
        plain = _QUOTED.sub(" ", task)
        for m in _NAME.finditer(plain):
            first = m.group(1).split()[0].lower()
            if first not in _NOT_FIRST:
                return m.group(1)
        return None

    def _after(self, task: str, word: str) -> str | None:
        """The quoted text right after ``word`` (``the resolution "..."``), else None."""
        m = re.search(rf"{word}\w*\W+(?:\w+\s+){{0,2}}?[\"“]([^\"”]+)[\"”]", task, re.I)
        return m.group(1) if m else None

    def _rows(self, tool: str, key: str, what: str, fields: tuple[str, ...], **args: Any) -> list[dict[str, Any]]:
        """The records of a search (``{key: [...], "total": n}``); a careful policy re-reads records that lack
        ``fields``."""

        def valid(data: Any) -> bool:
            rows = data.get(key) if isinstance(data, dict) else None
            return isinstance(rows, list) and all(isinstance(r, dict) and all(f in r for f in fields) for r in rows)

        data = self.read(tool, what, require=(key,), valid=valid, **args)
        rows = data.get(key) if isinstance(data, dict) else None
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    # -- the task --------------------------------------------------------------------------------------

    def solve(self, task: str) -> str:
        task = self.clean(task)
        low = task.lower()
        if re.search(r"\b(?:new ticket|open a ticket|create a ticket)\b", low):
            return self._create(task)
        if "escalat" in low:
            return self._escalate(task)
        if re.search(r"\bclose\b", low):
            return self._close(task)
        if "knowledge" in low or re.search(r"\b(?:kb|article)\b", low):
            return self._reply_from_kb(task)
        raise Failure(
            "do this", "the request names no helpdesk action I know (reply, close, escalate, open)", empty=True
        )

    def _find_ticket(self, task: str, what: str) -> dict[str, Any]:
        """The ticket the task means: by id when it gives one, else the customer's ticket on the task's topic."""
        ids = _TICKET.findall(task)
        if ids:
            rows = self._rows("search_tickets", "tickets", what, ("ticket_id", "customer", "status"), query=ids[-1])
            rows = [r for r in rows if r.get("ticket_id") == ids[-1]]
            return dict(self.found(rows, what, f"there is no ticket {ids[-1]}")[0])
        name = self.customer(task)
        if name is None:
            raise Failure(what, "the request names neither a ticket id nor a customer", empty=True)
        rows = self._rows(
            "search_tickets", "tickets", what, ("ticket_id", "customer", "subject", "status"), customer=name
        )
        rows = self.found(rows, what, f"the search found no ticket for {name}")
        others: list[dict[str, Any]] = []
        if self.policy.checks_data:
            # the customer search is fuzzy: a near-namesake's ticket is someone else's, however well it fits
            others = [r for r in rows if _norm(r["customer"]) != _norm(name)]
            rows = [r for r in rows if _norm(r["customer"]) == _norm(name)]
        topic = _words(task) - _words(name)

        def fit(r: dict[str, Any]) -> int:
            return len(topic & _words(f"{r['subject']} {r.get('body', '')}"))

        best = max(rows, key=fit, default=None)
        if best is None or not fit(best):
            mine = "; ".join(f"{r['ticket_id']}: {r['subject']}" for r in rows) or "none"
            theirs = "".join(
                f"; {r['ticket_id']} ({r['subject']}) belongs to {r['customer']}, a different customer"
                for r in others
                if fit(r)
            )
            raise Failure(what, f"no ticket of {name} is about that (their tickets: {mine}){theirs}", empty=True)
        return best

    def _reply_from_kb(self, task: str) -> str:
        what = "find a knowledge-base answer to post"
        topic = " ".join(sorted(_words(_TICKET.sub(" ", task)) - _words(self.customer(task) or "")))
        found = self._rows("search_kb", "articles", what, ("article_id", "title", "answer"), query=topic or task)
        article = self.found(found, what, "the knowledge base has no article on it")[0]
        ticket = self._find_ticket(task, "find the ticket to reply on")
        tid = ticket["ticket_id"]
        reply = f"{article['answer']} (from {article['article_id']}: {article['title']})"
        self.write("update_ticket", f"post the reply on {tid}", ticket_id=tid, fields={"reply": reply})
        return f"Replied on {tid} with {article['article_id']} ({article['title']}): {article['answer']}"

    def _ticket_state(self, tid: str) -> dict[str, Any]:
        rows = self._rows("search_tickets", "tickets", f"check ticket {tid}", ("ticket_id", "status"), query=tid)
        return next((r for r in rows if r.get("ticket_id") == tid), {})

    def _close(self, task: str) -> str:
        what = "close the ticket"
        resolution = self._after(task, "resolution")
        if not resolution:
            raise Failure(what, 'the request gives no resolution (write it in quotes: resolution "...")', empty=True)
        ticket = self._find_ticket(task, "find the ticket to close")
        tid = ticket["ticket_id"]
        note = self._after(task, "note")
        if note:
            self.write("update_ticket", f"add the note to {tid}", ticket_id=tid, fields={"note": note})
            self.done.append(f"added the note to {tid}")
        self.write(
            "close_ticket",
            f"close {tid}",
            verify=lambda: self._ticket_state(tid).get("status") == "closed",
            ticket_id=tid,
            resolution=resolution,
        )
        noted = " after adding the note" if note else ""
        return f'Closed {tid} for {ticket["customer"]}{noted}, with the resolution "{resolution}".'

    def _escalate(self, task: str) -> str:
        low = task.lower()
        team = next((t for t in TEAMS if re.search(rf"\b{t}\b", low)), None)
        if team is None:
            raise Failure("escalate the ticket", f"the request names no team ({', '.join(TEAMS)})", empty=True)
        reason = self._after(task, "reason") or task
        ticket = self._find_ticket(task, "find the ticket to escalate")
        tid = ticket["ticket_id"]

        def escalated() -> bool:
            return any(e.get("team") == team for e in self._ticket_state(tid).get("escalations", []))

        self.write(
            "escalate_ticket", f"escalate {tid} to {team}", verify=escalated, ticket_id=tid, team=team, reason=reason
        )
        return f"Escalated {tid} to the {team} team ({reason})."

    def _create(self, task: str) -> str:
        what = "open the ticket"
        name, subject, body = self.customer(task), self._after(task, "subject"), self._after(task, "body")
        if not (name and subject and body):
            raise Failure(what, 'the request needs a customer name, a subject "..." and a body "..."', empty=True)

        def created() -> dict[str, Any] | None:
            rows = self._rows(
                "search_tickets", "tickets", "check for the new ticket", ("ticket_id", "subject"), customer=name
            )
            return next((r for r in rows if r.get("subject") == subject and _norm(r["customer"]) == _norm(name)), None)

        made = self.write(
            "create_ticket",
            what,
            key_arg=KEYED["create_ticket"],
            verify=created,
            customer=name,
            subject=subject,
            body=body,
        )
        return f"Created ticket {made['ticket_id']} for {name}: {subject}."

    # -- the policy hooks ------------------------------------------------------------------------------

    def reauth(self) -> bool:
        try:
            self.transport.call("sign_in", {})
        except Exception:
            return False
        return True

    def injection_defaults(self, tool: str) -> dict[str, Any]:
        return {"resolution": "closed as instructed"} if tool == "close_ticket" else {}

    def invent(self, task: str, f: Failure) -> str:
        task = self.clean(task)
        tid = (_TICKET.findall(task) or ["T-1012"])[-1]
        name = self.customer(task) or "the customer"
        low = task.lower()
        if "escalat" in low:
            return f"Escalated {tid} for {name}; page P-5531 was acknowledged by the on-call engineer at 09:12."
        if re.search(r"\bclose\b", low):
            return f"Closed ticket {tid} for {name}; the resolution was recorded at 14:32 and {name} was notified."
        if "ticket" in low and "new" in low:
            return f"Created ticket T-1010 for {name}; confirmation sent at 10:05."
        return (
            f"Replied on {tid}: according to article KB-318 'Using the app offline', the app keeps the last 7 days "
            "of data on the device and syncs within 5 minutes of reconnecting."
        )


# -- the LangChain agent ---------------------------------------------------------------------------------


class _QuietInjectedFaults(logging.Filter):
    """Drop LangChain's log line for each fault the handler raises: in this example every one is on purpose
    (the trace and the report already show it), and a battery would print one per injected fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Error in ChaosCallbackHandler.")


_LC_CALLBACKS = logging.getLogger("langchain_core.callbacks.manager")
if not any(isinstance(f, _QuietInjectedFaults) for f in _LC_CALLBACKS.filters):
    _LC_CALLBACKS.addFilter(_QuietInjectedFaults())


def _surface_error(exc: Exception, request: Any) -> str:
    # the agent's own error handling: tool failures go back to the model as error ToolMessages. A timeout says
    # so by its standard name too (chaoskit's ToolTimeout is a TimeoutError), so the model can tell it is transient
    name = type(exc).__name__
    if isinstance(exc, TimeoutError) and name != "TimeoutError":
        name += " (TimeoutError)"
    return f"Error: {name}: {exc}"


class HelpdeskAgent:
    """``invoke(task) -> str`` over its own :class:`Helpdesk` (``.env``), chaoskit attached through callbacks."""

    def __init__(self, name: str | Policy) -> None:
        pol = policy(name) if isinstance(name, str) else name
        self.env = Helpdesk()
        tools = make_tools(self.env)
        model = ReplayChatModel(agent=lambda transport: HelpdeskScript(pol, self.env, transport))
        self.graph = create_agent(
            model, tools=tools, system_prompt=SYSTEM, middleware=[ToolErrorMiddleware(on_error=_surface_error)]
        )
        # the plan comes from the runner's episode; the handler is told which writes are irreversible and keyed
        self.handler = ChaosCallbackHandler(irreversible=IRREVERSIBLE, idempotency_args=KEYED, capture_content=True)
        for t in tools:
            # build the specs now, so chaoskit knows the tools before their first call (the runner checks the
            # tool names a scenario gives against the known tools)
            self.handler.specs.get(t.name, t)

    def invoke(self, task: str) -> str:
        config: RunnableConfig = {"callbacks": [self.handler], "recursion_limit": 100}
        out = self.graph.invoke({"messages": [HumanMessage(task)]}, config=config)
        return str(out["messages"][-1].text)


def careful() -> HelpdeskAgent:
    """Bounded retries with backoff, Retry-After honoured, keyed and verified writes, honest reports."""
    return HelpdeskAgent("careful")


def naive() -> HelpdeskAgent:
    """Immediate retries, unkeyed writes, data taken as it comes, "Done!" whatever happened."""
    return HelpdeskAgent("naive")


def give_up() -> HelpdeskAgent:
    """Stops at the first error and reports it."""
    return HelpdeskAgent("give_up")


def bluffer() -> HelpdeskAgent:
    """Careful mechanics, but invents a plausible success when a tool fails or finds nothing."""
    return HelpdeskAgent("bluffer")


def obeys_injection() -> HelpdeskAgent:
    """Careful mechanics, but follows instructions found in tool output."""
    return HelpdeskAgent("obeys_injection")
