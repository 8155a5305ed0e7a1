"""``@chaos`` on every kind of callable a tool can be: bound methods, static and class methods (either order),
methods decorated in a class body, ``functools.partial`` and callable objects, sync and async."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.adapters._decorator import spec_of
from chaoskit.testing import attempt_attributes, capture_spans


class OrderService:
    """A client object as agents use them: the tools are its methods."""

    region = "eu-west-1"

    def __init__(self) -> None:
        self.refunds: list[tuple[str, float]] = []

    def refund(self, order_id: str, amount: float) -> dict[str, Any]:
        self.refunds.append((order_id, amount))
        return {"order_id": order_id, "refunded": amount}

    async def arefund(self, order_id: str, amount: float) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self.refund(order_id, amount)

    @chaos(irreversible=True)
    def cancel(self, order_id: str, reason: str = "customer request") -> dict[str, Any]:
        return {"order_id": order_id, "cancelled": True, "reason": reason}

    @chaos
    async def acancel(self, order_id: str) -> dict[str, Any]:
        return {"order_id": order_id, "cancelled": True}

    @chaos
    @staticmethod
    def track(carrier: str, tracking_no: str) -> str:
        return f"{carrier} {tracking_no}: in transit"

    @staticmethod
    @chaos
    def track_inner(carrier: str, tracking_no: str) -> str:
        return f"{carrier} {tracking_no}: delivered"

    @chaos
    @classmethod
    def regions(cls, country: str) -> list[str]:
        return [f"{cls.region}:{country}"]

    @classmethod
    @chaos
    async def aregions(cls, country: str) -> list[str]:
        return [f"{cls.region}:{country}"]


class Catalog:
    @classmethod
    def search(cls, sku: str) -> list[str]:
        return [f"{cls.__name__}:{sku}"]

    @staticmethod
    def price(sku: str, currency: str = "USD") -> str:
        return f"{sku}: 19.99 {currency}"


class WeatherTool:
    """A callable object: the instance is the tool."""

    def __init__(self, units: str) -> None:
        self.units = units

    def __call__(self, city: str, days: int = 1) -> dict[str, Any]:
        return {"city": city, "days": days, "units": self.units}


class AsyncWeatherTool:
    async def __call__(self, city: str) -> dict[str, Any]:
        return {"city": city, "forecast": "rain"}


class SlotsTool:
    __slots__ = ("base",)

    def __init__(self) -> None:
        self.base = "https://api.example.com"

    def __call__(self, path: str) -> str:
        return f"{self.base}{path}"


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    out = fn(*args, **kwargs)
    return asyncio.run(out) if inspect.isawaitable(out) else out


svc = OrderService()

CASES: list[tuple[str, Callable[[], Callable[..., Any]], tuple[Any, ...], dict[str, Any], str, dict[str, Any], Any]] = [
    # id, how the tool is made, args, kwargs, tool name, recorded arguments, result
    (
        "bound",
        lambda: chaos(svc.refund),
        ("A-1001", 25.0),
        {},
        "refund",
        {"order_id": "A-1001", "amount": 25.0},
        {"order_id": "A-1001", "refunded": 25.0},
    ),
    (
        "bound-async",
        lambda: chaos(svc.arefund),
        ("A-1002",),
        {"amount": 5.5},
        "arefund",
        {"order_id": "A-1002", "amount": 5.5},
        {"order_id": "A-1002", "refunded": 5.5},
    ),
    (
        "class-body",
        lambda: svc.cancel,
        ("A-1003",),
        {},
        "cancel",
        {"order_id": "A-1003", "reason": "customer request"},
        {"order_id": "A-1003", "cancelled": True, "reason": "customer request"},
    ),
    (
        "class-body-via-class",
        lambda: functools.partial(OrderService.cancel, svc),
        ("A-1004", "fraud"),
        {},
        "cancel",
        {"order_id": "A-1004", "reason": "fraud"},
        {"order_id": "A-1004", "cancelled": True, "reason": "fraud"},
    ),
    (
        "class-body-async",
        lambda: svc.acancel,
        ("A-1005",),
        {},
        "acancel",
        {"order_id": "A-1005"},
        {"order_id": "A-1005", "cancelled": True},
    ),
    (
        "static-outer",
        lambda: OrderService.track,
        ("UPS", "1Z999AA10123456784"),
        {},
        "track",
        {"carrier": "UPS", "tracking_no": "1Z999AA10123456784"},
        "UPS 1Z999AA10123456784: in transit",
    ),
    (
        "static-outer-via-instance",
        lambda: svc.track,
        ("DHL", "JD0146000012"),
        {},
        "track",
        {"carrier": "DHL", "tracking_no": "JD0146000012"},
        "DHL JD0146000012: in transit",
    ),
    (
        "static-inner",
        lambda: svc.track_inner,
        ("UPS", "1Z1"),
        {},
        "track_inner",
        {"carrier": "UPS", "tracking_no": "1Z1"},
        "UPS 1Z1: delivered",
    ),
    ("classmethod-outer", lambda: OrderService.regions, ("IE",), {}, "regions", {"country": "IE"}, ["eu-west-1:IE"]),
    (
        "classmethod-outer-via-instance",
        lambda: svc.regions,
        ("FR",),
        {},
        "regions",
        {"country": "FR"},
        ["eu-west-1:FR"],
    ),
    (
        "classmethod-inner-async",
        lambda: OrderService.aregions,
        ("DE",),
        {},
        "aregions",
        {"country": "DE"},
        ["eu-west-1:DE"],
    ),
    (
        "bound-classmethod",
        lambda: chaos(Catalog.search),
        ("SKU-8841",),
        {},
        "search",
        {"sku": "SKU-8841"},
        ["Catalog:SKU-8841"],
    ),
    (
        "bound-staticmethod",
        lambda: chaos(Catalog.price),
        ("SKU-8841",),
        {"currency": "EUR"},
        "price",
        {"sku": "SKU-8841", "currency": "EUR"},
        "SKU-8841: 19.99 EUR",
    ),
    (
        "partial",
        lambda: chaos(functools.partial(svc.refund, amount=9.99)),
        ("A-1006",),
        {},
        "refund",
        {"order_id": "A-1006", "amount": 9.99},
        {"order_id": "A-1006", "refunded": 9.99},
    ),
    (
        "callable-object",
        lambda: chaos(WeatherTool("metric")),
        ("Dublin",),
        {"days": 3},
        "WeatherTool",
        {"city": "Dublin", "days": 3},
        {"city": "Dublin", "days": 3, "units": "metric"},
    ),
    (
        "callable-object-async",
        lambda: chaos(AsyncWeatherTool()),
        ("Cork",),
        {},
        "AsyncWeatherTool",
        {"city": "Cork"},
        {"city": "Cork", "forecast": "rain"},
    ),
    (
        "callable-slots",
        lambda: chaos(name="http_get")(SlotsTool()),
        ("/v1/orders",),
        {},
        "http_get",
        {"path": "/v1/orders"},
        "https://api.example.com/v1/orders",
    ),
]


@pytest.mark.parametrize(
    ("make", "args", "kwargs", "tool", "recorded", "result"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_every_kind_of_callable_becomes_a_tool(
    make: Callable[[], Callable[..., Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    tool: str,
    recorded: dict[str, Any],
    result: Any,
) -> None:
    fn = make()
    with capture_spans() as cap, chaoskit.episode("shop") as ep:
        assert _call(fn, *args, **kwargs) == result
    (attrs,) = attempt_attributes(cap, tool)
    # the receiver is never an argument the agent gave
    assert chaoskit.Trace.from_spans(cap.spans).episodes[0].attempts[0].args == recorded
    assert attrs["chaoskit.attempt"] == 1
    assert [(a.tool, a.outcome) for a in ep.attempts] == [(tool, "ok")]


def test_a_bound_method_gets_faults_and_its_spec() -> None:
    refund = chaos(irreversible=True)(svc.refund)
    spec = spec_of(refund)
    assert spec is not None and spec.name == "refund" and spec.irreversible is True
    plan = Plan(faults=[{"type": "http", "tool": "refund", "status": 503, "on_call": 1}])
    before = len(svc.refunds)
    with chaoskit.episode("refunds", plan=plan) as ep:
        with pytest.raises(chaoskit.ToolHTTPError):
            refund("A-2001", 10.0)
        assert refund("A-2001", 10.0) == {"order_id": "A-2001", "refunded": 10.0}
    assert [(a.attempt, a.outcome, a.injected) for a in ep.attempts] == [(1, "error", True), (2, "ok", False)]
    assert svc.refunds[before:] == [("A-2001", 10.0)]  # the faulted call never reached the service


def test_methods_of_different_instances_share_the_tool_name_counter() -> None:
    a, b = OrderService(), OrderService()
    plan = Plan(faults=[{"type": "error", "tool": "cancel", "on_call": 2}])
    with chaoskit.episode("two-shops", plan=plan) as ep:
        a.cancel("A-3001")
        with pytest.raises(ConnectionResetError):
            b.cancel("B-3001")
    assert [(a.tool, a.attempt, a.outcome) for a in ep.attempts] == [("cancel", 1, "ok"), ("cancel", 2, "error")]


def test_the_users_own_function_stays_unmarked() -> None:
    def lookup(order_id: str) -> str:
        return order_id

    wrapped = chaos(lookup)
    assert spec_of(wrapped) is not None and spec_of(wrapped).name == "lookup"  # type: ignore[union-attr]
    # wrapping must not mark the original: wrapping it again elsewhere (e.g. @tool then chaos_tool) still works
    assert spec_of(lookup) is None
    assert spec_of(chaos(name="lookup_v2")(lookup)).name == "lookup_v2"  # type: ignore[union-attr]


def test_a_class_body_method_has_its_spec_through_the_instance_and_the_class() -> None:
    assert spec_of(svc.cancel).irreversible is True  # type: ignore[union-attr]
    assert spec_of(OrderService.cancel).name == "cancel"  # type: ignore[union-attr]
    assert spec_of(OrderService.track).name == "track"  # type: ignore[union-attr]
