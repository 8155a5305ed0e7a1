"""Tool-contract findings from declarations: missing keys, lookups that cannot miss, writes that cannot be read back."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from chaoskit.grading._contracts import ContractFinding
from chaoskit.suggest._classify import is_auth, is_key_param, words
from chaoskit.suggest._tool_info import Classification
from chaoskit.suggest._words import DO, EFFECT_NOUNS, IRREVERSIBLE, READ, WRITE

__all__ = ["declared_findings"]

# words of a tool name that are verbs or filler, never the resource it works on; the nouns of an effect
# (a refund, an order, a charge) name the records a read lists, so they stay
_NOT_NOUNS = (
    READ | WRITE | IRREVERSIBLE | DO | frozenset({"by", "all", "new", "my", "the", "a", "for", "to", "of"})
) - (EFFECT_NOUNS | {"booking"})
# identifier arguments that name the resource a write changes (``order_id``, ``customer``, ``passenger``)
_GENERIC_PARAMS = frozenset(
    [
        "token",
        "idempotency_key",
        "key",
        "reason",
        "body",
        "text",
        "query",
        "fields",
        "limit",
        "amount",
        "currency",
        "quantity",
        "qty",
        "page",
        "page_size",
        "offset",
        "cursor",
        "note",
        "notes",
        "description",
        "memo",
        "metadata",
        "comment",
        "message",
        "subject",
        "dry_run",
    ]
)
_PARAM = re.compile(r"\{[^}]*\}")
_VERSION = re.compile(r"^v\d+$")


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _nouns(c: Classification) -> set[str]:
    ws = [_stem(w) for w in words(c.name)]
    if c.tool.http:
        # the path's own words, without its parameters ({id}) and the segments every path shares (/v1, /api)
        path = _PARAM.sub("", c.tool.http.split(" ", 1)[-1])
        ws += [_stem(w) for w in words(path) if not _VERSION.match(w) and w not in ("api", "rest")]
    # a write's own verb names its resource too: a refund is verified by a read that lists refunds
    return {w for w in ws if w not in _NOT_NOUNS} - {"", "id", "ids"}


def _ids(c: Classification) -> set[str]:
    return {
        p.name.lower()
        for p in c.tool.params
        if p.required and p.name.lower() not in _GENERIC_PARAMS and not is_key_param(p.name, c.name)
    }


def _no_key(c: Classification) -> ContractFinding | None:
    if c.kind.value != "irreversible" or c.idempotency.value is not None or c.tool.idempotent:
        return None
    if c.idempotency.basis in ("method", "name") or c.kind.basis == "method-read":
        # PUT / DELETE (and a delete or cancel by name) are idempotent by definition; a POST /search only reads
        return None
    params = ", ".join(p.name for p in c.tool.params) or "none"
    return ContractFinding(
        c.name,
        "no_idempotency_key",
        f"irreversible ({c.kind.why}); parameters: {params}; none carries an idempotency key",
        "declaration",
    )


def _nullable(schema: Mapping[str, Any]) -> bool:
    """OpenAPI 3.0's ``nullable: true``, 3.1's ``type: [object, "null"]``, or a ``oneOf`` / ``anyOf`` with null."""
    kind = schema.get("type")
    if schema.get("nullable") is True or kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    alts = [*(schema.get("oneOf") or ()), *(schema.get("anyOf") or ())]
    return any(isinstance(a, Mapping) and _nullable(a) for a in alts)


def _not_found(c: Classification) -> ContractFinding | None:
    """An HTTP lookup by id (a path parameter) that documents no 404 and whose result can be neither null nor empty."""
    t = c.tool
    if c.kind.value != "read" or not t.http or not t.statuses or c.collection.value:
        return None
    if not any(p.location == "path" for p in t.params):
        return None
    if any(s in ("404", "4XX", "default") for s in t.statuses):
        return None
    if isinstance(t.result, Mapping) and _nullable(t.result):
        return None
    return ContractFinding(
        c.name,
        "cannot_say_not_found",
        f"{t.http} looks a record up by a path parameter and documents only the responses {', '.join(t.statuses)}: "
        "no 404, and a result that is neither nullable nor a list",
        "declaration",
    )


def _unverifiable(c: Classification, reads: Sequence[Classification]) -> ContractFinding | None:
    if c.kind.value == "read" or c.tool.idempotent or is_auth(c.tool):
        return None  # a sign-in has no effect to read back: a new session is the whole answer
    nouns, ids = _nouns(c), _ids(c)
    for r in reads:
        if nouns & (_nouns(r) | {_stem(w) for w in words(r.tool.description)}) or ids & {
            p.name.lower() for p in r.tool.params
        }:
            return None
    names = ", ".join(r.name for r in reads) or "no read at all"
    return ContractFinding(
        c.name,
        "unverifiable_write",
        f"{'an irreversible write' if c.kind.value == 'irreversible' else 'a write'} of "
        f"{', '.join(sorted(nouns)) or 'unnamed records'}; the reads ({names}) share neither "
        f"a resource word nor an identifier argument ({', '.join(sorted(ids)) or 'none'}) with it",
        "declaration",
    )


def declared_findings(classes: Sequence[Classification]) -> list[ContractFinding]:
    """The findings the declarations alone support, in tool order. Each rule fires only on what the schema says:
    a tool that takes an ``idempotency_key`` gives no key finding, a lookup documenting a 404 no not-found one."""
    reads = [c for c in classes if c.kind.value == "read"]
    out: list[ContractFinding] = []
    for c in classes:
        for finding in (_no_key(c), _not_found(c), _unverifiable(c, reads)):
            if finding is not None:
                out.append(finding)
    return out
