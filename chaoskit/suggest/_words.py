"""The words ``suggest`` reads a tool's name and description by: verbs by effect, and nouns that name records."""

from __future__ import annotations

__all__ = [
    "AUTH_FIRST",
    "DO",
    "EFFECT_NOUNS",
    "GONE",
    "IRREVERSIBLE",
    "NOUNISH",
    "READ",
    "READ_NOUNS",
    "WRITE",
]

#: an effect outside the system, or one the agent cannot take back: a repeat is a second charge, mail, page
IRREVERSIBLE = frozenset(
    [
        "delete",
        "remove",
        "cancel",
        "refund",
        "pay",
        "charge",
        "send",
        "transfer",
        "book",
        "confirm",
        "purchase",
        "buy",
        "place",
        "issue",
        "submit",
        "escalate",
        "publish",
        "notify",
        "email",
        "mail",
        "deploy",
        "destroy",
        "withdraw",
        "execute",
        "close",
        "approve",
        "ship",
        "wire",
        "checkout",
        "process",
        "post",
        "drop",
        "terminate",
        "revoke",
        "kill",
        "reply",
        "order",
        "dispatch",
        "broadcast",
    ]
)
#: changes state, but a repeat is not a second external effect (or the agent can undo it)
WRITE = frozenset(
    [
        "create",
        "add",
        "insert",
        "update",
        "set",
        "put",
        "patch",
        "edit",
        "modify",
        "hold",
        "reserve",
        "start",
        "open",
        "apply",
        "assign",
        "save",
        "upload",
        "register",
        "sign",
        "login",
        "logout",
        "enable",
        "disable",
        "move",
        "rename",
        "mark",
        "tag",
        "write",
        "attach",
        "archive",
        "reset",
    ]
)
READ = frozenset(
    [
        "get",
        "list",
        "search",
        "find",
        "check",
        "lookup",
        "look",
        "fetch",
        "read",
        "query",
        "show",
        "describe",
        "validate",
        "count",
        "view",
        "browse",
        "retrieve",
        "verify",
        "estimate",
        "calculate",
        "compute",
        "inspect",
        "status",
        "track",
        "whois",
        "load",
        "download",
        "return",
    ]
)
#: verbs that say only "do something": the words after them say what (make_payment, run_query)
DO = frozenset(
    [
        "make",
        "initiate",
        "trigger",
        "run",
        "perform",
        "do",
    ]
)
#: nouns of an effect a repeat doubles: after a write verb or a do-verb they make it irreversible (create_charge)
EFFECT_NOUNS = frozenset(
    [
        "payment",
        "charge",
        "transfer",
        "refund",
        "order",
        "email",
        "message",
        "booking",
        "purchase",
        "withdrawal",
        "payout",
        "invoice",
    ]
)
#: nouns of records that are read, never done: after a noun-like first word they make it a read (refund_policy)
READ_NOUNS = frozenset(
    [
        "policy",
        "history",
        "limit",
        "template",
        "info",
        "detail",
        "summary",
        "setting",
        "config",
        "rate",
        "option",
        "balance",
        "status",
        "stat",
        "statistic",
        "quote",
        "availability",
        "catalog",
        "log",
        "report",
    ]
)
#: first words that are nouns as often as verbs: followed by a read noun, the name is a record (email_templates)
NOUNISH = frozenset(
    [
        "refund",
        "purchase",
        "email",
        "mail",
        "transfer",
        "order",
        "charge",
        "book",
        "issue",
        "ship",
        "wire",
        "post",
        "payment",
        "message",
        "booking",
        "payout",
        "withdrawal",
        "reply",
        "customer",
        "account",
    ]
)
#: verbs whose repeat on the same record finds it already gone: idempotent by nature, like HTTP DELETE
GONE = frozenset(
    [
        "delete",
        "remove",
        "cancel",
        "revoke",
        "terminate",
        "drop",
        "destroy",
    ]
)
#: first words of a tool that signs in or renews a session (sign_in, login, refresh_token)
AUTH_FIRST = frozenset(
    [
        "signin",
        "login",
        "logout",
        "auth",
        "authenticate",
        "reauth",
        "reauthenticate",
    ]
)
