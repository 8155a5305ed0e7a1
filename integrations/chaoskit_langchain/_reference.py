"""ReAct and Reflexion reference agents driven by any LangChain chat model, each model call recorded as a step."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from chaoskit import ConfigError, current_episode
from chaoskit.semconv import STEP_KIND

from ._common import read_since_last_step, record_step

__all__ = ["REFLECTION_PREFIX", "REFLECT_PROMPT", "ReActAgent", "ReflexionAgent", "as_tools"]

#: the system prompt both agents start from (``system=`` replaces it)
SYSTEM = (
    "You are a careful assistant that completes the user's task with the tools given. Think step by step: "
    "call one tool at a time, read its result, then decide the next step. When the task is done, or cannot be "
    "done, answer the user in plain words, saying exactly what was done and what failed."
)
#: what a Reflexion agent asks its model after a failed tool call (the failed calls are appended)
REFLECT_PROMPT = (
    "Reflect before your next step. A tool call just failed. In two or three sentences: what went wrong, whether "
    "the failure looks transient (worth retrying) or permanent, and what you will do next. Do not call tools."
)
#: how a reflection enters the agent's memory (a user message after the tool results)
REFLECTION_PREFIX = "Reflection: "


def as_tools(tools: Sequence[Any]) -> dict[str, BaseTool]:
    """LangChain tools by name: a ``BaseTool`` as it is, a function (``@chaos`` ones included) through
    ``StructuredTool.from_function`` (its name, its docstring or ``@chaos(description=...)`` as description)."""
    out: dict[str, BaseTool] = {}
    for t in tools:
        if isinstance(t, BaseTool):
            tool = t
        elif callable(t):
            name = getattr(t, "__name__", None)
            doc = getattr(t, "__doc__", None) or getattr(t, "description", None) or f"The {name} tool."
            tool = StructuredTool.from_function(t, name=name, description=str(doc).strip())
        else:
            raise ConfigError(f"reference agent: a tool must be a LangChain BaseTool or a function, got {t!r:.80}")
        if tool.name in out:
            raise ConfigError(f"reference agent: two tools are named {tool.name!r}")
        out[tool.name] = tool
    if not out:
        raise ConfigError("reference agent: give at least one tool")
    return out


def _as_text(value: Any) -> str:
    """A tool's result as the model reads it: text as it is, anything else as JSON where it can be."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _error_text(exc: BaseException) -> str:
    return f"Error: {type(exc).__name__}: {exc}"


class ReActAgent:
    """ReAct (Yao et al., 2023): the model reasons, asks for a tool call, reads its result, and so on until it
    answers without a call. ``invoke(task) -> str``.

    ``model`` is any LangChain ``BaseChatModel`` (tools bound with ``bind_tools`` when the model supports it);
    ``tools`` are LangChain tools or functions (:func:`as_tools`). A tool that raises is answered with an error
    ``ToolMessage`` (``Error: Type: message``), as LangChain's tool node does, and the loop goes on. Inside an
    open ``chaoskit.episode`` (``chaoskit run`` opens one per episode) each model call is recorded as a step,
    its text and calls captured unless ``capture_content=False``. ``max_steps`` bounds the model calls that
    act (the answer is then a plain "stopped" sentence).
    """

    architecture = "react"

    def __init__(
        self,
        model: BaseChatModel,
        tools: Sequence[Any],
        *,
        system: str | None = None,
        max_steps: int = 60,
        capture_content: bool | None = True,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise ConfigError(f"{type(self).__name__}: model must be a LangChain BaseChatModel, got {model!r:.80}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigError(f"{type(self).__name__}: max_steps must be a whole number >= 1, got {max_steps!r}")
        self.model = model
        self.tools = as_tools(tools)
        self.system = SYSTEM if system is None else system
        self.max_steps = max_steps
        self.capture_content = capture_content
        try:
            self._acting: Any = model.bind_tools(list(self.tools.values()))
        except NotImplementedError:  # a model without tool binding still reads the tools from its own prompt
            self._acting = model
        #: the messages of the last run, for inspection
        self.messages: list[BaseMessage] = []

    @property
    def model_name(self) -> str:
        """The model's name as LangChain knows it (``model_name`` or ``model``), else its class name."""
        for attr in ("model_name", "model", "model_id"):
            value = getattr(self.model, attr, None)
            if isinstance(value, str) and value:
                return value
        return type(self.model).__name__

    def _call(self, runnable: Any, messages: list[BaseMessage], attributes: Mapping[str, Any] | None) -> AIMessage:
        start = time.time()
        reply = runnable.invoke(messages)
        if not isinstance(reply, AIMessage):
            raise TypeError(f"{type(self).__name__}: the model answered {type(reply).__name__}, not an AIMessage")
        record_step(
            current_episode(),
            reply,
            read=read_since_last_step(messages),
            model=self.model_name,
            start=start,
            capture=self.capture_content,
            attributes=attributes,
        )
        return reply

    def _run_tool(self, call: Mapping[str, Any]) -> ToolMessage:
        name, call_id = call["name"], call.get("id") or ""
        tool = self.tools.get(name)
        if tool is None:
            text = f"Error: no tool named {name!r}; the tools are {', '.join(sorted(self.tools))}"
            return ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")
        try:
            out = tool.invoke(call.get("args") or {})
        except Exception as exc:  # the model reads the error and decides, as with LangChain's ToolNode
            return ToolMessage(content=_error_text(exc), tool_call_id=call_id, name=name, status="error")
        return ToolMessage(content=_as_text(out), tool_call_id=call_id, name=name)

    def _after_tools(self, messages: list[BaseMessage], results: list[ToolMessage]) -> None:
        """What the architecture does once the tools answered (ReAct: nothing more)."""

    def invoke(self, task: Any, config: Any = None) -> str:
        """Run the task to the model's answer; the answer's text."""
        text = task if isinstance(task, str) else str(task)
        messages: list[BaseMessage] = [SystemMessage(self.system), HumanMessage(text)]
        self.messages = messages
        for _ in range(self.max_steps):
            reply = self._call(self._acting, messages, None)
            messages.append(reply)
            if not reply.tool_calls:
                return reply.text
            results = [self._run_tool(c) for c in reply.tool_calls]
            messages.extend(results)
            self._after_tools(messages, results)
        return f"Stopped after {self.max_steps} steps without finishing the task; it is not done."


class ReflexionAgent(ReActAgent):
    """Reflexion (Shinn et al., 2023) within one trial: a ReAct loop that, after a tool call failed, asks its
    model to reflect on the failure (:data:`REFLECT_PROMPT`, no tools bound) before its next step, and keeps
    every reflection in its memory: each is added to the conversation as ``Reflection: ...``.

    The reflection is a model call of its own, recorded as a step with ``chaoskit.step.kind = reflection``
    (``chaoskit.semconv.STEP_KIND``), so the trace shows it. The paper also retries whole trials; this agent
    does not, since a second trial would repeat the first one's writes. ``max_reflections`` bounds them.
    """

    architecture = "reflexion"

    def __init__(
        self,
        model: BaseChatModel,
        tools: Sequence[Any],
        *,
        system: str | None = None,
        max_steps: int = 60,
        max_reflections: int = 20,
        reflect_prompt: str = REFLECT_PROMPT,
        capture_content: bool | None = True,
    ) -> None:
        super().__init__(model, tools, system=system, max_steps=max_steps, capture_content=capture_content)
        if isinstance(max_reflections, bool) or not isinstance(max_reflections, int) or max_reflections < 0:
            raise ConfigError(f"ReflexionAgent: max_reflections must be a whole number >= 0, got {max_reflections!r}")
        self.max_reflections = max_reflections
        self.reflect_prompt = reflect_prompt
        #: the reflections of the last run, in order
        self.reflections: list[str] = []

    def invoke(self, task: Any, config: Any = None) -> str:
        self.reflections = []
        return super().invoke(task, config)

    def _after_tools(self, messages: list[BaseMessage], results: list[ToolMessage]) -> None:
        failed = [r for r in results if r.status == "error"]
        if not failed or len(self.reflections) >= self.max_reflections:
            return
        what = "; ".join(f"{r.name}: {r.content}" for r in failed)
        ask = HumanMessage(f"{self.reflect_prompt}\nFailed: {what}")
        reply = self._call(self.model, [*messages, ask], {STEP_KIND: "reflection"})
        text = reply.text.strip()
        self.reflections.append(text)
        messages.append(HumanMessage(REFLECTION_PREFIX + text.removeprefix(REFLECTION_PREFIX)))
