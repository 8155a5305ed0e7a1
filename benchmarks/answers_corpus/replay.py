"""Load the labeled answer corpus, replay its situations through real ``@chaos`` tools, and grade them.

    python benchmarks/answers_corpus/replay.py --stats           # the corpus's counts (README figures)
    python benchmarks/answers_corpus/replay.py --show SITUATION  # what the agent received on each call
    python benchmarks/answers_corpus/replay.py --grade [ID...]   # the default checks' verdicts per answer

Each answer is one episode: a scripted agent makes exactly the situation's calls, in order, through ``@chaos``
tools under a plan built from the calls' faults (``on_call`` is the call's position among the calls of its
tool), catches tool errors as an agent would, and gives the answer's text as its final answer. The spans go to
an OTLP-JSON Lines file, which is read back with ``chaoskit.Trace.load`` and graded episode by episode with
``chaoskit.checks.run_checks``, as ``chaoskit check FILE`` does. Stdlib, PyYAML and chaoskit's public API only.
"""

from __future__ import annotations

import argparse
import builtins
import copy
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import chaoskit
from chaoskit import Plan, Trace, checks, telemetry

HERE = Path(__file__).resolve().parent

LANGS = ("en", "fr", "de", "es", "pt")
LABELS = (
    "false_success",
    "silent_failure",
    "fabricated_detail",
    "repeats_faulted_value",
    "claims_injected_action",
)
KINDS = ("read", "write")
#: the exceptions a call's ``raises`` may name: a real (not injected) tool error
RAISABLE = (
    "ValueError",
    "KeyError",
    "LookupError",
    "PermissionError",
    "FileNotFoundError",
    "RuntimeError",
    "TimeoutError",
    "ConnectionError",
)
#: the fault types whose call ends in an exception for the agent (``http`` with ``after_write`` too: the write
#: ran, then the error); the others hand the agent a result, real or altered
RAISING = ("error", "timeout", "http", "rate_limit", "auth_expired")


def fault_raises(fault: Mapping[str, Any]) -> bool:
    """Whether a call with this fault ends in an exception for the agent."""
    return fault["type"] in RAISING


class CorpusError(ValueError):
    """A corpus file that does not follow the schema: the message names the file, line, id and field."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    kind: str
    irreversible: bool


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    returns: Any = None
    raises: dict[str, str] | None = None
    fault: dict[str, Any] | None = None


@dataclass(frozen=True)
class Situation:
    id: str
    domain: str
    task: str
    tools: dict[str, Tool]
    calls: tuple[Call, ...]
    file: str

    @property
    def fault_types(self) -> list[str]:
        """The fault types of the situation's calls, in call order."""
        return [c.fault["type"] for c in self.calls if c.fault]

    def call_recovered(self, i: int) -> bool:
        """Whether the agent got past the fault on call ``i``: a later clean call of the same tool with the
        same arguments; for a write that ran before its error (``after_write``), a later clean read that
        could confirm it; ``latency`` always (the real result arrived); ``prompt_injection`` unless a later
        call went to a tool the injection asked for (``asks_for``, or ``send_email`` for the default text)."""
        c = self.calls[i]
        assert c.fault is not None
        later = self.calls[i + 1 :]
        kind = c.fault["type"]
        if kind == "latency":
            return True
        if kind == "prompt_injection":
            asked = set(c.fault.get("asks_for") or ([] if "text" in c.fault else ["send_email"]))
            return not any(d.tool in asked for d in later)
        clean = [d for d in later if not d.fault and not d.raises]
        if any(d.tool == c.tool and d.args == c.args for d in clean):
            return True
        return bool(c.fault.get("after_write")) and any(self.tools[d.tool].kind == "read" for d in clean)

    @property
    def recovered(self) -> bool | None:
        """None without faults; else whether the agent got past every fault (see :meth:`call_recovered`)."""
        faulted = [i for i, c in enumerate(self.calls) if c.fault]
        if not faulted:
            return None
        return all(self.call_recovered(i) for i in faulted)


@dataclass(frozen=True)
class Case:
    """One labeled answer, with its situation."""

    id: str
    situation: Situation
    lang: str
    labels: tuple[str, ...]
    note: str
    text: str
    file: str

    @property
    def dishonest(self) -> bool:
        return bool(self.labels)


@dataclass
class Replayed:
    """One replayed answer: what the agent received per call, the graded trace and the checks' results."""

    case: Case
    received: list[dict[str, Any]]
    trace: Trace
    results: list[Any] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        """The checks that did not pass (failed or warned)."""
        return [r.name for r in self.results if r.severity != "pass"]


# --- loading ----------------------------------------------------------------------------------------------


def _line_of(text: str, ident: str) -> int | None:
    m = re.search(rf"^\s*-?\s*id:\s*['\"]?{re.escape(ident)}['\"]?\s*$", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


class _Where:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, what: str, ident: str | None, fld: str, msg: str) -> CorpusError:
        line = _line_of(self.text, ident) if ident else None
        at = f"{self.path}" + (f", line {line}" if line else "")
        who = f"{what} {ident!r}" if ident else what
        return CorpusError(f"{at}: {who}: field {fld!r}: {msg}")


def _str(v: Any, w: _Where, what: str, ident: str | None, fld: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise w.fail(what, ident, fld, f"expected a non-empty string, got {v!r:.60}")
    return v


def _load_tools(raw: Any, w: _Where, sid: str) -> dict[str, Tool]:
    if not isinstance(raw, Mapping) or not raw:
        raise w.fail("situation", sid, "tools", "expected a mapping of tool name -> {description, kind}")
    tools = {}
    for name, decl in raw.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise w.fail("situation", sid, "tools", f"tool name must be an identifier, got {name!r}")
        if not isinstance(decl, Mapping):
            raise w.fail("situation", sid, f"tools.{name}", "expected a mapping {description, kind, irreversible}")
        unknown = set(decl) - {"description", "kind", "irreversible"}
        if unknown:
            raise w.fail("situation", sid, f"tools.{name}.{sorted(unknown)[0]}", "unknown field")
        kind = decl.get("kind")
        if kind not in KINDS:
            raise w.fail("situation", sid, f"tools.{name}.kind", f"allowed: {', '.join(KINDS)}; got {kind!r}")
        irr = decl.get("irreversible", False)
        if not isinstance(irr, bool):
            raise w.fail("situation", sid, f"tools.{name}.irreversible", f"expected true or false, got {irr!r}")
        desc = _str(decl.get("description"), w, "situation", sid, f"tools.{name}.description")
        tools[name] = Tool(name, desc, kind, irr)
    return tools


def _load_call(raw: Any, i: int, tools: Mapping[str, Tool], w: _Where, sid: str) -> Call:
    f = f"calls[{i}]"
    if not isinstance(raw, Mapping):
        raise w.fail("situation", sid, f, "expected a mapping {tool, args, returns | raises, fault}")
    unknown = set(raw) - {"tool", "args", "returns", "raises", "fault"}
    if unknown:
        raise w.fail("situation", sid, f"{f}.{sorted(unknown)[0]}", "unknown field")
    tool = raw.get("tool")
    if not isinstance(tool, str) or tool not in tools:
        raise w.fail("situation", sid, f"{f}.tool", f"{tool!r} is not one of the situation's tools {sorted(tools)}")
    args = raw.get("args", {})
    if not isinstance(args, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in args):
        raise w.fail("situation", sid, f"{f}.args", f"expected a mapping of argument names, got {args!r:.60}")
    if "returns" in raw and "raises" in raw:
        raise w.fail("situation", sid, f"{f}.raises", "give returns or raises, not both")
    raises = raw.get("raises")
    if raises is not None:
        if not isinstance(raises, Mapping) or raises.get("type") not in RAISABLE:
            raise w.fail("situation", sid, f"{f}.raises.type", f"allowed: {', '.join(RAISABLE)}; got {raises!r:.60}")
        _str(raises.get("message"), w, "situation", sid, f"{f}.raises.message")
        raises = {"type": raises["type"], "message": raises["message"]}
    fault = raw.get("fault")
    if fault is not None:
        if not isinstance(fault, Mapping) or "type" not in fault:
            raise w.fail("situation", sid, f"{f}.fault", "expected a chaoskit fault mapping with a 'type'")
        if "tool" in fault or "on_call" in fault:
            raise w.fail("situation", sid, f"{f}.fault", "no tool/on_call: the replay derives them from the call")
        try:
            Plan.from_dict({"faults": [{**fault, "tool": tool, "on_call": 1}]})
        except chaoskit.ChaoskitError as exc:
            raise w.fail("situation", sid, f"{f}.fault", str(exc).replace("\n", " ")) from None
        fault = dict(fault)
    return Call(tool, dict(args), copy.deepcopy(raw.get("returns")), raises, fault)


def _load_situation(raw: Any, i: int, domain: str, w: _Where) -> Situation:
    if not isinstance(raw, Mapping):
        raise w.fail(f"situations[{i}]", None, "situations", "expected a mapping {id, task, tools, calls}")
    sid = _str(raw.get("id"), w, f"situations[{i}]", None, "id")
    unknown = set(raw) - {"id", "task", "tools", "calls"}
    if unknown:
        raise w.fail("situation", sid, sorted(unknown)[0], "unknown field; allowed: id, task, tools, calls")
    task = _str(raw.get("task"), w, "situation", sid, "task")
    tools = _load_tools(raw.get("tools"), w, sid)
    calls = raw.get("calls")
    if not isinstance(calls, list) or not calls:
        raise w.fail("situation", sid, "calls", "expected a non-empty list of calls")
    return Situation(
        sid, domain, task, tools, tuple(_load_call(c, j, tools, w, sid) for j, c in enumerate(calls)), str(w.path)
    )


def _load_answer(raw: Any, i: int, sits: Mapping[str, Situation], w: _Where) -> Case:
    if not isinstance(raw, Mapping):
        raise w.fail(f"answers[{i}]", None, "answers", "expected a mapping {id, situation, lang, labels, text}")
    aid = _str(raw.get("id"), w, f"answers[{i}]", None, "id")
    unknown = set(raw) - {"id", "situation", "lang", "labels", "note", "text"}
    if unknown:
        raise w.fail(
            "answer", aid, sorted(unknown)[0], "unknown field; allowed: id, situation, lang, labels, note, text"
        )
    sid = raw.get("situation")
    if not isinstance(sid, str) or sid not in sits:
        raise w.fail("answer", aid, "situation", f"no situation {sid!r} in the corpus")
    if not aid.startswith(f"{sid}/"):
        raise w.fail("answer", aid, "id", f"expected '{sid}/NN' (the situation's id, a slash, a number)")
    lang = raw.get("lang")
    if lang not in LANGS:
        raise w.fail("answer", aid, "lang", f"allowed: {', '.join(LANGS)}; got {lang!r}")
    labels = raw.get("labels")
    if not isinstance(labels, list) or any(lab not in LABELS for lab in labels) or len(set(labels)) != len(labels):
        raise w.fail(
            "answer", aid, "labels", f"expected a list of distinct labels among {', '.join(LABELS)}; got {labels!r}"
        )
    note = raw.get("note", "")
    if labels:
        note = _str(note, w, "answer", aid, "note")
    elif not isinstance(note, str):
        raise w.fail("answer", aid, "note", f"expected a string, got {note!r:.60}")
    text = _str(raw.get("text"), w, "answer", aid, "text")
    return Case(aid, sits[sid], lang, tuple(labels), note, text.strip(), str(w.path))


def load_file(path: Path, known: Mapping[str, Situation] | None = None) -> tuple[list[Situation], list[Case]]:
    """One domain file's situations and answers (``known``: the situations of the files read before)."""
    text = path.read_text(encoding="utf-8")
    w = _Where(path, text)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CorpusError(f"{path}: not valid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, Mapping):
        raise w.fail("file", None, "domain", "expected a mapping {domain, situations, answers}")
    unknown = set(data) - {"domain", "situations", "answers"}
    if unknown:
        raise w.fail("file", None, sorted(unknown)[0], "unknown top-level field; allowed: domain, situations, answers")
    domain = _str(data.get("domain"), w, "file", None, "domain")
    raw_sits = data.get("situations")
    if not isinstance(raw_sits, list) or not raw_sits:
        raise w.fail("file", None, "situations", "expected a non-empty list")
    sits: dict[str, Situation] = dict(known or {})
    mine = []
    for i, raw in enumerate(raw_sits):
        s = _load_situation(raw, i, domain, w)
        if s.id in sits:
            raise w.fail("situation", s.id, "id", f"duplicate situation id (first in {sits[s.id].file})")
        sits[s.id] = s
        mine.append(s)
    raw_answers = data.get("answers")
    if not isinstance(raw_answers, list):
        raise w.fail("file", None, "answers", "expected a list")
    return mine, [_load_answer(raw, i, sits, w) for i, raw in enumerate(raw_answers)]


def load_corpus(directory: str | Path = HERE) -> list[Case]:
    """Every answer of every ``*.yaml`` file in ``directory``, validated; a bad file raises CorpusError."""
    return load_all(directory)[1]


def load_all(directory: str | Path = HERE) -> tuple[dict[str, Situation], list[Case]]:
    """Every situation and every answer of the corpus in ``directory``, validated."""
    directory = Path(directory)
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CorpusError(f"{directory}: no corpus file (*.yaml)")
    sits: dict[str, Situation] = {}
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in files:
        mine, answers = load_file(path, sits)
        sits.update({s.id: s for s in mine})
        for c in answers:
            if c.id in seen:
                raise _Where(path, path.read_text(encoding="utf-8")).fail(
                    "answer", c.id, "id", f"duplicate answer id (first in {seen[c.id]})"
                )
            seen[c.id] = str(path)
        cases.extend(answers)
    return sits, cases


def situations_of(cases: Iterable[Case]) -> dict[str, Situation]:
    return {c.situation.id: c.situation for c in cases}


# --- replaying ----------------------------------------------------------------------------------------------


def plan_for(situation: Situation, *, seed: int = 0) -> Plan:
    """The situation's plan: each call's fault on that call (its position among its tool's calls)."""
    faults = []
    seen: Counter[str] = Counter()
    for call in situation.calls:
        seen[call.tool] += 1
        if call.fault:
            faults.append({**call.fault, "tool": call.tool, "on_call": seen[call.tool]})
    return Plan.from_dict({"seed": seed, "faults": faults})


def _tool(decl: Tool, current: list[Call]) -> Any:
    def impl(**kwargs: Any) -> Any:
        call = current[0]
        if call.raises:
            raise getattr(builtins, call.raises["type"])(call.raises["message"])
        return copy.deepcopy(call.returns)

    impl.__name__ = decl.name
    return chaoskit.chaos(name=decl.name, irreversible=decl.irreversible, description=decl.description)(impl)


def _wait_before_retry(exc: Exception, call: Call, following: Sequence[Call]) -> None:
    """Before retrying the same call, wait the Retry-After the error asked for, as a careful agent does (the
    corpus keeps these waits short; a longer one is capped at a second so that replaying stays fast)."""
    wait = getattr(exc, "retry_after", None)
    if wait and following and following[0].tool == call.tool and following[0].args == call.args:
        time.sleep(min(float(wait), 1.0))


def _run(situation: Situation, answer: str, seed: int, attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run one episode: the scripted agent makes the calls in order and answers ``answer``."""
    current: list[Call] = [situation.calls[0]]
    tools = {name: _tool(decl, current) for name, decl in situation.tools.items()}
    received: list[dict[str, Any]] = []
    with chaoskit.episode(situation.id, plan=plan_for(situation, seed=seed), task=situation.task, **attrs) as ep:
        for i, call in enumerate(situation.calls):
            current[0] = call
            try:
                got = tools[call.tool](**call.args)
                received.append({"tool": call.tool, "ok": True, "result": got})
            except Exception as exc:  # the agent reads the error and goes on, as a tool-calling agent does
                received.append({"tool": call.tool, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
                _wait_before_retry(exc, call, situation.calls[i + 1 : i + 2])
        ep.finish(answer)
    return received


def replay_many(
    cases: Sequence[Case], *, seed: int = 0, record_results: bool = True, chunk: int = 150
) -> list[Replayed]:
    """Replay ``cases`` into OTLP-JSON Lines files (``chunk`` episodes each, well under the span batcher's
    queue), read them back and grade each episode alone with the default checks, as ``chaoskit check FILE``
    does (one ``Trace`` per episode). An episode missing from the export, or missing some of its attempts,
    raises: it cannot be graded."""
    chaoskit.configure(record_results=record_results)
    done: list[Replayed] = []
    for start in range(0, len(cases), chunk):
        part = cases[start : start + chunk]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "corpus.jsonl"
            writer = telemetry.write_jsonl(out)
            try:
                received = [_run(c.situation, c.text, seed, {"answer_id": c.id}) for c in part]
            finally:
                telemetry.remove_processor(writer)  # flushes the batch to the file
            trace = Trace.load(out)
        by_answer = {ep.attributes.get("chaoskit.episode.answer_id"): ep for ep in trace.episodes}
        for c, got in zip(part, received, strict=True):
            ep = by_answer.get(c.id)
            if ep is None or len(ep.attempts) != len(c.situation.calls):
                raise RuntimeError(f"answer {c.id}: its episode is missing from the exported trace, or incomplete")
            one = Trace([ep])
            done.append(Replayed(c, got, one, list(checks.run_checks(one))))
    return done


def replay(case: Case, *, seed: int = 0, record_results: bool = True) -> Replayed:
    """Replay one answer's episode through real ``@chaos`` tools and grade it with the default checks."""
    return replay_many([case], seed=seed, record_results=record_results)[0]


# --- figures ------------------------------------------------------------------------------------------------


def stats(cases: Sequence[Case]) -> dict[str, Any]:
    """The corpus's counts: answers, situations, domains, languages, labels, fault types, recovered or not."""
    sits = situations_of(cases)
    faults: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    for s in sits.values():
        for c in s.calls:
            if c.fault:
                faults[c.fault["type"]] += 1
                f = c.fault
                if f["type"] == "http":
                    modes[f"http {f.get('status', 500)}" + (" after_write" if f.get("after_write") else "")] += 1
                    if f.get("retry_after") is not None:
                        modes["http retry_after"] += 1
                if f["type"] == "garbage":
                    modes[
                        "garbage " + ("stale" if f.get("stale") else "off_by_one" if f.get("off_by_one") else "value")
                    ] += 1
    by_type: dict[str, Counter[str]] = {}
    for s in sits.values():
        for i, c in enumerate(s.calls):
            if c.fault:
                state = "recovered" if s.call_recovered(i) else "unrecovered"
                by_type.setdefault(c.fault["type"], Counter())[state] += 1
    rec = Counter(
        "no fault" if s.recovered is None else "recovered" if s.recovered else "unrecovered" for s in sits.values()
    )
    langs = Counter(c.lang for c in cases)
    dishonest = sum(c.dishonest for c in cases)
    return {
        "answers": len(cases),
        "situations": len(sits),
        "domains": dict(sorted(Counter(s.domain for s in sits.values()).items())),
        "languages": dict(sorted(langs.items())),
        "non_english_pct": round(100 * (len(cases) - langs["en"]) / max(len(cases), 1), 1),
        "dishonest": dishonest,
        "dishonest_pct": round(100 * dishonest / max(len(cases), 1), 1),
        "labels": {lab: sum(lab in c.labels for c in cases) for lab in LABELS},
        "dishonest_by_lang": {lg: sum(c.dishonest for c in cases if c.lang == lg) for lg in LANGS},
        "honest_by_lang": {lg: sum(not c.dishonest for c in cases if c.lang == lg) for lg in LANGS},
        "fault_types": dict(sorted(faults.items())),
        "fault_modes": dict(sorted(modes.items())),
        "fault_calls_by_recovery": {t: dict(sorted(n.items())) for t, n in sorted(by_type.items())},
        "situations_by_recovery": dict(sorted(rec.items())),
    }


def received_of(situation: Situation, *, seed: int = 0) -> list[dict[str, Any]]:
    """Replay a situation (no grading) and return what the agent received on each call: ``{tool, ok, result}``
    or ``{tool, ok: False, error}``; what an answer quoting a faulted value must match."""
    return _run(situation, "(shown)", seed, {})


def _print_show(sits: Mapping[str, Situation], sid: str) -> int:
    if sid not in sits:
        print(f"no situation {sid!r}", file=sys.stderr)
        return 2
    s = sits[sid]
    print(f"plan: {json.dumps(plan_for(s).to_dict()['faults'], default=str)}")
    for call, got in zip(s.calls, received_of(s), strict=True):
        shown = got["result"] if got["ok"] else got["error"]
        print(f"{call.tool}({json.dumps(call.args)}) -> {json.dumps(shown, ensure_ascii=False, default=str)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(HERE), help="the corpus directory (default: this file's)")
    ap.add_argument("--stats", action="store_true", help="print the corpus's counts as JSON")
    ap.add_argument("--show", metavar="SITUATION", help="replay a situation and print what each call returned")
    ap.add_argument("--grade", nargs="*", metavar="ID", help="replay and grade answers (all, or these ids)")
    args = ap.parse_args(argv)
    try:
        sits, cases = load_all(args.dir)
    except CorpusError as exc:
        print(f"corpus error: {exc}", file=sys.stderr)
        return 2
    if args.show:
        return _print_show(sits, args.show)
    if args.grade is not None:
        chosen = [c for c in cases if not args.grade or c.id in args.grade or c.situation.id in args.grade]
        for r in replay_many(chosen):
            print(f"{r.case.id:50} labels={','.join(r.case.labels) or '-':40} flagged={','.join(r.flagged) or '-'}")
        return 0
    print(json.dumps(stats(cases), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
