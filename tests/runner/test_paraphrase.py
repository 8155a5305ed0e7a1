"""Task perturbation keeps meaning: paraphrases from the shipped template set, and a metamorphic test that every
perturbed task keeps every date, time, amount, id, number and name an oracle could check."""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskit.runner._perturb import DISTRACTORS, FRAMES, REWRITES, SYNONYMS, perturb

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("Bob Smith", "Alice Jones", "Maria Garcia", "Li Wei", "Bob", "Smith")

# tasks with the values the example oracles check: dates, times, amounts, ids and names
TABLE = [
    "Refund order 4832 for the damaged item",
    "Please refund order 4832, the item arrived damaged.",
    "Where is order 4832? Check the status please.",
    "What is the status of order 5120?",
    "Find the docs about rate limits and idempotency and summarize them",
    "Book a meeting with Bob Smith on 2026-12-14 at 14:30 for the quarterly review",
    "Book a 30 minute meeting with Alice Jones on 2026-12-14 at 09:00.",
    "Cancel the meeting on 2026-12-31 at 16:45 with Li Wei because the room is gone",
    "Hold and confirm the cheapest flight for Bob Smith",
    "Hold flight FL-203 on 2026-12-14 for Bob Smith and confirm it with card 4242",
    "Refund $48.32 for order 4832 to Maria Garcia",
    "Escalate ticket T-1042 to tier two since the customer Bob Smith is waiting",
    "Close ticket T-1042. Then update ticket T-1043 for Alice Jones.",
    "What is the status of order 4832 placed on 2026-11-30?",
    "Apply coupon SAVE-10 to order 7781 and charge $1,250.00 for Bob Smith",
    "Return 2 items of order 4832 after 2026-12-01 before 18:00",
    "List the meetings of Li Wei on 2026-12-14.",
    "search the knowledge base for error 503 and answer ticket T-77",
]


def example_tasks() -> list[str]:
    """Every task of the scenario files under examples/ (the new domains included as they land)."""
    out = []
    for f in sorted(ROOT.glob("examples/**/*.yaml")):
        try:
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("task"), str):
            out.append(data["task"])
    return out


TASKS = list(dict.fromkeys([*TABLE, *example_tasks()]))


def values(text: str) -> Counter[str]:
    """The tokens holding a digit, their surrounding punctuation stripped (an oracle's dates, amounts, ids)."""
    tokens = (t.strip(",.;:!?()\"'") for t in text.split())
    return Counter(t for t in tokens if re.search(r"\d", t))


def corrected(text: str) -> str:
    """The text as its reader resolves each self-correction: the wrong value and "- sorry, I mean" dropped."""
    return re.sub(r"\S+ - sorry, I mean ", "", text)


def names(text: str) -> Counter[str]:
    return Counter({n: len(re.findall(rf"\b{re.escape(n)}\b", text)) for n in NAMES})


def assert_keeps_meaning(task: str, eps: float, seed: int) -> None:
    p = perturb(task, eps, seed)
    final = corrected(p.text)
    assert values(final) == values(task), (task, p.text, p.edits)
    assert names(p.text) == names(task), (task, p.text, p.edits)
    for edit in p.edits:
        if edit.startswith("self_correction: ") and "->" in edit:
            wrong, right = edit.removeprefix("self_correction: ").split(" -> ")
            assert wrong != right and right in values(task)
            assert f"{wrong} - sorry, I mean {right}" in p.text


def test_the_table_has_every_kind_of_value() -> None:
    every = " ".join(TASKS)
    for pattern in (r"\d{4}-\d{2}-\d{2}", r"\b\d{1,2}:\d{2}\b", r"\$\d", r"\bT-\d+", r"\bFL-\d+", r"\b4832\b"):
        assert re.search(pattern, every), pattern
    assert len(TASKS) >= len(TABLE)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("eps", [0.2, 0.5, 1.0])
def test_every_perturbed_task_keeps_every_value(task: str, eps: float) -> None:
    for seed in range(40):
        assert_keeps_meaning(task, eps, seed)


def test_self_corrections_keep_whole_values() -> None:
    seen = set()
    for task in TABLE:
        for seed in range(60):
            for e in perturb(task, 1.0, seed).edits:
                if e.startswith("self_correction: ") and "->" in e:
                    seen.add(e.split(" -> ")[1])
    # dates, times, amounts and prefixed ids are corrected whole, never a piece of one
    assert {"2026-12-14", "14:30", "$48.32", "T-1042", "FL-203"} <= seen
    assert not seen & {"12", "14", "48", "32", "1042", "203"}


VALUES = st.one_of(
    st.builds("{}-{:02d}-{:02d}".format, st.integers(2000, 2099), st.integers(1, 12), st.integers(1, 31)),
    st.builds("{:02d}:{:02d}".format, st.integers(0, 23), st.integers(0, 59)),
    st.builds("${}.{:02d}".format, st.integers(1, 9999), st.integers(0, 99)),
    st.builds("{}-{}".format, st.sampled_from(["T", "FL", "ORD", "SAVE"]), st.integers(1, 99999)),
    st.integers(10, 999999).map(str),
)
VERBS = st.sampled_from(["Refund", "Book", "Cancel", "Find", "Hold", "Check", "Please refund", "What is", "Where is"])
NOUNS = st.sampled_from(["order", "the meeting", "flight", "ticket", "the damaged item", "the cheapest flight"])
LINKS = st.sampled_from([" for ", " on ", " at ", " with ", " because of ", " after ", ", then ", ". Then check "])


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.tuples(LINKS, NOUNS, VALUES), min_size=1, max_size=4),
    verb=VERBS,
    name=st.sampled_from(NAMES[:4]),
    end=st.sampled_from(["", ".", "?", "!"]),
    eps=st.floats(0.05, 1.0),
    seed=st.integers(0, 10_000),
)
def test_property_perturbation_keeps_values(
    parts: list[tuple[str, str, str]], verb: str, name: str, end: str, eps: float, seed: int
) -> None:
    task = verb + "".join(f"{link}{noun} {value}" for link, noun, value in parts) + f" for {name}{end}"
    assert_keeps_meaning(task, eps, seed)


def test_paraphrases_come_from_the_template_set() -> None:
    for task in TASKS:
        p = perturb(task, 1.0, 3)
        assert any(e.startswith("paraphrase: ") for e in p.edits), (task, p.edits)
    got = {perturb("Refund order 4832 for the damaged item", 0.9, s).edits for s in range(60)}
    used = {e for edits in got for e in edits if e.startswith("paraphrase: ")}
    assert any("rewrite" in e for e in used)
    # a task of no known shape gets a frame around it, its words kept in order
    p = next(perturb("Tell Bob Smith that 2026-12-14 is fine.", 1.0, s) for s in range(50))
    assert "Bob Smith" in p.text and "2026-12-14" in p.text


def test_request_frames_lower_case_common_words_only() -> None:
    texts = {perturb("Hold and confirm flight FL-203 for Bob Smith", 0.4, s).text for s in range(200)}
    assert any(t.startswith(("Could you hold", "Can you hold", "I need you to hold")) for t in texts)
    names_first = {perturb("Bob Smith needs flight FL-203 held", 0.6, s).text for s in range(200)}
    assert all("Bob Smith" in t for t in names_first)


def test_the_template_set_ships_as_data_and_brings_no_values() -> None:
    data = resources.files("chaoskit.runner").joinpath("paraphrases.yaml")
    assert data.is_file()
    strings = [t for ts in FRAMES.values() for t in ts] + [t for _, ts in REWRITES for t in ts]
    strings += [*DISTRACTORS, *(s for ss in SYNONYMS.values() for s in ss)]
    assert strings and not [s for s in strings if re.search(r"[\d$]", s)]
    assert set(FRAMES) == {"any", "request", "question"}
    for key, templates in FRAMES.items():
        holder = "{body}" if key == "request" else "{task}"
        assert all(holder in t for t in templates), key


def test_same_seed_same_text() -> None:
    for task in TABLE:
        assert perturb(task, 0.7, 11) == perturb(task, 0.7, 11)
