"""Classifying a tool (read, write, irreversible write; idempotency key; collection; structured), each with why.

Explicit marks come first (``@chaos(irreversible=True)``, an entry point's lists, OpenAPI ``x-chaoskit-*``),
then the HTTP method, then the words of the name and the description, then the parameter and result schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chaoskit.suggest._tool_info import Classification, Decision, ToolInfo
from chaoskit.suggest._words import (
    AUTH_FIRST,
    DO,
    EFFECT_NOUNS,
    GONE,
    IRREVERSIBLE,
    NOUNISH,
    READ,
    READ_NOUNS,
    WRITE,
)

__all__ = ["IDEMPOTENCY_PARAMS", "classify", "is_auth", "is_key_param", "words"]

_COLLECTION_VERBS = frozenset({"list", "search", "query", "browse"})
# verbs that find one record or many: the noun after them says which (find_customer, find_customers)
_FIND = frozenset({"find", "get", "fetch", "lookup", "retrieve"})
#: parameter names that carry an idempotency key, normalised (lower case, no ``_`` / ``-``)
IDEMPOTENCY_PARAMS = frozenset(
    {
        "idempotencykey",
        "idemkey",
        "dedupkey",
        "dedupekey",
        "deduplicationid",
        "clientrequestid",
        "clienttoken",
        "requestid",
        "idempotencytoken",
    }
)
_METHOD_KIND = {
    "GET": "read",
    "HEAD": "read",
    "OPTIONS": "read",
    "POST": "irreversible",
    "PATCH": "irreversible",
    "PUT": "irreversible",
    "DELETE": "irreversible",
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_KEY_TEXT = re.compile(r"idempotency[\s_-]?key", re.I)
# "does not honour an Idempotency-Key", "no idempotency key", "without an idempotency key"
_DENIED = re.compile(r"\b(not|no|never|without|cannot|n't|nor)\b|n't\b", re.I)


def _honours_key(text: str) -> bool:
    """Whether a description says the tool honours an idempotency key (and does not say it does not)."""
    m = _KEY_TEXT.search(text)
    return m is not None and not _DENIED.search(text[max(0, m.start() - 40) : m.start()])


def is_key_param(param: str, tool: str = "") -> bool:
    """Whether a parameter carries an idempotency key: ``idempotency_key``, ``X-Idempotency-Key``,
    ``request_id``; but not the ``request_id`` of a tool that works on requests (``approve_request``)."""
    norm = param.lower().replace("_", "").replace("-", "")
    if norm.startswith("x") and norm[1:] in IDEMPOTENCY_PARAMS:
        norm = norm[1:]
    if norm == "requestid" and "request" in words(tool):
        return False  # the id of the request the tool approves, not a key
    return norm in IDEMPOTENCY_PARAMS


_SEQUENCE = re.compile(r"^(list|List|Sequence|tuple|Tuple|set|Set|frozenset|Iterable|Collection)\b")
_SCALAR = re.compile(r"^(str|int|float|bool|None|bytes|Decimal)$")


def words(text: str | None) -> list[str]:
    """Lower-case words of a name or sentence: ``issueRefund`` / ``issue_refund`` / ``POST /refunds``."""
    return [w.lower() for w in _SPLIT.split(_CAMEL.sub(" ", text or "")) if w]


def is_auth(t: ToolInfo) -> bool:
    """Whether the tool signs in or renews a session (``sign_in``, ``login``, ``refresh_token``), by its first
    words only: ``get_session`` and ``session_summary`` read a session, they do not open one."""
    ws = words(t.name)
    if not ws:
        return False
    first, rest = ws[0], ws[1:3]
    return (
        first in AUTH_FIRST
        or (first == "sign" and bool(rest) and rest[0] in ("in", "on"))
        or (first in ("refresh", "renew") and bool({"token", "session", "auth", "credentials"} & set(rest)))
        or (first in ("new", "start", "create", "open") and rest[:1] == ["session"])
    )


def _where(t: ToolInfo) -> str:
    """Who declared the mark, in the words the user wrote it."""
    if t.source.startswith("openapi:"):
        return "in the OpenAPI file (x-chaoskit-irreversible)"
    if t.source.startswith("mcp:"):
        return "by the MCP server (destructiveHint: true)"
    marks = [x.removeprefix("marks:") for x in t.sources if x.startswith("marks:")]
    if marks:
        return f"by {marks[0]}(irreversible=[...])"
    if "chaos_tool" in t.source:
        return "on its chaos tool (chaos_tool / chaos_tools / instrument_graph, irreversible=...)"
    return "with @chaos(irreversible=True)"


def _stem(w: str) -> str:
    """``issues`` -> ``issue``, ``processes`` -> ``process``, ``policies`` -> ``policy``, when the stem is a word."""
    known = READ | WRITE | IRREVERSIBLE | DO | EFFECT_NOUNS | READ_NOUNS | NOUNISH
    for cut, add in (("ies", "y"), ("es", ""), ("s", "")):
        if w.endswith(cut) and w[: -len(cut)] + add in known:
            return w[: -len(cut)] + add
    return w


def _first(ws: list[str]) -> tuple[str, str] | None:
    """(kind, word) from a name's or sentence's first word when it is a verb; the words after it only say
    what a noun-like or do-verb first word means (refund_policy reads, create_charge charges, make_payment pays)."""
    first, rest = ws[0], ws[1:]
    readish = next((w for w in rest if w in READ or w in READ_NOUNS), None)
    if first in NOUNISH and readish is not None:
        return "read", f"{first} {readish}"
    if first in READ:
        return "read", first
    effect = next((w for w in rest if w in EFFECT_NOUNS or w in IRREVERSIBLE), None)
    if first in IRREVERSIBLE:
        return "irreversible", first
    if first in WRITE:
        return ("irreversible", f"{first} {effect}") if effect else ("write", first)
    if first in DO:
        if effect:
            return "irreversible", f"{first} {effect}"
        return ("read", f"{first} {readish}") if readish else ("write", first)
    if readish is not None:
        return "read", readish  # order_status, customer_history: a record, whatever comes before it
    return None


def _verb(t: ToolInfo) -> tuple[str, str, str, bool] | None:
    """(kind, words, where, strong): the name's first word when it is a verb (``issue_refund``), else the
    description's first word, else, as weak evidence, an effect word anywhere in the name."""
    name = [_stem(w) for w in words(t.name)] if not t.http or t.name != t.http else []
    desc = [_stem(w) for w in words(t.description)][:6]
    for where, ws in (("name", name), ("description", desc)):
        found = _first(ws) if ws else None
        if found is not None:
            return found[0], found[1], where, True
    for kind, verbs in (("irreversible", IRREVERSIBLE | EFFECT_NOUNS), ("write", WRITE)):
        hit = next((w for w in name[1:] if w in verbs), None)
        if hit is not None:
            return kind, hit, "name", False
    return None


def _kind(t: ToolInfo) -> Decision:
    if t.irreversible:
        return Decision("irreversible", f"declared irreversible {_where(t)}", "declared")
    if t.idempotent:
        return Decision("write", "declared idempotent: a write whose repeats change nothing", "declared")
    if t.irreversible is False:
        how = "readOnlyHint: true" if t.source.startswith("mcp:") else "x-chaoskit-irreversible: false"
        return Decision("read", f"declared a read ({how})", "declared")
    if t.http:
        method = t.http.split(" ", 1)[0]
        kind = _METHOD_KIND.get(method, "read")
        why = {
            "read": f"HTTP {method} only reads",
            "irreversible": f"HTTP {method} writes (as the HTTP proxy reads it)",
        }
        read = _first(words(t.name) if t.name != t.http else []) if kind == "irreversible" else None
        if read is not None and read[0] == "read":
            # a POST /search: the proxy marks it a write, but the name says it reads; say how to tell chaoskit
            return Decision(
                kind,
                f"{why[kind]}; its name says {read[1]!r}, so if it only reads, mark it x-chaoskit-irreversible: false",
                "method-read",
            )
        return Decision(kind, why[kind], "method")
    if is_auth(t):
        return Decision("write", "it signs in: a new session, which a repeat does not double", "name")
    found = _verb(t)
    if found is None:
        return Decision(
            "read",
            "no mark, and no write verb in its name or description: taken as a read (mark it if it writes)",
            "default",
        )
    kind, verb, where, strong = found
    whys = {
        "read": f"its {where} says {verb!r}, a read",
        "write": f"its {where} says {verb!r}, a write that a repeat does not double (not marked irreversible)",
        "irreversible": f"its {where} says {verb!r}, an effect a repeat would double (not marked: mark it)",
    }
    weak = "" if strong else " (a word after the first, so weak evidence: mark the tool to be sure)"
    return Decision(kind, whys[kind] + weak, where)


def _idempotency(t: ToolInfo, kind: str) -> Decision:
    if t.idempotency_arg:
        return Decision(t.idempotency_arg, f"declared idempotency argument {t.idempotency_arg!r}", "declared")
    for p in t.params:
        if is_key_param(p.name, t.name):
            where = f"{p.location} parameter" if p.location else "parameter"
            return Decision(p.name, f"its {where} {p.name!r} carries an idempotency key", "schema")
    if t.idempotent:
        return Decision(None, "declared idempotent: a repeat changes nothing, so it needs no key", "declared")
    if t.http and t.http.split(" ", 1)[0] in ("PUT", "DELETE"):
        return Decision(None, f"HTTP {t.http.split(' ', 1)[0]} is idempotent by definition; it needs no key", "method")
    if t.description and _honours_key(t.description):
        return Decision("Idempotency-Key", "its description says it honours an idempotency key", "description")
    if kind == "read":
        return Decision(None, "a read needs no idempotency key", "kind")
    first = _stem(words(t.name)[0]) if words(t.name) and not t.http else None
    if first in GONE:
        return Decision(
            None, f"its name says {first!r}: a repeat finds the record already gone, so it needs no key", "name"
        )
    return Decision(None, "no parameter carries an idempotency key (idempotency_key, request_id, ...)", "schema")


def _schema_collection(schema: Mapping[str, Any]) -> tuple[bool, str] | None:
    if schema.get("type") == "array":
        if int(schema.get("minItems") or 0) >= 1:
            return False, "its result schema is an array with minItems >= 1, never empty"
        return True, "its result schema is an array, which can be empty"
    props = schema.get("properties")
    for name, prop in (props or {}).items():
        if isinstance(prop, Mapping) and prop.get("type") == "array" and not int(prop.get("minItems") or 0):
            return True, f"its result schema holds the array {name!r}, which can be empty"
    if props:
        return False, "its result schema is one record (an object without arrays)"
    return None


def _collection(t: ToolInfo, kind: str) -> Decision:
    # GET /nodes/{id} names one record; GET /customers/{id}/invoices names a customer's list
    by_path = t.http is not None and t.http.rstrip("/").rsplit("/", 1)[-1].startswith("{")
    if by_path and isinstance(t.result, Mapping) and (t.result.get("type") == "object" or "properties" in t.result):
        # its arrays are fields of the record, and emptying them says "an order with no items", not "not found"
        return Decision(
            False, "it looks one record up by its path's last parameter (its arrays are its fields)", "schema"
        )
    if isinstance(t.result, Mapping):
        got = _schema_collection(t.result)
        if got is not None:
            return Decision(got[0], got[1], "schema")
    elif isinstance(t.result, str) and _SEQUENCE.match(t.result):
        return Decision(True, f"it returns {t.result}, which can be empty", "schema")
    if kind != "read":
        return Decision(False, "a write: its result is a confirmation, not a lookup", "kind")
    name = words(t.name)
    verb = next((w for w in name if w in _COLLECTION_VERBS), None)
    if verb is not None:
        return Decision(True, f"its name says {verb!r}: a lookup that can find nothing", "name")
    plural = next((w for w in name[1:] if len(w) > 3 and w.endswith("s") and not w.endswith("ss")), None)
    if name and name[0] in _FIND and plural is not None:
        return Decision(True, f"its name says {name[0]!r} {plural!r}: a lookup of many that can find none", "name")
    desc = set(words(t.description))
    hit = sorted(desc & {"list", "lists", "search", "searches", "results", "every", "all", "matching"})
    if hit:
        return Decision(True, f"its description says {hit[0]!r}: a lookup that can find nothing", "description")
    return Decision(False, "nothing says it returns a collection (a single record or value)", "default")


def _structured(t: ToolInfo) -> Decision:
    r = t.result
    if isinstance(r, Mapping):
        kind = r.get("type")
        if kind == "object" or "properties" in r:
            return Decision(True, "its result schema is an object with fields", "schema")
        items = r.get("items")
        if kind == "array" and isinstance(items, Mapping) and items.get("type") == "object":
            return Decision(True, "its result schema is an array of objects", "schema")
        return Decision(False, f"its result schema is a {kind or 'value'} without fields", "schema")
    if isinstance(r, str) and r:
        if _SCALAR.match(r.replace("Optional[", "").rstrip("]").split("|")[0].strip()):
            return Decision(False, f"it returns {r}, a single value", "schema")
        return Decision(True, f"it returns {r}, a record whose fields can be cut or renamed", "schema")
    return Decision(False, "its result type is not declared, so its shape is unknown", "default")


def classify(t: ToolInfo) -> Classification:
    """How ``suggest`` treats ``t``, each answer with the reason for it."""
    kind = _kind(t)
    return Classification(
        tool=t,
        kind=kind,
        idempotency=_idempotency(t, kind.value),
        collection=_collection(t, kind.value),
        structured=_structured(t),
    )
