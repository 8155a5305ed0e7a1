"""The chat models a judge can ask: the ``JudgeModel`` protocol, an OpenAI-compatible endpoint, ``MODULE:OBJECT``."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from chaoskit._errors import ConfigError
from chaoskit._refs import RefError, import_failure, import_ref
from chaoskit.traces import TraceReadError

__all__ = ["ENTRY_POINT_GROUP", "JudgeModel", "ModelRefused", "OpenAIEndpoint", "Reply", "load_model"]

#: the entry-point group of packages that turn a framework's chat model into a :class:`JudgeModel`: each names
#: a callable ``adapt(obj) -> JudgeModel | None`` (None: not one of its models). chaoskit_langchain registers
#: ``langchain`` for any ``BaseChatModel``
ENTRY_POINT_GROUP = "chaoskit.judges"

#: the environment variable whose value ``--judge-url`` sends as a bearer token (none sent when unset)
API_KEY_ENV = "CHAOSKIT_JUDGE_API_KEY"

#: the most of a reply that is read: a verdict is a few hundred bytes; anything near this is not one
MAX_REPLY = 8 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    """What a model answered: its text, the tokens it counted (None when it did not say), the model that
    answered, and a refusal the provider reported apart from the text (OpenAI's ``message.refusal``)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    refusal: str | None = None


class ModelRefused(Exception):
    """The model declined to answer (a refusal, a content filter): the episode cannot be judged."""


@runtime_checkable
class JudgeModel(Protocol):
    """A chat model the judge can ask: ``name`` (in the cache key and the reports) and ``complete``, which
    answers one system + user exchange. It may raise; any exception means "cannot judge"."""

    name: str

    def complete(self, system: str, user: str, *, timeout: float) -> Reply: ...


class OpenAIEndpoint:
    """An OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, ...),
    asked at temperature 0 for a JSON object, through the HTTP client of the trace backends
    (``chaoskit/traces/_http.py``); the bearer token, if any, comes from ``CHAOSKIT_JUDGE_API_KEY``."""

    def __init__(self, url: str, model: str | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--judge-url {url!r}: expected an http:// or https:// URL")
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self.name = f"{model or 'default'}@{base}"

    def complete(self, system: str, user: str, *, timeout: float) -> Reply:
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        if self.model:
            body["model"] = self.model
        from chaoskit.traces._http import request  # requests loads only when a model is asked

        headers = {}
        key = os.environ.get(API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            answer = request(
                self.url,
                backend="the judge model",
                source=self.url,
                timeout=timeout,
                # "timed out" is how the judge tells a timeout from another failure (judge/_ask.py)
                timeout_hint=" (timed out)",
                reach_hint="check --judge-url",
                headers=headers,
                data=json.dumps(body).encode(),
                max_bytes=MAX_REPLY,
            )
        except TraceReadError as exc:
            # the judge's contract: any exception is "cannot judge"; RuntimeError as for the answers below
            raise RuntimeError(str(exc)) from None
        if not answer.ok:
            raise RuntimeError(f"{self.url} answered HTTP {answer.status}")
        try:
            data = json.loads(answer.body.decode("utf-8", "replace"))
        except ValueError:
            raise RuntimeError(f"{self.url} answered something that is not JSON") from None
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise RuntimeError(f"{self.url} answered without choices[0].message") from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        content = message.get("content")
        return Reply(
            text=content if isinstance(content, str) else "",
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            model=data.get("model") if isinstance(data.get("model"), str) else self.model,
            refusal=message.get("refusal") or (_filtered(data["choices"][0])),
        )


def _filtered(choice: Any) -> str | None:
    return (
        "the provider's content filter stopped the reply" if choice.get("finish_reason") == "content_filter" else None
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _adapt(obj: Any) -> JudgeModel | None:
    """``obj`` as a :class:`JudgeModel`: itself when it is one, else what an installed adapter makes of it."""
    if not isinstance(obj, type) and isinstance(obj, JudgeModel) and isinstance(getattr(obj, "name", None), str):
        return obj
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            made = ep.load()(obj)
        except Exception as exc:
            print(
                f"chaoskit: warning: the {ep.name} judge adapter failed: {type(exc).__name__}: {exc}", file=sys.stderr
            )
            continue
        if made is not None:
            return cast(JudgeModel, made)
    return None


def load_model(spec: str) -> JudgeModel:
    """The model ``--judge MODULE:OBJECT`` names: a :class:`JudgeModel`, a framework chat model an installed
    adapter knows (a LangChain ``BaseChatModel`` with ``chaoskit[langchain]``), or a callable with no arguments
    returning one of those. A bad reference is a :class:`ConfigError` saying what was expected."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--judge {spec!r}: expected MODULE:OBJECT (e.g. myproject.judges:model)")
    try:
        obj = import_ref(module_name, attr)
    except RefError as exc:
        if exc.error is not None:
            raise ConfigError(f"--judge {spec}: cannot import {module_name}: {import_failure(exc.error)}") from None
        raise ConfigError(f"--judge {spec}: {module_name} has no {attr!r}") from None
    model = _adapt(obj)
    if model is None and callable(obj):
        try:
            model = _adapt(obj())
        except Exception as exc:
            raise ConfigError(f"--judge {spec}: calling it failed: {type(exc).__name__}: {exc}") from None
    if model is None:
        raise ConfigError(
            f"--judge {spec}: {type(obj).__name__} is not a chat model chaoskit can ask: give a LangChain "
            "BaseChatModel (pip install 'chaoskit[langchain]'), an object with name and complete(system, user, "
            "*, timeout) -> chaoskit.judge.Reply, or a function returning one"
        )
    return model
