"""Values as span attributes: canonical JSON, a stable secret-free args hash, redaction and caps, all bounded.

Describing a value costs at most about the attribute cap (``configure(max_attr_chars=...)``) whatever its
size: a 200,000-row list is described by its first rows and a ``…[+N items]`` marker, as a 10-row one is
described whole. Arguments that do not fit the cap whole are cut: of a list or a mapping at most the first 16
elements are looked at (a mapping's first 16 items in its own insertion order, then sorted by key when encoded;
the rest are counted with ``len()``, never sorted or walked). The hash is taken over the same bounded text, so
it is stable across runs and processes and never sees a secret value (secret-looking keys are redacted first);
two equal mappings too large for the cap but built in different orders may hash differently.

Whether arguments fit the cap whole, as plain JSON data with no secret-looking key, is one walk (:func:`fits`)
that stops as soon as they do not, so that a large argument costs no more than a small one.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib
import json
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

import chaoskit.engine._config as _config

__all__ = [
    "FLAT",
    "MAX_DEPTH",
    "REDACTED",
    "SCALAR",
    "args_hash",
    "canonical_json",
    "cap",
    "describe_args",
    "fits",
    "fits_value",
    "redact",
    "to_attr_json",
    "to_text",
]

REDACTED = "[REDACTED]"
#: a list or mapping with more elements than this is described by its first ones and a count of the rest
_MAX_ITEMS = 16
_INT_BITS = 4000 * 10 // 3


#: how deep a value is looked into
MAX_DEPTH = 8
#: the types of plain JSON scalars
SCALAR = (str, int, float, bool, type(None))
#: the scalar types :func:`fits` counts as 12 characters (their exact types: a subclass may encode otherwise)
FLAT = frozenset({int, float, bool, type(None)})


def fits(args: Mapping[str, Any], budget: int, secret: Callable[[str], bool]) -> int:
    """What is left of ``budget`` after the arguments ``args`` if they are plain JSON data with no
    secret-looking key; -1 as soon as the budget runs out, a key looks secret, or a value is not plain
    data. It stops there, so a large argument costs no more than a small one."""
    # names found clean before are cleared in one C-level test; the rest one by one
    clean = getattr(secret, "clean", None)
    if clean is None or not clean.issuperset(args):
        for k in args:
            if not isinstance(k, str) or secret(k):
                return -1
    # the top level inline: most calls are a few scalar arguments
    for k, v in args.items():
        t = type(v)
        if t is str:
            budget -= len(k) + len(v) + 6
        elif t is int or t is float or t is bool or v is None:
            budget -= len(k) + 12
        else:
            budget = fits_value(v, budget - len(k) - 4, secret)
        if budget < 0:
            return -1
    return budget


def fits_value(value: Any, budget: int, secret: Callable[[str], bool], depth: int = 1) -> int:
    """:func:`fits` for one value at ``depth``: what is left of ``budget`` after it, or -1."""
    # the exact built-in types are tested first and plain elements are counted inline, without a push:
    # ``isinstance(x, Mapping)`` is an ABC check, slow per element
    clean: set[str] = set()  # keys already found not secret in this walk: rows repeat their keys
    known = getattr(secret, "clean", None) or clean  # keys found not secret before, by this checker
    stack = [(value, depth)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        t = type(item)
        if t is list or t is tuple or (t is not dict and isinstance(item, list | tuple)):
            if depth >= MAX_DEPTH:
                return -1
            budget -= 2 + len(item)
            values = item
            if budget >= 0 and item and depth + 1 < MAX_DEPTH and type(item[0]) is dict:
                # rows of a table (the commonest large argument): counted a chunk at a time in C-speed passes,
                # until the budget runs out or a chunk is not plain rows (the rest is walked one by one)
                budget, done = _rows_fit(item, budget, secret, known, clean)
                if budget < 0:
                    return -1
                values = item[done:] if done else item
        elif t is dict or isinstance(item, Mapping):
            if depth >= MAX_DEPTH:
                return -1
            budget -= 2 + 4 * len(item)
            if budget < 0:
                return -1
            if not known.issuperset(item) and not clean.issuperset(item):
                for k in item:
                    if not isinstance(k, str) or secret(k):
                        return -1
                    clean.add(k)
            budget -= sum(map(len, item))
            values = item.values()
            if FLAT.issuperset(map(type, values)):
                # a row of numbers, flags and nulls (the commonest): counted at once, 8 each as below
                budget -= 8 * len(item)
                values = ()
        elif isinstance(item, str):
            budget -= len(item) + 3
            values = ()
        elif isinstance(item, SCALAR):
            budget -= 8
            values = ()
        else:
            return -1
        if budget < 0:
            return -1
        for v in values:
            tv = type(v)
            if tv is str:
                budget -= len(v) + 3
            elif tv is int or tv is float or tv is bool or v is None:
                budget -= 8
            else:
                push((v, depth + 1))
        if budget < 0:
            return -1
    return budget


_ROWS = {dict}
_FLAT_OR_STR = FLAT | {str}
_CHUNK = 16


def _rows_fit(
    rows: list[Any] | tuple[Any, ...], budget: int, secret: Callable[[str], bool], known: set[str], clean: set[str]
) -> tuple[int, int]:
    """``(budget left, rows counted)`` after the leading chunks of ``rows`` that are plain dicts; -1 as soon as
    the budget runs out or a key is not a string or looks secret."""
    done = 0
    n = len(rows)
    while done < n:
        chunk = rows[done : done + _CHUNK]
        if set(map(type, chunk)) != _ROWS:
            break
        cost = _rows_cost(chunk, secret, known, clean)
        if cost is None:
            break
        budget = -1 if cost < 0 else budget - cost
        if budget < 0:
            return -1, done
        done += len(chunk)
    return budget, done


def _rows_cost(rows: Any, secret: Callable[[str], bool], known: set[str], clean: set[str]) -> int | None:
    """What :func:`fits_value` would take off its budget for ``rows`` (dicts, one level below the budget's
    depth limit) once each was walked: -1 for a key that is not a string or looks secret; None when a value
    is neither plain nor a string (then the rows are walked one by one). The sum does not depend on the order
    of the walk, so it is the same number, found without a Python step per row."""
    keys = set(chain.from_iterable(rows))
    if not known.issuperset(keys) and not clean.issuperset(keys):
        for k in keys:
            if not isinstance(k, str) or secret(k):
                return -1
            clean.add(k)
    values = list(chain.from_iterable(map(dict.values, rows)))
    types = set(map(type, values))
    cost = 2 * len(rows) + 4 * len(values) + sum(map(len, chain.from_iterable(rows)))
    if FLAT.issuperset(types):
        return cost + 8 * len(values)
    if not _FLAT_OR_STR.issuperset(types):
        return None
    texts = [v for v in values if type(v) is str]
    return cost + 8 * (len(values) - len(texts)) + 3 * len(texts) + sum(map(len, texts))


def _default(obj: Any) -> Any:
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump()
        except Exception:
            pass
    text = repr(obj)
    # the default object repr carries a memory address, which would make the hash differ run to run
    return f"<{type(obj).__qualname__}>" if " at 0x" in text else text


# one encoder for every call, built once: ``json.dumps`` and even ``JSONEncoder.encode`` build the C encoder
# anew on each call. It keeps no markers (a record of the containers being encoded): circular data ends in a
# RecursionError, which canonical_json handles as it handles odd keys.
_c_encode = getattr(json.encoder, "c_make_encoder", None)
_iterencode = (
    _c_encode(None, _default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    if _c_encode is not None
    else json.JSONEncoder(sort_keys=True, default=_default, ensure_ascii=False, separators=(",", ":")).iterencode
)


def _encode(value: Any) -> str:
    return "".join(_iterencode(value, False))


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys; never raises (odd keys and objects are made plain)."""
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError):
        # dict keys that are not strings (ints mixed with strs, tuples) or circular data: normalise and retry,
        # because describing a call must never break the call
        return _encode(_plain(value, 0))


def _plain(value: Any, depth: int) -> Any:
    if depth > 32:
        return "…"
    if isinstance(value, Mapping):
        return {_key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, int) and value.bit_length() > _INT_BITS:
        # past Python's limit on int-to-text conversion (4300 digits): said by its size, never a ValueError
        return f"<int of {value.bit_length()} bits>"
    return value


def _key(k: Any) -> str:
    return k if isinstance(k, str) else canonical_json(k) if isinstance(k, tuple) else str(k)


def _builtin_sha256() -> Any:
    # CPython's own SHA-256 (``_sha256``, ``_sha2`` from 3.12): the same digest as OpenSSL's, without its set-up
    for module in ("_sha256", "_sha2"):
        try:
            return importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
    return hashlib.sha256


_sha256_short = _builtin_sha256()
#: texts shorter than this fit one SHA-256 block: the built-in hash is then about 40 % faster (0.57 against
#: 0.95 µs); past it, OpenSSL's (with the CPU's SHA instructions) is faster
_ONE_BLOCK = 56


def _digest(text: str) -> str:
    data = text.encode()
    return (_sha256_short if len(data) < _ONE_BLOCK else hashlib.sha256)(data).hexdigest()[:16]


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


#: a string this short is kept whole before any larger sibling is cut: the address, id or amount that says
#: what a call did must never be pushed out of the description by a long body next to it
_SMALL = 256


def _small(value: Any) -> bool:
    return len(value) <= _SMALL if isinstance(value, str) else isinstance(value, SCALAR)


def _scalar_cost(value: Any) -> int:
    # a bound on its JSON length, without formatting it (str() of a huge int is slow, or refused)
    if isinstance(value, float):
        return 24
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 2
    return 5


def _text(value: str, budget: _Budget) -> str:
    room = max(budget.left, 0)
    kept = value if len(value) <= room else value[:room] + f"…[+{len(value) - room} chars]"
    # quotes, and the characters JSON escapes most often, counted over the kept text only
    budget.left -= len(kept) + 2 + kept.count('"') + kept.count("\\") + kept.count("\n")
    return kept


def _marker(text: str, budget: _Budget) -> str:
    # what was left out is always said in full: the room kept by ``bounded`` pays for it
    budget.left -= len(text) + 2
    return text


def _clip(value: Any, budget: _Budget, depth: int, secret: Callable[[str], bool]) -> Any:
    """``value`` as plain data, redacted and cut to the budget (``…[+N items]`` says what was left out)."""
    if depth > MAX_DEPTH:
        return "…"
    if isinstance(value, str):
        return _text(value, budget)
    if isinstance(value, SCALAR):
        budget.left -= _scalar_cost(value)
        return value
    if isinstance(value, Mapping):
        return _clip_mapping(value, budget, depth, secret)
    if isinstance(value, list | tuple):
        return _clip_sequence(value, budget, depth, secret)
    if isinstance(value, set | frozenset):
        if len(value) > max(budget.left, 0) // 4:
            # a set's order is not stable across runs: past the budget, only its size is
            return _marker(f"<{type(value).__name__} of {len(value)} items>", budget)
        return _clip(sorted(value, key=repr), budget, depth, secret)
    if isinstance(value, bytes | bytearray):
        return _clip(bytes(value[: max(budget.left, 0) + 1]).decode("utf-8", "replace"), budget, depth, secret)
    plain = _default(value)
    if isinstance(plain, str):
        return _clip(plain, budget, depth, secret)
    return _clip(plain, budget, depth + 1, secret)


def _clip_sequence(
    value: list[Any] | tuple[Any, ...], budget: _Budget, depth: int, secret: Callable[[str], bool]
) -> Any:
    """A list cut to the budget: at most its first :data:`_MAX_ITEMS` elements are looked at, the rest counted."""
    n = len(value)
    head = value if n <= _MAX_ITEMS else value[:_MAX_ITEMS]
    # plain, secret-free elements that fit are kept as they are, checked in one walk (the common case)
    left = fits_value(head, budget.left, secret, depth)
    if left >= 0:
        budget.left = left
        kept = list(head)
    else:
        budget.left -= 2
        kept = []
        for v in head:
            if budget.left <= 0:
                break
            budget.left -= 1
            kept.append(_clip(v, budget, depth + 1, secret))
    if len(kept) < n:
        kept.append(_marker(f"…[+{n - len(kept)} items]", budget))
    return kept


def _clip_mapping(
    value: Mapping[Any, Any], budget: _Budget, depth: int, secret: Callable[[str], bool], whole: bool = True
) -> Any:
    """A mapping cut to the budget: its small values whole first, then the large ones, each with an even share
    of what is left (what one leaves unused goes to the next), so that no one value crowds out the others.

    At most :data:`_MAX_ITEMS` items are looked at: those with the smallest keys, found in one C-speed pass
    (sorting all keys would cost what the budget is there to avoid), so that two equal mappings built in
    different orders are described, and hashed, alike.
    """
    n = len(value)
    if n <= _MAX_ITEMS:
        head: Mapping[Any, Any] = value
    else:
        head = {k: value[k] for k in heapq.nsmallest(_MAX_ITEMS, value, key=str)}
    if whole:
        # plain, secret-free items that fit are kept as they are, checked in one walk (the common case)
        left = fits_value(head, budget.left, secret, depth)
        if left >= 0:
            budget.left = left
            if n <= _MAX_ITEMS and isinstance(head, dict):
                return head
            out = dict(head)
            out["…"] = _marker(f"+{n - len(out)} keys", budget)
            return out
    budget.left -= 2
    out = {}
    large: list[tuple[str, Any]] = []
    for k, v in head.items():
        if budget.left <= 0:
            break
        name = str(k)
        if secret(name):
            budget.left -= len(name) + len(REDACTED) + 6
            out[name] = REDACTED
        elif _small(v):
            budget.left -= len(name) + 4
            out[name] = _clip(v, budget, depth + 1, secret)
        else:
            large.append((name, v))
    for i, (name, v) in enumerate(large):
        budget.left -= len(name) + 4
        if budget.left <= 0:
            break
        share = _Budget(budget.left // (len(large) - i))
        given = share.left
        out[name] = _clip(v, share, depth + 1, secret)
        budget.left -= given - share.left
    if len(out) < n:
        out["…"] = _marker(f"+{n - len(out)} keys", budget)
    return out


def bounded(value: Any, limit: int | None = None) -> Any:
    """``value`` redacted and cut to about ``limit`` characters of JSON, as plain data.

    The cut marks (``…[+N items]``, ``…[+N chars]``) come on top of the budget: room is kept for them, so that
    capping the JSON at ``limit`` does not cut them off.
    """
    cfg = _config.CONFIG
    limit = limit or cfg.max_attr_chars
    return _clip(value, _Budget(_room(limit)), 0, cfg.is_secret)


def _room(limit: int) -> int:
    return limit - min(256, limit // 4)


def describe_args(args: Mapping[str, Any], *, exclude: str | None = None, exact: bool = False) -> tuple[str, str]:
    """``(hash, attribute JSON)`` of a call's arguments; runs on every traced tool call.

    The common call (plain data within the cap, no secret-looking key, no idempotency key) is encoded once,
    in C, and that text serves both. Otherwise the bounded, redacted view is encoded, and the hash leaves the
    idempotency key out so that retries compare equal. With ``exact`` (irreversible tools, whose repeats
    ``no_duplicate_writes`` judges by this hash) arguments over the cap are hashed whole, redacted: two
    payloads that differ past the cap must not look like one duplicated write. That costs a walk of the whole
    value, paid only by writes with arguments over the cap.
    """
    cfg = _config.CONFIG
    limit = cfg.max_attr_chars
    if exclude is None or exclude not in args:
        # one encoding for both: the arguments as they are when small and clean, else their bounded view
        secret = cfg.is_secret
        clean = getattr(secret, "clean", None)
        if clean is not None and type(args) is dict and clean.issuperset(args):
            # the commonest call, inline (it runs on every traced call): a few scalar arguments under names
            # already found not secret; the same test as _fits, the same text as canonical_json
            budget = limit
            for k, v in args.items():
                t = type(v)
                if t is str:
                    budget -= len(k) + len(v) + 6
                elif t in FLAT:
                    budget -= len(k) + 12
                else:
                    break
            else:
                if budget >= 0:
                    try:
                        text = "".join(_iterencode(args, False))
                    except (TypeError, ValueError, RecursionError):
                        text = canonical_json(args)
                    # _digest() inline
                    data = text.encode()
                    sha = _sha256_short if len(data) < _ONE_BLOCK else hashlib.sha256
                    return sha(data).hexdigest()[:16], text if len(text) <= limit else cap(text, limit)
        if fits(args, limit, secret) < 0:
            # they did not fit whole (just checked): cut them, item by item
            full = _digest(canonical_json(redact(args))) if exact else None
            args = _clip_mapping(args, _Budget(_room(limit)), 0, secret, whole=False)
            text = canonical_json(args)
            return full or _digest(text), cap(text, limit)
        text = canonical_json(args)
        return _digest(text), cap(text, limit)
    return args_hash(args, exclude=exclude, exact=exact), to_attr_json(args)


def args_hash(args: Mapping[str, Any], *, exclude: str | None = None, exact: bool = False) -> str:
    """Stable hash of the canonical, redacted, bounded arguments (with ``exact``, not bounded).

    The idempotency key is left out so that retries compare equal; secret values are redacted first, so the
    hash cannot be used to confirm a guessed password (and a retry with a refreshed token is the same call).
    """
    if exclude is not None and exclude in args:
        args = {k: v for k, v in args.items() if k != exclude}
    return _digest(canonical_json(redact(args) if exact else bounded(args)))


def redact(value: Any, depth: int = 0) -> Any:
    """``value`` with the values of secret-looking keys replaced by ``[REDACTED]`` (not bounded)."""
    if depth > MAX_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        secret = _config.CONFIG.is_secret
        return {str(k): (REDACTED if secret(str(k)) else redact(v, depth + 1)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, depth + 1) for v in value]
    return value


def cap(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (default: the attribute cap), saying how much was cut."""
    limit = limit or _config.CONFIG.max_attr_chars
    if len(text) <= limit:
        return text
    return text[: limit - 20] + f"…[+{len(text) - limit + 20} chars]"


def to_attr_json(value: Any, limit: int | None = None) -> str:
    """``value`` as redacted canonical JSON within ``limit`` characters, at a cost bounded by ``limit``."""
    limit = limit or _config.CONFIG.max_attr_chars
    return cap(canonical_json(bounded(value, limit)), limit)


def to_text(value: Any, limit: int | None = None) -> str:
    """``value`` as text for an output attribute: a string as it is, anything else as :func:`to_attr_json`."""
    limit = limit or _config.CONFIG.max_output_chars
    return cap(value, limit) if isinstance(value, str) else to_attr_json(value, limit)
