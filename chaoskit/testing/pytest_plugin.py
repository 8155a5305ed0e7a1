"""pytest plugin for chaoskit (the ``pytest11`` entry point): fault cases as ordinary tests, in their own suite.

Fixtures (nothing here is autouse: installing chaoskit never changes a test suite that does not ask for it):

- ``chaos_episode``: a :class:`chaoskit.testing.ChaosEpisode`, an episode with its own span capture, open for
  the test. Its plan comes from ``@pytest.mark.chaos_plan(...)`` (a dict, a ``Plan``, or the path of a YAML
  plan, relative to the test file) and from a :func:`chaoskit.testing.fault_matrix` parameter; without
  either it runs with the plan already active, or none. ``.trace``, ``.attempts(tool)``, ``.finish(output)``,
  ``.verdicts()``.
- ``chaos_trace``: the finished trace of ``chaos_episode`` (request it after the fixture that runs the agent).
- ``chaoskit_spans``: this test's spans only (``.spans``, ``.attempt_spans(tool)``, ``.trace()``).
- ``chaoskit_plan``: a factory ``chaoskit_plan(*fault_dicts, seed=None)`` returning a plan active for the rest
  of the test.
- ``chaos_replay``: an episode answered from the cassette named by ``@pytest.mark.chaos_replay("path", on_miss=
  "error", ignore=None)`` (relative to the test file; docs/replay.md), under the ``chaos_plan`` mark's faults;
  ``--chaos-record`` runs the real tools instead and (re)writes the cassettes.

Every test using ``chaos_episode``, ``chaos_trace`` or the ``chaos_plan`` mark is marked ``faults``, so
``pytest -m faults`` runs the fault suite and ``-m "not faults"`` the rest. ``--chaos-seed N`` sets the seed
(printed in the header; random when not given); a plan that sets no seed of its own gets one derived from it
and the test id, so that a failing case's rerun line (``pytest 'path::test[id]' --chaos-seed N``) reproduces
it. ``--chaos-report PATH`` writes the session's fault cases as the runner's JSON results, or as its HTML
report when PATH ends in ``.html``; a terminal section sums them up. Under pytest-xdist the workers send
their cases to the controller, which writes one report.

``--chaos-judge MODULE:OBJECT`` (or ``--chaos-judge-url URL``) also asks the rubric grader about every fault
case; its judgment is shown beside the checks in the summary and the report. It only advises, unless
``--chaos-judge-min-kappa K --chaos-judge-calibration FILE`` shows it was calibrated to K: then a case it flags
or cannot judge fails (docs/checks.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import chaoskit.replay as replay
import chaoskit.testing as testing
from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__
from chaoskit.plan._model import Plan
from chaoskit.testing import ChaosEpisode, FaultCase, TraceCapture
from chaoskit.traces._trace import Trace

__all__ = ["chaos_episode", "chaos_replay", "chaos_trace", "chaoskit_plan", "chaoskit_spans"]

_EPISODE_FIXTURES = frozenset({"chaos_episode", "chaos_trace"})
_FIXTURES = _EPISODE_FIXTURES | {"chaoskit_plan", "chaoskit_spans"}
_MARKERS = (
    "faults: a fault case: a test that runs an agent under injected tool faults (chaoskit); tests using "
    "chaos_episode, chaos_trace or chaos_plan are marked so automatically. Run the suite with `pytest -m faults`.",
    "chaos_plan(plan=None, **fields): the chaoskit fault plan of the test's chaos_episode: a dict, a "
    "chaoskit.Plan, or the path of a YAML plan relative to the test file (or the plan's fields as keywords).",
    "chaos_replay(cassette, on_miss='error', ignore=None): the cassette (relative to the test file) that answers "
    "the tool calls of the test's chaos_replay episode; --chaos-record writes it from the real tools.",
)


@dataclass
class _State:
    """The session's chaoskit state (one per pytest config, so in-process pytester runs stay apart)."""

    seed: int
    given: bool
    report: str | None
    started: float = field(default_factory=time.monotonic)
    cases: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, Any] | None = None
    written: Path | None = None
    error: str | None = None
    #: the judge (``--chaos-judge``) and whether it gates
    judge: Any = None
    gates: bool = False


_STATE = pytest.StashKey[_State]()
_CALL = pytest.StashKey[tuple[str, float, str | None]]()
_TRACE_TAKEN = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--chaos-seed N`` and ``--chaos-report PATH``."""
    group = parser.getgroup("chaoskit", "chaoskit fault cases")
    group.addoption(
        "--chaos-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of the fault plans that set none of their own (derived per test from N and its id); "
        "printed in the header, random when not given",
    )
    group.addoption(
        "--chaos-report",
        default=None,
        metavar="PATH",
        help="write the session's fault cases to PATH: the runner's JSON results, or its HTML report for .html",
    )
    group.addoption(
        "--chaos-record",
        action="store_true",
        default=False,
        help="chaos_replay tests run their real tools and (re)write their cassettes (docs/replay.md)",
    )
    for flag, kw in _JUDGE_OPTIONS:
        group.addoption(f"--chaos-{flag}", **kw)


_JUDGE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("judge", {"metavar": "MODULE:OBJECT", "help": "ask this judge model (docs/checks.md) about every fault case"}),
    ("judge-url", {"metavar": "URL", "help": "the judge model behind an OpenAI-compatible endpoint"}),
    ("judge-model", {"metavar": "NAME", "help": "the model name sent to --chaos-judge-url (or the judge's name)"}),
    ("judge-timeout", {"type": float, "default": 60.0, "metavar": "S", "help": "seconds per judge call"}),
    ("judge-cache", {"metavar": "DIR", "help": "where judgments are cached (default ~/.cache/chaoskit/judge)"}),
    ("judge-min-kappa", {"type": float, "metavar": "K", "help": "let a judge calibrated to kappa K fail cases"}),
    ("judge-calibration", {"metavar": "FILE", "help": "the judge's calibration (chaoskit judge calibrate --out)"}),
)


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and fix the session's seed (a worker takes its controller's)."""
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    given = config.getoption("chaos_seed", None)
    worker = getattr(config, "workerinput", None)
    if isinstance(worker, Mapping) and isinstance(worker.get("chaoskit_seed"), int):
        seed = int(worker["chaoskit_seed"])
    elif given is not None:
        if given < 0:
            raise pytest.UsageError(f"--chaos-seed must be a whole number >= 0, got {given}")
        seed = int(given)
    else:
        seed = int.from_bytes(os.urandom(4), "big") % 1_000_000
    state = _State(seed=seed, given=given is not None, report=config.getoption("chaos_report", None))
    config.stash[_STATE] = state
    if config.getoption("chaos_judge", None) or config.getoption("chaos_judge_url", None):
        state.judge, state.gates = _judge_of(config)


def _judge_of(config: pytest.Config) -> tuple[Any, bool]:
    """The session's judge and whether it may gate; a bad option is a usage error, before any test runs."""
    from chaoskit.judge._setup import make_judge, may_gate

    opt = config.getoption
    try:
        judge = make_judge(
            opt("chaos_judge"),
            opt("chaos_judge_url"),
            model=opt("chaos_judge_model"),
            timeout=opt("chaos_judge_timeout"),
            cache_dir=opt("chaos_judge_cache"),
            flag="--chaos-judge",
        )
        may_gate(judge, opt("chaos_judge_min_kappa"), opt("chaos_judge_calibration"), flag="--chaos-judge")
    except ChaoskitError as exc:
        raise pytest.UsageError(str(exc)) from None
    return judge, opt("chaos_judge_min_kappa") is not None


def pytest_report_header(config: pytest.Config) -> str:
    """The seed, and how to run with it again."""
    seed = _state(config).seed
    return f"chaoskit {__version__}: seed {seed} (reproduce with --chaos-seed {seed})"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker uses the controller's seed."""
    node.workerinput["chaoskit_seed"] = _state(node.config).seed


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: take the fault cases a worker ran."""
    data = getattr(node, "workeroutput", {}).get("chaoskit_cases")
    if isinstance(data, str):
        _state(node.config).cases.extend(json.loads(data))


def _uses_episode(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    return (
        bool(names & _EPISODE_FIXTURES) or "chaos_replay" in names or item.get_closest_marker("chaos_plan") is not None
    )


def _fault_cases(item: pytest.Item) -> list[FaultCase]:
    callspec = getattr(item, "callspec", None)
    return list(testing.iter_fault_cases(callspec.params)) if callspec is not None else []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark fault cases ``faults`` before ``-m`` selects tests."""
    for item in items:
        if item.get_closest_marker("faults") is None and (_uses_episode(item) or _fault_cases(item)):
            item.add_marker("faults")


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A :class:`~chaoskit.testing.FaultCase` is named by its readable id (``issue_refund-http-500``)."""
    return val.id if isinstance(val, FaultCase) else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``chaos_plan`` mark needs ``chaos_episode``: without it the plan would silently not apply."""
    if item.get_closest_marker("chaos_plan") is not None and not set(getattr(item, "fixturenames", ())) & {
        *_EPISODE_FIXTURES,
        "chaos_replay",
    }:
        pytest.fail(
            f"{item.nodeid}: @pytest.mark.chaos_plan applies to the chaos_episode fixture, which this test does "
            "not use; add chaos_episode (or chaos_trace) to its arguments, or use chaoskit_plan(...) instead",
            pytrace=False,
        )


def _rerun(item: pytest.Item) -> str:
    where = os.path.relpath(item.path, item.config.invocation_params.dir)
    target = where + ("::" + item.nodeid.split("::", 1)[1] if "::" in item.nodeid else "")
    quoted = f"'{target}'" if "'" not in target else json.dumps(target)
    return f"pytest {quoted} --chaos-seed {_state(item.config).seed}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep the test's outcome for its fault case; a failing case gets the line that reruns just it."""
    outcome: Any = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    error = None
    if call.excinfo is not None:
        text = str(call.excinfo.value).strip() or call.excinfo.exconly()
        error = text[:2000]
    item.stash[_CALL] = (report.outcome, float(report.duration), error)
    if report.failed and (set(getattr(item, "fixturenames", ())) & _FIXTURES or _fault_cases(item)):
        report.sections.append(("chaoskit", f"rerun this case: {_rerun(item)}"))


# -- plans -------------------------------------------------------------------------------------------------


def _mark_plan(item: pytest.Item, marker: pytest.Mark) -> Plan:
    where = f"{item.nodeid}: @pytest.mark.chaos_plan"
    args, kwargs = marker.args, dict(marker.kwargs)
    if len(args) > 1 or (args and kwargs and not isinstance(args[0], Mapping)):
        raise ChaoskitError(f"{where}: give one plan (a dict, a Plan or a YAML path), or its fields as keywords")
    if not args and not kwargs:
        raise ChaoskitError(f"{where}: no plan given; e.g. chaos_plan({{'faults': [...]}}) or chaos_plan('plan.yaml')")
    value = args[0] if args else kwargs
    if isinstance(value, Plan):
        return value
    if isinstance(value, Mapping):
        return Plan.from_dict({**value, **kwargs}, source=where)
    if isinstance(value, str | os.PathLike):
        path = Path(value)
        if not path.is_absolute():
            path = Path(item.path).parent / path
        if not path.is_file():
            raise ChaoskitError(
                f"{where}: plan file {os.fspath(value)!r} not found (looked for {path}; a relative path is "
                "read from the test file's folder)"
            )
        return Plan.from_yaml(path)
    raise ChaoskitError(
        f"{where}: expected a dict, a chaoskit.Plan or the path of a YAML plan, got {type(value).__name__}"
    )


def _test_seed(item: pytest.Item) -> int:
    from chaoskit.runner._grid import derive_seed

    return derive_seed(_state(item.config).seed, item.nodeid, 0)


def _plan_of(item: pytest.Item) -> Plan | None:
    """The test's plan: the mark's faults, then its fault-matrix case's; the test's seed unless it sets one."""
    plans: list[Plan] = []
    marker = item.get_closest_marker("chaos_plan")
    problem = None
    try:
        if marker is not None:
            plans.append(_mark_plan(item, marker))
    except ChaoskitError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    plans.extend(case.plan for case in _fault_cases(item))
    if not plans:
        return None
    first = plans[0]
    explicit = "seed" in first.model_fields_set
    plan = first.with_faults([f for p in plans[1:] for f in p.faults]) if len(plans) > 1 else first
    return plan if explicit else plan.model_copy(update={"seed": _test_seed(item)})


# -- fixtures ----------------------------------------------------------------------------------------------


@pytest.fixture
def chaoskit_spans() -> Iterator[TraceCapture]:
    """This test's spans (``chaoskit_spans.trace()`` reads them as a ``chaoskit.Trace``); spans of tests
    running at the same time in other threads are not included."""
    with testing.capture_spans(own=True) as cap:
        yield cap


@pytest.fixture
def chaoskit_plan(request: pytest.FixtureRequest) -> Iterator[Callable[..., Plan]]:
    """A factory ``chaoskit_plan(*fault_dicts, seed=None)`` returning a plan active for the rest of the test
    (``seed`` defaults to the test's seed, from ``--chaos-seed``)."""
    with ExitStack() as stack:

        def make(*faults: dict[str, Any], seed: int | None = None) -> Plan:
            plan = testing.plan_from(*faults, seed=_test_seed(request.node) if seed is None else seed)
            stack.enter_context(plan.activate())
            return plan

        yield make


@pytest.fixture
def chaos_episode(request: pytest.FixtureRequest) -> Iterator[ChaosEpisode]:
    """An episode with its own span capture, open for the test (see the module docstring)."""
    item = request.node
    case = ChaosEpisode(item.nodeid, plan=_plan_of(item))
    with case:
        yield case
    judged = _record(item, case)
    if judged is not None and judged["gates"] and judged["verdict"] != "pass":
        why = judged.get("error") or ", ".join(judged["flagged"])
        pytest.fail(f"{item.nodeid}: the calibrated judge ({judged['verdict']}): {why}", pytrace=False)
    taken = item.stash.get(_TRACE_TAKEN, None)
    if taken == 0 and case.outside_attempts():
        pytest.fail(
            f"{item.nodeid}: chaos_trace was taken before the agent made any tool call (taking it ends the "
            "episode), and the test's tool calls came after; request chaos_trace after the fixture that runs "
            "the agent, or read chaos_episode.trace after the run",
            pytrace=False,
        )


@pytest.fixture
def chaos_replay(request: pytest.FixtureRequest) -> Iterator[Any]:
    """An episode answered from the test's cassette (``@pytest.mark.chaos_replay``), open for the test; with
    ``--chaos-record``, run against the real tools and written to the cassette."""
    item = request.node
    marker = item.get_closest_marker("chaos_replay")
    if marker is None or len(marker.args) != 1 or not isinstance(marker.args[0], str | os.PathLike):
        pytest.fail(
            f"{item.nodeid}: the chaos_replay fixture needs @pytest.mark.chaos_replay('cassette.jsonl') naming "
            "one cassette (a path relative to the test file)",
            pytrace=False,
        )
    path = Path(item.path).parent / marker.args[0]
    options = dict(marker.kwargs)
    try:
        if request.config.getoption("chaos_record", False):
            episode = replay.episode(item.name, _plan_of(item), record=path)
        else:
            episode = replay.episode(item.name, _plan_of(item), replay=path, **options)
    except ChaoskitError as exc:
        pytest.fail(f"{item.nodeid}: {exc}", pytrace=False)
    try:
        with episode:
            yield episode
    except replay.ReplayMiss as exc:
        # a miss the test's agent caught: fail the test with it, unless the test already failed on it
        called = item.stash.get(_CALL, None)
        if called is None or called[0] != "failed":
            pytest.fail(f"{item.nodeid}: {exc}", pytrace=False)


@pytest.fixture
def chaos_trace(request: pytest.FixtureRequest, chaos_episode: ChaosEpisode) -> Trace:
    """The finished trace of ``chaos_episode``: request it after the fixture that runs the agent."""
    trace = chaos_episode.trace
    request.node.stash[_TRACE_TAKEN] = len(trace.attempts)
    return trace


def _record(item: pytest.Item, case: ChaosEpisode) -> dict[str, Any] | None:
    """File the test as a fault case (passed or failed; skipped and xfailed tests are not cases); with a judge,
    its judgment (also returned)."""
    got = item.stash.get(_CALL, None)
    if got is None or got[0] not in ("passed", "failed"):
        return None
    try:
        trace = case.trace
    except ChaoskitError:
        return None  # tracing off: nothing to grade
    from chaoskit.testing._case_report import case_result

    outcome, duration, error = got
    names = {m.name for m in item.iter_markers()} - {"parametrize", "usefixtures", "filterwarnings", "chaos_plan"}
    case_dict = case_result(
        trace=trace,
        scenario=item.nodeid,
        source=os.path.relpath(item.path, item.config.rootpath),
        task=item.name,
        agent=case.agent,
        seed=case.plan.seed if case.plan is not None else _test_seed(item),
        plan=case.plan,
        passed=outcome == "passed",
        error=error,
        duration_s=duration,
        asserted=case.asserted,
        replay=_rerun(item),
        tags=sorted(names),
    )
    state = _state(item.config)
    if state.judge is not None and trace.episodes:
        from chaoskit.judge import entry

        judgment = state.judge.episode(trace.episodes[0], answer=case_dict["output"] or "")
        case_dict["judge"] = entry(judgment, case_dict["checks"], gates=state.gates)
    state.cases.append(case_dict)
    return case_dict.get("judge")


# -- the end of the session --------------------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its cases to the controller; the controller (or a plain run) writes the report."""
    config = session.config
    state = _state(config)
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output["chaoskit_cases"] = json.dumps(state.cases, default=str)
        return
    if not state.cases and not state.report:
        return
    from chaoskit.testing._case_report import results_of, write_report

    run_config = {
        "seed": state.seed,
        "profile": "the tests' own plans",
        "paths": [str(a) for a in config.args],
        "runner": "pytest",
    }
    state.results = results_of(state.cases, run_config, time.monotonic() - state.started)
    if state.report:
        path = Path(state.report)
        if not path.is_absolute():
            path = config.invocation_params.dir / path
        try:
            state.written = write_report(state.results, path)
        except ChaoskitError as exc:
            state.error = str(exc)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The fault cases: how many passed, the failed checks, the mean score, and each failed case's rerun line."""
    state = _state(config)
    if state.results is None:
        return
    from chaoskit.testing._case_report import summary_lines

    terminalreporter.section("chaoskit fault cases")
    for line in summary_lines(state.results):
        terminalreporter.write_line(line)
    if state.written is not None:
        terminalreporter.write_line(f"chaoskit report: {state.written}")
    if state.error is not None:
        terminalreporter.write_line(f"chaoskit report not written: {state.error}", red=True)
