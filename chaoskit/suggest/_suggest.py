"""``suggest`` in one call: discover and classify the tools, pick tasks, plan the cases, list contract findings."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.grading._contracts import ContractFinding
from chaoskit.suggest._battery_writer import (
    FAULTS,
    MODEL_FAULTS,
    UNMARKED,
    Case,
    generated,
    model_cases,
    plan_cases,
    unmarked,
    write_cases,
)
from chaoskit.suggest._classify import classify, is_auth
from chaoskit.suggest._discover import discover_ref, model_hook, split_command
from chaoskit.suggest._findings import declared_findings
from chaoskit.suggest._tasks import Task, agent_scenarios, pick_tasks
from chaoskit.suggest._tool_info import Classification, SuggestError

__all__ = ["Suggestion", "declared_for", "suggest"]


@dataclass
class Suggestion:
    """What ``suggest`` found and plans: the classified tools, the tasks, the cases, the contract findings."""

    agent: str | None
    #: the MCP server command the tools came from, if any: the scenarios run it behind the proxy (``mcp:``)
    mcp: str | None
    classes: list[Classification]
    tasks: dict[str, Task]
    cases: list[Case]
    findings: list[ContractFinding]
    #: where the OpenAPI tools' API runs (``{"command": [...]}`` or ``{"url": ...}``): their scenarios get an
    #: ``http:`` block, so the runner puts the HTTP proxy in front; None when not given
    http: dict[str, Any] | None = None
    #: tools that got no case, and why (no task known, filtered out)
    skipped: dict[str, str] = field(default_factory=dict)
    #: cases a tool with a task did not get, and why (``"transfer_funds / after_write"``: mark it first)
    gaps: dict[str, str] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    #: scenario files an earlier ``suggest`` wrote to the same folder that this one did not rewrite (they still run)
    stale: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The suggestion as JSON (``suggest.json`` next to the scenarios)."""
        return {
            "kind": "chaoskit-suggest",
            "agent": self.agent,
            "tools": [
                {**c.to_dict(), "task": (self.tasks[c.name].__dict__ if c.name in self.tasks else None)}
                for c in self.classes
            ],
            "cases": [
                {
                    "name": k.name,
                    "file": k.file,
                    "tool": k.tool,
                    "fault": k.fault,
                    "kind": k.kind,
                    "target": k.target,
                    "checks": k.checks,
                }
                for k in self.cases
            ],
            "contract_findings": [f.to_dict() for f in self.findings],
            "skipped": self.skipped,
            "gaps": self.gaps,
        }

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """Write the scenario files (and ``suggest.json``) to ``out``; each file is loaded back to prove it runs."""
        import json

        by_name = {c.name: c for c in self.classes}
        self.written = write_cases(self.cases, by_name, Path(out), self.agent, mcp=self.mcp, http=self.http)
        (Path(out) / "suggest.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        self.stale = [p for p in sorted(Path(out).glob("*.yaml")) if p not in self.written and generated(p)]
        return self.written


def _prefix(ref: str | None, openapi: str | os.PathLike[str] | None) -> str:
    if ref and ":" in ref and not ref.lower().endswith((".yaml", ".yml", ".json")):
        parts = ref.partition(":")[0].split(".")
        return parts[-2] if len(parts) > 1 else parts[-1]
    return Path(str(ref or openapi)).stem or "api"


def suggest(
    agent: str | None,
    *,
    openapi: str | os.PathLike[str] | None = None,
    mcp: str | None = None,
    task: str | None = None,
    faults: Collection[str] | None = None,
    tools: Collection[str] | None = None,
    http_command: str | None = None,
    http_url: str | None = None,
) -> Suggestion:
    """Discover and classify the tools behind ``agent`` (``MODULE:OBJECT`` or an OpenAPI file) and ``openapi``,
    and plan a battery. ``faults`` and ``tools`` narrow it; unknown names are errors naming what exists.
    No model is called: a factory is called once to build the agent, never run."""
    if not agent and openapi is None and mcp is None:
        raise SuggestError("give --agent MODULE:OBJECT (or an OpenAPI file), --openapi FILE or --mcp COMMAND")
    if task is not None and not task.strip():
        raise SuggestError("--task: the task must not be empty")
    bad = sorted(set(faults or ()) - set(FAULTS))
    if bad:
        raise SuggestError(f"--faults: unknown fault kind(s) {', '.join(bad)}; the kinds are {', '.join(FAULTS)}")
    if http_command is not None and http_url is not None:
        raise SuggestError("give --http-command (the runner starts the API) or --http-url (it runs), not both")
    http: dict[str, Any] | None = None
    if http_command is not None:
        http = {"command": split_command("--http-command", http_command, "the command is empty")}
    elif http_url is not None:
        if not http_url.startswith(("http://", "https://")):
            raise SuggestError(f"--http-url {http_url!r}: expected an http:// or https:// URL")
        http = {"url": http_url}
    found, made = discover_ref(agent or "", openapi=openapi, mcp=mcp)
    classes = [classify(t) for t in found]
    names = [c.name for c in classes]
    unknown = sorted(set(tools or ()) - set(names))
    if unknown:
        raise SuggestError(f"--tools: the agent has no tool {', '.join(unknown)}; its tools are {', '.join(names)}")
    scenarios = agent_scenarios(agent) if agent and made is not None else []
    # a sign-in runs only when a session lapses, so no task reaches it reliably; the one 401 case covers it
    auth = {c.name for c in classes if is_auth(c.tool)} if task is None else set()
    tasks = {n: t for n, t in pick_tasks(names, scenarios, task).items() if n not in auth}
    skipped: dict[str, str] = {}
    for n in names:
        if tools is not None and n not in tools:
            skipped[n] = "left out by --tools"
        elif n in auth:
            skipped[n] = (
                "it signs in, which an agent does only when a session lapses (the auth_expired case covers that)"
            )
        elif n not in tasks and made is None:
            skipped[n] = "no task: not a factory, so there are no scenarios of its own to take one from; give --task"
        elif n not in tasks:
            skipped[n] = "no scenario of this agent calls it; give --task TEXT with a task that does"
    prefix = f"suggest-{_prefix(agent, openapi) if agent or openapi else 'mcp'}"
    cases = plan_cases(classes, tasks, prefix=prefix, faults=faults, tools=tools)
    cases += _model_cases(made, classes, tasks, prefix, faults, tools)
    gaps = _gaps(made, classes, tasks, faults, tools)
    return Suggestion(
        agent=agent if made is not None else None,
        mcp=mcp,
        classes=classes,
        tasks=tasks,
        cases=cases,
        findings=declared_findings(classes),
        skipped=skipped,
        gaps=gaps,
        http=http,
    )


def _gaps(
    made: Any,
    classes: list[Classification],
    tasks: dict[str, Task],
    faults: Collection[str] | None,
    tools: Collection[str] | None,
) -> dict[str, str]:
    """The cases a tool with a task (or the agent's model calls) did not get, and why."""
    gaps: dict[str, str] = {}
    if made is not None and faults is not None and set(faults) & set(MODEL_FAULTS) and model_hook(made) is None:
        gaps["model calls"] = (
            "nothing on the agent injects model faults (ChaosMiddleware, instrument_graph(model_faults=True), "
            "ChaosCallbackHandler(model_faults=True)): a model fault would reach no model call"
        )
    gaps |= {
        f"{c.name} / after_write": UNMARKED
        for c in classes
        if unmarked(c)
        and c.name in tasks
        and (tools is None or c.name in tools)
        and (faults is None or "after_write" in faults)
    }
    return gaps


def _model_cases(
    made: Any,
    classes: list[Classification],
    tasks: dict[str, Task],
    prefix: str,
    faults: Collection[str] | None,
    tools: Collection[str] | None,
) -> list[Case]:
    """The model-call cases, for an agent built by a factory whose model calls chaoskit reaches; none when
    ``--tools`` narrows to tools, unless ``--faults`` names a model kind."""
    if made is None or (tools is not None and not set(faults or ()) & set(MODEL_FAULTS)):
        return []
    hook = model_hook(made)
    return [] if hook is None else model_cases(classes, tasks, prefix=prefix, hook=hook, faults=faults)


def declared_for(agents: Collection[str], *, warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The declaration findings of the tools behind each ``module:factory`` agent, as dicts naming that agent
    (for a run's readiness table: ``apply_contracts(summary, episodes, declared_for(refs))``). It never raises:
    an agent whose tools cannot be read (a command line, no tools) adds nothing, and one whose factory or
    objects fail while being read adds nothing and is reported through ``warn`` (a finished run must not be
    lost to its findings)."""
    out: list[dict[str, Any]] = []
    for ref in agents:
        if not ref or " " in ref.strip() or ":" not in ref:
            continue
        try:
            found, _made = discover_ref(ref)
            findings = declared_findings([classify(t) for t in found])
        except SuggestError as exc:
            if "has no tools that suggest can see" not in str(exc) and warn is not None:
                warn(f"the tool-contract findings of {ref} are left out: {exc}")
            continue
        except (Exception, SystemExit) as exc:
            if warn is not None:
                warn(
                    f"the tool-contract findings of {ref} are left out: reading its tools raised "
                    f"{type(exc).__name__}: {exc}"
                )
            continue
        out.extend({**f.to_dict(), "agents": [ref]} for f in findings)
    return out
