"""Print the built-in battery's expected outcomes as the Markdown table in docs/battery.md.

Run ``python -m examples.expected_table`` after changing an ``expected*.yaml`` file and paste the output
between the markers in docs/battery.md; ``tests/examples/test_battery_docs.py`` fails while the two differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")


def _tables() -> list[Path]:
    battery = yaml.safe_load((ROOT / "battery.yaml").read_text(encoding="utf-8"))
    return [ROOT / p for p in battery["expect"]]


def _cell(value: Any) -> tuple[str, str]:
    if value == "pass" or (isinstance(value, dict) and value.get("pass")):
        return "pass", value.get("why", "") if isinstance(value, dict) else ""
    checks = value["fail"] if isinstance(value, dict) else []
    return "**fail**: " + ", ".join(f"`{c}`" for c in checks), value.get("why", "") if isinstance(value, dict) else ""


def render() -> str:
    """The Markdown: one section per table, one row per scenario and agent, with the reason."""
    out: list[str] = []
    for path in _tables():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))["expect"]
        out += [f"### `examples/{path.relative_to(ROOT).as_posix()}`", "", "| scenario | agent | expected | why |"]
        out.append("| --- | --- | --- | --- |")
        for scenario, agents in data.items():
            for agent in sorted(agents, key=lambda a: AGENTS.index(a) if a in AGENTS else len(AGENTS)):
                outcome, why = _cell(agents[agent])
                out.append(f"| `{scenario}` | {agent} | {outcome} | {why.replace('|', '/')} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
