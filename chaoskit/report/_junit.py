"""The JUnit XML report of a battery: one test case per episode, for CI systems that show test results."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from chaoskit.runner._results import BatteryResult

__all__ = ["write_junit"]


def write_junit(result: BatteryResult, path: str | os.PathLike[str]) -> None:
    """One test case per scenario x agent x repetition (x grid point when the grid has more than one); the
    agent is named when the battery ran more than one."""
    many = len({e.agent for e in result.episodes}) > 1
    eps_set = {e.epsilon for e in result.episodes}
    lam_set = {e.intensity for e in result.episodes}
    failures = sum(1 for e in result.episodes if not e.passed and e.outcome == "completed")
    errors = sum(1 for e in result.episodes if not e.passed and e.outcome != "completed")
    total_time = sum(e.duration_s for e in result.episodes)
    # the suite and the file around it carry the same counts
    counts = {"tests": str(len(result.episodes)), "failures": str(failures), "errors": str(errors)}
    counts["time"] = f"{total_time:.3f}"
    suites = ET.Element("testsuites", {"name": "chaoskit", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": "chaoskit run", **counts})
    props = ET.SubElement(suite, "properties")
    for key in ("seed", "repeat", "k", "theta"):
        ET.SubElement(props, "property", name=key, value=str(result.config.get(key)))
    ET.SubElement(props, "property", name="verdict", value="pass" if result.ok else "fail")
    for e in result.episodes:
        name = f"{e.scenario} [" + (f"{e.agent_label}, " if many else "") + f"rep {e.repetition}"
        if len(eps_set) > 1 or len(lam_set) > 1:
            name += f", eps {e.epsilon:g}, lam {e.intensity:g}"
        name += "]"
        case = ET.SubElement(
            suite, "testcase", classname=f"chaoskit.{e.scenario}", name=name, time=f"{e.duration_s:.3f}"
        )
        if not e.passed:
            bad = e.failed_checks()
            first = bad[0]["message"] if bad else e.outcome
            text = "\n".join(
                [
                    *(f"{c['name']}: {c['message']}" for c in bad),
                    f"output: {e.output!r}",
                    f"seed: {e.seed}",
                    f"replay: {e.replay}",
                ]
            )
            tag = "failure" if e.outcome == "completed" else "error"
            el = ET.SubElement(case, tag, message=first[:500], type=bad[0]["name"] if bad else e.outcome)
            el.text = text
        out = ET.SubElement(case, "system-out")
        out.text = f"task: {e.task}\nscore: {e.score}\nreplay: {e.replay}\n"
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(p, encoding="utf-8", xml_declaration=True)
