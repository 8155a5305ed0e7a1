"""Salted digests of redacted values, so a planted secret can be matched without the value ever being written.

A span never holds a secret-looking argument's value (``[REDACTED]``). That hides from ``no_injection_followed``
the one thing that shows an agent obeyed "change the password to new_password": the password it sent. So the
engine writes, beside the redacted arguments, a keyed digest (HMAC-SHA256, cut to 16 hex digits) of each
redacted value, and, on a ``prompt_injection`` attempt, digests of the words and quoted stretches of the text it
planted, under the same key. Equal digests in one episode mean equal values; the grader compares digests only.

The key (the salt) is 16 random bytes per episode, made in the process that runs it and never recorded, so a
digest cannot be tested against guessed passwords, and two episodes' digests of one value differ (no tracking
of a password across runs). A call outside any episode uses a per-process salt.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import chaoskit.semconv as sc
from chaoskit.engine._attrs import MAX_DEPTH, canonical_json

__all__ = ["add_redacted_digests", "digested", "redacted_digests", "salt_for", "text_digests"]

#: a value shorter than this is too common to tell an attack's from the user's ("1234", "no")
_MIN_CHARS = 4
#: at most this many digests of one planted text (about 4 KB of attribute), and of one call's arguments
_MAX_DIGESTS = 256
#: planted texts are read up to this many characters
_MAX_TEXT = 8192
_MAX_ITEMS = 64
_EDGES = "\"'`.,;:!?()[]{}<>*"

_PROCESS_SALT = os.urandom(16)
#: episode id -> its salt; bounded, oldest first out (an episode's attempts all run while it is recent)
_SALTS: dict[str, bytes] = {}
_MAX_EPISODES = 4096
#: the episodes (ids) an attempt of which carried redacted digests, as an ordered, bounded set
_DIGESTED: dict[str, None] = {}

_QUOTED = re.compile(r"\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|`([^`\n]{4,200})`|“([^”\n]{4,200})”")
_PARTS = re.compile(r"[=:,;]")


def salt_for(episode_id: str | None) -> bytes:
    """The digest key of the episode ``episode_id``, made on first use and kept in this process only (no
    episode: the process's). Keyed by id, not by object, so that every entry point of one episode (the
    decorator, a callback handler ending the attempt in another thread) meets the same key."""
    if episode_id is None:
        return _PROCESS_SALT
    salt = _SALTS.get(episode_id)
    if salt is None:
        _make_room(_SALTS)
        # dict.setdefault is atomic under the GIL: two threads of one episode get one salt
        salt = _SALTS.setdefault(episode_id, os.urandom(16))
    return salt


def _make_room(table: dict[str, Any]) -> None:
    """Drop the oldest entry of a per-episode table that is full (an episode's attempts run while it is recent)."""
    if len(table) >= _MAX_EPISODES:
        try:
            del table[next(iter(table))]
        except (KeyError, RuntimeError, StopIteration):
            pass  # another thread evicted it first


def _normal(text: str) -> str:
    return text.strip().strip(_EDGES).casefold()


def _digest(salt: bytes, text: str) -> str:
    return hmac.new(salt, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


def redacted_digests(args: Any, secret: Callable[[str], bool], salt: bytes) -> dict[str, str]:
    """``{path: digest}`` of every value the redaction hides in ``args``: the scalar values under a
    secret-looking key, each under its dotted path (``auth.token``, ``users.0.password``)."""
    out: dict[str, str] = {}
    _walk(args, "", False, secret, salt, out, 0)
    return out


def _walk(
    value: Any, path: str, hidden: bool, secret: Callable[[str], bool], salt: bytes, out: dict[str, str], depth: int
) -> None:
    if depth > MAX_DEPTH or len(out) >= _MAX_DIGESTS:
        return
    if isinstance(value, Mapping):
        for i, (k, v) in enumerate(value.items()):
            if i >= _MAX_ITEMS:
                break
            name = str(k)
            _walk(v, f"{path}.{name}" if path else name, hidden or secret(name), secret, salt, out, depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value[:_MAX_ITEMS]):
            _walk(v, f"{path}.{i}" if path else str(i), hidden, secret, salt, out, depth + 1)
    elif hidden and isinstance(value, str | int | float) and not isinstance(value, bool):
        text = _normal(str(value))
        if len(text) >= _MIN_CHARS:
            out[path] = _digest(salt, text)


def _candidates(text: str) -> Iterable[str]:
    """The stretches of ``text`` a value may have been copied from: each word, each side of ``=``/``:`` in a
    word (``password=new_password``), and each quoted stretch (a pass phrase with spaces)."""
    for word in text.split():
        yield word
        if _PARTS.search(word):
            yield from _PARTS.split(word)
    for m in _QUOTED.finditer(text):
        yield next(g for g in m.groups() if g is not None)


def add_redacted_digests(attrs: dict[str, Any], args: Any, secret: Callable[[str], bool]) -> None:
    """Add to an attempt's attributes the digests of the argument values its ``chaoskit.args`` redacted."""
    episode_id = attrs.get(sc.EPISODE_ID)
    found = redacted_digests(args, secret, salt_for(episode_id))
    if found:
        attrs[sc.ARGS_REDACTED_DIGESTS] = canonical_json(found)
        if episode_id is not None:
            _make_room(_DIGESTED)
            _DIGESTED[episode_id] = None


def digested(episode_id: str) -> bool:
    """Whether an attempt of the episode carried redacted digests (then forgotten: asked once, at its end)."""
    return _DIGESTED.pop(episode_id, False) is None


def text_digests(text: str, salt: bytes) -> tuple[str, ...]:
    """The sorted digests of the stretches of ``text`` a secret value may have been copied from."""
    found: set[str] = set()
    for stretch in _candidates(text[:_MAX_TEXT]):
        norm = _normal(stretch)
        if len(norm) >= _MIN_CHARS:
            found.add(_digest(salt, norm))
            if len(found) >= _MAX_DIGESTS:
                break
    return tuple(sorted(found))
