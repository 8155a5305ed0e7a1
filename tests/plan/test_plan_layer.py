"""The plan layer on its own: composable triggers, no run state on Plan, a runtime the engine installs."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoskit import ChaoskitError, Plan
from chaoskit.plan import _model
from chaoskit.plan._faults import _FAULT_CLASSES, ErrorFault, ExtensionFault
from chaoskit.plan._locate import _tagged
from chaoskit.plan._triggers import CallState, all_of, calls, every, match, on_call, probability, times, uniform

ROOT = Path(__file__).resolve().parents[2]


def _state(call: int, *, args: dict[str, object] | None = None, fired: int = 0) -> CallState:
    return CallState(seed=3, fault_index=0, tool="t", call=call, args=args, fired={(0, "t"): fired})


def test_each_trigger_is_a_pure_question_about_one_call() -> None:
    assert [n for n in range(1, 8) if on_call(frozenset({2, 5}))(_state(n))] == [2, 5]
    assert [n for n in range(1, 8) if every(3)(_state(n))] == [3, 6]
    assert [n for n in range(1, 8) if calls(2, 4)(_state(n))] == [2, 3, 4]
    assert [n for n in range(1, 8) if calls(5, None)(_state(n))] == [5, 6, 7]
    assert match({"q": 1})(_state(1, args={"q": 1, "x": 2}))
    assert not match({"q": 1})(_state(1, args={"q": 2}))
    assert not match({"q": 1})(_state(1, args=None))  # an entry point that cannot see arguments never matches
    assert times(2)(_state(1, fired=1)) and not times(2)(_state(1, fired=2))
    drawn = [n for n in range(1, 50) if probability(0.3)(_state(n))]
    assert drawn == [n for n in range(1, 50) if uniform(3, 0, "t", n) < 0.3]


def test_triggers_join_with_and_into_one_flat_all_of() -> None:
    joined = every(2) & calls(3, None) & times(1)
    assert isinstance(joined, all_of)
    assert joined.triggers == (every(2), calls(3, None), times(1))
    assert [n for n in range(1, 9) if joined(_state(n))] == [4, 6, 8]
    assert not joined(_state(4, fired=1))


def test_a_fault_builds_its_trigger_once_in_the_fixed_order() -> None:
    assert ErrorFault().trigger is None  # no triggers: fires on every call
    assert ErrorFault(every=2).trigger == every(2)
    fault = ErrorFault(probability=0.5, times=1, calls="2-", on_call=[2, 3])
    assert fault.trigger == all_of(on_call(frozenset({2, 3})), calls(2, None), times(1), probability(0.5))


def test_a_plan_holds_no_run_state_and_compares_by_identity() -> None:
    plan = Plan(faults=[{"type": "error", "times": 1}])
    assert not hasattr(plan, "default_scope")
    assert plan.decide("t", 1, {}, {}) == plan.decide("t", 1, {}, {}) == (0, plan.faults[0])
    assert plan.decide("t", 2, {}, {(0, "t"): 1}) is None  # the budget is the caller's, passed in
    twin = Plan(faults=[{"type": "error", "times": 1}])
    assert plan == plan and plan != twin and plan != plan.model_copy()
    assert len({plan, twin, plan}) == 2  # hashable: the engine keys each plan's counters by the plan


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Plan]] = []

    @contextlib.contextmanager
    def _active(self, plan: Plan) -> Iterator[Plan]:
        self.calls.append(("enter", plan))
        yield plan

    def activate(self, plan: Plan) -> contextlib.AbstractContextManager[Plan]:
        return self._active(plan)

    def reset(self, plan: Plan) -> None:
        self.calls.append(("reset", plan))


def test_activate_and_reset_ask_the_installed_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(_model, "_runtime", None)
    _model.set_runtime(recorder)
    plan = Plan()
    with plan.activate() as active:
        assert active is plan
    plan.reset()
    assert recorder.calls == [("enter", plan), ("reset", plan)]


def test_without_a_runtime_activate_and_reset_say_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model, "_runtime", None)
    for use in (Plan().activate, Plan().reset):
        with pytest.raises(ChaoskitError, match="no plan runtime is installed"):
            use()


def test_error_locating_finds_the_fault_types_from_the_model_itself() -> None:
    # the core's types, and the one member that holds every type another package registers
    assert dict(_tagged(Plan)) == {**_FAULT_CLASSES, "extension": ExtensionFault}


def test_the_plan_layer_imports_nothing_above_it() -> None:
    # a bare parent package: chaoskit/__init__.py (which pulls in every layer) does not run
    code = (
        "import sys, types\n"
        f"pkg = types.ModuleType('chaoskit'); pkg.__path__ = [{str(ROOT / 'chaoskit')!r}]\n"
        "sys.modules['chaoskit'] = pkg\n"
        "import chaoskit.plan\n"
        "print(sorted(m for m in sys.modules if m.startswith('chaoskit')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = eval(proc.stdout)
    assert all(m == "chaoskit" or m == "chaoskit._errors" or m.startswith("chaoskit.plan") for m in loaded), loaded
