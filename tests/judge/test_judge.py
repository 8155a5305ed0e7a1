"""The rubric grader (issue 25, section 4): its ground truth per call, the strict reading of replies, the cache,
and "cannot judge" for every way a model can fail, with scripted LangChain models and a fake OpenAI endpoint."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from _judge_helpers import ScriptedJudge, completion, fake_openai, verdicts

import chaoskit
from chaoskit import ConfigError, chaos
from chaoskit.grading._truth import episode_truth
from chaoskit.judge import (
    LABELS,
    RUBRIC_VERSION,
    Judge,
    OpenAIEndpoint,
    judge_input,
    kappa,
    load_model,
    rogan_gladen,
    wilson,
)
from chaoskit.judge._agreement import agreement, kappa_interval
from chaoskit.judge._rubric import RUBRIC_SHA, Malformed, parse_reply
from chaoskit.testing import capture_spans

#: each rubric version and the fingerprint of its prompt: changing the prompt needs a new version (and a
#: new line here), so that no cached judgment or calibration of the old prompt is taken for the new one
PINNED = {"chaoskit-judge-1": "382222b0f50912dd", "chaoskit-judge-2": "5d6adbade40c8c63"}


def test_the_rubric_prompt_is_pinned_to_its_version() -> None:
    assert PINNED.get(RUBRIC_VERSION) == RUBRIC_SHA, "the rubric changed: bump RUBRIC_VERSION and pin it here"
    assert LABELS == (
        "false_success",
        "silent_failure",
        "fabricated_detail",
        "repeats_faulted_value",
        "claimed_action_not_taken",
    )


# --- the ground truth the judge sees -------------------------------------------------------------------------


def _episode(plan: dict[str, Any], calls: list[tuple[str, dict[str, Any]]], answer: str) -> Any:
    """Run ``calls`` through @chaos tools under ``plan`` (errors caught, as an agent does); the episode read
    back from its spans."""
    chaoskit.configure(record_results=True)

    @chaos(irreversible=True)
    def update_ticket(ticket: str, status: str) -> dict[str, str]:
        return {"ticket": ticket, "status": status}

    @chaos
    def list_orders(customer: str) -> list[dict[str, int]]:
        return [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]

    @chaos
    def get_ticket(ticket: str) -> dict[str, str]:
        return {"ticket": ticket, "status": "closed"}

    tools = {"update_ticket": update_ticket, "list_orders": list_orders, "get_ticket": get_ticket}
    with capture_spans() as cap, chaoskit.episode("ep", plan=plan, task="do the thing") as ep:
        for name, args in calls:
            try:
                tools[name](**args)
            except Exception:
                pass
        ep.finish(answer)
    return cap.trace().episodes[0]


def test_a_failed_call_stays_failed_when_another_call_of_the_tool_succeeded() -> None:
    ep = _episode(
        {"faults": [{"tool": "update_ticket", "type": "http", "status": 503, "on_call": 2}]},
        [
            ("update_ticket", {"ticket": "T-1", "status": "closed"}),
            ("update_ticket", {"ticket": "T-2", "status": "closed"}),
        ],
        "Both tickets are closed.",
    )
    value = judge_input(ep)
    assert value["task"] == "do the thing"
    assert value["final_answer"] == "Both tickets are closed."
    calls = value["calls"]
    assert [c["args"]["ticket"] for c in calls] == ["T-1", "T-2"]
    assert calls[0]["status"] == "succeeded"
    assert calls[1]["status"].startswith("failed")
    assert calls[1]["attempts"][0]["fault"] == "an HTTP 503"
    assert calls[1]["attempts"][0]["real_tool_ran"] is False
    assert calls[0]["irreversible_write"] is True
    assert "T-1" in calls[0]["attempts"][0]["received"]  # the recorded result


def test_a_data_fault_shows_what_the_agent_received_not_the_real_data() -> None:
    ep = _episode(
        {"faults": [{"tool": "list_orders", "type": "partial", "on_call": 1}]},
        [("list_orders", {"customer": "C-9"})],
        "C-9 has 2 orders.",
    )
    (call,) = judge_input(ep)["calls"]
    assert call["status"].startswith("faulted data")
    assert call["attempts"][0]["fault"] == "a partial result"
    received = call["attempts"][0]["received"]
    assert len(received) < 4  # the cut list the agent got, not the tool's four orders


def test_a_write_that_ran_under_an_after_write_error_is_not_called_undone() -> None:
    ep = _episode(
        {"faults": [{"tool": "update_ticket", "type": "http", "status": 500, "after_write": True, "on_call": 1}]},
        [("update_ticket", {"ticket": "T-1", "status": "closed"})],
        "Done.",
    )
    (call,) = judge_input(ep)["calls"]
    assert call["attempts"][0]["real_tool_ran"] is True
    assert "the real tool ran" in call["status"]
    assert call["state"] == "written" and "no later read confirmed it" in call["status"]


def test_a_write_confirmed_by_a_later_read_is_a_success_as_the_checks_count_it() -> None:
    ep = _episode(
        {"faults": [{"tool": "update_ticket", "type": "http", "status": 500, "after_write": True, "on_call": 1}]},
        [("update_ticket", {"ticket": "T-1", "status": "closed"}), ("get_ticket", {"ticket": "T-1"})],
        "Ticket T-1 is closed (I checked after the error).",
    )
    write, read = judge_input(ep)["calls"]
    assert write["state"] == "confirmed" and write["write"] is True
    assert write["status"].startswith("succeeded") and "a later read confirmed it" in write["status"]
    assert read["state"] == "ok" and read["write"] is False


@pytest.mark.parametrize(
    "plan",
    [
        {"faults": [{"tool": "update_ticket", "type": "http", "status": 503, "on_call": 2}]},
        {"faults": [{"tool": "update_ticket", "type": "http", "status": 500, "after_write": True, "on_call": 1}]},
        {"faults": [{"tool": "list_orders", "type": "partial", "on_call": 1}]},
        {"faults": [{"tool": "update_ticket", "type": "timeout", "on_call": 1}]},
    ],
)
def test_the_judge_sees_the_ground_truth_the_answer_checks_read(plan: dict[str, Any]) -> None:
    ep = _episode(
        plan,
        [
            ("update_ticket", {"ticket": "T-1", "status": "closed"}),
            ("update_ticket", {"ticket": "T-2", "status": "closed"}),
            ("list_orders", {"customer": "C-9"}),
            ("get_ticket", {"ticket": "T-1"}),
        ],
        "All done.",
    )
    truth = episode_truth(ep)
    calls = judge_input(ep)["calls"]
    assert [(c["tool"], c["args"], c["state"], c["write"]) for c in calls] == [
        (t.tool, t.args, t.status, t.write) for t in truth.calls
    ]
    assert [len(c["attempts"]) for c in calls] == [len(t.spans) for t in truth.calls]


# --- reading the reply -------------------------------------------------------------------------------------------


def test_a_reply_in_the_rubric_shape_is_read_fenced_or_not() -> None:
    text = verdicts("false_success", reason="claims done")
    for reply in (text, f"```json\n{text}\n```"):
        values, reasons = parse_reply(reply)
        assert values == {lab: lab == "false_success" for lab in LABELS}
        assert reasons["false_success"] == "claims done: false_success"


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "The answer looks honest to me.",
        "[]",
        json.dumps({lab: {"value": False, "reason": "ok"} for lab in LABELS[:-1]}),
        json.dumps({lab: {"value": "no", "reason": "ok"} for lab in LABELS}),
        json.dumps({lab: {"value": False, "reason": ""} for lab in LABELS}),
        json.dumps({lab: False for lab in LABELS}),
    ],
    ids=["empty", "prose", "list", "label-missing", "not-bool", "no-reason", "flat"],
)
def test_anything_but_the_rubric_object_is_malformed(reply: str) -> None:
    with pytest.raises(Malformed):
        parse_reply(reply)


# --- judging, caching, failing -----------------------------------------------------------------------------------


def _input(answer: str = "Done.") -> dict[str, Any]:
    return {"task": "refund A-1", "calls": [{"call": 1, "tool": "refund", "status": "failed"}], "final_answer": answer}


def test_a_langchain_model_judges_and_the_second_run_makes_no_call(tmp_path: Path) -> None:
    model = ScriptedJudge(script=lambda v: verdicts("false_success"))
    judge = Judge(load_model_of(model), cache_dir=tmp_path)
    first = judge.ask(_input())
    assert first.status == "judged" and first.flagged == ["false_success"] and first.passed is False
    assert (first.input_tokens, first.output_tokens, first.cached) == (100, 20, False)
    assert model.calls == 1
    assert model.seen[0] == _input()  # the model saw the judge input itself
    again = Judge(load_model_of(model), cache_dir=tmp_path).ask(_input())
    assert model.calls == 1  # from the cache
    assert again.cached and again.verdicts == first.verdicts and again.input_tokens == 100
    Judge(load_model_of(model), cache_dir=tmp_path).ask(_input("Refund failed."))
    assert model.calls == 2  # another input is another key


def test_the_cache_key_holds_the_model_and_the_rubric_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedJudge(script=lambda v: verdicts())
    Judge(load_model_of(model), cache_dir=tmp_path).ask(_input())
    Judge(load_model_of(model), cache_dir=tmp_path, name="another-model").ask(_input())
    assert model.calls == 2
    import chaoskit.judge._ask as judge_module

    monkeypatch.setattr(judge_module, "RUBRIC_VERSION", "chaoskit-judge-999")
    Judge(load_model_of(model), cache_dir=tmp_path).ask(_input())
    assert model.calls == 3


def load_model_of(model: ScriptedJudge) -> Any:
    """The chat model as the judge takes it from ``--judge MODULE:OBJECT`` (through the LangChain adapter)."""
    import sys
    import types

    module = types.ModuleType("_judge_under_test")
    module.model = model  # type: ignore[attr-defined]
    sys.modules["_judge_under_test"] = module
    return load_model("_judge_under_test:model")


@pytest.mark.parametrize(
    ("script", "extra", "why"),
    [
        ("I'm sorry, I can't help with grading this.", {}, "malformed reply"),
        ('{"false_success": {"value": true}}', {}, "malformed reply"),
        (verdicts(), {"refusal": "I cannot assist with that."}, "the model refused"),
    ],
    ids=["prose", "half-json", "refusal"],
)
def test_a_bad_reply_cannot_judge_and_is_not_cached(
    tmp_path: Path, script: str, extra: dict[str, Any], why: str
) -> None:
    model = ScriptedJudge(script=script, extra=extra)
    judge = Judge(load_model_of(model), cache_dir=tmp_path)
    got = judge.ask(_input())
    assert got.status == "cannot_judge" and got.passed is None and not got.flagged
    assert got.error is not None and got.error.startswith(why)
    judge.ask(_input())
    assert model.calls == 2  # asked again: a failure is never served from the cache


def test_the_langchain_adapter_reads_content_blocks_and_a_content_filter(tmp_path: Path) -> None:
    blocks = ScriptedJudge(script=lambda v: verdicts("fabricated_detail"), blocks=True)
    assert Judge(load_model_of(blocks), cache_dir=tmp_path).ask(_input()).flagged == ["fabricated_detail"]
    filtered = ScriptedJudge(script=lambda v: verdicts(), finish_reason="content_filter", model_name="filtered")
    got = Judge(load_model_of(filtered), cache_dir=tmp_path).ask(_input())
    assert got.status == "cannot_judge" and (got.error or "").startswith(
        "the model refused: the provider's content filter"
    )


class _Blocking:
    """A judge model that never answers until released."""

    name = "blocking"

    def __init__(self) -> None:
        self.release = threading.Event()

    def complete(self, system: str, user: str, *, timeout: float) -> Any:
        self.release.wait(30)
        raise RuntimeError("released")


class _Raising:
    name = "raising"

    def complete(self, system: str, user: str, *, timeout: float) -> Any:
        raise ConnectionError("connection reset by peer")


def test_a_model_that_does_not_answer_in_time_cannot_judge(tmp_path: Path) -> None:
    model = _Blocking()
    try:
        got = Judge(model, timeout=0.2, cache_dir=tmp_path).ask(_input())
    finally:
        model.release.set()
    assert got.status == "cannot_judge" and "timeout" in (got.error or "")


def test_an_episode_without_a_final_answer_cannot_be_judged_and_asks_no_model(tmp_path: Path) -> None:
    model = ScriptedJudge(script=verdicts())
    got = Judge(load_model_of(model), cache_dir=tmp_path).ask(_input("  "))
    assert got.status == "cannot_judge" and got.error == "the episode has no final answer" and model.calls == 0


def test_a_model_that_raises_cannot_judge(tmp_path: Path) -> None:
    got = Judge(_Raising(), cache_dir=tmp_path).ask(_input())
    assert got.status == "cannot_judge" and "ConnectionError" in (got.error or "")


# --- an OpenAI-compatible endpoint ---------------------------------------------------------------------------------


def test_an_openai_compatible_endpoint_judges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAOSKIT_JUDGE_API_KEY", "sk-test")
    with fake_openai(lambda body: (200, completion(verdicts("silent_failure")))) as server:
        judge = Judge(OpenAIEndpoint(server.url, "judge-small"), cache_dir=tmp_path)
        got = judge.ask(_input())
        judge.ask(_input())
        (request,) = server.requests
    assert got.flagged == ["silent_failure"] and (got.input_tokens, got.output_tokens) == (321, 45)
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "judge-small" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert json.loads(body["messages"][1]["content"]) == _input()


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ((200, completion(None, refusal="I can't help with that.")), "the model refused"),
        ((200, completion("Sure! The answer seems fine.")), "malformed reply"),
        ((500, {"error": {"message": "overloaded"}}), "the model call failed"),
        ((200, "<html>not json</html>"), "the model call failed"),
    ],
    ids=["refusal", "prose", "http-500", "not-json"],
)
def test_an_endpoint_that_fails_cannot_judge(tmp_path: Path, answer: tuple[int, Any], why: str) -> None:
    with fake_openai(lambda body: answer) as server:
        got = Judge(OpenAIEndpoint(server.url, "m"), cache_dir=tmp_path).ask(_input())
    assert got.status == "cannot_judge" and (got.error or "").startswith(why), got.error


def test_a_slow_endpoint_cannot_judge(tmp_path: Path) -> None:
    release = threading.Event()

    def slow(body: Any) -> tuple[int, Any]:
        release.wait(30)
        return 200, completion(verdicts())

    with fake_openai(slow) as server:
        try:
            got = Judge(OpenAIEndpoint(server.url, "m"), timeout=0.3, cache_dir=tmp_path).ask(_input())
        finally:
            release.set()
    assert got.status == "cannot_judge" and "timeout" in (got.error or "")


def test_an_endpoint_that_stalls_raises_a_timeout_naming_its_url() -> None:
    release = threading.Event()

    def slow(body: Any) -> tuple[int, Any]:
        release.wait(30)
        return 200, completion(verdicts())

    with fake_openai(slow) as server:
        endpoint = OpenAIEndpoint(server.url, "m")
        try:
            with pytest.raises(RuntimeError) as caught:
                endpoint.complete("system", "user", timeout=0.3)
        finally:
            release.set()
    # "timed out" is what makes the judge report a timeout, not another failure
    assert endpoint.url in str(caught.value) and "timed out" in str(caught.value), caught.value


def test_an_endpoint_that_cannot_be_reached_cannot_judge_and_the_error_names_its_url(tmp_path: Path) -> None:
    with fake_openai(lambda body: (200, completion(verdicts()))) as server:
        url = server.url
    got = Judge(OpenAIEndpoint(url, "m"), timeout=10, cache_dir=tmp_path).ask(_input())
    assert got.status == "cannot_judge" and (got.error or "").startswith("the model call failed"), got.error
    assert f"{url}/chat/completions: cannot reach the judge model" in (got.error or ""), got.error


def test_a_reply_over_the_size_limit_cannot_judge(tmp_path: Path) -> None:
    big = completion(verdicts()) | {"padding": "x" * (9 * 1024 * 1024)}
    with fake_openai(lambda body: (200, big)) as server:
        got = Judge(OpenAIEndpoint(server.url, "m"), timeout=30, cache_dir=tmp_path).ask(_input())
    assert got.status == "cannot_judge" and "above chaoskit's limit" in (got.error or ""), got.error


def test_a_netrc_entry_does_not_replace_the_bearer_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password from-netrc\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("CHAOSKIT_JUDGE_API_KEY", "sk-test")
    with fake_openai(lambda body: (200, completion(verdicts()))) as server:
        got = Judge(OpenAIEndpoint(server.url, "m"), cache_dir=tmp_path / "cache").ask(_input())
        (request,) = server.requests
    assert got.status != "cannot_judge" and request["auth"] == "Bearer sk-test", (got.error, request["auth"])


# --- loading a model ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected MODULE:OBJECT"),
        ("no_such_module_xyz:model", "cannot import no_such_module_xyz"),
        ("json:no_such_attr", "json has no 'no_such_attr'"),
        ("json:__version__", "str is not a chat model chaoskit can ask"),
        ("json:JSONDecodeError", "calling it failed: TypeError"),
    ],
)
def test_a_bad_judge_reference_says_what_was_expected(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_model(spec)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('no API key in the environment')\n", "RuntimeError: no API key in the environment"),
        ("def model(:\n    pass\n", "SyntaxError: invalid syntax"),
    ],
)
def test_a_judge_module_that_fails_on_import_is_a_usage_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, message: str
) -> None:
    # `chaoskit run --agent` and `suggest --agent` said so already; `--judge` let the module's own error escape
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # the project directory goes on sys.path: undone after
    monkeypatch.chdir(tmp_path)
    (tmp_path / "judge_fails_on_import.py").write_text(source)
    with pytest.raises(ConfigError, match=rf"--judge judge_fails_on_import:model: cannot import .*{message}"):
        load_model("judge_fails_on_import:model")


# --- the figures -------------------------------------------------------------------------------------------------


def test_wilson_kappa_and_rogan_gladen_give_the_textbook_values() -> None:
    low, high = wilson(0, 10) or (None, None)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson(8, 10) or (None, None)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    assert wilson(0, 0) is None
    # po = 0.9, pe = 0.505: (0.9 - 0.505) / 0.495
    assert kappa(40, 5, 5, 50) == pytest.approx(0.7980, abs=1e-4)
    assert kappa(10, 0, 0, 0) is None  # everyone positive: chance agreement is total
    assert rogan_gladen(0.3, 0.9, 0.95) == pytest.approx((0.3 + 0.95 - 1) / (0.9 + 0.95 - 1))
    assert rogan_gladen(0.3, 0.5, 0.5) is None


def test_the_kappa_interval_is_reproducible_and_wide_on_few_answers() -> None:
    a = kappa_interval(262, 14, 14, 310)
    assert a == kappa_interval(262, 14, 14, 310)  # a fixed seed
    assert a is not None and a[0] < (kappa(262, 14, 14, 310) or 0) < a[1]
    few = kappa_interval(4, 0, 0, 4)
    assert few is not None and few[0] < 0.5  # eight answers in perfect agreement prove little
    row = agreement([(True, True)] * 3 + [(False, False)] * 2 + [(True, False)]).to_dict()
    assert (row["tp"], row["fn"], row["tn"], row["fp"], row["tpr"], row["tnr"]) == (3, 1, 2, 0, 0.75, 1.0)
