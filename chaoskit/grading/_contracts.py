"""Tool-contract findings: what in a tool itself (not in the agent) stands in the way of safe recovery.

A finding names the tool, the evidence (a schema field, or a span and its attempt), why it matters and the usual
fix. This module reads traces; the declaration side (schemas, marks) is ``chaoskit.suggest._findings``. Only the
tool's *own* errors count: an error chaoskit injected says nothing about the tool, so it is never evidence here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

from chaoskit.traces._records import AttemptRecord

__all__ = ["CONTRACT_KINDS", "ContractFinding", "dedupe", "owner", "states_wait", "trace_findings", "uninformative"]

#: kind -> (why it matters, the usual fix)
CONTRACT_KINDS: dict[str, tuple[str, str]] = {
    "no_idempotency_key": (
        "an irreversible write without an idempotency key cannot be retried safely by any agent: after a timeout "
        "or a 5xx it cannot tell 'not done' from 'done, answer lost', so a retry may charge, send or book twice",
        "accept an idempotency key (an idempotency_key argument or an Idempotency-Key header: the same key returns "
        "the first answer and writes nothing) and declare it (@chaos(idempotency_arg=...))",
    ),
    "uninformative_error": (
        "an error that carries no information (empty, a bare 'Error', a status code alone) leaves the agent "
        "unable to tell a transient failure from a bad request, so it can only guess whether to retry",
        "say what failed and whether to retry: the object and id, the reason, and for transient errors "
        "that a retry may help (e.g. 'order 42 not found', 'payment service unavailable, retry in 2 s')",
    ),
    "rate_limit_without_retry_after": (
        "a rate-limit error (429) that does not expose Retry-After leaves the agent to guess how long to wait: "
        "too short and it is throttled again, too long and the task stalls",
        "pass the Retry-After header (or a retry_after field) through to the agent with the 429",
    ),
    "cannot_say_not_found": (
        "a lookup whose result schema cannot express 'nothing found' or 'unknown' forces the tool to fail "
        "vaguely or return a placeholder that the agent may take as real data",
        "document a 404 (or a nullable / empty result) for a lookup that can miss",
    ),
    "unverifiable_write": (
        "after an ambiguous failure (a timeout, a 5xx) the agent can only learn whether a write happened by "
        "reading it back; with no read over the same records it must guess, and either repeat or drop the write",
        "offer a read of what the write changes (get or list by the same id or owner)",
    ),
}


# a kind this chaoskit does not know (a results file from a newer one): reported, never a crash
_UNKNOWN = ("(a finding kind this chaoskit version does not know)", "(see the chaoskit version that wrote it)")


@dataclass(frozen=True)
class ContractFinding:
    """One tool-contract finding: ``fix in the tool``, reported apart from the agent's verdicts."""

    tool: str
    kind: str
    evidence: str
    #: ``declaration`` (schema, marks) or ``trace`` (a span of a run)
    origin: str
    span_id: str | None = None
    episode: str | None = None
    #: the agents (``module:factory`` refs or commands) whose tools show it: a readiness row gets a finding only
    #: for its own agent, since two agents' tools of one name may be different tools; empty when not known
    agents: tuple[str, ...] = ()

    @property
    def why(self) -> str:
        """Why it matters."""
        return CONTRACT_KINDS.get(self.kind, _UNKNOWN)[0]

    @property
    def fix(self) -> str:
        """The usual fix."""
        return CONTRACT_KINDS.get(self.kind, _UNKNOWN)[1]

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready dict, with its why and fix."""
        return {**asdict(self), "agents": list(self.agents), "why": self.why, "fix": self.fix}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContractFinding:
        """The finding from :meth:`to_dict`'s form."""
        return cls(
            tool=str(data["tool"]),
            kind=str(data["kind"]),
            evidence=str(data.get("evidence") or ""),
            origin=str(data.get("origin") or "trace"),
            span_id=data.get("span_id"),
            episode=data.get("episode"),
            agents=tuple(str(a) for a in data.get("agents") or () if isinstance(a, str)),
        )


# words that say nothing about *what* failed: error words, HTTP reason phrases, filler
_GENERIC = frozenset(
    [
        "error",
        "errors",
        "err",
        "failed",
        "failure",
        "fail",
        "fails",
        "exception",
        "exc",
        "internal",
        "server",
        "unknown",
        "something",
        "went",
        "wrong",
        "an",
        "a",
        "the",
        "occurred",
        "has",
        "have",
        "oops",
        "unexpected",
        "unexpectedly",
        "http",
        "https",
        "status",
        "code",
        "request",
        "bad",
        "not",
        "found",
        "service",
        "unavailable",
        "gateway",
        "timeout",
        "forbidden",
        "unauthorized",
        "conflict",
        "too",
        "many",
        "requests",
        "method",
        "allowed",
        "unprocessable",
        "entity",
        "ok",
        "no",
        "content",
        "invalid",
        "none",
        "null",
        "nil",
        "undefined",
        "nan",
        "object",
        "please",
        "try",
        "again",
        "later",
        "sorry",
        "problem",
        "issue",
        "unable",
        "to",
        "of",
        "with",
        "returned",
        "response",
        "runtime",
        "value",
        "type",
        "key",
        "lookup",
        "tool",
        "call",
    ]
)
# letters of any script ("Заказ не найден", "注文 42 が見つかりません" say what failed), or digits; not "_"
_WORD = re.compile(r"[^\W\d_]+|\d+")
_PREFIX = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Failure|Fault)\s*:\s*")
# words of exception class names that say nothing of what failed (RuntimeError, ValueError, ToolHTTPError)
_GENERIC_CLASS = _GENERIC | {"runtime", "os", "io", "base", "assertion", "attribute", "index", "name", "system"}
# a 429 whose message states the wait ("retry after 30 seconds", "Retry-After: 30", "try again in 2 s")
_STATED_WAIT = re.compile(
    r"retry[\s_-]*after\W{0,3}\d|(?:retry|try\s+again|wait)\b[^.\d]{0,20}\d+(?:\.\d+)?\s*"
    r"(?:ms|s\b|sec|second|minute|min\b)",
    re.I,
)


def _split(text: str) -> list[str]:
    return _WORD.findall(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text))


def uninformative(message: str | None, error_type: str | None = None) -> bool:
    """Whether an error message says nothing about what failed: empty, a bare "Error", a status code or an
    HTTP reason phrase alone, or only a generic exception's class name. "order 42 not found" is informative, in
    any script, and so is a domain exception's message that repeats its name (``CardDeclinedError('Card
    declined')``): the name is what failed. Single letters are not information (``E_UNKNOWN``)."""
    text = _PREFIX.sub("", message or "")
    own = {w.lower() for w in _split(error_type or "")}
    ignored = _GENERIC | own if own <= _GENERIC_CLASS else _GENERIC
    left = [w for w in _WORD.findall(text) if not w.isdigit() and len(w) > 1 and w.lower() not in ignored]
    return not left


def states_wait(message: str | None) -> bool:
    """Whether an error message tells the caller how long to wait ("retry after 30 seconds")."""
    return bool(_STATED_WAIT.search(message or ""))


def _injected(a: AttemptRecord) -> bool:
    return a.injected or a.fault_type is not None


def trace_findings(attempts: Iterable[AttemptRecord], episode: str | None = None) -> list[ContractFinding]:
    """Findings from a run's attempts: each tool's own errors that carry no information, and its own 429s without
    Retry-After. One finding per (tool, kind) per call, the first attempt that shows it."""
    out: list[ContractFinding] = []
    seen: set[tuple[str, str]] = set()
    for a in attempts:
        if a.outcome != "error" or _injected(a):
            continue
        if a.http_status == 429 and (a.observed_retry_after is not None or states_wait(a.error_message)):
            continue  # the wait reaches the agent, in the header or in the words it reads
        if a.http_status == 429 and (a.tool, "rl") not in seen:
            seen.add((a.tool, "rl"))
            out.append(
                ContractFinding(
                    a.tool,
                    "rate_limit_without_retry_after",
                    f"span {a.span_id} (attempt {a.attempt}): HTTP 429 with no Retry-After "
                    f"({a.error_type}: {a.error_message!r})",
                    "trace",
                    a.span_id,
                    episode,
                )
            )
        elif uninformative(a.error_message, a.error_type) and (a.tool, "msg") not in seen:
            seen.add((a.tool, "msg"))
            shown = "(empty)" if not (a.error_message or "").strip() else repr(a.error_message)
            kind = f"{a.error_type} " if a.error_type else ""
            out.append(
                ContractFinding(
                    a.tool,
                    "uninformative_error",
                    f"span {a.span_id} (attempt {a.attempt}): the tool's own error {kind}{shown}",
                    "trace",
                    a.span_id,
                    episode,
                )
            )
    return out


def owner(agent: str) -> str:
    """Whose tools an agent uses: the module of a ``module:factory`` ref (its factories share its tools), else
    the whole command line. Two owners' tools of one name are two tools."""
    module, colon, factory = agent.partition(":")
    return module if colon and factory and " " not in agent.strip() else agent


def dedupe(findings: Iterable[ContractFinding]) -> list[ContractFinding]:
    """One finding per (tool, kind, owner of its agents), the first seen, with the agents of every copy: many
    episodes and agents showing one tool's flaw are one flaw, but a tool of the same name in another agent's
    module is another tool. Findings that name no agent (older results files) are one per (tool, kind)."""
    out: dict[tuple[str, str, str], ContractFinding] = {}
    for f in findings:
        for who in sorted({owner(a) for a in f.agents}) or [""]:
            mine = tuple(a for a in f.agents if owner(a) == who) if who else ()
            key = (f.tool, f.kind, who)
            old = out.get(key)
            if old is None:
                out[key] = replace(f, agents=mine)
            else:
                out[key] = replace(old, agents=tuple(dict.fromkeys(old.agents + mine)))
    return list(out.values())
