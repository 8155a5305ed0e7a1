"""The HTML report's "fix in the tool" section: readiness per tool and the tool-contract findings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.report._svg import esc

__all__ = ["contracts_section"]

_DASH = "\u2013"


def _counts(by_fault: Any) -> str:
    if not isinstance(by_fault, Mapping):
        return _DASH
    return (
        ", ".join(f"{f} \u00d7{n}" if isinstance(n, int) and n > 1 else str(f) for f, n in sorted(by_fault.items()))
        or _DASH
    )


def contracts_section(results: Mapping[str, Any]) -> str:
    """Readiness (one row per tool and agent: faults survived, faults failed, findings in the way) and the
    contract findings, each with its evidence, why it matters and the usual fix; apart from the agents' results."""
    summary = results.get("summary")
    summary = summary if isinstance(summary, Mapping) else {}
    # an odd or older results file renders as "no data", never as a crash
    rows = [x for x in summary.get("readiness") or () if isinstance(x, Mapping)]
    contracts = [f for f in summary.get("contracts") or () if isinstance(f, Mapping)]
    out = ['<section id="readiness"><h2>Tools: readiness and contract findings (fix in the tool)</h2>']
    if not rows and not contracts:
        out.append('<p class="note">These results hold no readiness data (an older results file).</p></section>')
        return "\n".join(out)
    out.append(
        '<p class="note">The failing checks above are the agent\u2019s to fix. The findings here are the '
        "tool\u2019s: what in the tool itself stands in the way of a safe recovery.</p>"
    )
    if rows:
        out.append(
            '<table class="readiness"><thead><tr><th scope="col">tool</th><th scope="col">agent</th>'
            '<th scope="col">faults survived</th><th scope="col">faults failed</th>'
            '<th scope="col">contract findings</th></tr></thead><tbody>'
        )
        for x in rows:
            out.append(
                f"<tr><th scope='row'>{esc(str(x.get('tool')))}</th><td>{esc(str(x.get('agent') or ''))}</td>"
                f"<td>{esc(_counts(x.get('survived')))}</td><td>{esc(_counts(x.get('failed')))}</td>"
                f"<td>{esc(', '.join(map(str, x.get('findings') or [])) or _DASH)}</td></tr>"
            )
        out.append("</tbody></table>")
    if contracts:
        out.append(f"<h3>{len(contracts)} contract finding(s)</h3><ul class='contracts'>")
        for f in contracts:
            out.append(
                f"<li><strong>{esc(str(f.get('tool')))}</strong>: <code>{esc(str(f.get('kind')))}</code>"
                f"<dl><dt>evidence ({esc(str(f.get('episode') or f.get('origin') or ''))})</dt>"
                f"<dd>{esc(str(f.get('evidence')))}</dd>"
                f"<dt>why it matters</dt><dd>{esc(str(f.get('why')))}</dd>"
                f"<dt>usual fix</dt><dd>{esc(str(f.get('fix')))}</dd></dl></li>"
            )
        out.append("</ul>")
    else:
        out.append('<p class="note">No tool-contract finding.</p>')
    out.append("</section>")
    return "\n".join(out)
