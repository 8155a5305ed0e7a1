"""Seeded, deterministic rewrites of a task at intensity epsilon (0 = unchanged, 1 = all) that keep its meaning.

Five rewrites, each applied with probability epsilon (synonyms: each eligible word with probability epsilon), the
kinds allowed rising with the level (:data:`LEVELS`): ``light`` (epsilon 0.1, and any epsilon below 0.2) rewrites
words and adds noise (synonym, distractor); ``medium`` (0.2, up to 0.3) also rewrites the structure (paraphrase,
reorder); ``heavy`` (0.3 and above) also corrects itself mid-task (self_correction):
- ``paraphrase``: the whole task said another way, from the shipped template set ``paraphrases.yaml``
  (a rewrite for a known task shape, else a frame around the task);
- ``synonym``: a word replaced by a synonym from the template set's table;
- ``reorder``: two sentences swapped, or a trailing clause ("... for the damaged item") moved to the front;
- ``distractor``: an irrelevant sentence added;
- ``self_correction``: a value first given wrong, then corrected ("4833 - sorry, I mean 4832").

Meaning is kept: every date, time, amount, id and number of the task (:data:`VALUE`) is copied verbatim, and
names are never touched (a capitalised word inside a sentence is never replaced or lower-cased). After a
self-correction the corrected value is the original one, whole ("T-1043 - sorry, I mean T-1042",
"2026-12-15 - sorry, I mean 2026-12-14"). The templates hold no digit and no "$" (checked when read).
The same (task, epsilon, seed) always gives the same text and the same list of edits.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.plan._yaml import load_yaml

__all__ = [
    "DISTRACTORS",
    "FRAMES",
    "LEVELS",
    "REWRITES",
    "SYNONYMS",
    "VALUE",
    "Perturbation",
    "epsilon_of",
    "perturb",
    "rewrites_at",
]

#: the named levels of epsilon, and the kinds of rewrite each allows (each level adds to the one below)
LEVELS: dict[str, tuple[float, tuple[str, ...]]] = {
    "light": (0.1, ("synonym", "distractor")),
    "medium": (0.2, ("synonym", "distractor", "paraphrase", "reorder")),
    "heavy": (0.3, ("synonym", "distractor", "paraphrase", "reorder", "self_correction")),
}


def epsilon_of(value: float | str) -> float:
    """``value`` as a number: a level's name (``light``, ``medium``, ``heavy``) or a number from 0 to 1."""
    if isinstance(value, str):
        name = value.strip().lower()
        if name in LEVELS:
            return LEVELS[name][0]
        try:
            value = float(name)
        except ValueError:
            raise ValueError(
                f"perturbation intensity must be a number from 0 to 1 or one of {', '.join(LEVELS)}, got {value!r}"
            ) from None
    if isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise ValueError(f"perturbation intensity must be from 0 to 1, got {value!r}")
    return float(value)


def rewrites_at(epsilon: float) -> tuple[str, ...]:
    """The kinds of rewrite allowed at ``epsilon``: those of the highest level at or below it (``light``'s below
    0.2), none at 0."""
    if epsilon <= 0.0:
        return ()
    allowed = LEVELS["light"][1]
    for eps, kinds in LEVELS.values():
        if epsilon >= eps:
            allowed = kinds
    return allowed


_DATA = "paraphrases.yaml"


def _load() -> dict[str, Any]:
    """The template set, checked: a template may hold no value of its own (no digit, no "$")."""
    text = resources.files("chaoskit.runner").joinpath(_DATA).read_text(encoding="utf-8")
    where = f"chaoskit/runner/{_DATA}"
    data, _ = load_yaml(text, where)
    for key in ("frames", "rewrites", "lowercase_starts", "synonyms", "distractors"):
        if key not in data:
            raise ChaoskitError(f"{where}: {key}: missing")
    strings: list[tuple[str, str]] = [(f"frames.{k}", t) for k, ts in data["frames"].items() for t in ts]
    strings += [(f"rewrites[{i}].to", t) for i, r in enumerate(data["rewrites"]) for t in r["to"]]
    strings += [("distractors", t) for t in data["distractors"]]
    strings += [(f"synonyms.{w}", s) for w, ss in data["synonyms"].items() for s in ss]
    for at, t in strings:
        if re.search(r"[\d$]", t):
            raise ChaoskitError(f"{where}: {at}: {t!r} holds a digit or '$'; templates may not bring values")
    return dict(data)


_TEMPLATES = _load()
#: whole-task frames by the task's shape: ``any``, ``request`` (uses ``{body}``), ``question``
FRAMES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _TEMPLATES["frames"].items()}
#: whole-task rewrites: (compiled pattern, templates using its named groups)
REWRITES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(r["match"], re.IGNORECASE), tuple(r["to"])) for r in _TEMPLATES["rewrites"]
)
SYNONYMS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _TEMPLATES["synonyms"].items()}
DISTRACTORS: tuple[str, ...] = tuple(_TEMPLATES["distractors"])
_LOWER_OK = frozenset(w.lower() for w in _TEMPLATES["lowercase_starts"])

#: the values a task's oracle may check, each kept whole: a date, a time, an amount, an id with a prefix
#: (``T-1042``, ``FL-203``), a number (``4832``, ``48.32``)
VALUE = re.compile(
    r"(?<![\w$.-])(?:\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\$\d+(?:,\d{3})*(?:\.\d+)?|[A-Za-z]{1,4}-\d+|\d+(?:,\d{3})*(?:\.\d+)?)(?![\w-])"
)
_CLAUSE = re.compile(
    r"^(?P<head>.+?)\s+(?P<tail>(?:for|because|since|after|before|so that)\s+.+?)(?P<end>[.!?]?)$", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"(?<![\w$-])[A-Za-z]+(?![\w-])")


@dataclass(frozen=True)
class Perturbation:
    """A rewritten task and the edits that produced it (for the report)."""

    original: str
    text: str
    epsilon: float
    seed: int
    edits: tuple[str, ...] = field(default=())


def _rng(task: str, epsilon: float, seed: int) -> random.Random:
    digest = hashlib.blake2b(f"{seed}\x1f{epsilon!r}\x1f{task}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def _match_case(word: str, repl: str) -> str:
    return repl[:1].upper() + repl[1:] if word[:1].isupper() else repl


def _starts_common(text: str) -> bool:
    """Whether ``text`` starts with a common word (one that may be lower-cased: never a name)."""
    first = re.match(r"[A-Za-z]+", text)
    return bool(first) and first is not None and first.group(0).lower() in _LOWER_OK


def _lower_first(text: str) -> str:
    """``text`` with its first word lower-cased when that word is a common one (never a name)."""
    return text[:1].lower() + text[1:] if _starts_common(text) else text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _paraphrase(text: str, rng: random.Random) -> tuple[str, str] | None:
    """The task said another way, and how; None when no template fits."""
    choices: list[tuple[str, str]] = []
    sentences = [s for s in _SENTENCE.split(text) if s]
    for pattern, templates in REWRITES:
        m = pattern.match(text) if len(sentences) == 1 else None
        if m:
            groups = {k: v or "" for k, v in m.groupdict().items()}
            choices += [(t.format(**groups), f"rewrite {t!r}") for t in templates]
    if not choices:
        if len(sentences) == 1 and text.endswith("?"):
            choices += [(t.format(task=text), f"frame {t!r}") for t in FRAMES.get("question", ())]
        elif len(sentences) == 1 and _starts_common(text):
            body = re.sub(r"^please\s+", "", _lower_first(text.rstrip(".! ")), flags=re.IGNORECASE)
            choices += [(t.format(body=body), f"frame {t!r}") for t in FRAMES.get("request", ())]
        choices += [
            (t.format(task=text if text.endswith((".", "!", "?")) else text + "."), f"frame {t!r}")
            for t in FRAMES.get("any", ())
        ]
    return rng.choice(choices) if choices else None


def _wrong(value: str, rng: random.Random) -> str:
    """A plausible wrong value of the same form: a date a day off, else a different last digit."""
    m = re.fullmatch(r"(\d{4}-\d{2}-)(\d{2})", value)
    if m:
        day = int(m.group(2))
        return f"{m.group(1)}{day - 1 if day >= 28 else day + 1:02d}"
    i = max(i for i, ch in enumerate(value) if ch.isdigit())
    digit = (int(value[i]) + rng.randrange(1, 10)) % 10
    return value[:i] + str(digit) + value[i + 1 :]


def perturb(task: str, epsilon: float | str, seed: int) -> Perturbation:
    """Rewrite ``task`` at intensity ``epsilon`` in [0, 1] (or a level: ``light``, ``medium``, ``heavy``),
    deterministically for ``seed``, with the kinds of rewrite :func:`rewrites_at` allows at that intensity.

    Each step draws its coin whether or not its kind is allowed, so a lower level skips rewrites without moving
    the draws of the others; at ``heavy`` (0.3) and above every kind is allowed."""
    epsilon = epsilon_of(epsilon)
    if epsilon == 0.0 or not task.strip():
        return Perturbation(task, task, epsilon, seed)
    kinds = rewrites_at(epsilon)
    rng = _rng(task, epsilon, seed)
    edits: list[str] = []
    text = task.strip()

    # 1. a paraphrase of the whole task
    if rng.random() < epsilon and "paraphrase" in kinds:
        got = _paraphrase(text, rng)
        if got is not None:
            text, how = got
            edits.append(f"paraphrase: {how}")

    # 2. synonyms, word by word; a capitalised word inside a sentence may be a name and is left alone
    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        choices = SYNONYMS.get(word.lower())
        if not choices or rng.random() >= epsilon:
            return word
        before = text[: m.start()].rstrip()
        if word[:1].isupper() and before and not before.endswith((".", "!", "?", ":")):
            return word
        repl = _match_case(word, rng.choice(choices))
        edits.append(f"synonym: {word!r} -> {repl!r}")
        return repl

    text = _WORD.sub(swap, text)

    # 3. reorder: swap two sentences, else move a trailing clause to the front
    if rng.random() < epsilon and "reorder" in kinds:
        sentences = [s for s in _SENTENCE.split(text) if s]
        if len(sentences) >= 2:
            i = rng.randrange(len(sentences) - 1)
            sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
            text = " ".join(sentences)
            edits.append(f"reorder: swapped sentences {i + 1} and {i + 2}")
        else:
            m = _CLAUSE.match(text)
            # only a plain one-clause head of three words or more ("Look for the docs" keeps its "for")
            if m and len(m.group("head").split()) >= 3 and not re.search(r"[.:;?!]", m.group("head")):
                head, tail, end = m.group("head"), m.group("tail"), m.group("end") or "."
                text = f"{_upper_first(tail)}, {_lower_first(head)}{end}"
                edits.append(f"reorder: moved {tail!r} to the front")

    # 4. a distractor sentence, before or after the task
    if rng.random() < epsilon:
        d = rng.choice(DISTRACTORS)
        sep = "" if text.endswith((".", "!", "?")) else "."
        if rng.random() < 0.5:
            text = f"{d} {text}"
        else:
            text = f"{text}{sep} {d}"
        edits.append(f"distractor: {d!r}")

    # 5. a self-correction on a value with two digits or more (an id, an amount, a date, a time), kept whole
    if rng.random() < epsilon and "self_correction" in kinds:
        values = [m for m in VALUE.finditer(text) if sum(ch.isdigit() for ch in m.group(0)) >= 2]
        if values:
            m = rng.choice(values)
            right = m.group(0)
            wrong = _wrong(right, rng)
            text = f"{text[: m.start()]}{wrong} - sorry, I mean {right}{text[m.end() :]}"
            edits.append(f"self_correction: {wrong} -> {right}")
        else:
            text = f"{text} Actually, scratch that - no, it is right as written."
            edits.append("self_correction: retracted retraction")
    return Perturbation(task, text, epsilon, seed, tuple(edits))
