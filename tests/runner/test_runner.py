"""The battery runner with small in-process agents (no examples/support dependency)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chaoskit import chaos
from chaoskit.runner._battery import run_battery
from chaoskit.runner._grid import derive_seed

# --- a tiny agent world --------------------------------------------------------------------------------


class Store:
    def __init__(self) -> None:
        self.saved: list[tuple[str, str | None]] = []

    @chaos
    def fetch(self, item: str) -> dict[str, str]:
        return {"item": item, "price": "12"}

    @chaos(irreversible=True, idempotency_arg="key")
    def save(self, item: str, key: str | None = None) -> str:
        if key is not None and any(k == key for _, k in self.saved):
            return "ok"
        self.saved.append((item, key))
        return "ok"


class Agent:
    """Fetches then saves the item named by a number in the task; retries each tool ``retries`` times."""

    def __init__(self, *, retries: int = 2, key: bool = True, smart_parse: bool = True, sleep: float = 0.0) -> None:
        self.env = Store()
        self.retries = retries
        self.key = key
        self.smart_parse = smart_parse
        self.sleep = sleep

    def _item(self, task: str) -> str:
        m = re.search(r"I mean (\d+)", task) if self.smart_parse else None
        m = m or re.search(r"\d+", task)
        return m.group(1) if m and m.groups() else (m.group(0) if m else "0")

    def _try(self, fn: Any, *args: Any, **kwargs: Any) -> bool:
        for _ in range(self.retries + 1):
            try:
                fn(*args, **kwargs)
                return True
            except Exception:
                if self.sleep:
                    time.sleep(self.sleep)
        return False

    def invoke(self, task: str) -> str:
        if self.sleep:
            time.sleep(self.sleep)
        item = self._item(task)
        if not self._try(self.env.fetch, item):
            return f"I could not fetch {item}: it failed"
        if not self._try(self.env.save, item, key=f"k-{item}" if self.key else None):
            return f"I could not save {item}: it failed"
        return f"saved {item}"


def careful() -> Agent:
    return Agent()


def naive() -> Agent:
    return Agent(key=False)


def first_number() -> Agent:
    return Agent(smart_parse=False)


def saved_once(env: Store) -> tuple[bool, Any]:
    return len(env.saved) == 1, sorted(item for item, _ in env.saved)


SCENARIO = """\
name: save-after-500
task: "Save item 4832 now"
faults:
  - {type: http, tool: save, on_call: 1, status: 500, after_write: true}
success:
  output_contains: ["saved"]
  checks: [no_duplicate_writes, no_bluff]
  state: test_runner:saved_once
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    p = tmp_path / "save.yaml"
    p.write_text(SCENARIO)
    return p


def slim(result: Any) -> list[tuple[Any, ...]]:
    """What must not depend on timing or worker count."""
    return [
        (
            e.scenario,
            e.repetition,
            e.epsilon,
            e.intensity,
            e.seed,
            e.task,
            e.outcome,
            e.output,
            e.attempts["by_tool"],
            e.attempts["faults"],
            [(c["name"], c["passed"]) for c in e.checks],
            e.passed,
        )
        for e in result.episodes
    ]


# --- tests ---------------------------------------------------------------------------------------------------


def test_careful_passes_naive_repeats_the_write(scenario: Path) -> None:
    good = run_battery([scenario], agent=careful, repeat=2)
    assert good.ok and all(e.passed for e in good.episodes)
    assert good.episodes[0].attempts["by_tool"] == {"fetch": 1, "save": 2}
    assert good.episodes[0].oracle == {"ok": True, "state": '["4832"]', "error": None}

    bad = run_battery([scenario], agent=naive, repeat=2)
    assert not bad.ok
    assert any("absolute rule" in r for r in bad.verdict.reasons)
    e = bad.episodes[0]
    failed = {c["name"] for c in e.checks if not c["passed"]}
    assert {"no_duplicate_writes", "end_state"} <= failed
    assert e.attempts["duplicate_writes"] == 1
    assert "--episode-seed" in e.replay


def test_agent_crash_is_an_outcome_not_a_runner_crash(scenario: Path) -> None:
    class Boom:
        env = None

        def invoke(self, task: str) -> str:
            raise RuntimeError("model exploded")

    result = run_battery([scenario], agent=Boom, repeat=2)
    assert [e.outcome for e in result.episodes] == ["crashed", "crashed"]
    assert "model exploded" in (result.episodes[0].error or "")
    assert not result.episodes[0].passed
    assert result.summary.overall["outcomes"] == {"crashed": 2}
    # nothing completed: the gate fails and says why, instead of passing a battery that never ran
    assert not result.verdict.ok
    assert any(
        "no episode completed: all 2 ended as crashed" in r and "model exploded" in r for r in result.verdict.reasons
    )


def test_factory_is_called_fresh_per_episode(scenario: Path) -> None:
    made: list[Agent] = []

    def factory() -> Agent:
        a = Agent()
        made.append(a)
        return a

    result = run_battery([scenario], agent=factory, repeat=4, intensities=[0, 0.2])
    assert len(made) == len(result.episodes) == 8
    assert len({id(a.env) for a in made}) == 8
    assert all(len(a.env.saved) <= 1 for a in made)


def test_plain_callable_and_message_results(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage

    p = tmp_path / "s.yaml"
    p.write_text('name: echo\ntask: "say hi"\nsuccess: {output_contains: ["hi there"], checks: []}\n')

    def make_fn() -> Any:
        return lambda task: "hi there"

    class Graphish:
        def invoke(self, task: str) -> dict[str, Any]:
            return {"messages": [AIMessage("thinking"), AIMessage("hi there")]}

    assert run_battery([p], agent=make_fn).episodes[0].passed
    r = run_battery([p], agent=Graphish)
    assert r.episodes[0].output == "hi there" and r.episodes[0].passed


def test_async_agent_runs_on_asyncio_with_workers(scenario: Path) -> None:
    class AsyncAgent:
        def __init__(self) -> None:
            self.inner = Agent()
            self.env = self.inner.env

        async def ainvoke(self, task: str) -> str:
            await asyncio.sleep(0.01)
            # tools are sync here; the episode context follows the task
            return self.inner.invoke(task)

    one = run_battery([scenario], agent=AsyncAgent, repeat=6, workers=1)
    many = run_battery([scenario], agent=AsyncAgent, repeat=6, workers=4)
    assert all(e.passed for e in many.episodes)
    assert slim(one) == slim(many)


def test_workers_isolation(scenario: Path) -> None:
    threads: set[str] = set()

    def factory() -> Agent:
        threads.add(threading.current_thread().name)
        return Agent(sleep=0.002)

    one = run_battery([scenario], agent=factory, repeat=8, intensities=[0, 0.3], seed=5, workers=1)
    many = run_battery([scenario], agent=factory, repeat=8, intensities=[0, 0.3], seed=5, workers=8)
    assert len(threads) > 1
    assert slim(one) == slim(many)
    # the scenario's on_call: 1 fault fired once in every episode: counters are per episode
    assert all(e.attempts["by_tool"]["save"] >= 2 for e in many.episodes if e.intensity == 0)
    ids = [e.episode_id for e in many.episodes]
    assert len(set(ids)) == len(ids)


def test_intensity_is_deterministic_per_seed(scenario: Path) -> None:
    a = run_battery([scenario], agent=careful, repeat=10, intensities=[0.5], seed=3)
    b = run_battery([scenario], agent=careful, repeat=10, intensities=[0.5], seed=3)
    c = run_battery([scenario], agent=careful, repeat=10, intensities=[0.5], seed=4)
    assert slim(a) == slim(b)
    assert [e.attempts for e in a.episodes] != [e.attempts for e in c.episodes]
    assert sum(e.attempts["faults"] for e in a.episodes) > 10  # background faults did fire
    assert a.episodes[0].seed == derive_seed(3, "save-after-500", 0)


def test_perturbation_is_deterministic_and_reported(scenario: Path) -> None:
    a = run_battery([scenario], agent=careful, repeat=3, perturbations=[0.7], seed=2)
    b = run_battery([scenario], agent=careful, repeat=3, perturbations=[0.7], seed=2)
    assert [(e.task, e.edits) for e in a.episodes] == [(e.task, e.edits) for e in b.episodes]
    assert {e.epsilon for e in a.episodes} == {0.0, 0.7}  # 0 is added for the metamorphic baseline
    assert any(e.edits for e in a.episodes if e.epsilon == 0.7)


def test_metamorphic_end_state(scenario: Path) -> None:
    # at eps=1 the task says "4832 -> sorry, I mean 4832" with a wrong number first
    bad = run_battery([scenario], agent=first_number, repeat=2, perturbations=[1.0], seed=1)
    perturbed = [e for e in bad.episodes if e.epsilon == 1.0]
    assert all(not e.passed for e in perturbed)
    meta = [c for e in perturbed for c in e.checks if c["name"] == "metamorphic_end_state"]
    assert meta and not any(c["passed"] for c in meta)
    assert "differs from the original" in meta[0]["message"]
    # the unperturbed episodes are untouched by the relation
    assert all(e.passed for e in bad.episodes if e.epsilon == 0.0)

    good = run_battery([scenario], agent=careful, repeat=2, perturbations=[1.0], seed=1)
    assert all(e.passed for e in good.episodes)
    assert all(
        any(c["name"] == "metamorphic_end_state" and c["passed"] for c in e.checks)
        for e in good.episodes
        if e.epsilon == 1.0
    )


def test_replay_reproduces_an_episode(scenario: Path) -> None:
    run = run_battery([scenario], agent=careful, repeat=6, intensities=[0.6], seed=9)
    target = max(run.episodes, key=lambda e: e.attempts["faults"])
    again = run_battery([scenario], agent=careful, intensities=[0.6], episode_seed=target.seed)
    assert len(again.episodes) == 1
    assert slim(again)[0][4:] == slim(run)[run.episodes.index(target)][4:]
    assert f"--episode-seed {target.seed}" in target.replay


def test_examples_battery_by_reference() -> None:
    root = Path(__file__).resolve().parents[2]
    result = run_battery(
        [root / "examples" / "scenarios" / "refund-after-500.yaml"], agent="examples.plain.agents:careful", repeat=2
    )
    assert result.ok and all(e.passed for e in result.episodes)
    naive_run = run_battery(
        [root / "examples" / "scenarios" / "refund-after-500.yaml"], agent="examples.plain.agents:naive"
    )
    assert not naive_run.ok


class _Terminal:
    """A stream that says it is a terminal, to see the one-line bar as a person would."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_and_in_a_log(scenario: Path) -> None:
    import io

    term = _Terminal()
    run_battery([scenario], agent=careful, repeat=4, progress=term)  # type: ignore[arg-type]
    # a rich bar (tests/report/test_terminal.py has more): the last frame shows every episode, then a new line
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.text)
    assert "1/4 episodes" in shown and "4/4 episodes" in shown and "0 failed" in shown and "ETA" in shown
    assert shown.endswith("\n") and "chaoskit: " not in shown

    log = io.StringIO()
    run_battery([scenario], agent=careful, repeat=20, progress=log)
    lines = log.getvalue().splitlines()
    assert all("\r" not in line for line in lines)
    assert lines[-1].startswith("chaoskit: 20/20 episodes, 0 failed, ")
    assert lines[0].startswith("chaoskit: 10/20 episodes, 0 failed, ") and lines[0].endswith("left")


def test_a_battery_whose_tools_bypass_chaoskit_fails_the_gate(scenario: Path) -> None:
    class Unwrapped:
        env = None

        def invoke(self, task: str) -> str:
            return "saved item 7"  # answers without a single tool call going through chaoskit

    result = run_battery([scenario], agent=Unwrapped, repeat=2)
    assert [e.outcome for e in result.episodes] == ["completed", "completed"]
    assert not result.verdict.ok
    assert any(r.startswith("no tool attempt was recorded in any of the 2 episodes") for r in result.verdict.reasons)
    assert run_battery([scenario], agent=careful, repeat=1).verdict.ok


# --- reasons, progress, the task on the trace, and the tools a scenario names (issue 10) ---------------------


def test_progress_counts_metamorphic_failures(scenario: Path) -> None:
    import io

    # first_number reads "4832 -> sorry, I mean 4832" as the wrong item: every perturbed episode fails only
    # through the metamorphic relation, which the final report applies after all episodes ran
    log = io.StringIO()
    result = run_battery([scenario], agent=first_number, repeat=2, perturbations=[1.0], seed=1, progress=log)
    failing = [e for e in result.episodes if not e.passed]
    assert [e.epsilon for e in failing] == [1.0, 1.0]
    assert all(e.base_passed for e in failing)
    assert log.getvalue().splitlines()[-1].startswith("chaoskit: 4/4 episodes, 2 failed, ")


def test_an_oracle_that_raises_shows_the_exception(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO.replace("test_runner:saved_once", "test_runner:broken_oracle"))
    (e,) = run_battery([p], agent=careful).episodes
    end_state = next(c for c in e.checks if c["name"] == "end_state")
    assert end_state["passed"] is False and end_state["severity"] == "fail"
    assert end_state["message"] == ("test_runner:broken_oracle raised KeyError: 'refunds' while checking the end state")
    assert e.oracle == {"ok": False, "state": None, "error": "KeyError: 'refunds'"}
    assert not e.passed


def broken_oracle(env: Store) -> bool:
    return bool(env.__dict__["refunds"])


def test_an_integrations_detailed_crash_reason_is_kept(scenario: Path) -> None:
    import chaoskit

    reason = (
        "agent crashed on a tool error: ToolHTTPError: HTTP 500 (injected http fault); ToolNode 'tools' "
        "re-raised it (handle_tool_errors=False), which ends the run."
    )

    class GraphLike:
        """Records its crash the way chaoskit_langgraph's ToolNode layer does, then lets it escape."""

        def __init__(self) -> None:
            self.env = Store()

        def invoke(self, task: str) -> str:
            exc = RuntimeError("tool node gave up")
            ep = chaoskit.current_episode()
            assert ep is not None
            ep.crash(exc, reason=reason)
            raise exc

    (e,) = run_battery([scenario], agent=GraphLike).episodes
    assert e.outcome == "crashed" and e.error == reason
    outcome = next(c for c in e.checks if c["name"] == "outcome")
    assert outcome == {"name": "outcome", "passed": False, "severity": "fail", "message": reason, "evidence": []}


def test_the_task_is_on_the_episode_span(scenario: Path) -> None:
    from chaoskit.testing import capture_spans

    with capture_spans() as cap:
        run_battery([scenario], agent=careful, perturbations=[0.7], seed=2)
    roots = [dict(s.attributes or {}) for s in cap.spans if s.name.startswith("invoke_agent")]
    assert sorted(r["chaoskit.episode.perturbation"] for r in roots) == [0.0, 0.7]
    plain = next(r for r in roots if r["chaoskit.episode.perturbation"] == 0.0)
    assert plain["chaoskit.episode.task"] == "Save item 4832 now"
    noisy = next(r for r in roots if r["chaoskit.episode.perturbation"] == 0.7)
    assert noisy["chaoskit.episode.task"] != "Save item 4832 now" and "4832" in noisy["chaoskit.episode.task"]


@pytest.mark.parametrize(
    ("old", "new", "field", "line", "suggestion"),
    [
        ("{type: http, tool: save, on_call: 1", "{type: http, tool: sav, on_call: 1", "faults[0].tool", 4, "save"),
        (
            "checks: [no_duplicate_writes, no_bluff]",
            "checks: [no_duplicate_writes, no_bluff]\n  max_attempts: {fech: 2}",
            "success.max_attempts.fech",
            8,
            "fetch",
        ),
        (
            "checks: [no_duplicate_writes, no_bluff]",
            "checks: [no_duplicate_writes, no_bluff]\n  required_tools:\n    - fetch\n    - saver",
            "success.required_tools[1]",
            10,
            "save",
        ),
    ],
)
def test_a_tool_the_agent_lacks_is_an_error_after_the_factory_ran(
    tmp_path: Path, old: str, new: str, field: str, line: int, suggestion: str
) -> None:
    from chaoskit._errors import PlanError

    p = tmp_path / "typo.yaml"
    p.write_text(SCENARIO.replace(old, new))
    made: list[Agent] = []

    def factory() -> Agent:
        made.append(Agent())
        return made[-1]

    with pytest.raises(PlanError) as info:
        run_battery([p], agent=factory)
    msg = str(info.value)
    assert msg.startswith(f"{p}:{line}: {field}: names tool "), msg
    assert f"(did you mean {suggestion!r}?)" in msg and "which the agent does not have" in msg, msg
    assert made, "the tools are checked after the factory ran"


def test_a_wildcard_tool_is_never_unknown(tmp_path: Path) -> None:
    p = tmp_path / "any.yaml"
    p.write_text(SCENARIO.replace("{type: http, tool: save, on_call: 1", '{type: http, tool: "*", on_call: 1'))
    result = run_battery([p], agent=careful)
    assert result.episodes[0].attempts["faults"] == 2  # the first call of fetch and of save


class SupportDesk:
    """A support agent with two tools, ``issue_refund`` and ``lookup_order``, that refunds the order in the task."""

    def __init__(self) -> None:
        self.refunds: list[str] = []

        @chaos(name="lookup_order")
        def lookup_order(order_id: str) -> dict[str, str]:
            return {"order_id": order_id, "status": "delivered", "total": "49.99"}

        @chaos(name="issue_refund", irreversible=True, idempotency_arg="key")
        def issue_refund(order_id: str, amount: float, key: str | None = None) -> dict[str, str]:
            self.refunds.append(order_id)
            return {"refund_id": f"rf_{order_id}"}

        self.lookup_order, self.issue_refund = lookup_order, issue_refund

    def invoke(self, task: str) -> str:
        number = re.search(r"\d+", task)
        assert number is not None, task
        order = self.lookup_order(number.group(0))
        for _ in range(3):
            try:
                self.issue_refund(order["order_id"], float(order["total"]), key=f"refund-{order['order_id']}")
                return f"I refunded ${order['total']} for order {order['order_id']}."
            except Exception:
                continue
        return f"I could not refund order {order['order_id']}: the refund service kept failing."


REFUND_SCENARIO = """\
name: refund-despite-a-flaky-refund-service
task: "Refund order 4832"
faults:
  - {type: http, tool: "TOOL", on_call: 1, status: 503}
success:
  output_contains: ["refunded"]
  checks: [no_duplicate_writes, no_bluff]
"""


def test_a_fault_glob_that_matches_no_tool_is_an_error(tmp_path: Path) -> None:
    from chaoskit._errors import PlanError

    # a pattern no other test's tool matches either: chaoskit knows tool names process-wide
    # before: the fault never fired, `validate` said ok and the run said PASS without testing anything
    p = tmp_path / "refund.yaml"
    p.write_text(REFUND_SCENARIO.replace("TOOL", "refund_zz_*"))
    with pytest.raises(PlanError) as info:
        run_battery([p], agent=SupportDesk)
    msg = str(info.value)
    assert msg.startswith(
        f"{p}:4: faults[0].tool: names tools 'refund_zz_*', a pattern that matches no tool in the "
        "trace of any of its episodes, so its fault never fires; known tools: issue_refund, "
        'lookup_order (or "*" for every tool)'
    ), msg


@pytest.mark.parametrize("glob", ["*_refund", "issue_*", "issue_refun?"])
def test_a_fault_glob_that_matches_a_tool_is_accepted_and_fires(tmp_path: Path, glob: str) -> None:
    p = tmp_path / "refund.yaml"
    p.write_text(REFUND_SCENARIO.replace("TOOL", glob))
    (e,) = run_battery([p], agent=SupportDesk).episodes
    assert e.passed and e.output == "I refunded $49.99 for order 4832."
    assert e.attempts["by_tool"] == {"lookup_order": 1, "issue_refund": 2} and e.attempts["faults"] == 1


class LazyAgent(Agent):
    """Like the tools ``ChaosMiddleware`` or ``ChaosCallbackHandler`` wrap: chaoskit learns the archive tool's
    name only at its first call, after the factory has run."""

    archived: list[str] = []

    def invoke(self, task: str) -> str:
        def archive_ticket_4832(item: str) -> str:
            self.archived.append(item)
            return "archived"

        tool = chaos(archive_ticket_4832)
        for _ in range(3):
            try:
                tool(self._item(task))
                return "archived it"
            except Exception:
                continue
        return "I could not archive it: the archive failed"


def test_a_tool_wrapped_at_its_first_call_is_checked_from_the_trace(tmp_path: Path) -> None:
    from chaoskit._errors import PlanError

    p = tmp_path / "lazy.yaml"
    p.write_text(
        'name: lazy\ntask: "Archive ticket 4832"\nfaults:\n'
        "  - {type: http, tool: archive_ticket_4832, on_call: 1, status: 503}\n"
        'success:\n  output_contains: ["archived"]\n'
    )
    (e,) = run_battery([p], agent=LazyAgent).episodes
    # the fault fired on the tool that existed only once the agent ran, and the agent recovered
    assert e.attempts["by_tool"] == {"archive_ticket_4832": 2} and e.attempts["faults"] == 1 and e.passed
    # a name unlike any tool, never seen in the trace either: an error before anything is reported
    p.write_text(p.read_text().replace("tool: archive_ticket_4832", "tool: purge_everything_9"))
    from chaoskit import ChaosWarning

    with (
        pytest.warns(ChaosWarning, match="'purge_everything_9', but no tool of that name was wrapped or called"),
        pytest.raises(
            PlanError, match=r"faults\[0\]\.tool: names tool 'purge_everything_9'.*never appeared in the trace"
        ),
    ):
        run_battery([p], agent=LazyAgent)
