"""Expected-outcome tables (``--expect FILE``): which agent should pass or fail which scenario, and why.

A table is YAML::

    expect:
      refund-not-repeated-after-500:
        careful: pass
        naive: {fail: [no_duplicate_writes], why: "retries the refund without a key"}

An agent is named by its label (``careful``) or its full reference. With a table, the verdict is whether every
(scenario, agent) that ran behaved as it says.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit._errors import PlanError
from chaoskit.grading._evidence import CANNOT_GRADE
from chaoskit.plan._locate import _line_for, _suggest
from chaoskit.plan._yaml import load_yaml, read_source
from chaoskit.runner._results import EpisodeResult, agent_label

__all__ = ["CRITERIA", "Expectation", "Expectations", "expected_pairs", "judge", "load_expectations"]

#: names in an episode's ``checks`` besides the registered checks: the task's criteria and the runner's own
CRITERIA = ("outcome", "output_contains", "output_not_contains", "end_state", "trace", "metamorphic_end_state")

_FORMS = "pass, fail, {pass: true, why: ...} or {fail: [check, ...], why: ...}"


@dataclass(frozen=True)
class Expectation:
    """One entry: ``scenario`` run by ``agent`` (a label or a reference) should pass, or fail these checks."""

    scenario: str
    agent: str
    passes: bool
    checks: tuple[str, ...] = ()
    why: str | None = None
    line: int | None = None

    def matches(self, ref: str) -> bool:
        """Whether this entry is about the agent ``ref`` (named by its full reference or by its label)."""
        return self.agent in (ref, agent_label(ref))


@dataclass
class Expectations:
    """A loaded expected-outcome table: its entries, in file order, and the file they came from."""

    source: str
    entries: list[Expectation] = field(default_factory=list)
    lines_of: dict[str, int] = field(default_factory=dict)

    def check_scenarios(self, known: Iterable[str]) -> None:
        """An entry naming a scenario the battery does not have at all is an error (a typo or a stale table);
        one filtered out by ``--tags`` is fine (it is counted as not run)."""
        names = sorted(set(known))
        for sc in dict.fromkeys(e.scenario for e in self.entries):
            if sc not in names:
                raise PlanError(
                    f"no scenario named {sc!r} in this battery{_suggest(sc, names)}; scenarios: "
                    + ", ".join(names[:30])
                    + (" ..." if len(names) > 30 else ""),
                    source=self.source,
                    line=self.lines_of.get(sc),
                    field=f"expect.{sc}",
                )

    def lines(self, judged: Mapping[str, Any]) -> list[str]:
        """One line per unexpected outcome of ``judged`` (what :func:`judge` returned)."""
        out = []
        for u in judged["unexpected"]:
            head = f"{u['scenario']} [{u['agent']}]: "
            if u["actual"] == "missing":
                out.append(head + u["detail"])
            else:
                said = f" (expected because: {u['why']})" if u["why"] else ""
                out.append(head + f"expected {u['expected']}, got {u['actual']}: {u['detail']}{said}")
        return out


def _check_names() -> list[str]:
    import chaoskit.grading.checks as checks

    return sorted({*checks.REGISTRY, *CRITERIA})


def _entry(scenario: str, agent: Any, value: Any, line: int | None, src: str) -> Expectation:
    where: dict[str, Any] = {"source": src, "line": line, "field": f"expect.{scenario}.{agent}"}
    if not isinstance(agent, str) or not agent.strip():
        raise PlanError(f"an agent is named by its label (careful) or reference, got {agent!r}", **where)
    if value in ("pass", "fail"):
        return Expectation(scenario, agent, value == "pass", line=line)
    if not isinstance(value, Mapping):
        raise PlanError(f"expected {_FORMS}; got {value!r:.80}", **where)
    extra = [k for k in value if k not in ("pass", "fail", "why")]
    if extra or ("pass" in value) == ("fail" in value):
        bad = f"unknown key {extra[0]!r}; " if extra else "give exactly one of pass and fail; "
        raise PlanError(f"{bad}expected {_FORMS}", **where)
    why = value.get("why")
    if why is not None and not isinstance(why, str):
        raise PlanError(f"why is a sentence, got {why!r:.80}", **where)
    if "pass" in value:
        if value["pass"] is not True:
            raise PlanError(f"write pass: true (or fail: [...]), got pass: {value['pass']!r}", **where)
        return Expectation(scenario, agent, True, why=why, line=line)
    raw = value["fail"]
    names = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else None
    if raw is True or raw is None:
        names = []
    if names is None or not all(isinstance(n, str) for n in names):
        raise PlanError(f"fail lists the check names that must fail, got {raw!r:.80}", **where)
    known = _check_names()
    for n in names:
        if n not in known:
            raise PlanError(f"unknown check {n!r}{_suggest(n, known)}; known: {', '.join(known)}", **where)
    return Expectation(scenario, agent, False, tuple(names), why, line)


def load_expectations(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> Expectations:
    """Load and check an expected-outcome table, or several as one (a battery of domains, one table each);
    errors name the file, the line and the entry. A scenario in two tables is an error."""
    if isinstance(path, str | os.PathLike):
        return _load_one(path)
    tables = [_load_one(p) for p in path]
    if not tables:
        raise PlanError("no expected-outcome table given")
    out = Expectations(", ".join(t.source for t in tables))
    seen: dict[str, str] = {}
    for t in tables:
        for sc, line in t.lines_of.items():
            if sc in seen:
                raise PlanError(
                    f"scenario {sc!r} has expectations in {seen[sc]} too: give each scenario one table",
                    source=t.source,
                    line=line or None,
                    field=f"expect.{sc}",
                )
            seen[sc] = t.source
        out.entries.extend(t.entries)
        out.lines_of.update(t.lines_of)
    return out


def _load_one(path: str | os.PathLike[str]) -> Expectations:
    text, src = read_source(os.fspath(path) if isinstance(path, os.PathLike) else path, None)
    data, lines = load_yaml(text, src)
    if not isinstance(data, Mapping) or "expect" not in data:
        raise PlanError("an expected-outcome table is a mapping with a top-level 'expect:' key", source=src, line=1)
    extra = [k for k in data if k != "expect"]
    if extra:
        raise PlanError(
            f"unknown key {extra[0]!r}; an expected-outcome table has only 'expect'",
            source=src,
            line=_line_for((extra[0],), lines),
            field=str(extra[0]),
        )
    table = data["expect"]
    if not isinstance(table, Mapping):
        raise PlanError(
            "expect: maps scenario names to {agent: outcome}", source=src, line=_line_for(("expect",), lines)
        )
    out = Expectations(src)
    for scenario, agents in table.items():
        line = _line_for(("expect", scenario), lines)
        if not isinstance(scenario, str) or not isinstance(agents, Mapping) or not agents:
            raise PlanError(
                f"each scenario maps agents to outcomes ({_FORMS}), got {agents!r:.80}",
                source=src,
                line=line,
                field=f"expect.{scenario}",
            )
        out.lines_of[scenario] = line or 0
        for agent, value in agents.items():
            out.entries.append(_entry(scenario, agent, value, _line_for(("expect", scenario, agent), lines), src))
    return out


def _failed(e: EpisodeResult) -> set[str]:
    # a limit check is recorded per tool ("min_attempts(sign_in, 1)"); the table names the check
    return {n for c in e.failed_checks() for n in (c["name"], c["name"].partition("(")[0])}


#: failures an expected-fail entry does not cover unless it names them: a crash is no flaw the table
#: describes, a repeated irreversible write is the absolute rule a table must not switch off by accident, and an
#: episode chaos did not reach (``cannot_grade``) tested nothing, so it cannot have failed as expected
SEVERE = ("outcome", "no_duplicate_writes", CANNOT_GRADE)


def _outcome(x: Expectation, eps: Sequence[EpisodeResult]) -> dict[str, Any] | None:
    """None when the episodes of ``x`` behaved as expected, else the unexpected outcome."""
    passed = [e for e in eps if e.passed]
    failed = [e for e in eps if not e.passed]
    base = {"scenario": x.scenario, "agent": x.agent, "expected": "pass" if x.passes else "fail", "why": x.why or ""}
    if x.passes:
        if not failed:
            return None
        names = sorted(set().union(*(_failed(e) for e in failed)))
        detail = f"{len(failed)} of {len(eps)} episode(s) failed ({', '.join(names) or 'no check named'}); replay: "
        return {**base, "actual": "fail", "checks": [], "detail": detail + failed[0].replay}
    missed = sorted({n for e in failed for n in x.checks if n not in _failed(e)})
    severe = sorted({n for e in failed for n in SEVERE if n in _failed(e) and n not in x.checks})
    if severe and not passed and not missed:
        e = next(e for e in failed if set(SEVERE) & _failed(e) - set(x.checks))
        detail = f"failed as expected, but also on {', '.join(severe)}, which the table does not list; replay: "
        return {**base, "actual": "fail", "checks": [], "detail": detail + e.replay}
    if not passed and not missed:
        return None
    if passed:
        detail = f"{len(passed)} of {len(eps)} episode(s) passed; replay: {passed[0].replay}"
        return {**base, "actual": "pass", "checks": list(x.checks), "detail": detail}
    e = next(e for e in failed if set(x.checks) - _failed(e))
    detail = (
        f"failed, but not on {', '.join(missed)} (failed: {', '.join(sorted(_failed(e))) or 'nothing'}); "
        f"replay: {e.replay}"
    )
    return {**base, "actual": "fail", "checks": missed, "detail": detail}


def expected_pairs(judged: Mapping[str, Any] | None) -> set[tuple[str, str]]:
    """The ``(scenario, agent)`` pairs whose failures ``judged`` (``judge``'s answer, or the ``expectations`` of a
    results file's verdict) expected: reports show those failing episodes as expected, never as reasons."""
    pairs = (judged or {}).get("expected_fail") or ()
    return {(str(p[0]), str(p[1])) for p in pairs if isinstance(p, list | tuple) and len(p) == 2}


def judge(table: Expectations, episodes: Sequence[EpisodeResult], *, agents_chosen: bool = False) -> dict[str, Any]:
    """Judge the episodes against ``table``: the entries met, the unexpected outcomes, the entries that did not
    run, and ``expected_fail``, the ``[scenario, agent]`` pairs whose failures the table expected and got (reports
    show those episodes as expected). An unexpected outcome has scenario, agent, expected (pass or fail), actual
    (pass or fail), checks (those expected to fail that did not), why (the table's reason) and detail (what
    happened, with a replay command). A (scenario, agent) that ran without an entry is unexpected too: expected
    None, actual ``missing``. An entry whose scenario did not run (``--tags``, ``--shard``) counts as not run; one
    whose scenario ran without its agent is unexpected (actual ``not run``), unless ``agents_chosen`` (the run's
    agents came from ``--agent`` / ``--agents``, not from the battery)."""
    runs: dict[tuple[str, str], list[EpisodeResult]] = {}
    for e in episodes:
        runs.setdefault((e.scenario, e.agent), []).append(e)
    met, not_run = 0, 0
    unexpected: list[dict[str, Any]] = []
    covered: set[tuple[str, str]] = set()
    #: (scenario, agent) whose failing episodes the table expected: reports show them as expected, not as reasons
    expected_fail: set[tuple[str, str]] = set()
    for x in table.entries:
        keys = [k for k in runs if k[0] == x.scenario and x.matches(k[1])]
        if not keys:
            if agents_chosen or not any(k[0] == x.scenario for k in runs):
                not_run += 1
            else:
                # the battery dropped an agent the table expects: its proof is gone, which is no pass
                unexpected.append(
                    {
                        "scenario": x.scenario,
                        "agent": x.agent,
                        "expected": "pass" if x.passes else "fail",
                        "actual": "not run",
                        "checks": list(x.checks),
                        "why": x.why or "",
                        "detail": f"the scenario ran, but not with agent {x.agent!r}: add it to the battery",
                    }
                )
            continue
        covered.update(keys)
        found = _outcome(x, [e for k in keys for e in runs[k]])
        if found is None:
            met += 1
            if not x.passes:
                expected_fail.update(keys)
        else:
            unexpected.append(found)
    for (sc, ref), eps in runs.items():
        if (sc, ref) not in covered:
            actual = "pass" if all(e.passed for e in eps) else "fail"
            unexpected.append(
                {
                    "scenario": sc,
                    "agent": agent_label(ref),
                    "expected": None,
                    "actual": "missing",
                    "checks": [],
                    "why": "",
                    "detail": f"no entry in {table.source} for this scenario and agent (it ran: {actual})",
                }
            )
    return {
        "file": table.source,
        "met": met,
        "unexpected": unexpected,
        "not_run": not_run,
        "expected_fail": [list(k) for k in sorted(expected_fail)],
    }
