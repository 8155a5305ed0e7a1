"""The classification tables of docs/suggest.md, from ``chaoskit suggest`` itself; ``python -m examples.suggest.table``
prints them, and tests/suggest/test_suggest_docs.py checks the page against them."""

from __future__ import annotations

from chaoskit.suggest import suggest

__all__ = ["AGENTS", "END", "START", "render"]

#: (heading, --agent) for each table
AGENTS = (
    ("scheduling (`@chaos` methods)", "examples.scheduling.agents:careful"),
    ("shop (`@chaos` methods)", "examples.shop.agents:careful"),
    ("travel (LangGraph `create_agent`, `instrument_graph`)", "examples.travel.agents:careful"),
    ("helpdesk (LangChain tools, `ChaosCallbackHandler` marks)", "examples.helpdesk.agents:careful"),
    ("billing (a compiled LangGraph graph)", "examples.suggest.graph:graph"),
    ("billing (an OpenAPI file)", "examples/suggest/legacy-openapi.yaml"),
)
START = "<!-- suggest-table:start -->"
END = "<!-- suggest-table:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """Markdown: one table per agent (tool, kind, idempotency key, collection, structured, and why the kind)."""
    out: list[str] = []
    for heading, ref in AGENTS:
        s = suggest(ref)
        out += [f"### {heading}", "", f"`chaoskit suggest --agent {ref} --dry-run`", ""]
        out += [
            "| tool | kind | idempotency key | collection | structured | why this kind |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for c in s.classes:
            key = f"`{c.idempotency.value}`" if c.idempotency.value else "-"
            out.append(
                f"| `{c.name}` | {c.kind.value} | {key} | {'yes' if c.collection.value else 'no'} | "
                f"{'yes' if c.structured.value else 'no'} | {_cell(c.kind.why)} |"
            )
        found = ", ".join(f"`{f.tool}`: {f.kind}" for f in s.findings) or "none"
        out += ["", f"Contract findings from the declarations: {found}.", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(render(), end="")
