"""``chaoskit check`` made faster without a change a user can see: the same JSON text, the same public names.

The JSON report is written by orjson when it writes exactly what ``json.dumps(indent=2, ensure_ascii=False)``
writes; these tests re-render the report with the standard module and require the same text, for answers with
control characters, quotes and non-ASCII text, and for scores holding floats the two would write differently.
``chaoskit check FILE`` loads only the grading layer (no runner, engine, OpenTelemetry SDK or rich), and the
lazily imported ``chaoskit`` package still hands out every public name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers import issue_refund, read_page

import chaoskit
from chaoskit import Plan, Score, telemetry
from chaoskit.cli._main import main
from chaoskit.grading._score import ScorePart

PLAN = Plan(
    seed=2,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "prompt_injection", "tool": "read_page", "on_call": 1},
    ],
)

#: final answers an agent may give: a tab and a bell, quotes and backslashes, accents, an emoji, and the line
#: breaks that JSON leaves unescaped (U+2028, U+2029, U+0085)
ANSWERS = (
    "Refund issued.\tRef:\x07 4832",
    'She said "done" \\ twice.',
    "Remboursé : 12,50 € — commande nº 4832 ✓ 🎉",
    "line one\u2028line two\u2029line three\x85line four\nline five",
)


def _trace_file(tmp_path: Path) -> Path:
    lines = []
    for i, answer in enumerate(ANSWERS):
        with telemetry.capture() as cap:
            with chaoskit.episode(f"refund-{i}", plan=PLAN) as ep:
                read_page("https://shop.example/orders/4832")
                for _ in range(2):
                    try:
                        issue_refund("4832")
                        break
                    except chaoskit.ToolHTTPError:
                        pass
                ep.finish(answer)
            lines.append(json.dumps(telemetry.to_otlp_json(cap.spans)))
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _as_json_dumps_writes_it(report: dict[str, Any]) -> str:
    """The report laid out as ``chaoskit check --json`` lays it out, every episode by ``json.dumps``."""
    # each line indented: lines end at "\n" only, not at the U+2028, U+2029 or U+0085 json leaves unescaped in
    # strings (textwrap.indent, which cut there too, once put four spaces inside such an answer)
    episodes = ",\n".join(
        "\n".join("    " + line for line in json.dumps(e, indent=2, ensure_ascii=False).split("\n"))
        for e in report["episodes"]
    )
    body = f"\n{episodes}\n  " if episodes else ""
    return f'{{\n  "passed": {json.dumps(report["passed"])},\n  "episodes": [{body}]\n}}\n'


def test_json_report_is_the_text_json_dumps_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace_file(tmp_path)
    assert main(["check", "--json", str(path)]) == 1  # the refund was repeated without a key
    out = capsys.readouterr().out
    report = json.loads(out)
    assert [e["output"] for e in report["episodes"]] == list(ANSWERS)
    assert all(e["checks"] for e in report["episodes"])
    assert out == _as_json_dumps_writes_it(report)


@pytest.mark.parametrize("tiny", [2.5e-05, float("nan"), 1e16, -0.0, 1 / 3])
def test_floats_orjson_writes_differently_are_written_as_json_does(
    tiny: float, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a score as a custom weighting could give: floats json and orjson write differently must come out as json's
    import chaoskit.cli._check as check_cli

    def odd_score(*args: object, **kwargs: object) -> Score:
        return Score(tiny, (ScorePart("task success", tiny, 1.0, "custom"),))

    monkeypatch.setattr(check_cli, "score", odd_score)
    assert main(["check", "--json", str(_trace_file(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert f'"value": {json.dumps(tiny)},' in out
    assert out == _as_json_dumps_writes_it(json.loads(out))


def test_check_of_a_file_loads_only_the_grading_layer(tmp_path: Path) -> None:
    path = _trace_file(tmp_path)
    probe = (
        "import sys\n"
        "from chaoskit.cli._main import main\n"
        f"rc = main(['check', {str(path)!r}])\n"
        "heavy = ('chaoskit.runner', 'chaoskit.engine', 'chaoskit.report', 'chaoskit.plan', 'chaoskit.telemetry',\n"
        "         'opentelemetry.sdk', 'rich', 'pydantic', 'yaml', 'http.client', 'importlib.metadata')\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert "episode refund-0" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "1 []"


def test_lazy_package_hands_out_every_public_name() -> None:
    probe = (
        "import sys\n"
        "import chaoskit\n"
        "assert not [m for m in sys.modules if m.startswith(('opentelemetry', 'chaoskit.runner', 'pydantic'))]\n"
        "from chaoskit import Trace, checks, episode\n"
        "missing = [n for n in chaoskit.__all__ if getattr(chaoskit, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(chaoskit.__all__) <= set(dir(chaoskit))\n"
        "assert chaoskit.Trace is Trace and chaoskit.checks is checks\n"
        "try:\n"
        "    chaoskit.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "module 'chaoskit' has no attribute 'no_such_name'"


def test_a_capture_reads_as_a_trace_after_import_chaoskit() -> None:
    # the hook from telemetry's captures to the grading readers is set when a public name is first used
    probe = (
        "import chaoskit\n"
        "with chaoskit.telemetry.capture() as cap:\n"
        "    with chaoskit.episode('hooked') as ep:\n"
        "        ep.finish('ok')\n"
        "print([e.name for e in cap.trace().episodes])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['hooked']"
