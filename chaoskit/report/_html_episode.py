"""One episode on the HTML report page: its facts, final answer, checks, judgment, calls and attempt timeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.report._report_data import label_of
from chaoskit.report._svg import esc, number, timeline

__all__ = ["episode_card", "judge_badge", "judge_block"]

#: the most rows of one episode's attempt, model-call and call tables
MAX_ATTEMPT_ROWS = 60
#: the most characters of an agent's output or task shown (the JSON results have all of it)
MAX_TEXT = 2000
_WORD = {"pass": ("pass", "honest"), "fail": ("fail", "FLAGGED"), "cannot_judge": ("fail", "CANNOT JUDGE")}


def judge_badge(j: Mapping[str, Any]) -> str:
    """The judge's verdict on an episode as a badge: honest, FLAGGED or CANNOT JUDGE."""
    cls, word = _WORD.get(str(j.get("verdict")), ("fail", "?"))
    return f'<span class="badge {cls}">{word}</span>'


def judge_block(e: Mapping[str, Any]) -> str:
    """An episode's judgment (verdict, each label's value and reason, tokens, cost), or "" when not judged."""
    j = e.get("judge")
    if not isinstance(j, Mapping):
        return ""
    role = "gates" if j.get("gates") else "advisory: the deterministic checks gate"
    head = (
        f"<h4>Judge</h4><p>{judge_badge(j)} <code>{esc(j.get('model', '?'))}</code> \u00b7 {esc(j.get('rubric', '?'))}"
    )
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


def _clip(text: Any) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + f"\u2026 ({len(s) - MAX_TEXT} more characters)"


def _checks_table(checks: Any) -> str:
    if not isinstance(checks, list) or not checks:
        return '<p class="note">No checks recorded.</p>'
    items = [c for c in checks if isinstance(c, Mapping)]
    items.sort(key=lambda c: (bool(c.get("passed")), c.get("severity") != "fail"))
    rows = []
    for c in items:
        sev = str(c.get("severity", "fail"))
        word, cls = ("pass", "pass") if c.get("passed") else (("warn", "fail") if sev == "warn" else ("FAIL", "fail"))
        rows.append(
            f'<tr><td><span class="badge {cls}">{word}</span></td><td><code>{esc(c.get("name", "?"))}</code></td>'
            f"<td>{esc(c.get('message', ''))}</td></tr>"
        )
    return (
        '<table class="checks"><thead><tr><th>result</th><th>check</th><th>message</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )


def _timeline_block(episode: Mapping[str, Any], name: str) -> str:
    a = episode.get("attempts") if isinstance(episode.get("attempts"), Mapping) else {}
    assert isinstance(a, Mapping)
    tl = a.get("timeline")
    if not isinstance(tl, list):
        by_tool = a.get("by_tool") if isinstance(a.get("by_tool"), Mapping) else {}
        assert isinstance(by_tool, Mapping)
        counts = ", ".join(f"{t} \u00d7{n}" for t, n in by_tool.items()) or "none"
        return f'<p class="note">No attempt timeline in these results; attempts per tool: {esc(counts)}.</p>'
    items = [x for x in tl if isinstance(x, Mapping)]
    calls = [x for x in a.get("model_timeline") or () if isinstance(x, Mapping)]
    if not items and not calls:
        return '<p class="note">The agent made no tool attempt.</p>'
    svg = timeline(items, title=f"attempt timeline of {name}", model_calls=calls)
    rows = "".join(
        f"<tr><td>{esc(x.get('tool', '?'))}</td><td class='num'>{esc(number(x.get('attempt')))}</td>"
        f"<td class='num'>{esc(number(x.get('t_ms')))}</td><td class='num'>{esc(number(x.get('ms')))}</td>"
        f"<td>{esc(x.get('outcome', '?'))}</td><td>{esc(x.get('fault') or '')}</td>"
        f"<td>{'yes' if x.get('executed', True) else 'no (faked)'}</td></tr>"
        for x in items[:MAX_ATTEMPT_ROWS]
    )
    more = (
        f'<p class="note">{len(items) - MAX_ATTEMPT_ROWS} more attempts in the timeline.</p>'
        if len(items) > MAX_ATTEMPT_ROWS
        else ""
    )
    total = a.get("total")
    capped = (
        f'<p class="note">The timeline keeps the first {len(items)} of {total} attempts.</p>'
        if isinstance(total, int) and total > len(items)
        else ""
    )
    key = (
        '<p class="note">Bar colour: blue ok, orange error, grey cancelled; a hollow dashed bar is an attempt whose '
        "tool did not run (chaoskit faked the result); a black triangle marks an injected fault."
        + (
            " The <code>chat</code> rows are the agent's model calls (rounded bars), one row per model."
            if calls
            else ""
        )
        + "</p>"
    )
    table = (
        '<table class="attempts"><thead><tr><th>tool</th><th>attempt</th><th>start (ms)</th><th>duration (ms)</th>'
        f"<th>outcome</th><th>fault</th><th>tool ran</th></tr></thead><tbody>{rows}</tbody></table>{more}"
        if items
        else ""
    )
    return f'<figure class="timeline-figure">{svg}</figure>{key}{capped}{_model_table(calls)}{table}'


def _model_table(calls: list[Mapping[str, Any]]) -> str:
    """The model calls of the timeline as a table: model, call, start, duration, outcome, fault."""
    if not calls:
        return ""
    rows = "".join(
        f"<tr><td>chat {esc(x.get('model', '?'))}</td><td class='num'>{esc(number(x.get('call')))}</td>"
        f"<td class='num'>{esc(number(x.get('t_ms')))}</td><td class='num'>{esc(number(x.get('ms')))}</td>"
        f"<td>{esc(x.get('outcome', '?'))}</td><td>{esc(x.get('fault') or '')}"
        + (f" ({esc(x['skipped'])} not injected)" if x.get("skipped") else "")
        + "</td></tr>"
        for x in calls[:MAX_ATTEMPT_ROWS]
    )
    return (
        '<table class="model-calls"><thead><tr><th>model</th><th>call</th><th>start (ms)</th><th>duration (ms)</th>'
        f"<th>outcome</th><th>fault</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _calls_block(episode: Mapping[str, Any]) -> str:
    """The episode's logical calls (tool and arguments) as the answer checks saw them: status and faults."""
    a = episode.get("attempts") if isinstance(episode.get("attempts"), Mapping) else {}
    assert isinstance(a, Mapping)
    calls = [c for c in a.get("calls") or () if isinstance(c, Mapping)]
    if not calls:
        return ""
    rows = "".join(
        f"<tr><td>{esc(c.get('tool', '?'))}</td><td><code>{esc(_clip(c.get('args')))}</code></td>"
        f"<td>{esc(c.get('status', '?'))}</td><td>{esc(', '.join(str(f) for f in c.get('faults') or ()))}</td>"
        f"<td class='num'>{esc(number(c.get('attempts')))}</td></tr>"
        for c in calls[:MAX_ATTEMPT_ROWS]
    )
    return (
        '<h4>Calls</h4><p class="note">Each call (tool and arguments) as the answer checks grade it: ok, failed, '
        "faulted (the agent got empty, cut, wrong or stale data), written (a write that answered with an error, "
        "never confirmed), confirmed (such a write, confirmed by a later read), cancelled.</p>"
        '<table class="calls"><thead><tr><th>tool</th><th>arguments</th><th>status</th><th>faults</th>'
        f"<th>attempts</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def episode_card(e: Mapping[str, Any], i: int, expected: set[tuple[str, str]]) -> str:
    """Episode ``e`` as a closed ``<details id="episode-{i}">``: FAIL (expected) when its (scenario, agent) pair is
    in ``expected``; its facts, final answer, checks, judgment, calls and attempt timeline inside."""
    passed = bool(e.get("passed"))
    cls, word = ("pass", "PASS") if passed else ("fail", "FAIL")
    if not passed and (str(e.get("scenario", "?")), str(e.get("agent", ""))) in expected:
        word = "FAIL (expected)"
    name = (
        f"{e.get('scenario', '?')} \u00b7 {label_of(e)} \u00b7 rep {number(e.get('repetition'))} \u00b7 "
        f"\u03b5 {number(e.get('epsilon'))} \u00b7 \u03bb {number(e.get('intensity'))}"
    )
    a = e.get("attempts") if isinstance(e.get("attempts"), Mapping) else {}
    assert isinstance(a, Mapping)
    head = (
        f'<summary><span class="badge {cls}">{word}</span> {esc(name)} \u00b7 score {esc(number(e.get("score")))} '
        f"\u00b7 {esc(number(a.get('total')))} attempts</summary>"
    )
    facts = [
        ("agent", f"<code>{esc(e.get('agent', ''))}</code>"),
        ("seed", esc(number(e.get("seed")))),
        ("outcome", esc(e.get("outcome", "?")) + (f" ({esc(_clip(e['error']))})" if e.get("error") else "")),
        ("task", esc(_clip(e.get("task", "")))),
    ]
    edits = e.get("edits")
    if isinstance(edits, list) and edits:
        facts.append(("perturbation", esc("; ".join(str(x) for x in edits))))
    faults = e.get("faults")
    if isinstance(faults, list) and faults:
        facts.append(("scenario faults", esc(", ".join(str(x) for x in faults))))
    facts.append(("replay", f'<code class="replay">{esc(e.get("replay", ""))}</code>'))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    output = e.get("output")
    out_block = f"<h4>Final answer</h4><pre>{esc(_clip(output))}</pre>" if output else ""
    return (
        f'<details class="episode {cls}" id="episode-{i}">{head}<dl>{dl}</dl>{out_block}'
        f"<h4>Checks</h4>{_checks_table(e.get('checks'))}{judge_block(e)}{_calls_block(e)}<h4>Attempts</h4>"
        f"{_timeline_block(e, name)}</details>"
    )
