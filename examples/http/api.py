"""A tiny shop REST API (ASGI) for the HTTP proxy example: look an order up, refund it, list its refunds.

    python examples/http/api.py --port 9000
    python examples/http/api.py --port 0 --ready-file api.url   # a free port; its URL is written to api.url

``POST /refunds`` honours ``Idempotency-Key``: a repeat with a key it has seen returns the first refund and
writes nothing. Without a key every call is a new refund, which is what ``no_duplicate_writes`` catches.
"""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path
from typing import Any

ORDERS = {"A-1001": {"id": "A-1001", "total": 42.5, "status": "delivered"}}


class ShopApi:
    """The API, with the refunds it has written (``refunds``) for tests to read."""

    def __init__(self) -> None:
        self.refunds: list[dict[str, Any]] = []
        self.by_key: dict[str, dict[str, Any]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if method == "GET" and path.startswith("/orders/"):
            order = ORDERS.get(path.rsplit("/", 1)[1])
            await _answer(send, 200 if order else 404, order or {"error": "no such order"})
        elif method == "POST" and path == "/refunds":
            await self._refund(send, json.loads(body or b"{}"), headers.get("idempotency-key"))
        elif method == "GET" and path == "/refunds":
            await _answer(send, 200, self.refunds)
        else:
            await _answer(send, 404, {"error": f"no route {method} {path}"})

    async def _refund(self, send: Any, data: dict[str, Any], key: str | None) -> None:
        if key is not None and key in self.by_key:
            await _answer(send, 200, self.by_key[key])
            return
        if data.get("order_id") not in ORDERS:
            await _answer(send, 404, {"error": "no such order"})
            return
        refund = {"refund_id": f"R-{len(self.refunds) + 1}", "order_id": data["order_id"], "amount": data["amount"]}
        self.refunds.append(refund)
        if key is not None:
            self.by_key[key] = refund
        await _answer(send, 201, refund)


async def _answer(send: Any, status: int, value: Any) -> None:
    body = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="the example shop API")
    parser.add_argument("--port", type=int, default=9000, help="0 picks a free port")
    parser.add_argument("--ready-file", help="write the API's URL here once it accepts connections")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)  # connections queue from here on: the URL can be handed out before uvicorn runs
    if args.ready_file:
        ready = Path(args.ready_file)
        partial = ready.with_name(ready.name + ".part")
        partial.write_text(f"http://127.0.0.1:{sock.getsockname()[1]}\n", encoding="utf-8")
        partial.replace(ready)  # whole or not at all
    config = uvicorn.Config(ShopApi(), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
