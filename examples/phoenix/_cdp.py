"""Screenshot one page with headless Chromium driven over the Chrome DevTools Protocol, after a click.

    python examples/phoenix/_cdp.py URL OUT.png [--click LABEL ...] [--wait-text TEXT] [--then-text TEXT]
                                    [--size 1600x1000]

Standalone (the standard library and ``websockets``, which Phoenix's venv holds), so that it runs with that
venv's interpreter: it starts Chromium (``--remote-debugging-port=0``, a fresh ``--user-data-dir``, no
background networking), opens URL, waits until the page shows ``--wait-text``, clicks the buttons labelled
``--click`` in turn (an accordion, a tab: what Chromium's ``--screenshot`` flag cannot open), waits until it
shows ``--then-text``, and writes a PNG.
Chromium is stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]
STEP_S = 60.0

# the button labelled with the wanted text (Phoenix's card headers: ``aria-label``), else the clickable element
# whose text starts with it; returns what it clicked, or null
CLICK_JS = """(want) => {
  let hit = [...document.querySelectorAll('button[aria-label]')].find(n => n.getAttribute('aria-label') === want);
  hit = hit || [...document.querySelectorAll('button, [role=button], summary')].find(
    n => (n.innerText || '').trim().startsWith(want));
  if (!hit) return null;
  hit.scrollIntoView({block: 'start'});
  if (hit.getAttribute('aria-expanded') !== 'true') hit.click();
  return hit.outerHTML.slice(0, 200);
}"""


class Page:
    """One page target over its DevTools websocket: send a command, get its result."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=STEP_S))
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        out = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return out.get("result", {}).get("value")

    def click(self, text: str, deadline_s: float = STEP_S) -> str:
        """Click the button labelled ``text`` once the page shows it (polled)."""
        end = time.monotonic() + deadline_s
        while not (hit := self.evaluate(f"({CLICK_JS})({json.dumps(text)})")):
            if time.monotonic() > end:
                raise TimeoutError(f"the page never showed a button labelled {text!r}")
            time.sleep(0.25)
        return str(hit)

    def wait_for_text(self, text: str, deadline_s: float = STEP_S) -> None:
        end = time.monotonic() + deadline_s
        while not self.evaluate(f"document.body && document.body.innerText.includes({json.dumps(text)})"):
            if time.monotonic() > end:
                raise TimeoutError(f"the page never showed {text!r}")
            time.sleep(0.25)


def _port(profile: Path, proc: subprocess.Popen[bytes]) -> int:
    active = profile / "DevToolsActivePort"
    end = time.monotonic() + STEP_S
    while not (active.exists() and active.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"chromium did not open its DevTools port (exit status {proc.poll()})")
        time.sleep(0.1)
    return int(active.read_text().split()[0])


def shoot(
    chromium: str, url: str, out: Path, *, clicks: list[str], wait_text: str | None, then_text: str | None, size: str
) -> None:
    width, height = (int(x) for x in size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="chaoskit-cdp-") as tmp:
        profile = Path(tmp)
        argv = [chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = _port(profile, proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=STEP_S) as resp:
                targets = json.loads(resp.read())
            ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            with connect(ws_url, max_size=64 * 1024 * 1024, open_timeout=STEP_S) as ws:
                page = Page(ws)
                metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
                page.call("Emulation.setDeviceMetricsOverride", **metrics)
                page.call("Page.enable")
                page.call("Page.navigate", url=url)
                if wait_text:
                    page.wait_for_text(wait_text)
                for click in clicks:
                    page.click(click)
                    time.sleep(1.0)  # the accordion's animation, the table it opens
                if then_text:
                    page.wait_for_text(then_text)
                    time.sleep(1.0)
                shot = page.call("Page.captureScreenshot", format="png")
                out.write_bytes(base64.b64decode(shot["data"]))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--click", action="append", default=[], help="a button's label (repeatable, in order)")
    parser.add_argument("--wait-text", help="a text the page shows once loaded (before the clicks)")
    parser.add_argument("--then-text", help="a text the page shows once the clicks took effect")
    parser.add_argument("--size", default="1600x1000")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    shoot(
        args.chromium,
        args.url,
        args.out,
        clicks=args.click,
        wait_text=args.wait_text,
        then_text=args.then_text,
        size=args.size,
    )
    print(f"{args.out}: {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
