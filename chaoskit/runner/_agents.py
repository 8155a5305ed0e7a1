"""The agents a battery drives: a Python factory (``module:attr``) called per episode, or a command line."""

from __future__ import annotations

import inspect
import shlex
import threading
from collections.abc import Callable
from typing import Any

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.scenarios._scenario import _is_ref, resolve_ref
from chaoskit.scenarios._servers import on_this_python

__all__ = ["AgentError", "CommandAgent", "PythonAgent", "declared_labels", "resolve_agent"]


class AgentError(ChaoskitError):
    """The agent could not be set up (bad reference, factory failed before any episode)."""


def _text_of(result: Any) -> str:
    """The final text of an agent's answer: a string, a message, or the last message of a messages state."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        if result.get("messages"):
            return _text_of(result["messages"][-1])
        for key in ("output", "content", "answer"):
            if key in result:
                return _text_of(result[key])
    content = getattr(result, "content", None)
    if content is not None:
        if isinstance(content, list):
            return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
        return str(content)
    if isinstance(result, tuple) and len(result) == 2 and result[0] in ("ai", "assistant"):
        return str(result[1])
    return str(result)


def _input_for(agent: Any, task: str) -> Any:
    module = type(agent).__module__ or ""
    if module.startswith("langgraph"):
        return {"messages": [{"role": "user", "content": task}]}
    return task


def _is_async(agent: Any) -> bool:
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
        return True
    return hasattr(agent, "ainvoke") and not hasattr(agent, "invoke")


def declared_labels(agent: Any) -> dict[str, str]:
    """The axes an agent states about itself: its ``architecture`` and its ``model_name`` (non-empty strings;
    the reference agents of ``chaoskit_langchain`` have both)."""
    out = {}
    for key, attr in (("model", "model_name"), ("architecture", "architecture")):
        value = getattr(agent, attr, None)
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
    return out


def _unpack(made: Any) -> tuple[Any, Any]:
    """A factory returns the agent, or ``(agent, env)``; without an explicit env, ``agent.env`` or the agent."""
    if isinstance(made, tuple) and len(made) == 2:
        return made[0], made[1]
    return made, getattr(made, "env", made)


class PythonAgent:
    """``module:attr``: a factory called fresh for each episode."""

    kind = "python"

    def __init__(self, ref: str, factory: Callable[[], Any]) -> None:
        self.ref = ref
        self.factory = factory
        self._probe: Any = None
        self._probe_lock = threading.Lock()
        self.is_async = False
        #: the model and architecture the agent says it has (:func:`declared_labels`), once one was made
        self.declared: dict[str, str] = {}

    def probe(self) -> None:
        """Call the factory once to see whether the agent is sync or async; that instance serves one episode."""
        made = self.factory()
        agent, _env = _unpack(made)
        if not (callable(agent) or hasattr(agent, "invoke") or hasattr(agent, "ainvoke")):
            # every episode would crash the same way: a usage error, not a finding about the agent
            raise AgentError(
                f"--agent {self.ref}: the factory returned {type(agent).__name__}, which is not "
                "callable and has no invoke() or ainvoke(); return the agent, or (agent, env)"
            )
        self.is_async = _is_async(agent)
        self.declared = declared_labels(agent)
        self._probe = made

    def make(self) -> tuple[Any, Any]:
        """A fresh (agent, env) for one episode (the probed instance first)."""
        with self._probe_lock:
            made, self._probe = self._probe, None
        if made is None:
            made = self.factory()
        agent, env = _unpack(made)
        self.declared = declared_labels(agent)
        return agent, env

    def invoke(self, agent: Any, task: str) -> str:
        """Run a sync agent on ``task``; the final text of its answer."""
        if hasattr(agent, "invoke"):
            return _text_of(agent.invoke(_input_for(agent, task)))
        if callable(agent):
            return _text_of(agent(task))
        raise TypeError(f"{self.ref} made a {type(agent).__name__}, which is not callable and has no invoke()")

    async def ainvoke(self, agent: Any, task: str) -> str:
        """Run an async agent on ``task``; the final text of its answer."""
        if hasattr(agent, "ainvoke"):
            return _text_of(await agent.ainvoke(_input_for(agent, task)))
        if callable(agent):
            out = agent(task)
            if inspect.isawaitable(out):
                out = await out
            return _text_of(out)
        raise TypeError(f"{self.ref} made a {type(agent).__name__}, which is not callable and has no ainvoke()")


class CommandAgent:
    """A command line run once per episode; ``{task}`` in it is replaced by the (perturbed) task text, and a
    leading ``python`` is the battery's own interpreter (as in a scenario's ``command:``)."""

    kind = "command"
    is_async = False

    def __init__(self, template: str) -> None:
        self.ref = template
        try:
            self.argv = shlex.split(template)
        except ValueError as exc:
            raise AgentError(f"cannot parse the agent command line {template!r}: {exc}") from None
        if not self.argv:
            raise AgentError("the agent command line is empty")

    def command(self, task: str) -> list[str]:
        """The argv for one episode: ``{task}`` replaced, or the task appended when the template has none."""
        argv = [a.replace("{task}", task) for a in on_this_python(self.argv)]
        if not any("{task}" in a for a in self.argv):
            argv.append(task)
        return argv


def resolve_agent(ref: str) -> PythonAgent | CommandAgent:
    """``module:attr`` (an importable factory) or a command line."""
    if _is_ref(ref):
        try:
            factory = resolve_ref(ref, source="--agent")
        except PlanError as exc:
            raise AgentError(str(exc)) from None
        if not callable(factory):
            raise AgentError(f"--agent {ref}: not callable")
        return PythonAgent(ref, factory)
    return CommandAgent(ref)
