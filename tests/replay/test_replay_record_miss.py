"""`on_miss="record"` (`--on-miss record`): a call the recording cannot answer runs for real and its answer is
added to the cassette, atomically (a crash leaves the old cassette whole, never a partial one)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit import ReplayMiss, chaos


def _world() -> tuple[Any, list[str]]:
    runs: list[str] = []

    @chaos
    def price(sku: str) -> dict[str, Any]:
        runs.append(sku)
        if sku == "bad":
            raise ConnectionResetError("peer reset")
        return {"sku": sku, "eur": len(sku)}

    return price, runs


def _shop(price: Any, skus: list[str]) -> list[Any]:
    out: list[Any] = []
    for sku in skus:
        try:
            out.append(price(sku))
        except ConnectionResetError as exc:
            out.append(f"error: {exc}")
    return out


def test_a_missed_call_runs_once_for_real_then_replays_from_the_cassette(tmp_path: Path) -> None:
    price, runs = _world()
    with chaoskit.episode("shop", record=tmp_path):
        _shop(price, ["kettle"])
    assert runs == ["kettle"]
    with pytest.raises(ReplayMiss, match="no recorded call of price with these arguments"):
        with chaoskit.episode("shop", replay=tmp_path):
            _shop(price, ["kettle", "toaster-2", "bad"])
    runs.clear()
    with chaoskit.episode("shop", replay=tmp_path, on_miss="record") as ep:
        live = _shop(price, ["kettle", "toaster-2", "bad"])
    assert runs == ["toaster-2", "bad"]  # only the misses ran for real
    assert [str(m).split(": ")[1][:28] for m in ep.answers.misses] == ["no recorded call of price wi"] * 2
    runs.clear()
    with chaoskit.episode("shop", replay=tmp_path) as ep:
        # the added answers, a value and a recorded error, replay as themselves; no real call
        assert (
            _shop(price, ["kettle", "toaster-2", "bad"])
            == live
            == [
                {"eur": 6, "sku": "kettle"},
                {"eur": 9, "sku": "toaster-2"},
                "error: peer reset",
            ]
        )
    assert runs == [] and ep.answers.misses == []
    # the cassette is still a trace: the recording and the episode that added to it
    trace = chaoskit.Trace.load(tmp_path / "shop.jsonl")
    assert [len(e.attempts) for e in trace.episodes] == [1, 3]
    assert trace.episodes[1].attributes["chaoskit.replay.adds_to"] == trace.episodes[0].id


def test_a_crash_while_adding_leaves_the_old_cassette_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    price, _ = _world()
    with chaoskit.episode("shop", record=tmp_path):
        _shop(price, ["kettle"])
    cassette = tmp_path / "shop.jsonl"
    before = cassette.read_bytes()

    def crash(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="No space left"):
        with chaoskit.episode("shop", replay=tmp_path, on_miss="record"):
            _shop(price, ["toaster-2"])
    monkeypatch.undo()
    assert cassette.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["shop.jsonl"]  # no temporary or partial file beside it
    with pytest.raises(ReplayMiss):  # nothing was added: the missed call is still a miss
        with chaoskit.episode("shop", replay=tmp_path):
            _shop(price, ["toaster-2"])


def test_record_needs_a_cassette_file_to_add_to(tmp_path: Path) -> None:
    with pytest.raises(chaoskit.ConfigError, match="needs replay="):
        chaoskit.episode("shop", on_miss="record", record=tmp_path)
    price, _ = _world()
    with chaoskit.episode("shop", record=tmp_path):
        _shop(price, ["kettle"])
    trace = chaoskit.Trace.load(tmp_path / "shop.jsonl")
    with pytest.raises(chaoskit.ConfigError, match="not a cassette file to add to"):
        chaoskit.episode("shop", replay=trace, on_miss="record")
    with pytest.raises(chaoskit.ConfigError, match="give one"):
        chaoskit.episode("shop", replay=tmp_path, record=tmp_path / "new", on_miss="record")


def test_two_episodes_that_missed_one_call_add_one_answer_not_two(tmp_path: Path) -> None:
    n = [0]

    @chaos
    def quote(sku: str) -> dict[str, Any]:
        n[0] += 1
        return {"sku": sku, "quote": n[0]}

    with chaoskit.episode("q", record=tmp_path):
        quote("kettle")
    # both read the cassette before either added to it, as two workers of one battery do
    cassette = chaoskit.replay.Cassette.open(tmp_path, "q")
    for _ in range(2):
        with chaoskit.episode("q", replay=cassette, on_miss="record"):
            quote("toaster")
    assert n[0] == 3 and len(chaoskit.Trace.load(tmp_path / "q.jsonl").episodes) == 3
    with chaoskit.episode("q", replay=tmp_path):
        # the first adder's answer, again for the second call (past the last recorded answer): never the second
        # adder's first answer posing as a second one
        assert [quote("toaster")["quote"], quote("toaster")["quote"]] == [2, 2]
