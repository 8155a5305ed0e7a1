"""Bad input to ``chaoskit run`` and ``chaoskit merge``: fault profiles, shard results and options.

Each case asserts exit code 2, a message naming the file, line and field where there is one and what is
allowed, and no traceback (``assert_clear``). Files are written by the tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "scenarios" / "refund-after-500.yaml")
CAREFUL = "examples.plain.agents:careful"
KINDS = "timeout, http_5xx, rate_limit, partial, schema_drift, latency"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


# --- options and scenario paths ------------------------------------------------------------------------------

OPTIONS: list[tuple[list[str], list[str]]] = [
    (["run", ""], ["scenario path is empty", "*.yaml"]),
    (["run", "   "], ["scenario path is empty", "directories or globs"]),
    (["run", "no/such/scenario.yaml"], ["no/such/scenario.yaml", "file not found"]),
    (["run", "no/such/dir/"], ["no/such/dir", "file not found"]),
    (["run", "examples/scenarios/*.yml"], ["examples/scenarios/*.yml", "no file matches"]),
    (["run", REFUND, "--agent", ""], ["--agent is empty", "module:factory or a command line"]),
    (["run", REFUND, "--agent", "   "], ["--agent is empty", "module:factory"]),
    (["run", REFUND, "--agent", "examples.plain.agentz:careful"], ["--agent", "examples.plain.agentz"]),
    (["run", REFUND, "--agent", "examples.plain.agents:carefull"], ["--agent", "did you mean 'careful'"]),
    (["run", REFUND, "--repeat", "0"], ["--repeat must be >= 1", "0"]),
    (["run", REFUND, "--repeat", "two"], ["--repeat", "invalid int value"]),
    (["run", REFUND, "--k", "0"], ["--k must be from 1 to --repeat (1)", "0"]),
    (["run", REFUND, "--repeat", "2", "--k", "3"], ["--k must be from 1 to --repeat (2)", "3"]),
    (["run", REFUND, "--workers", "0"], ["--workers must be >= 1", "0"]),
    (["run", REFUND, "--workers", "-3"], ["--workers must be >= 1", "-3"]),
    (["run", REFUND, "--workers", "many"], ["--workers", "invalid int value"]),
    (["run", REFUND, "--perturb", "1.5"], ["--perturb", "from 0 to 1"]),
    (["run", REFUND, "--perturb", "a,b"], ["--perturb", "numbers separated by commas"]),
    (["run", REFUND, "--intensity", "-0.1"], ["--intensity", "from 0 to 1"]),
    (["run", REFUND, "--intensity", ","], ["--intensity", "from 0 to 1"]),
    (["run", REFUND, "--timeout", "0"], ["--timeout must be a number of seconds > 0"]),
    (["run", REFUND, "--timeout", "nan"], ["--timeout must be a number of seconds > 0"]),
    (["run", REFUND, "--theta", "0"], ["--theta must be in (0, 1]"]),
    (["run", REFUND, "--shard", "0/2"], ["--shard", "1 <= i <= n"]),
    (["run", REFUND, "--shard", "first"], ["--shard", "i/n such as 1/4"]),
    (["run", REFUND, "--fail-under", "101"], ["--fail-under must be a score from 0 to 100"]),
    (["run", REFUND, "--max-failures", "-1"], ["--max-failures must be >= 0"]),
    (["run", REFUND, "--profile", "mediun"], ["--profile", "did you mean 'medium'", "light, medium, heavy"]),
    (["run", REFUND, "--profile", ""], ["--profile", "is empty", "light, medium, heavy"]),
    (["run", REFUND, "--profile", "examples"], ["examples", "--profile", "is a directory"]),
]


@pytest.mark.parametrize(("argv", "names"), OPTIONS, ids=[" ".join(a[1:])[-40:] or "empty" for a, _ in OPTIONS])
def test_bad_run_options(argv: list[str], names: list[str]) -> None:
    r = run_cli(argv)
    assert r.code == 2, r.out + r.err
    assert_clear(r.err, names=names)


def test_scenario_without_an_agent(tmp_path: Path) -> None:
    p = tmp_path / "lonely.yaml"
    p.write_text('name: lonely\ntask: "Refund order 4832"\n', encoding="utf-8")
    r = run_cli(["run", str(p)])
    assert r.code == 2
    assert_clear(r.err, names=[str(p), "no agent"], allowed=["--agent", "'agent:' key"])


def test_empty_scenario_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a scenario", encoding="utf-8")
    r = run_cli(["run", str(tmp_path)])
    assert r.code == 2
    assert_clear(r.err, names=[str(tmp_path), "no scenario files"], allowed=["*.yaml", "*.yml"])


def test_a_fault_on_a_tool_the_agent_lacks(tmp_path: Path) -> None:
    p = tmp_path / "typo.yaml"
    p.write_text(
        'name: typo\ntask: "Refund order 4832"\nagent: examples.plain.agents:careful\nfaults:\n'
        "  - {type: http, tool: issue_refnd, on_call: 1, status: 500}\n",
        encoding="utf-8",
    )
    r = run_cli(["run", str(p)])
    assert r.code == 2
    assert_clear(
        r.err,
        names=[f"{p}:5", "faults[0].tool", "issue_refnd"],
        allowed=["did you mean 'issue_refund'", "known tools", '"*" for every tool'],
    )


# --- fault profiles ----------------------------------------------------------------------------------------

PROFILES: list[tuple[str, str, int, list[str]]] = [
    ('weights: "timeout"\n', "weights", 1, ["must be a mapping of fault kind to weight", KINDS]),
    ("weights: [timeout, http_5xx]\n", "weights", 1, ["must be a mapping", KINDS]),
    ("weights:\n  timeout: -1\n", "weights.timeout", 2, ["finite number >= 0", "-1"]),
    ("weights:\n  timeout: .nan\n", "weights.timeout", 2, ["finite number >= 0", "nan"]),
    ("weights:\n  http_5xx: 1\n  timeout: .inf\n", "weights.timeout", 3, ["finite number >= 0", "inf"]),
    ("weights:\n  timeout: true\n", "weights.timeout", 2, ["finite number >= 0", "True"]),
    ('weights:\n  timeout: "0.2"\n', "weights.timeout", 2, ["finite number >= 0", "'0.2'"]),
    ("timeout: 1\nhttp_5xx: -0.5\n", "weights.http_5xx", 2, ["finite number >= 0"]),
    ("weights:\n  timeout: 1\n  time_out: 1\n", "weights.time_out", 3, ["unknown fault kind", KINDS]),
    (
        "weights:\n  timeout: 1\nparams: [timeout]\n",
        "params",
        3,
        ["must be a mapping of fault kind to a mapping of fault parameters", KINDS],
    ),
    (
        "weights:\n  timeout: 1\nparams:\n  timeout: 0.5\n",
        "params.timeout",
        4,
        ["must be a mapping of timeout fault parameters"],
    ),
    (
        "weights:\n  timeout: 1\nparams:\n  timeout:\n    after_s: soon\n",
        "params.timeout.after_s",
        5,
        ["'soon'", ">= 0"],
    ),
    (
        "weights:\n  timeout: 1\nparams:\n  timeout:\n    delay: 1\n",
        "params.timeout.delay",
        5,
        ["unknown key 'delay'", "after_s"],
    ),
    (
        "weights:\n  timeout: 1\nparams:\n  timeot: {after_s: 1}\n",
        "params.timeot",
        4,
        ["unknown fault kind", "did you mean 'timeout'"],
    ),
    ("weights:\n  timeout: 1\nextra: 2\n", "extra", 3, ["unknown key 'extra'", "name, weights, params"]),
    ("weights:\n  timeout: 0\n  latency: 0\n", "weights", 1, ["at least one positive weight"]),
]


@pytest.mark.parametrize(("text", "field", "line", "names"), PROFILES, ids=[f for _, f, _, _ in PROFILES])
def test_bad_profile_file(tmp_path: Path, text: str, field: str, line: int, names: list[str]) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(text, encoding="utf-8")
    r = run_cli(["run", REFUND, "--intensity", "0.2", "--profile", str(profile)])
    assert r.code == 2, r.out + r.err
    where = f"{profile}:{line}" if line > 1 or field != "weights" else str(profile)
    assert_clear(r.err, names=[where, field, *names])


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("- timeout\n- latency\n", ["a profile must be a mapping", KINDS]),
        ("weights: {timeout: [1\n", ["malformed YAML"]),
    ],
    ids=["a list", "malformed"],
)
def test_profile_that_is_not_a_mapping(tmp_path: Path, text: str, names: list[str]) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(text, encoding="utf-8")
    r = run_cli(["run", REFUND, "--profile", str(profile)])
    assert r.code == 2
    assert_clear(r.err, names=[f"{profile}:", *names])


# --- merge -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The --json results of both shards of a small battery."""
    out = tmp_path_factory.mktemp("shards")
    datas = []
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        for i in (1, 2):
            path = out / f"shard{i}.json"
            r = run_cli(
                ["run", REFUND, "--agent", CAREFUL, "--repeat", "2", "--shard", f"{i}/2", "--json", str(path), "-q"]
            )
            assert r.code == 0, r.err
            datas.append(json.loads(path.read_text(encoding="utf-8")))
    return datas


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        *head, last = path.split(".")
        for part in head:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return edit


_DELETE = object()

SHARD_EDITS: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    ("score missing", _set("episodes.0.score", _DELETE), ["episodes[0].score: missing"]),
    ("score a string", _set("episodes.0.score", "high"), ["episodes[0].score: must be a finite number", '"high"']),
    ("score NaN", _set("episodes.0.score", float("nan")), ["episodes[0].score: must be a finite number", "NaN"]),
    ("passed a string", _set("episodes.0.passed", "yes"), ["episodes[0].passed: must be true or false"]),
    ("repetition a float", _set("episodes.0.repetition", 1.5), ["episodes[0].repetition: must be a whole number"]),
    ("attempts a list", _set("episodes.0.attempts", [1]), ["episodes[0].attempts: must be an object"]),
    (
        "attempts.total negative",
        _set("episodes.0.attempts.total", -2),
        ["episodes[0].attempts.total: must be a whole number >= 0"],
    ),
    ("checks an object", _set("episodes.0.checks", {}), ["episodes[0].checks: must be a list"]),
    ("check not an object", _set("episodes.0.checks", ["no_bluff"]), ["episodes[0].checks[0]: must be an object"]),
    (
        "check passed a string",
        _set("episodes.0.checks.0.passed", "no"),
        ["episodes[0].checks[0].passed: must be true or false"],
    ),
    (
        "check severity",
        _set("episodes.0.checks.0.severity", "fatal"),
        ["episodes[0].checks[0].severity: must be fail, warn or pass"],
    ),
    ("scenario null", _set("episodes.0.scenario", None), ["episodes[0].scenario: must be a string"]),
    ("episodes not a list", _set("episodes", {"a": 1}), ['"episodes" list']),
    ("episode not an object", _set("episodes", [3]), ['"episodes" list of objects']),
    ("not a results file", _set("kind", "something-else"), ["not a chaoskit run result", "chaoskit run --json"]),
]


@pytest.mark.parametrize(("edit", "names"), [(e, n) for _, e, n in SHARD_EDITS], ids=[i for i, _, _ in SHARD_EDITS])
def test_merge_of_a_malformed_shard(
    shards: list[dict[str, Any]], tmp_path: Path, edit: Callable[[dict[str, Any]], None], names: list[str]
) -> None:
    good, bad = tmp_path / "shard1.json", tmp_path / "shard2.json"
    good.write_text(json.dumps(shards[0]), encoding="utf-8")
    data = json.loads(json.dumps(shards[1]))
    edit(data)
    bad.write_text(json.dumps(data), encoding="utf-8")
    r = run_cli(["merge", str(good), str(bad)])
    assert r.code == 2, r.out + r.err
    assert_clear(r.err, names=[str(bad), *names])


@pytest.mark.parametrize(
    ("case", "names"),
    [
        ("missing file", ["no/such/shard.json", "file not found"]),
        ("not JSON", ["cannot read the results"]),
        ("shard twice", ["shard(s) 1/2 given more than once"]),
        ("a shard missing", ["shard(s) 2/2 missing"]),
        ("other seed", ["different seed", "merge only the shards of one battery"]),
    ],
)
def test_merge_of_files_that_do_not_fit(
    shards: list[dict[str, Any]], tmp_path: Path, case: str, names: list[str]
) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(shards[0]), encoding="utf-8")
    two.write_text(json.dumps(shards[1]), encoding="utf-8")
    files = [str(one), str(two)]
    if case == "missing file":
        files = [str(one), "no/such/shard.json"]
    elif case == "not JSON":
        two.write_text('{"kind": "chaoskit-run-results", "episodes": [', encoding="utf-8")
        names = [str(two), *names]
    elif case == "shard twice":
        files = [str(one), str(one)]
    elif case == "a shard missing":
        files = [str(one)]
    elif case == "other seed":
        other = json.loads(json.dumps(shards[1]))
        other["config"]["seed"] = 99
        two.write_text(json.dumps(other), encoding="utf-8")
        names = [str(two), *names]
    r = run_cli(["merge", *files])
    assert r.code == 2, r.out + r.err
    assert_clear(r.err, names=names)
