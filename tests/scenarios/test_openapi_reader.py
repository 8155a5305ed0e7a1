"""One OpenAPI reader for the HTTP proxy, ``chaoskit suggest`` and the runner: same operations, same refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit import ChaoskitError
from chaoskit.scenarios import OpenAPIError, operation_ids, read_operations
from chaoskit.suggest._openapi_tools import read_openapi
from chaoskit.suggest._tool_info import SuggestError

SPEC = """
openapi: 3.0.3
info: {title: shop, version: "1"}
paths:
  /orders/{order_id}:
    parameters: [{name: order_id, in: path, required: true, schema: {type: string}}]
    get: {operationId: get_order, summary: "Look up an order.\\nMore text."}
  /refunds:
    post: {operationId: issue_refund, x-chaoskit-irreversible: true, summary: Refund an order}
  /ping:
    get: {summary: health}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_the_proxy_suggest_and_the_runner_see_the_same_operations(spec: Path) -> None:
    http = pytest.importorskip("chaoskit_http")
    routes = http.load_openapi(spec)
    tools = read_openapi(spec)
    ops = read_operations(spec)
    assert [(r.method, r.template) for r in routes] == [(o.method, o.template) for o in ops]
    assert [t.name for t in tools] == [o.name for o in ops] == ["get_order", "issue_refund", "GET /ping"]
    assert [t.irreversible for t in tools] == [r.irreversible for r in routes] == [None, True, None]
    assert operation_ids(spec) == {"get_order": ("GET", "/orders/{order_id}"), "issue_refund": ("POST", "/refunds")}
    assert ops[0].summary == "Look up an order." and [p.name for p in tools[0].params] == ["order_id"]


BOMB = "openapi: 3.0.3\npaths: {}\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_an_alias_bomb_is_refused_by_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    with pytest.raises(OpenAPIError, match=r"bomb\.yaml"):
        read_operations(path)
    with pytest.raises(SuggestError, match=r"bomb\.yaml"):
        read_openapi(path)
    http = pytest.importorskip("chaoskit_http")
    with pytest.raises(ChaoskitError, match=r"--openapi .*bomb.yaml"):
        http.load_openapi(path)


def test_a_repeated_operation_id_names_both_places(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        "openapi: 3.0.3\npaths:\n  /a: {post: {operationId: pay}}\n  /b: {post: {operationId: pay}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SuggestError, match=r"paths\./b\.post\.operationId: 'pay' is also the operationId of POST /a"):
        read_openapi(path)


def test_a_bad_mark_and_a_missing_file_are_clear(tmp_path: Path) -> None:
    path = tmp_path / "mark.yaml"
    path.write_text("openapi: 3.0.3\npaths:\n  /a: {post: {x-chaoskit-irreversible: 'yes'}}\n", encoding="utf-8")
    with pytest.raises(OpenAPIError, match=r"paths\./a\.post\.x-chaoskit-irreversible: expected true or false"):
        read_operations(path)
    with pytest.raises(OpenAPIError, match="cannot read the OpenAPI file"):
        read_operations(tmp_path / "missing.yaml")
