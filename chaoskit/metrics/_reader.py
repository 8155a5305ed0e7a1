"""Reading trajectories in the benchmark's JSON shape (task, steps with reasoning, tool calls and outputs)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chaoskit.metrics._model_steps import StepRecord, ToolCall
from chaoskit.metrics._trajectory import Trajectory
from chaoskit.traces._records import TraceReadError

__all__ = ["TASK_KEYS", "read_trajectories"]

#: where the task is, first found wins
TASK_KEYS = ("task", "task_description", "instruction", "goal")
_TEXT_KEYS = ("reasoning", "thought", "thinking", "text", "content")
_CALL_KEYS = ("tool_calls", "actions", "calls")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "input", "parameters")
_OUT_KEYS = ("output", "result", "observation", "response")
_SHAPE = (
    'a trajectory JSON: {"task": "...", "steps": [{"reasoning": "...", "tool_calls": [{"name": "...", '
    '"arguments": {...}, "output": ...}]}]} (or a list of them, or {"trajectories": [...]})'
)


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    return next(((k, obj[k]) for k in keys if k in obj), (None, None))


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _call(raw: Any, where: str, src: str) -> tuple[ToolCall, str | None]:
    if not isinstance(raw, Mapping):
        raise TraceReadError(
            f"{where}: a tool call must be an object with a name, got {json.dumps(raw)[:60]}", source=src
        )
    _, name = _first(raw, _NAME_KEYS)
    if isinstance(name, Mapping):  # OpenAI's {"function": {"name", "arguments"}}
        raw = {**raw, **name}
        name = name.get("name")
    if not isinstance(name, str) or not name:
        raise TraceReadError(f"{where}.name: missing or not a string (one of {', '.join(_NAME_KEYS)})", source=src)
    _, args = _first(raw, _ARG_KEYS)
    if isinstance(args, str):
        try:
            args = json.loads(args)  # arguments as JSON text, as OpenAI writes them
        except ValueError:
            pass
    key, out = _first(raw, _OUT_KEYS)
    return ToolCall(name, args if args is not None else {}, raw.get("id")), None if key is None else _as_text(out)


def _trajectory(raw: Any, where: str, src: str) -> Trajectory:
    if not isinstance(raw, Mapping):
        raise TraceReadError(f"{where}: expected {_SHAPE}, got a {type(raw).__name__}", source=src)
    _, task = _first(raw, TASK_KEYS)
    if not isinstance(task, str) or not task.strip():
        raise TraceReadError(f"{where}task: missing or empty (one of {', '.join(TASK_KEYS)})", source=src)
    steps_raw = raw.get("steps", raw.get("trajectory"))
    if not isinstance(steps_raw, list):
        raise TraceReadError(f"{where}steps: must be a list of steps, got {json.dumps(steps_raw)[:60]}", source=src)
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    steps: list[StepRecord] = []
    read: list[str] = []  # the outputs of one step's calls are what the next step reads
    for i, step in enumerate(steps_raw):
        at = f"{where}steps[{i}]"
        if not isinstance(step, Mapping):
            raise TraceReadError(
                f"{at}: must be an object (reasoning, tool_calls), got {json.dumps(step)[:60]}", source=src
            )
        _, text = _first(step, _TEXT_KEYS)
        if text is not None and not isinstance(text, str):
            raise TraceReadError(f"{at}.reasoning: must be a string, got {json.dumps(text)[:60]}", source=src)
        ckey, calls_raw = _first(step, _CALL_KEYS)
        if calls_raw is None and any(k in step for k in _NAME_KEYS):
            calls_raw, ckey = [step], "tool_call"  # one call written on the step itself
        if calls_raw is not None and not isinstance(calls_raw, list):
            raise TraceReadError(f"{at}.{ckey}: must be a list of tool calls", source=src)
        calls, outputs = [], []
        for j, c in enumerate(calls_raw or ()):
            call, out = _call(c, f"{at}.{ckey}[{j}]", src)
            calls.append(call)
            outputs += [out] if out is not None else []
        okey, out = _first(step, _OUT_KEYS)
        if okey is not None and ckey != "tool_call":
            outputs.append(_as_text(out))
        listed = step.get("tool_outputs")  # the benchmark's own shape: outputs beside the calls, in order
        if listed is not None:
            if not isinstance(listed, list):
                raise TraceReadError(f"{at}.tool_outputs: must be a list, got {json.dumps(listed)[:60]}", source=src)
            outputs += [_as_text(o) for o in listed]
        reflection = step.get("reflection")
        if isinstance(reflection, str) and reflection.strip():
            text = f"{text or ''}\n{reflection}".strip()  # a Reflexion step's critique is reasoning too
        usage = step.get("token_usage")
        usage = usage if isinstance(usage, Mapping) else {}
        # synthetic times: one second per step, so that the steps keep their order
        steps.append(
            StepRecord(
                "",
                f"step-{i}",
                None,
                float(i),
                i + 0.5,
                model=model,
                input_tokens=_count(usage.get("prompt", usage.get("input_tokens"))),
                output_tokens=_count(usage.get("completion", usage.get("output_tokens"))),
                text=text or "",
                tool_calls=tuple(calls),
                tool_results=tuple(read),
                captured=True,
            )
        )
        read = outputs
    return Trajectory(task, tuple(steps))


def read_trajectories(source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> list[Trajectory]:
    """The trajectories of a benchmark-shaped JSON file or object (see :data:`TASK_KEYS` and the module).

    Each step's ``reasoning`` is its text, its ``tool_calls`` the calls it asked for, and the calls' ``output``
    is what the *next* step read. There are no tool spans, so the metrics that need attempts (hallucination,
    fault-based failure modes) are None or absent. Anything else is a :class:`TraceReadError` naming the file
    and the field, never an empty list: an OTLP file is pointed to ``read_steps``."""
    src = str(source) if isinstance(source, str | os.PathLike) else "<trajectory>"
    data: Any = source
    if isinstance(source, str | os.PathLike):
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TraceReadError("file not found", source=src) from None
        except (OSError, ValueError) as exc:
            raise TraceReadError(f"not JSON: {exc}", source=src) from None
    if isinstance(data, Mapping) and ("resourceSpans" in data or "result" in data):
        raise TraceReadError(
            "this is an OTLP trace, not a trajectory JSON: read it with chaoskit.metrics.read_steps and "
            "trajectories(Trace.load(path), read_steps(path))",
            source=src,
        )
    if isinstance(data, Mapping) and isinstance(data.get("trajectories"), list):
        items, prefix = data["trajectories"], "trajectories"
    elif isinstance(data, list):
        items, prefix = data, ""
    else:
        return [_trajectory(data, "", src)]
    if not items:
        raise TraceReadError(f"{prefix or 'the list'}: no trajectory in it; expected {_SHAPE}", source=src)
    return [_trajectory(t, f"{prefix}[{i}].", src) for i, t in enumerate(items)]
