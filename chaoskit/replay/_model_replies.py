"""Model calls in a cassette: each chat model reply, keyed by a hash of the request that asked for it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import chaoskit.engine._attrs as _attrs
import chaoskit.semconv as sc
from chaoskit._errors import ChaoskitError

__all__ = ["ModelReply", "ReplayMiss", "model_replies", "request_key", "tool_answers"]


class ReplayMiss(ChaoskitError):
    """A replayed call that the recording cannot answer (``on_miss="error"``), or a cassette that cannot be used."""


def request_key(messages: Sequence[Mapping[str, Any]], tools: Iterable[str] = ()) -> tuple[str, tuple[str, ...]]:
    """``(hash, message hashes)`` of a model request: its messages as plain data (role, content, tool calls; no
    ids) and the names of the tools it offers. Secret-looking keys are redacted before hashing, as for tool
    arguments, so a request that differs only by a secret value matches."""
    digests = tuple(_attrs.args_hash(m, exact=True) for m in messages)
    return _attrs.args_hash({"messages": list(digests), "tools": sorted(tools)}, exact=True), digests


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One recorded model reply: the request's hash and its messages' hashes, and the reply (plain data)."""

    key: str
    messages: tuple[str, ...]
    reply: Any
    #: the model call's number in the recorded episode (1-based), for messages
    call: int
    source: str

    def agreement(self, messages: Sequence[str]) -> int:
        """How many leading messages this recorded request shares with a request of ``messages`` hashes."""
        n = 0
        for a, b in zip(self.messages, messages, strict=False):
            if a != b:
                break
            n += 1
        return n


def _section(attributes: Mapping[str, Any], source: str) -> dict[str, Any]:
    raw = attributes.get(sc.REPLAY_ANSWERS)
    if raw is None:
        return {}
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as exc:
        raise ReplayMiss(f"{source}: its {sc.REPLAY_ANSWERS} attribute is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReplayMiss(f"{source}: its {sc.REPLAY_ANSWERS} attribute must be a JSON object, got {raw!r:.80}")
    return data


def model_replies(attributes: Mapping[str, Any], source: str) -> list[ModelReply]:
    """The model replies recorded on an episode span's ``chaoskit.replay.answers``; ReplayMiss naming the item
    when one is malformed (a tampered cassette is refused, never partly replayed)."""
    out: list[ModelReply] = []
    items = _section(attributes, source).get("models", [])
    if not isinstance(items, list):
        raise ReplayMiss(f"{source}: {sc.REPLAY_ANSWERS}.models must be a list")
    for i, item in enumerate(items):
        where = f"{source}: {sc.REPLAY_ANSWERS}.models[{i}]"
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("key"), str)
            or not isinstance(item.get("messages"), list)
            or not all(isinstance(m, str) for m in item["messages"])
            or "reply" not in item
        ):
            raise ReplayMiss(f"{where}: expected an object with key (text), messages (list of text) and reply")
        call = item.get("call")
        out.append(ModelReply(item["key"], tuple(item["messages"]), item["reply"], call if isinstance(call, int)
                              else i + 1, f"{where}"))  # fmt: skip
    return out


#: the fields of a tool answer that ``on_miss="record"`` adds, with their JSON types
_TOOL_FIELDS: dict[str, tuple[type, ...]] = {
    "tool": (str,),
    "hash": (str,),
    "result": (str, type(None)),
    "json": (bool,),
    "error_type": (str, type(None)),
    "error_message": (str, type(None)),
    "status": (int, type(None)),
    "retry_after": (int, float, type(None)),
}


def tool_answers(attributes: Mapping[str, Any], source: str) -> list[dict[str, Any]]:
    """The tool answers an ``on_miss="record"`` episode added (``chaoskit.replay.answers``'s ``tools``), checked."""
    items = _section(attributes, source).get("tools", [])
    if not isinstance(items, list):
        raise ReplayMiss(f"{source}: {sc.REPLAY_ANSWERS}.tools must be a list")
    for i, item in enumerate(items):
        bad = (
            [k for k, types in _TOOL_FIELDS.items() if not isinstance(item.get(k), types)]
            if isinstance(item, dict)
            else ["(not an object)"]
        )
        if bad:
            raise ReplayMiss(f"{source}: {sc.REPLAY_ANSWERS}.tools[{i}]: bad or missing {', '.join(bad)}")
    return items
