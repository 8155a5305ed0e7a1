"""The judge in the HTML report: its totals, the episodes where it and the checks disagree, each judgment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.report._html_data import episodes_of, label_of
from chaoskit.report._svg import esc

__all__ = ["judge_block", "judge_section"]

#: the most disagreeing episodes listed in the judge section
MAX_ROWS = 100

_WORD = {"pass": ("pass", "honest"), "fail": ("fail", "FLAGGED"), "cannot_judge": ("fail", "CANNOT JUDGE")}


def _badge(j: Mapping[str, Any]) -> str:
    cls, word = _WORD.get(str(j.get("verdict")), ("fail", "?"))
    return f'<span class="badge {cls}">{word}</span>'


def judge_block(e: Mapping[str, Any]) -> str:
    """An episode's judgment (verdict, each label's value and reason, tokens, cost), or "" when not judged."""
    j = e.get("judge")
    if not isinstance(j, Mapping):
        return ""
    role = "gates" if j.get("gates") else "advisory: the deterministic checks gate"
    head = f"<h4>Judge</h4><p>{_badge(j)} <code>{esc(j.get('model', '?'))}</code> \u00b7 {esc(j.get('rubric', '?'))}"
    head += f" \u00b7 {role}"
    tokens = j.get("tokens") or {}
    if tokens.get("input") is not None:
        head += f" \u00b7 tokens {esc(tokens.get('input'))} in / {esc(tokens.get('output'))} out"
    if j.get("cost") is not None:
        head += f" \u00b7 cost {esc(j['cost'])} {esc(j.get('currency') or '')}"
    head += " \u00b7 from cache</p>" if j.get("cached") else "</p>"
    if j.get("disagreement"):
        head += f'<p class="message"><strong>Disagreement:</strong> {esc(j["disagreement"])}</p>'
    if j.get("status") != "judged":
        return head + f'<p class="message">cannot judge: {esc(j.get("error") or "?")}</p>'
    verdicts, reasons = j.get("verdicts") or {}, j.get("reasons") or {}
    rows = "".join(
        f'<tr><td><span class="badge {"fail" if v else "pass"}">{"yes" if v else "no"}</span></td>'
        f"<td><code>{esc(label)}</code></td><td>{esc(reasons.get(label, ''))}</td></tr>"
        for label, v in verdicts.items()
    )
    return (
        head + '<table class="checks"><thead><tr><th>found</th><th>question</th><th>reason</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def judge_section(results: Mapping[str, Any]) -> str:
    """The judge's totals and a table of the episodes where it and the deterministic answer checks disagree,
    or could not judge; "" when the run had no judge."""
    judged = [e for e in episodes_of(results) if isinstance(e.get("judge"), Mapping)]
    if not judged:
        return ""
    js = [e["judge"] for e in judged]
    gates = any(j.get("gates") for j in js)
    counts = {v: sum(1 for j in js if j.get("verdict") == v) for v in ("pass", "fail", "cannot_judge")}
    apart = [e for e in judged if e["judge"].get("agree") is False or e["judge"].get("verdict") == "cannot_judge"]
    out = [
        '<section id="judge"><h2>Judge</h2>',
        f'<p class="note">Model <code>{esc(js[0].get("model", "?"))}</code>, rubric {esc(js[0].get("rubric", "?"))}: '
        f"{counts['pass']} honest, {counts['fail']} flagged, {counts['cannot_judge']} cannot judge, "
        f"{sum(1 for j in js if j.get('agree') is False)} disagree with the deterministic answer checks. "
        + (
            "The judge gates too (calibrated: --judge-min-kappa)."
            if gates
            else "The deterministic checks gate; the judge only advises."
        )
        + "</p>",
    ]
    if apart:
        out.append(
            '<table class="failures"><thead><tr><th>scenario</th><th>agent</th><th>judge</th>'
            "<th>deterministic</th><th>why</th></tr></thead><tbody>"
        )
        for e in apart[:MAX_ROWS]:
            j = e["judge"]
            det = j.get("deterministic") or "-"
            why = j.get("disagreement") or j.get("error") or ""
            out.append(
                f"<tr><td>{esc(e.get('scenario', '?'))}</td><td>{esc(label_of(e))}</td><td>{_badge(j)}</td>"
                f"<td>{esc(det)}</td><td>{esc(why)}</td></tr>"
            )
        out.append("</tbody></table>")
    out.append("</section>")
    return "\n".join(out)
