"""The labeled answer corpus (benchmarks/answers_corpus): it loads, meets its minimums, replays with the faults
on the named calls, and a malformed file gets an error naming the file, the id and the field."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "answers_corpus"

#: the fault types the corpus must exercise (issue 25: every type chaoskit injects)
FAULT_TYPES = (
    "error",
    "timeout",
    "http",
    "rate_limit",
    "auth_expired",
    "latency",
    "empty",
    "partial",
    "schema_drift",
    "garbage",
    "stale_state",
    "prompt_injection",
)


def _load_replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location("answers_corpus_replay", CORPUS / "replay.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


replay = _load_replay()


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, Any], list[Any]]:
    sits, cases = replay.load_all(CORPUS)
    return sits, cases


def test_counts_meet_the_minimums(corpus: tuple[dict[str, Any], list[Any]]) -> None:
    sits, cases = corpus
    st = replay.stats(cases)
    assert st["answers"] >= 600
    assert st["situations"] >= 80
    assert len(st["domains"]) >= 8
    assert set(st["languages"]) == {"en", "fr", "de", "es", "pt"}
    assert 6 <= st["non_english_pct"] <= 15, st["non_english_pct"]
    for lang in ("en", "fr", "de", "es", "pt"):
        assert st["dishonest_by_lang"][lang] > 0 and st["honest_by_lang"][lang] > 0, lang
    assert 40 <= st["dishonest_pct"] <= 50, st["dishonest_pct"]
    assert all(st["labels"][label] > 0 for label in replay.LABELS), st["labels"]
    # every situation has a dishonest answer and an honest one, so honesty is not guessable from the situation;
    # except where the agent carried out an injected action: any answer that says so is labelled by definition
    by_sit: dict[str, Counter[bool]] = {}
    for c in cases:
        by_sit.setdefault(c.situation.id, Counter())[c.dishonest] += 1
    assert set(by_sit) == set(sits)
    assert all(n[True] for n in by_sit.values())
    followed = {
        sid
        for sid, s in sits.items()
        for i, call in enumerate(s.calls)
        if call.fault and call.fault["type"] == "prompt_injection" and not s.call_recovered(i)
    }
    assert followed, "a situation where the agent followed an injection"
    assert [sid for sid, n in by_sit.items() if not n[False]] == sorted(followed)


def test_every_fault_type_recovered_and_unrecovered(corpus: tuple[dict[str, Any], list[Any]]) -> None:
    _, cases = corpus
    st = replay.stats(cases)
    by_type = st["fault_calls_by_recovery"]
    assert set(FAULT_TYPES) <= set(by_type), set(FAULT_TYPES) - set(by_type)
    for fault in FAULT_TYPES:
        assert by_type[fault].get("recovered", 0) > 0, fault
        if fault != "latency":  # a latency fault delivers the real result: there is nothing to stay failed
            assert by_type[fault].get("unrecovered", 0) > 0, fault
    modes = st["fault_modes"]
    assert modes.get("http 500 after_write", 0) > 0 and modes.get("http retry_after", 0) > 0, modes
    assert modes.get("garbage stale", 0) > 0 and modes.get("garbage off_by_one", 0) > 0, modes
    assert st["situations_by_recovery"].get("no fault", 0) > 0


def test_every_situation_replays_with_its_faults_on_the_named_calls(corpus: tuple[dict[str, Any], list[Any]]) -> None:
    sits, cases = corpus
    one = {}
    for c in cases:
        one.setdefault(c.situation.id, c)
    done = replay.replay_many(list(one.values()))
    assert len(done) == len(sits)
    for r in done:
        situation = r.case.situation
        (ep,) = r.trace.episodes
        assert ep.output == r.case.text
        attempts = list(ep.attempts)
        assert [a.tool for a in attempts] == [c.tool for c in situation.calls], situation.id
        for i, (call, attempt) in enumerate(zip(situation.calls, attempts, strict=True)):
            where = f"{situation.id} calls[{i}]"
            if call.fault:
                assert attempt.fault_type == call.fault["type"], where
            else:
                assert attempt.fault_type is None, where
            failed = call.raises is not None or (call.fault is not None and replay.fault_raises(call.fault))
            assert (attempt.outcome != "ok") == failed, (where, attempt.outcome)
            assert r.received[i]["ok"] == (not failed), where
        names = {res.name for res in r.results}
        assert {"no_bluff", "reports_failure", "no_fabrication", "no_injection_followed"} <= names


def test_a_faulted_value_is_what_the_answers_quote() -> None:
    # the answers were written against the replayed results; two spot checks that the faults still produce them
    sits, _ = replay.load_all(CORPUS)
    got = {
        sid: [c.get("result") for c in replay.received_of(sits[sid])]
        for sid in ("travel-flight-status-off-by-one", "shop-orders-partial", "bank-fx-stale-garbage")
    }
    assert got["travel-flight-status-off-by-one"][0] == {
        "flight": "LH 402",
        "gate": 23,
        "terminal": 2,
        "delay_minutes": 36,
    }
    assert [o["order_id"] for o in got["shop-orders-partial"][0]["orders"]] == ["O-1", "O-2"]
    assert got["bank-fx-stale-garbage"][1] == {"pair": "EUR/GBP", "rate": 0.8512}


def _broken(tmp_path: Path, edit: Any) -> Path:
    src = yaml.safe_load((CORPUS / "shop.yaml").read_text(encoding="utf-8"))
    edit(src)
    out = tmp_path / "corpus"
    out.mkdir()
    (out / "shop.yaml").write_text(yaml.safe_dump(src, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return out


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def edit(doc: Any) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return edit


_DELETE = object()


@pytest.mark.parametrize(
    ("edit", "names"),
    [
        (
            _set(("answers", 2, "lang"), "it"),
            ["answer 'shop-refund-500-after-write/03'", "'lang'", "en, fr, de, es, pt"],
        ),
        (_set(("answers", 0, "labels"), ["bluff"]), ["answer 'shop-refund-500-after-write/01'", "'labels'"]),
        (_set(("answers", 0, "note"), _DELETE), ["answer 'shop-refund-500-after-write/01'", "'note'"]),
        (_set(("answers", 1, "situation"), "nowhere"), ["answer 'shop-refund-500-after-write/02'", "'situation'"]),
        (_set(("answers", 1, "text"), ""), ["answer 'shop-refund-500-after-write/02'", "'text'"]),
        (
            _set(("situations", 0, "calls", 1, "tool"), "refund"),
            ["situation 'shop-refund-500-after-write'", "'calls[1].tool'"],
        ),
        (
            _set(("situations", 0, "calls", 1, "fault"), {"type": "http", "status": 999}),
            ["situation 'shop-refund-500-after-write'", "'calls[1].fault'", "status"],
        ),
        (
            _set(("situations", 0, "calls", 1, "fault"), {"type": "boom"}),
            ["situation 'shop-refund-500-after-write'", "'calls[1].fault'", "boom"],
        ),
        (
            _set(("situations", 0, "tools", "issue_refund", "kind"), "mutate"),
            ["situation 'shop-refund-500-after-write'", "'tools.issue_refund.kind'", "read, write"],
        ),
        (_set(("situations", 1, "id"), "shop-refund-500-after-write"), ["'id'", "duplicate situation id"]),
        (_set(("domain",), _DELETE), ["'domain'"]),
    ],
)
def test_a_malformed_corpus_file_names_file_id_and_field(tmp_path: Path, edit: Any, names: list[str]) -> None:
    folder = _broken(tmp_path, edit)
    with pytest.raises(replay.CorpusError) as err:
        replay.load_corpus(folder)
    message = str(err.value)
    assert str(folder / "shop.yaml") in message
    for name in names:
        assert name in message, message


def test_a_bad_file_names_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(CORPUS / "shop.yaml", folder / "shop.yaml")
    text = (folder / "shop.yaml").read_text(encoding="utf-8")
    line = text.splitlines().index("  - id: shop-cancel-two-one-failed/04") + 1
    head, tail = text.split("  - id: shop-cancel-two-one-failed/04\n", 1)
    tail = tail.replace("    lang: es\n", "    lang: spanish\n", 1)
    (folder / "shop.yaml").write_text(f"{head}  - id: shop-cancel-two-one-failed/04\n{tail}", encoding="utf-8")
    with pytest.raises(replay.CorpusError, match=rf"shop\.yaml, line {line}: answer 'shop-cancel-two-one-failed/04'"):
        replay.load_corpus(folder)


def test_not_yaml_and_no_file_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(replay.CorpusError, match="no corpus file"):
        replay.load_corpus(tmp_path)
    (tmp_path / "x.yaml").write_text("domain: [unclosed\n", encoding="utf-8")
    with pytest.raises(replay.CorpusError, match=r"x\.yaml: not valid YAML"):
        replay.load_corpus(tmp_path)
