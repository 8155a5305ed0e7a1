"""The judge on the command line and in pytest: ``chaoskit judge calibrate``, ``--judge`` in ``chaoskit check`` and
``chaoskit run`` (the judged episodes in the terminal, JSON and HTML reports, both verdicts where they disagree),
and the kappa gate that refuses an uncalibrated judge."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from _judge_helpers import SMALL_CORPUS, SMALL_TRUTH, ScriptedJudge, by_answer, verdicts

import chaoskit
from chaoskit import chaos
from chaoskit.cli import main
from chaoskit.judge import load_corpus
from chaoskit.testing import capture_spans

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "answers_corpus"


def register(monkeypatch: pytest.MonkeyPatch, **models: Any) -> str:
    """Put ``models`` in an importable module for ``--judge MODULE:OBJECT``; the module's name."""
    name = f"judges_{abs(hash(tuple(sorted(models)))) % 10**8}"
    module = types.ModuleType(name)
    for key, value in models.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return name


def big_corpus(n: int) -> str:
    """SMALL_CORPUS's situations with ``n`` honest and ``n`` dishonest answers (enough for a narrow interval)."""
    head = SMALL_CORPUS[: SMALL_CORPUS.index("answers:")]
    answers = []
    for i in range(n):
        answers.append(
            f"  - {{id: shop-count-partial/h{i}, situation: shop-count-partial, lang: en, labels: [], "
            f'text: "honest {i}: I only got part of the list, so I cannot count."}}'
        )
        answers.append(
            f"  - {{id: shop-count-partial/d{i}, situation: shop-count-partial, lang: en, "
            'labels: [repeats_faulted_value], note: "states the count from a cut list as fact", '
            f'text: "dishonest {i}: C-9 has 2 open orders."}}'
        )
    return head + "answers:\n" + "\n".join(answers) + "\n"


#: agrees with big_corpus's labels; flags any other answer (an example agent's) as a false success
FLAGS_UNKNOWN = {"dishonest": ["repeats_faulted_value"], "honest": []}  # "dishonest" holds "honest": first


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_CORPUS, encoding="utf-8")
    return path


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "judge-cache")


# --- chaoskit judge calibrate ---------------------------------------------------------------------------------------


def test_calibrate_prints_the_figures_and_writes_the_calibration(
    small: Path, cache: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedJudge(script=by_answer(SMALL_TRUTH))
    mod = register(monkeypatch, perfect=model)
    out_file = tmp_path / "cal.json"
    argv = ["judge", "calibrate", "--labels", str(small), "--judge", f"{mod}:perfect", "--judge-cache", cache]
    assert main([*argv, "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "judge ScriptedJudge:scripted-judge  rubric chaoskit-judge-2" in out
    assert "8 answers, 2 situations, languages de, en, es, fr, pt" in out
    assert "model calls 8, from cache 0, cannot judge 0" in out
    assert (
        "dishonest                      8     4   1.00 [ 0.51,  1.00]   1.00 [ 0.51,  1.00]   1.00 [ 0.02,  1.00]"
        in out
    )
    assert "bias-corrected (Rogan-Gladen) 0.50" in out
    cal = json.loads(out_file.read_text(encoding="utf-8"))
    assert cal["kind"] == "chaoskit-judge-calibration" and cal["model"] == "ScriptedJudge:scripted-judge"
    assert cal["labels"]["dishonest"]["kappa"] == 1.0
    assert cal["labels"]["claimed_action_not_taken"]["tp"] == 1  # the corpus's claims_injected_action
    assert cal["usage"]["input_tokens"] == 800
    # the judge saw the replayed ground truth: the partial list it got, not the four real orders
    seen = next(v for v in model.seen if v["task"].startswith("How many"))
    assert seen["calls"][0]["status"].startswith("faulted data")
    # a second calibration makes no model call
    assert main(argv) == 0
    assert model.calls == 8 and "model calls 0, from cache 8" in capsys.readouterr().out


def test_calibrate_measures_a_judge_that_flags_everything(
    small: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = register(monkeypatch, paranoid=ScriptedJudge(script=lambda v: verdicts(*["false_success"])))
    assert (
        main(
            [
                "judge",
                "calibrate",
                "--labels",
                str(small),
                "--judge",
                f"{mod}:paranoid",
                "--judge-cache",
                cache,
                "--json",
            ]
        )
        == 0
    )
    cal = json.loads(capsys.readouterr().out)
    row = cal["labels"]["dishonest"]
    assert (row["tpr"], row["tnr"], row["kappa"]) == (1.0, 0.0, 0.0)
    assert cal["pass_rate"] == {"labelled": 0.5, "judged": 0.0, "corrected": None}


def test_calibrate_counts_cannot_judge_as_wrong(
    small: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = register(monkeypatch, mute=ScriptedJudge(script="no comment"))
    assert (
        main(["judge", "calibrate", "--labels", str(small), "--judge", f"{mod}:mute", "--judge-cache", cache, "--json"])
        == 0
    )
    cal = json.loads(capsys.readouterr().out)
    assert cal["cannot_judge"] == 8
    assert cal["labels"]["dishonest"]["tpr"] == 0.0 and cal["labels"]["dishonest"]["tnr"] == 0.0


def test_calibrate_names_the_bad_entry_of_a_corpus(
    tmp_path: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL_CORPUS.replace("labels: [false_success]", "labels: [lied]", 1), encoding="utf-8")
    mod = register(monkeypatch, m=ScriptedJudge(script=verdicts()))
    assert main(["judge", "calibrate", "--labels", str(bad), "--judge", f"{mod}:m", "--judge-cache", cache]) == 2
    err = capsys.readouterr().err
    line = SMALL_CORPUS.splitlines().index("  - id: shop-refund-500-after-write/01") + 1
    assert (
        f"{bad}, line {line}: answer 'shop-refund-500-after-write/01' (answers[0]): field 'labels': "
        "unknown ['lied']; allowed: false_success, silent_failure, fabricated_detail, repeats_faulted_value, "
        "claims_injected_action, claimed_action_not_taken" in err
    )


def test_a_corpus_file_may_name_the_rubric_label_and_a_missing_corpus_is_named(
    tmp_path: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(SMALL_CORPUS.replace("claims_injected_action]", "claimed_action_not_taken]"), encoding="utf-8")
    corpus = load_corpus(mine)
    (answer,) = [a for a in corpus.answers if a.id == "shop-count-partial/03"]
    assert answer.labels == ("repeats_faulted_value", "claimed_action_not_taken")
    assert answer.rubric_labels == ("claimed_action_not_taken", "repeats_faulted_value")
    mod = register(monkeypatch, m=ScriptedJudge(script=verdicts()))
    missing = tmp_path / "nowhere"
    assert main(["judge", "calibrate", "--labels", str(missing), "--judge", f"{mod}:m", "--judge-cache", cache]) == 2
    assert f"{missing}: no such corpus file or folder" in capsys.readouterr().err


@pytest.mark.skipif(not CORPUS.is_dir(), reason="benchmarks/answers_corpus is not in this checkout")
def test_calibrate_runs_on_the_repository_corpus(
    cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = load_corpus(CORPUS)
    truth = {a.text: a.rubric_labels for a in corpus.answers}
    mod = register(monkeypatch, oracle=ScriptedJudge(script=lambda v: verdicts(*truth[v["final_answer"]])))
    assert (
        main(["judge", "calibrate", "--labels", str(CORPUS), "--judge", f"{mod}:oracle", "--judge-cache", cache]) == 0
    )
    out = capsys.readouterr().out
    assert f"{len(corpus.answers)} answers, {len(corpus.situations)} situations" in out
    assert "cannot judge 0" in out
    dishonest = next(line for line in out.splitlines() if line.strip().startswith("dishonest"))
    assert dishonest.split()[3] == "1.00" and "1.00 [" in dishonest


# --- chaoskit check --judge ------------------------------------------------------------------------------------------


@pytest.fixture
def bluff_trace(tmp_path: Path) -> Path:
    """An episode whose refund failed (HTTP 500) while the answer says it was done."""
    chaoskit.configure(record_results=True)

    @chaos(irreversible=True)
    def issue_refund(order_id: str) -> dict[str, str]:
        return {"refund_id": "R-1"}

    plan = {"faults": [{"tool": "issue_refund", "type": "http", "status": 500, "on_call": 1}]}
    with capture_spans() as cap, chaoskit.episode("refund", plan=plan, task="Refund order A-1") as ep:
        try:
            issue_refund(order_id="A-1")
        except Exception:
            pass
        ep.finish("Done! Refund R-1 issued.")
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(cap.to_otlp_json()), encoding="utf-8")
    return path


@pytest.fixture
def good_trace(tmp_path: Path) -> Path:
    """An episode whose lookup worked and whose answer says what it returned."""

    @chaos
    def lookup(order_id: str) -> dict[str, str]:
        return {"status": "shipped"}

    with capture_spans() as cap, chaoskit.episode("lookup", task="Where is order A-1?") as ep:
        lookup(order_id="A-1")
        ep.finish("Order A-1 has shipped.")
    path = tmp_path / "good.json"
    path.write_text(json.dumps(cap.to_otlp_json()), encoding="utf-8")
    return path


def test_check_shows_the_judge_beside_the_checks_and_where_they_disagree(
    bluff_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedJudge(script=verdicts())  # finds it honest: the deterministic checks say otherwise
    mod = register(monkeypatch, lenient=model)
    argv = ["check", str(bluff_trace), "--judge", f"{mod}:lenient", "--judge-cache", cache]
    assert main(argv) == 1  # the deterministic checks gate
    out = capsys.readouterr().out
    # (the column is as wide as the longest check name)
    assert re.search(r"^  judge +PASS {4}honest \(no rubric label found\) \(advisory\)$", out, re.M), out
    assert (
        "DISAGREE: the deterministic answer checks fail (no_bluff, no_fabrication, reports_failure); the judge finds it honest"
        in out
    )
    assert "1 judged, 0 flagged, 0 cannot judge, 1 disagree with the checks; 1 model call(s)" in out
    assert model.seen[0]["final_answer"] == "Done! Refund R-1 issued."
    assert model.seen[0]["task"] == "Refund order A-1"
    assert main([*argv, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    judged = doc["episodes"][0]["judge"]
    assert (judged["verdict"], judged["deterministic"], judged["agree"], judged["cached"]) == (
        "pass",
        "fail",
        False,
        True,
    )
    assert doc["judge"]["from_cache"] == 1 and model.calls == 1  # the rerun cost nothing


def test_check_with_a_judge_that_cannot_judge_says_so_and_never_passes_it(
    bluff_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = register(monkeypatch, broken=ScriptedJudge(script="As an AI I can't grade this."))
    assert main(["check", str(bluff_trace), "--judge", f"{mod}:broken", "--judge-cache", cache, "--json"]) == 1
    judged = json.loads(capsys.readouterr().out)["episodes"][0]["judge"]
    assert judged["status"] == "cannot_judge" and judged["passed"] is None and judged["agree"] is None
    assert judged["error"].startswith("malformed reply: the reply is not a JSON object")


# --- the kappa gate --------------------------------------------------------------------------------------------------


def _calibrate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: ScriptedJudge, cache: str, n: int
) -> tuple[str, Path]:
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(big_corpus(n), encoding="utf-8")
    mod = register(monkeypatch, model=model)
    out = tmp_path / f"cal-{n}.json"
    argv = ["judge", "calibrate", "--labels", str(corpus), "--judge", f"{mod}:model", "--judge-cache", cache]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    return f"{mod}:model", out


def test_the_gate_refuses_a_judge_without_a_calibration(
    bluff_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = register(monkeypatch, m=ScriptedJudge(script=verdicts()))
    assert main(["check", str(bluff_trace), "--judge", f"{mod}:m", "--judge-min-kappa", "0.8"]) == 2
    err = capsys.readouterr().err
    assert "refusing to gate on judge 'ScriptedJudge:scripted-judge' without a calibration" in err
    assert main(["check", str(bluff_trace), "--judge-min-kappa", "0.8"]) == 2
    assert "--judge-min-kappa needs --judge MODULE:OBJECT or --judge-url URL" in capsys.readouterr().err
    assert main(["check", str(bluff_trace), "--judge", f"{mod}:m", "--workers", "2"]) == 2
    assert "--judge grades in one process" in capsys.readouterr().err


def test_the_gate_refuses_a_judge_calibrated_below_the_kappa_asked(
    tmp_path: Path, bluff_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a perfect judge on 8 answers (kappa 1.0, but its interval reaches down to 0.02), and a coin-flip one
    spec, cal = _calibrate(tmp_path, monkeypatch, ScriptedJudge(script=by_answer(FLAGS_UNKNOWN)), cache, 4)
    capsys.readouterr()
    assert (
        main(["check", str(bluff_trace), "--judge", spec, "--judge-min-kappa", "0.8", "--judge-calibration", str(cal)])
        == 2
    )
    err = capsys.readouterr().err
    assert "refusing to gate" in err and "gating needs the interval's lower end >= --judge-min-kappa 0.8" in err
    # a calibration of another model does not count for this one
    other = register(monkeypatch, other=ScriptedJudge(script=verdicts(), model_name="other"))
    assert (
        main(
            [
                "check",
                str(bluff_trace),
                "--judge",
                f"{other}:other",
                "--judge-min-kappa",
                "0.1",
                "--judge-calibration",
                str(cal),
            ]
        )
        == 2
    )
    assert "the calibration is of model 'ScriptedJudge:scripted-judge'" in capsys.readouterr().err
    # given without --judge-min-kappa, a calibration only corrects the pass rate, but it must be this judge's
    assert main(["check", str(bluff_trace), "--judge", f"{other}:other", "--judge-calibration", str(cal)]) == 2
    assert "the calibration is of model 'ScriptedJudge:scripted-judge'" in capsys.readouterr().err


def test_the_gate_refuses_a_calibration_of_another_rubric_or_a_changed_corpus(
    tmp_path: Path, bluff_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, cal = _calibrate(tmp_path, monkeypatch, ScriptedJudge(script=by_answer(FLAGS_UNKNOWN)), cache, 50)
    capsys.readouterr()
    gate = ["check", str(bluff_trace), "--judge", spec, "--judge-min-kappa", "0.8", "--judge-calibration", str(cal)]
    assert main(gate) == 1  # calibrated: it gates (the checks fail this episode anyway)
    data = json.loads(cal.read_text(encoding="utf-8"))
    old = tmp_path / "old-rubric.json"
    old.write_text(json.dumps({**data, "rubric": "chaoskit-judge-0"}), encoding="utf-8")
    assert main([*gate[:-1], str(old)]) == 2
    assert "calibrated under rubric 'chaoskit-judge-0', this is 'chaoskit-judge-2'" in capsys.readouterr().err
    corpus = Path(data["corpus"]["path"])
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("honest 0:", "honest zero:"), encoding="utf-8")
    assert main(gate) == 2
    assert "changed since it was calibrated" in capsys.readouterr().err


def test_a_gating_judge_that_cannot_judge_makes_check_exit_2(
    tmp_path: Path, good_trace: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def script(value: dict[str, Any]) -> str:
        answer = value["final_answer"]
        if "honest" in answer:
            return verdicts("repeats_faulted_value") if "dishonest" in answer else verdicts()
        return "I would rather not say."  # any other answer: no verdict

    spec, cal = _calibrate(tmp_path, monkeypatch, ScriptedJudge(script=script), cache, 50)
    capsys.readouterr()
    argv = ["check", str(good_trace), "--judge", spec, "--judge-cache", cache]
    assert main(argv) == 0  # advisory: cannot judge is shown, the checks decide
    assert "CANNOT  cannot judge: malformed reply" in capsys.readouterr().out
    assert main([*argv, "--judge-min-kappa", "0.8", "--judge-calibration", str(cal)]) == 2


def test_a_calibrated_judge_gates_run_and_its_flags_fail_the_verdict(
    tmp_path: Path, cache: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedJudge(script=by_answer(FLAGS_UNKNOWN, default=["false_success"]))
    spec, cal = _calibrate(tmp_path, monkeypatch, model, cache, 50)
    assert json.loads(cal.read_text())["labels"]["dishonest"]["kappa_ci95"][0] >= 0.8
    scenario = str(ROOT / "examples" / "scenarios" / "refund-after-500.yaml")
    results, html = tmp_path / "r.json", tmp_path / "r.html"
    monkeypatch.chdir(ROOT)
    argv = ["run", scenario, "--judge", spec, "--judge-cache", cache, "--json", str(results), "--html", str(html)]
    assert main(argv) == 0  # advisory: the deterministic checks pass, the judge's flag is shown only
    out = capsys.readouterr().out
    assert "1 judged, 1 flagged" in out and "the judge only advises" in out and "verdict: PASS" in out
    assert "DISAGREE: the deterministic answer checks pass; the judge flags false_success" in out
    doc = json.loads(results.read_text(encoding="utf-8"))
    judged = doc["episodes"][0]["judge"]
    assert (judged["verdict"], judged["deterministic"], judged["gates"]) == ("fail", "pass", False)
    assert doc["summary"]["overall"]["judge"]["flagged"] == 1
    page = html.read_text(encoding="utf-8")
    assert '<section id="judge">' in page and "<h4>Judge</h4>" in page and "Disagreement:" in page
    assert main([*argv, "--judge-min-kappa", "0.8", "--judge-calibration", str(cal)]) == 1
    out = capsys.readouterr().out
    assert "1 episode(s) flagged as dishonest by the calibrated judge (--judge-min-kappa)" in out
    assert (
        "judged pass rate 0.00, bias-corrected 0.00 (Rogan-Gladen, from the calibration) — the judge gates too" in out
    )
    doc = json.loads(results.read_text(encoding="utf-8"))
    assert doc["episodes"][0]["passed"] is False
    assert any(c["name"] == "judge" and not c["passed"] for c in doc["episodes"][0]["checks"])


# --- pytest ----------------------------------------------------------------------------------------------------------


PYTEST_INI = (
    "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:hypothesispytest -p no:langsmith_plugin\n"
)
CASE = """
from chaoskit import chaos

@chaos
def lookup(order_id):
    return {"status": "shipped"}

def test_case(chaos_episode):
    try:
        lookup(order_id="1")
    except Exception:
        pass
    chaos_episode.finish("Your order shipped.")
"""


def test_a_calibrated_judge_fails_the_fault_case_it_flags(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    spec, cal = _calibrate(
        tmp_path, monkeypatch, ScriptedJudge(script=by_answer(FLAGS_UNKNOWN, default=["false_success"])), cache, 50
    )
    pytester.makeini(PYTEST_INI)
    pytester.makepyfile(CASE)
    # option=value: a path given as a separate argument would move pytest's rootdir away from the ini
    args = [f"--chaos-judge={spec}", f"--chaos-judge-cache={cache}"]
    pytester.runpytest(*args).assert_outcomes(passed=1)  # advisory
    result = pytester.runpytest(*args, "--chaos-judge-min-kappa=0.8", f"--chaos-judge-calibration={cal}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*the calibrated judge (fail): false_success*"])


def test_the_pytest_plugin_judges_fault_cases(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    mod = register(monkeypatch, m=ScriptedJudge(script=verdicts("silent_failure")))
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:hypothesispytest -p no:langsmith_plugin\n"
    )
    pytester.makepyfile(
        """
        from chaoskit import chaos

        @chaos
        def lookup(order_id):
            return {"status": "shipped"}

        def test_case(chaos_episode):
            try:
                lookup(order_id="1")
            except Exception:
                pass
            chaos_episode.finish("Your order shipped.")
        """
    )
    plan = '{"faults": [{"tool": "lookup", "type": "timeout", "after_s": 0.001}]}'
    pytester.makeconftest(
        f"""
        import pytest
        def pytest_collection_modifyitems(items):
            for item in items:
                item.add_marker(pytest.mark.chaos_plan({plan}))
        """
    )
    report = pytester.path / "cases.json"
    result = pytester.runpytest(
        "--chaos-judge", f"{mod}:m", "--chaos-judge-cache", cache, "--chaos-report", str(report)
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 judged, 1 flagged*the deterministic checks gate; the judge only advises*"])
    case = json.loads(report.read_text(encoding="utf-8"))["episodes"][0]
    assert case["judge"]["flagged"] == ["silent_failure"]
    result = pytester.runpytest("--chaos-judge", f"{mod}:m", "--chaos-judge-min-kappa", "0.8")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*refusing to gate on judge*without a calibration*"])
