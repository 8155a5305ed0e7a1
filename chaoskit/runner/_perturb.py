"""Seeded, deterministic rewrites of a task at intensity epsilon (0 = unchanged, 1 = every rewrite).

Four rewrites, each applied with probability epsilon (synonyms: each eligible word with probability epsilon):
- ``synonym``: a word replaced by a synonym from a small fixed table;
- ``reorder``: two sentences swapped, or a trailing clause ("... for the damaged item") moved to the front;
- ``distractor``: an irrelevant sentence added;
- ``self_correction``: a number first given wrong, then corrected ("4833 - sorry, I mean 4832").
The same (task, epsilon, seed) always gives the same text and the same list of edits.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field

__all__ = ["DISTRACTORS", "SYNONYMS", "Perturbation", "perturb"]

SYNONYMS: dict[str, tuple[str, ...]] = {
    "damaged": ("broken", "defective"),
    "item": ("product", "article"),
    "find": ("look up", "locate"),
    "search": ("look up",),
    "please": ("kindly",),
    "send": ("dispatch",),
    "customer": ("client",),
    "check": ("verify",),
    "quickly": ("promptly",),
    "latest": ("most recent",),
    "summarize": ("sum up",),
    "summary": ("recap",),
    "question": ("query",),
    "answer": ("reply",),
    "about": ("regarding",),
    "help": ("assist",),
    "issue": ("problem",),
    "wrong": ("incorrect",),
    "buy": ("purchase",),
    "get": ("fetch",),
}

DISTRACTORS: tuple[str, ...] = (
    "By the way, the weather has been lovely this week.",
    "I have been a customer for years and usually shop on weekends.",
    "Please keep the answer short.",
    "My colleague says hello.",
    "I am writing this from my phone, so excuse any typos.",
)

_CLAUSE = re.compile(
    r"^(?P<head>.+?)\s+(?P<tail>(?:for|because|since|after|before|so that)\s+.+?)(?P<end>[.!?]?)$", re.IGNORECASE
)
_NUMBER = re.compile(r"\b\d{2,}\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


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


def perturb(task: str, epsilon: float, seed: int) -> Perturbation:
    """Rewrite ``task`` at intensity ``epsilon`` in [0, 1], deterministically for ``seed``."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"perturbation intensity must be from 0 to 1, got {epsilon!r}")
    if epsilon == 0.0 or not task.strip():
        return Perturbation(task, task, epsilon, seed)
    rng = _rng(task, epsilon, seed)
    edits: list[str] = []
    text = task.strip()

    # 1. synonyms, word by word
    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        choices = SYNONYMS.get(word.lower())
        if not choices or rng.random() >= epsilon:
            return word
        repl = _match_case(word, rng.choice(choices))
        edits.append(f"synonym: {word!r} -> {repl!r}")
        return repl

    text = re.sub(r"[A-Za-z]+", swap, text)

    # 2. reorder: swap two sentences, else move a trailing clause to the front
    if rng.random() < epsilon:
        sentences = [s for s in _SENTENCE.split(text) if s]
        if len(sentences) >= 2:
            i = rng.randrange(len(sentences) - 1)
            sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
            text = " ".join(sentences)
            edits.append(f"reorder: swapped sentences {i + 1} and {i + 2}")
        else:
            m = _CLAUSE.match(text)
            if m:
                head, tail, end = m.group("head"), m.group("tail"), m.group("end") or "."
                text = f"{tail[:1].upper()}{tail[1:]}, {head[:1].lower()}{head[1:]}{end}"
                edits.append(f"reorder: moved {tail!r} to the front")

    # 3. a distractor sentence, before or after the task
    if rng.random() < epsilon:
        d = rng.choice(DISTRACTORS)
        sep = "" if text.endswith((".", "!", "?")) else "."
        if rng.random() < 0.5:
            text = f"{d} {text}"
        else:
            text = f"{text}{sep} {d}"
        edits.append(f"distractor: {d!r}")

    # 4. a self-correction on a number (an id, an amount)
    if rng.random() < epsilon:
        numbers = list(_NUMBER.finditer(text))
        if numbers:
            m = rng.choice(numbers)
            right = m.group(0)
            last = (int(right[-1]) + rng.randrange(1, 9)) % 10
            wrong = right[:-1] + str(last)
            text = f"{text[: m.start()]}{wrong} - sorry, I mean {right}{text[m.end() :]}"
            edits.append(f"self_correction: {wrong} -> {right}")
        else:
            text = f"{text} Actually, scratch that - no, it is right as written."
            edits.append("self_correction: retracted retraction")
    return Perturbation(task, text, epsilon, seed, tuple(edits))
