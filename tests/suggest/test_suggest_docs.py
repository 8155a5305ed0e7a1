"""docs/suggest.md's classification tables are ``chaoskit suggest``'s own output for the example domains."""

from __future__ import annotations

from pathlib import Path

from chaoskit.suggest import suggest
from examples.suggest.table import AGENTS, END, START, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_matches_what_suggest_says() -> None:
    page = (ROOT / "docs" / "suggest.md").read_text(encoding="utf-8")
    assert START in page and END in page
    shown = page.split(START, 1)[1].split(END, 1)[0].strip()
    assert shown == render().strip(), "regenerate with: python -m examples.suggest.table"


def test_each_table_row_is_one_classified_tool() -> None:
    page = (ROOT / "docs" / "suggest.md").read_text(encoding="utf-8")
    for _heading, ref in AGENTS:
        for c in suggest(ref).classes:
            key = f"`{c.idempotency.value}`" if c.idempotency.value else "-"
            assert f"| `{c.name}` | {c.kind.value} | {key} |" in page, (ref, c.name)
