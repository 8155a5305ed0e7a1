"""Model calls recorded to and replayed from a cassette (``chaoskit.episode(record=/replay=)``) by the middleware."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from chaoskit import Episode
from chaoskit.replay import CassetteEpisode, ReplayMiss, request_key

__all__ = ["answer_model", "answer_model_async"]

#: the usage counts a replayed message keeps (the provider's detail dicts are dropped: their keys look secret)
_USAGE = ("input_tokens", "output_tokens", "total_tokens")


def _content(message: BaseMessage) -> Any:
    content = message.content
    if message.type == "tool" and isinstance(content, str) and content[:1] in ("{", "["):
        # a tool's JSON answer is compared as data: a replayed mapping comes back with its keys sorted
        try:
            return {"json": json.loads(content)}
        except ValueError:
            return content
    return content


def _plain(message: BaseMessage) -> dict[str, Any]:
    """A request message as the request hash sees it: role, content, name, tool calls, a tool's status (no ids:
    a provider's message and tool call ids differ on every run)."""
    out: dict[str, Any] = {"type": message.type, "content": _content(message)}
    if message.name:
        out["name"] = message.name
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"name": c.get("name"), "args": c.get("args")} for c in calls]
    if message.type == "tool":
        out["status"] = getattr(message, "status", None)
    return out


def _tool_name(tool: Any) -> str:
    name = getattr(tool, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(tool, dict):
        function = tool.get("function")
        found = tool.get("name") or (function.get("name") if isinstance(function, dict) else None)
        return str(found or "")
    return type(tool).__name__


def _request_key(request: Any) -> tuple[str, tuple[str, ...], str]:
    """The request's hash, its messages' hashes, and a few words on it for a miss message."""
    messages: list[BaseMessage] = list(getattr(request, "messages", None) or [])
    system = getattr(request, "system_message", None)
    if isinstance(system, BaseMessage):
        messages.insert(0, system)
    tools = [_tool_name(t) for t in getattr(request, "tools", None) or []]
    key, digests = request_key([_plain(m) for m in messages], tools)
    last = messages[-1] if messages else None
    said = "" if last is None else f", the last a {last.type} message: {str(last.text)[:80]!r}"
    return key, digests, f"{len(messages)} messages{said}"


def _message(message: BaseMessage) -> dict[str, Any]:
    out = message_to_dict(message)
    data = out.get("data")
    if isinstance(data, dict) and isinstance(data.get("usage_metadata"), dict):
        data["usage_metadata"] = {k: v for k, v in data["usage_metadata"].items() if k in _USAGE}
    return out


def _to_reply(response: Any) -> dict[str, Any]:
    """What a model handler returned, as plain data a replay turns back into it."""
    if isinstance(response, BaseMessage):
        return {"message": _message(response)}
    result = getattr(response, "result", None)
    if isinstance(result, list) and dataclasses.is_dataclass(response):
        out: dict[str, Any] = {"messages": [_message(m) for m in result]}
        structured = getattr(response, "structured_response", None)
        if structured is not None:
            try:
                json.dumps(structured)
                out["structured"] = structured
            except (TypeError, ValueError):
                out["unreplayable"] = f"a structured response of type {type(structured).__name__}"
        return out
    return {"unreplayable": f"a {type(response).__name__} from the model handler"}


def _from_reply(reply: Any, source: str) -> Any:
    try:
        if not isinstance(reply, dict):
            raise ValueError(f"expected an object, got {type(reply).__name__}")
        if "unreplayable" in reply:
            raise ReplayMiss(f"{source}: the recorded model reply was {reply['unreplayable']}: it cannot be replayed")
        if "message" in reply:
            return messages_from_dict([reply["message"]])[0]
        return ModelResponse(result=messages_from_dict(reply["messages"]), structured_response=reply.get("structured"))
    except ReplayMiss:
        raise
    except Exception as exc:
        raise ReplayMiss(
            f"{source}: a recorded model reply cannot be read back ({type(exc).__name__}: {exc})"
        ) from None


def _cassette_episode(episode: Episode | None) -> CassetteEpisode | None:
    if isinstance(episode, CassetteEpisode) and (episode.answers is not None or episode.records_models):
        return episode
    return None


_MISS = object()


def _from_cassette(ep: CassetteEpisode, request: Any) -> tuple[tuple[Any, Any], Any]:
    """The request's key and digests, and its recorded answer (``_MISS`` when the cassette has none): the one
    decision both hooks share."""
    key, digests, shown = _request_key(request)
    replay = ep.answers
    if replay is not None:
        reply = replay.model(key, digests, shown)
        if reply is not None:
            response = _from_reply(reply, replay.cassette.path)
            if ep.record_path is not None:
                ep.note_model_reply(key, digests, reply, live=False)
            return (key, digests), response
    return (key, digests), _MISS


def _kept(ep: CassetteEpisode, ident: tuple[Any, Any], response: Any) -> Any:
    """``response``, a live model's, added to the recording when the episode records."""
    if ep.records_models:
        ep.note_model_reply(*ident, _to_reply(response), live=True)
    return response


def answer_model(request: Any, handler: Callable[[Any], Any], episode: Episode | None) -> Any:
    """``handler(request)``, or its answer from the episode's cassette; recorded when the episode records."""
    ep = _cassette_episode(episode)
    if ep is None:
        return handler(request)
    ident, found = _from_cassette(ep, request)
    return found if found is not _MISS else _kept(ep, ident, handler(request))


async def answer_model_async(request: Any, handler: Callable[[Any], Awaitable[Any]], episode: Episode | None) -> Any:
    """:func:`answer_model` for the async hook."""
    ep = _cassette_episode(episode)
    if ep is None:
        return await handler(request)
    ident, found = _from_cassette(ep, request)
    return found if found is not _MISS else _kept(ep, ident, await handler(request))
