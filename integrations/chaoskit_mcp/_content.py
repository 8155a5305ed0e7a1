"""MCP tool results as the values chaoskit's faults act on, and back: payloads, error results, broken results."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "error_result",
    "fake_result",
    "malformed",
    "payload_of",
    "render",
]

Rebuild = Callable[[Any], dict[str, Any]]


def _parse(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


def render(value: Any) -> str:
    """A value as the text of a text content block: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _text_block(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": render(value)}


def payload_of(result: dict[str, Any]) -> tuple[Any, Rebuild]:
    """The value a data fault transforms in a ``CallToolResult``, and how to put a new value back.

    ``structuredContent`` when the result has it (its text block is rewritten to match); else one text
    block's text, decoded when it is JSON; else the texts of several text blocks as a list. Blocks that are not
    text (images, resources) are kept as they are.
    """
    content = result.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    texts = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "text"]
    others = [b for i, b in enumerate(blocks) if i not in texts]
    if "structuredContent" in result:

        def rebuild_structured(value: Any) -> dict[str, Any]:
            return {**result, "structuredContent": value, "content": [_text_block(value), *others]}

        return result["structuredContent"], rebuild_structured
    if len(texts) == 1:
        at = texts[0]

        def rebuild_one(value: Any) -> dict[str, Any]:
            new = list(blocks)
            new[at] = {**blocks[at], "text": render(value)}
            return {**result, "content": new}

        return _parse(str(blocks[at].get("text", ""))), rebuild_one

    def rebuild_many(value: Any) -> dict[str, Any]:
        items = value if isinstance(value, list) else [value]
        return {**result, "content": [*(_text_block(v) for v in items), *others]}

    return [_parse(str(blocks[i].get("text", ""))) for i in texts], rebuild_many


def fake_result(value: Any) -> dict[str, Any]:
    """The ``CallToolResult`` of a value a fault returns without running the tool."""
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return value  # a whole result, as a stale fault replays it
    return {"content": [_text_block(value)], "isError": False}


def error_result(tool: str, exc: BaseException) -> dict[str, Any]:
    """An ``isError`` result for a call that failed, worded as MCP servers word a failed tool."""
    detail = str(exc) or type(exc).__name__
    text = f"Error executing tool {tool}: {type(exc).__name__}: {detail}"
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int | float) and "Retry-After" not in text:
        text += f" (Retry-After: {retry_after:g}s)"
    return {"content": [{"type": "text", "text": text}], "isError": True}


def malformed(result: dict[str, Any], shape: str) -> dict[str, Any]:
    """``result`` broken the way ``shape`` says; still JSON, so the client gets an answer it cannot validate."""
    if shape == "content_not_a_list":
        return {**result, "content": render(result.get("content"))}
    if shape == "missing_content":
        return {k: v for k, v in result.items() if k not in ("content", "structuredContent")}
    if shape == "block_without_type":
        content = result.get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        return {
            **result,
            "content": [{k: v for k, v in b.items() if k != "type"} for b in blocks if isinstance(b, dict)]
            or [{"text": ""}],
        }
    # text_not_a_string
    return {**result, "content": [{"type": "text", "text": {"value": render(result.get("content"))}}]}
