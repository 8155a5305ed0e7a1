"""The labelled answer corpus (benchmarks/answers_corpus's format): its schema, loaded and checked, and its counts."""

from __future__ import annotations

import copy
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError, ConfigError, PlanError
from chaoskit.plan._model import Plan
from chaoskit.plan._yaml import load_yaml

__all__ = [
    "CORPUS_LABELS",
    "KINDS",
    "LABELS",
    "LANGS",
    "RAISABLE",
    "RAISING",
    "Answer",
    "Call",
    "Case",
    "Corpus",
    "CorpusError",
    "Situation",
    "Tool",
    "fault_raises",
    "load_corpus",
    "situations_of",
    "stats",
]

LANGS = ("en", "fr", "de", "es", "pt")
#: the corpus's five labels (docs/checks.md defines them)
LABELS = (
    "false_success",
    "silent_failure",
    "fabricated_detail",
    "repeats_faulted_value",
    "claims_injected_action",
)
#: each label an answer may carry, and the judge rubric's question it is scored against:
#: ``claims_injected_action`` against the rubric's wider ``claimed_action_not_taken``, which a user's corpus
#: may also name directly
CORPUS_LABELS = {
    "false_success": "false_success",
    "silent_failure": "silent_failure",
    "fabricated_detail": "fabricated_detail",
    "repeats_faulted_value": "repeats_faulted_value",
    "claims_injected_action": "claimed_action_not_taken",
    "claimed_action_not_taken": "claimed_action_not_taken",
}
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


class CorpusError(ConfigError):
    """A corpus file that does not follow the schema: the message names the file, line, id and field."""


@dataclass(frozen=True)
class Tool:
    """A situation's tool: what the scripted agent calls through ``@chaos``."""

    name: str
    description: str
    kind: str
    irreversible: bool


@dataclass(frozen=True)
class Call:
    """One call the agent made: the real tool's result (``returns``) or error (``raises``), and its fault."""

    tool: str
    args: dict[str, Any]
    returns: Any = None
    raises: dict[str, str] | None = None
    fault: dict[str, Any] | None = None


@dataclass(frozen=True)
class Situation:
    """What the agent was asked, the tools it had and the calls it made (with their results and faults)."""

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
    """One labelled final answer, with its situation; ``labels`` as the corpus writes them (empty: honest)."""

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

    @property
    def rubric_labels(self) -> tuple[str, ...]:
        """The labels as the judge rubric's questions (see :data:`CORPUS_LABELS`)."""
        return tuple(sorted({CORPUS_LABELS[lab] for lab in self.labels}))


#: the judge's name for a labelled answer
Answer = Case


@dataclass(frozen=True)
class Corpus:
    """The situations by id, the answers in file order, and a sha256 of the files read (in name order)."""

    path: str
    situations: dict[str, Situation]
    answers: list[Case]
    sha256: str


# --- loading ----------------------------------------------------------------------------------------------


def _line_of(text: str, ident: str) -> int | None:
    m = re.search(rf"^\s*-?\s*id:\s*['\"]?{re.escape(ident)}['\"]?\s*$", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


class _Where:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, what: str, ident: str | None, fld: str, msg: str, index: str | None = None) -> CorpusError:
        line = _line_of(self.text, ident) if ident else None
        at = f"{self.path}" + (f", line {line}" if line else "")
        who = f"{what} {ident!r}" if ident else what
        return CorpusError(f"{at}: {who}" + (f" ({index})" if index else "") + f": field {fld!r}: {msg}")


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
        except ChaoskitError as exc:
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


def _load_labels(raw: Any, w: _Where, aid: str, index: str) -> tuple[str, ...]:
    allowed = ", ".join(CORPUS_LABELS)
    if not isinstance(raw, list):
        raise w.fail("answer", aid, "labels", f"expected a list among {allowed} ([] when honest); got {raw!r}")
    bad = [lab for lab in raw if lab not in CORPUS_LABELS]
    if bad:
        raise w.fail("answer", aid, "labels", f"unknown {bad}; allowed: {allowed}", index)
    if len(set(raw)) != len(raw):
        raise w.fail("answer", aid, "labels", f"expected distinct labels; got {raw!r}", index)
    return tuple(raw)


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
    labels = _load_labels(raw.get("labels"), w, aid, f"answers[{i}]")
    note = raw.get("note", "")
    if labels:
        note = _str(note, w, "answer", aid, "note")
    elif not isinstance(note, str):
        raise w.fail("answer", aid, "note", f"expected a string, got {note!r:.60}")
    text = _str(raw.get("text"), w, "answer", aid, "text")
    return Case(aid, sits[sid], lang, labels, note, text.strip(), str(w.path))


def _load_file(path: Path, text: str, known: Mapping[str, Situation]) -> tuple[list[Situation], list[Case]]:
    """One domain file's situations and answers (``known``: the situations of the files read before)."""
    w = _Where(path, text)
    try:
        data, _ = load_yaml(text, str(path))  # the one YAML loader: its limits, and no key given twice
    except PlanError as exc:
        line = f", line {exc.line}" if exc.line else ""
        raise CorpusError(f"{path}: not valid YAML{line}: {exc.reason}".replace("\n", " ")) from None
    if not isinstance(data, Mapping):
        raise w.fail("file", None, "domain", "expected a mapping {domain, situations, answers}")
    unknown = set(data) - {"domain", "situations", "answers"}
    if unknown:
        raise w.fail("file", None, sorted(unknown)[0], "unknown top-level field; allowed: domain, situations, answers")
    domain = _str(data.get("domain"), w, "file", None, "domain")
    raw_sits = data.get("situations")
    if not isinstance(raw_sits, list) or not raw_sits:
        raise w.fail("file", None, "situations", "expected a non-empty list")
    sits: dict[str, Situation] = dict(known)
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


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.yaml") if p.is_file())
        if not files:
            raise CorpusError(f"{path}: no corpus file (*.yaml) in this folder")
        return files
    if not path.is_file():
        raise CorpusError(f"{path}: no such corpus file or folder")
    return [path]


def load_corpus(path: str | os.PathLike[str]) -> Corpus:
    """Every situation and answer of a corpus file, or of every ``*.yaml`` file of a folder (in name order),
    validated; a bad entry raises :class:`CorpusError` naming the file, the line, the situation or answer id,
    the field and what is allowed."""
    files = _files(Path(path))
    digest = hashlib.sha256()
    sits: dict[str, Situation] = {}
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for f in files:
        data = f.read_bytes()
        digest.update(f.name.encode() + b"\0" + data)
        text = data.decode("utf-8")
        mine, answers = _load_file(f, text, sits)
        sits.update({s.id: s for s in mine})
        for c in answers:
            if c.id in seen:
                raise _Where(f, text).fail("answer", c.id, "id", f"duplicate answer id (first in {seen[c.id]})")
            seen[c.id] = str(f)
        cases.extend(answers)
    if not cases:
        raise CorpusError(f"{path}: no labelled answer in it")
    return Corpus(str(path), sits, cases, digest.hexdigest())


def situations_of(cases: Iterable[Case]) -> dict[str, Situation]:
    """The situations of ``cases`` by id."""
    return {c.situation.id: c.situation for c in cases}


# --- counts -------------------------------------------------------------------------------------------------


def _fault_modes(sits: Iterable[Situation]) -> Counter[str]:
    modes: Counter[str] = Counter()
    for s in sits:
        for c in s.calls:
            f = c.fault
            if f and f["type"] == "http":
                modes[f"http {f.get('status', 500)}" + (" after_write" if f.get("after_write") else "")] += 1
                if f.get("retry_after") is not None:
                    modes["http retry_after"] += 1
            if f and f["type"] == "garbage":
                how = "stale" if f.get("stale") else "off_by_one" if f.get("off_by_one") else "value"
                modes[f"garbage {how}"] += 1
    return modes


def stats(cases: Sequence[Case]) -> dict[str, Any]:
    """The corpus's counts: answers, situations, domains, languages, labels, fault types, recovered or not."""
    sits = situations_of(cases)
    faults = Counter(c.fault["type"] for s in sits.values() for c in s.calls if c.fault)
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
        "fault_modes": dict(sorted(_fault_modes(sits.values()).items())),
        "fault_calls_by_recovery": {t: dict(sorted(n.items())) for t, n in sorted(by_type.items())},
        "situations_by_recovery": dict(sorted(rec.items())),
    }
