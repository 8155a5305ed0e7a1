"""The failing-check table and the episode list of the HTML report, each episode with its attempts and model calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.report._html_data import episodes_of, expected_of, failing_checks, label_of, pick_episodes
from chaoskit.report._html_judge import judge_block
from chaoskit.report._svg import esc
from chaoskit.report._svg_timeline import timeline

__all__ = ["episodes_section", "failures_section"]

#: the most rows of the failing-check table, and of one episode's attempt table
MAX_FAILURE_ROWS = 200
MAX_ATTEMPT_ROWS = 60
#: the most characters of an agent's output or task shown (the JSON results have all of it)
MAX_TEXT = 2000


def _clip(text: Any) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + f"\u2026 ({len(s) - MAX_TEXT} more characters)"


def _g(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def failures_section(results: Mapping[str, Any]) -> str:
    """Every failing check, per scenario and agent, with its message and a command that replays one episode."""
    rows = failing_checks(results)
    out = ['<section id="failures"><h2>Failing checks</h2>']
    if not rows:
        out.append('<p class="note">No check failed.</p></section>')
        return "\n".join(out)
    note = (
        "One row per scenario, agent and check; the replay command reruns the first episode the check failed in, "
        "with the same seed and faults."
    )
    if any(r["expected"] for r in rows):
        note += (
            " Rows marked <em>expected</em> are failures the expected-outcome table predicts (flawed agents that "
            "prove the checks work): they are not reasons for the verdict. Unexpected rows come first."
        )
    out.append(f'<p class="note">{note}</p>')
    out.append(
        '<table class="failures"><thead><tr><th>scenario</th><th>agent</th><th>check</th><th>failed in</th>'
        "<th>message and replay</th></tr></thead><tbody>"
    )
    for r in rows[:MAX_FAILURE_ROWS]:
        row_cls, badge = "", ""
        if r["expected"]:
            row_cls, badge = ' class="expected"', ' <span class="badge expected">expected</span>'
        out.append(
            f"<tr{row_cls}><td>{esc(r['scenario'])}</td>"
            f"<td>{esc(r['agent'])}</td><td><code>{esc(r['check'])}</code>{badge}</td>"
            f'<td class="num">{r["failed"]}/{r["runs"]}</td><td><div class="message">{esc(r["message"])}</div>'
            f'<div>replay: <code class="replay">{esc(r["replay"])}</code></div></td></tr>'
        )
    out.append("</tbody></table>")
    if len(rows) > MAX_FAILURE_ROWS:
        out.append(f'<p class="note">{len(rows) - MAX_FAILURE_ROWS} more failing checks not listed.</p>')
    out.append("</section>")
    return "\n".join(out)


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
        f"<tr><td>{esc(x.get('tool', '?'))}</td><td class='num'>{esc(_g(x.get('attempt')))}</td>"
        f"<td class='num'>{esc(_g(x.get('t_ms')))}</td><td class='num'>{esc(_g(x.get('ms')))}</td>"
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
        f"<tr><td>chat {esc(x.get('model', '?'))}</td><td class='num'>{esc(_g(x.get('call')))}</td>"
        f"<td class='num'>{esc(_g(x.get('t_ms')))}</td><td class='num'>{esc(_g(x.get('ms')))}</td>"
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
        f"<td class='num'>{esc(_g(c.get('attempts')))}</td></tr>"
        for c in calls[:MAX_ATTEMPT_ROWS]
    )
    return (
        '<h4>Calls</h4><p class="note">Each call (tool and arguments) as the answer checks grade it: ok, failed, '
        "faulted (the agent got empty, cut, wrong or stale data), written (a write that answered with an error, "
        "never confirmed), confirmed (such a write, confirmed by a later read), cancelled.</p>"
        '<table class="calls"><thead><tr><th>tool</th><th>arguments</th><th>status</th><th>faults</th>'
        f"<th>attempts</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _episode(e: Mapping[str, Any], i: int, expected: set[tuple[str, str]]) -> str:
    passed = bool(e.get("passed"))
    cls, word = ("pass", "PASS") if passed else ("fail", "FAIL")
    if not passed and (str(e.get("scenario", "?")), str(e.get("agent", ""))) in expected:
        word = "FAIL (expected)"
    name = (
        f"{e.get('scenario', '?')} \u00b7 {label_of(e)} \u00b7 rep {_g(e.get('repetition'))} \u00b7 "
        f"\u03b5 {_g(e.get('epsilon'))} \u00b7 \u03bb {_g(e.get('intensity'))}"
    )
    a = e.get("attempts") if isinstance(e.get("attempts"), Mapping) else {}
    assert isinstance(a, Mapping)
    head = (
        f'<summary><span class="badge {cls}">{word}</span> {esc(name)} \u00b7 score {esc(_g(e.get("score")))} '
        f"\u00b7 {esc(_g(a.get('total')))} attempts</summary>"
    )
    facts = [
        ("agent", f"<code>{esc(e.get('agent', ''))}</code>"),
        ("seed", esc(_g(e.get("seed")))),
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


def episodes_section(results: Mapping[str, Any], limit: int) -> str:
    """The episodes, each in a closed ``<details>`` (facts, final answer, checks, attempt timeline): failing
    first, at most ``limit``, and a line counting the ones left out."""
    total = len(episodes_of(results))
    chosen, omitted, omitted_failing = pick_episodes(results, limit)
    out = [
        '<section id="episodes"><h2>Episodes</h2>',
        f'<p class="note">{len(chosen)} of {total} episodes listed, failing ones first; open one for its checks '
        "and the timeline of its tool attempts.</p>",
        '<p class="toolbar" hidden><button type="button" id="expand-all">open all</button>'
        '<button type="button" id="collapse-all">close all</button>'
        '<button type="button" id="only-failing" aria-pressed="false">only failing</button></p>',
    ]
    expected = expected_of(results)
    out.extend(_episode(e, i, expected) for i, e in enumerate(chosen))
    if omitted:
        out.append(
            f'<p class="omitted">{omitted} more episodes not listed ({omitted_failing} of them failing); the JSON '
            "results have every one.</p>"
        )
    out.append("</section>")
    return "\n".join(out)
