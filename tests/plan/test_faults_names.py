"""``chaoskit.faults`` gives one name per fault type; the second names of earlier releases still work, with a
DeprecationWarning."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from chaoskit import Plan, faults


def test_each_fault_type_has_one_public_name() -> None:
    classes = [getattr(faults, n) for n in faults.__all__ if isinstance(getattr(faults, n), type)]
    fault_classes = [c for c in classes if issubclass(c, BaseModel)]
    assert len(fault_classes) == len(set(fault_classes)) >= 19
    assert not [n for n in faults.__all__ if n.endswith("Fault") and n != "Fault"]


def test_an_earlier_second_name_still_builds_the_same_fault_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"faults\.HTTPFault is deprecated; use chaoskit\.faults\.HTTP"):
        old = faults.HTTPFault
    assert old is faults.HTTP
    plan = Plan(seed=1, faults=[old(tool="refund", status=500, on_call=1)])
    assert plan.faults[0].type == "http"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchFault"):
        _ = faults.NoSuchFault
