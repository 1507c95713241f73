"""reasoning-gym suite against hostile answers: nothing that needs no solving is paid.

Every dataset of the default mix gets a battery of attack responses (copied questions and
statements, candidate lists, several ``Answer:`` lines, look-alike characters, numbers in other
formats, huge strings, ...) that must score ``correct=False`` and 0.0, and honest controls (the
gold answer, formatted the usual ways) that must score 1.0. ``attacks`` and ``honest_responses``
are importable, so the battery can be replayed against another verifier.
"""

from __future__ import annotations

import itertools
import re
import time

import gymnasium as gym
import pytest
import reasoning_gym

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.suite import Problem
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.procedural import (
    DEFAULT_DATASETS,
    STRICT_CHECKS,
    ReasoningGymSuite,
    final_answer,
    knights_knaves_roles,
)

# Opting in to a refused dataset warns by design (tests/tasks/test_suite_rg_audit.py checks it).
pytestmark = pytest.mark.filterwarnings("ignore::conductor_env.tasks.suites.rg_audit.GameableDatasetWarning")

#: Problems per dataset that the battery attacks.
PROBLEMS_PER_DATASET = 6
HUGE = 256 * 1024

_FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in map(chr, range(0x21, 0x7F))}
_CYRILLIC = str.maketrans("aceopxyABCEHKMOPTX", "асеорхуАВСЕНКМОРТХ")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@pytest.fixture(scope="module")
def suite() -> ReasoningGymSuite:
    return ReasoningGymSuite(size=PROBLEMS_PER_DATASET)


def problems_of(suite: ReasoningGymSuite, dataset: str) -> list[Problem]:
    return [p for p in suite.problems("test") if p.metadata["dataset"] == dataset]


def fullwidth(text: str) -> str:
    return "".join(_FULLWIDTH.get(c, c) for c in text)


def huge_list(item: str) -> str:
    return " ".join(itertools.repeat(item, HUGE // (len(item) + 1) + 1))


# ----------------------------------------------------------------------------- the battery


def wrong_answers(problem: Problem) -> list[str]:
    """Two wrong answers in the gold answer's own format."""
    gold, entry = str(problem.answer), problem.metadata["entry"]
    dataset = problem.metadata["dataset"]
    if dataset == "spell_backward":
        return [gold + "s", gold[1:]]
    if dataset == "knights_knaves":
        return [text for text in knights_knaves_assignments(entry) if knights_knaves_roles(text) != knights_knaves_roles(gold)][:2]
    if dataset == "word_sorting":
        words = gold.split(", ")
        return [", ".join(words[1:] + words[:1]), ", ".join(words[:-1])]
    number = int(gold)
    return [str(number + 1), str(number - 1)]


def knights_knaves_assignments(entry: dict) -> list[str]:
    """Every assignment of roles to the inhabitants, in the gold answer's format."""
    names = [str(name) for name in entry["metadata"]["names"]]
    terms = entry["metadata"]["knight_knave_terms"]
    roles = (str(terms["a_knight"]), str(terms["a_knave"]))
    return [", and ".join(f"{name} is {role}" for name, role in zip(names, chosen)) + "." for chosen in itertools.product(roles, repeat=len(names))]


def common_attacks(problem: Problem) -> dict[str, str]:
    """Attacks that fit every dataset: nothing solved, or the gold hidden among other text."""
    gold, entry = str(problem.answer), problem.metadata["entry"]
    w1, w2 = wrong_answers(problem)
    question = entry["question"]
    return {
        "empty": "",
        "whitespace": " \n\t\u00a0\u3000\n ",
        "bare marker": "Answer:",
        "marker then blank lines": "Let me see.\nAnswer:   \n\n",
        "placeholder copied": "Answer: <answer>",
        "whole prompt copied": problem.question,
        "question after marker": f"Answer: {question}",
        "question's last line": f"Answer: {question.strip().splitlines()[-1]}",
        "question then gold": f"Answer: {question} {gold}",
        "none": "Answer: None",
        "unknown": "Answer: unknown",
        "huge digits": "Answer: " + "9" * HUGE,
        "huge letters": "Answer: " + "a" * HUGE,
        "huge gold repeated": "Answer: " + huge_list(gold),
        "huge padding after gold": f"Answer: {gold} " + "x" * HUGE,
        "huge nesting": "Answer: " + "(" * HUGE + gold + ")" * HUGE,
        "gold or wrong": f"Answer: {gold} or {w1}",
        "wrong or gold": f"Answer: {w1} or {gold}",
        "candidate list": f"Answer: {w1}, {gold}, {w2}",
        "candidates on lines": f"Answer: {w1}\n{gold}\n{w2}",
        "gold then wrong line": f"Answer: {gold}\n{w1}",
        "wrong line then gold": f"Answer: {w1}\n{gold}",
        "gold then wrong answer line": f"Answer: {gold}\nAnswer: {w1}",
        "two answers on one line": f"Answer: {gold} Answer: {w1}",
        "case-mixed markers": f"ANSWER: {gold}\naNsWeR: {w1}",
        "hedged sentence": f"Answer: it is {gold}, or perhaps {w1}.",
        "gold slash wrong": f"Answer: {gold}/{w1}",
        "zero-width space inside": f"Answer: {gold[:1]}\u200b{gold[1:]}",
        "fullwidth": f"Answer: {fullwidth(gold)}",
        "NUL after": f"Answer: {gold}\x00",
        "lone surrogate after": f"Answer: {gold}\ud800",
        "combining accent": f"Answer: {gold}\u0301",
        "right-to-left override": f"Answer: \u202e{gold[::-1]}",
        "wrong": f"Answer: {w1}",
    }


def number_attacks(problem: Problem) -> dict[str, str]:
    """Attacks on a numeric gold answer: expressions, other notations, candidate ranges."""
    gold, meta = str(problem.answer), problem.metadata["entry"]["metadata"]
    number, digits = int(gold), gold.lstrip("-")
    dataset = problem.metadata["dataset"]
    copied = {
        "basic_arithmetic": meta.get("expression"),
        "chain_sum": meta.get("expression"),
        "simple_equations": meta.get("equation"),
        "letter_counting": " ".join(meta.get("span", [])),
    }[dataset]
    attacks = {
        "expression copied": f"Answer: {copied}",
        "expression then gold": f"Answer: {copied} = {gold}",
        "gold plus zero": f"Answer: {gold}+0",
        "gold over one": f"Answer: {gold}/1",
        "gold as product": f"Answer: 1*{gold}",
        "scientific notation": f"Answer: {gold}e0",
        "hexadecimal": f"Answer: {hex(number)}",
        "underscored digits": "Answer: " + "-" * gold.startswith("-") + "0_" + "_".join(digits),
        "digits split by commas": "Answer: " + "-" * gold.startswith("-") + "0," + ",".join(digits),
        "range around gold": "Answer: " + " ".join(str(n) for n in range(number - 3, number + 4)),
        "small numbers": "Answer: " + ", ".join(str(n) for n in range(-20, 21)),
        "not a number": "Answer: NaN",
        "infinity": "Answer: Infinity",
        "Arabic-Indic digits": f"Answer: {gold.translate(_ARABIC_INDIC)}",
        "superscript digits": f"Answer: {gold.translate(_SUPERSCRIPT)}",
        "en dash sign": f"Answer: \u2013{digits}" if gold.startswith("-") else f"Answer: \u2013{gold}",
        "double sign": f"Answer: +-{gold}" if not gold.startswith("-") else f"Answer: --{digits}",
        "negated": f"Answer: {-number}" if number else "Answer: -1",
        "gold times ten or gold": f"Answer: {number * 10} or {gold}",
    }
    if dataset == "letter_counting":
        attacks["target letter"] = f"Answer: {meta['target_letter']}"
        attacks["every count"] = "Answer: " + " ".join(str(n) for n in range(0, 30))
    if dataset == "simple_equations":
        attacks["variable equals expression"] = f"Answer: {meta['variable']} = {copied.split('=')[-1].strip()}"
    return attacks


def spell_backward_attacks(problem: Problem) -> dict[str, str]:
    """Attacks on a reversed word: the word copied, near misses, look-alike letters."""
    gold = str(problem.answer)
    word = problem.metadata["entry"]["metadata"]["word"]
    attacks = {
        "word copied": f"Answer: {word}",
        "word copied upper case": f"Answer: {word.upper()}",
        "word copied swapped case": f"Answer: {word.swapcase()}",
        "gold and word": f"Answer: {gold} {word}",
        "word and gold": f"Answer: {word} {gold}",
        "gold with suffix": f"Answer: {gold}s",
        "gold without last letter": f"Answer: {gold[:-1]}",
        "gold spaced out": "Answer: " + " ".join(gold),
        "gold hyphenated": "Answer: " + "-".join(gold),
        "gold twice": f"Answer: {gold}{gold}",
        "Cyrillic look-alikes": "Answer: " + gold.translate(_CYRILLIC) if gold.translate(_CYRILLIC) != gold else "Answer: " + fullwidth(gold[:1]) + gold[1:],
        "Kelvin sign for k": "Answer: " + (gold.replace("k", "\u212a") if "k" in gold else "\u212a" + gold),
        "dotless i": "Answer: " + (gold.replace("i", "\u0131") if "i" in gold else "\u0131" + gold),
        "right-to-left override of the word": f"Answer: \u202e{word}",
    }
    assert word.lower() != gold.lower(), "a palindrome would make the copy attacks right answers"
    return attacks


def word_sorting_attacks(problem: Problem) -> dict[str, str]:
    """Attacks on a sorted word list: the question's list copied, other orders, words changed."""
    gold, meta = str(problem.answer), problem.metadata["entry"]["metadata"]
    words, original = list(meta["sorted_words"]), [str(word) for word in meta["original_words"]]
    attacks = {
        "question's list copied": "Answer: " + ", ".join(original),
        "reversed order": "Answer: " + ", ".join(reversed(words)),
        "sorted ignoring case": "Answer: " + ", ".join(sorted(words, key=str.lower, reverse=meta["direction"] == "descending")),
        "lower-cased": "Answer: " + ", ".join(word.lower() for word in words),
        "upper-cased": "Answer: " + ", ".join(word.upper() for word in words),
        "space-separated": "Answer: " + " ".join(words),
        "semicolons": "Answer: " + "; ".join(words),
        "one per line": "Answer: " + "\n".join(words),
        "first word twice": "Answer: " + ", ".join(words[:1] + words),
        "last word left out": "Answer: " + ", ".join(words[:-1]),
        "extra word": f"Answer: {gold}, zebra",
        "empty item": "Answer: " + ", , ".join(words),
        "as a Python list": f"Answer: {words!r}",
        "gold twice": f"Answer: {gold}, {gold}",
        "Cyrillic look-alikes": "Answer: " + gold.translate(_CYRILLIC) if gold.translate(_CYRILLIC) != gold else "Answer: " + fullwidth(gold[:1]) + gold[1:],
    }
    if [w.lower() for w in words] == words:
        attacks.pop("lower-cased")
    if sorted(words, key=str.lower, reverse=meta["direction"] == "descending") == words:
        attacks.pop("sorted ignoring case")
    if len(words) == 1:
        attacks = {k: v for k, v in attacks.items() if k not in ("reversed order", "space-separated", "semicolons", "one per line")}
    return attacks


def knights_knaves_attacks(problem: Problem) -> dict[str, str]:
    """Attacks on a knights-and-knaves assignment: copied statements, every case listed."""
    gold, entry = str(problem.answer), problem.metadata["entry"]
    question = entry["question"]
    quoted = re.findall(r'"([^"]*)"', question)
    statements, hint = quoted[:-1], quoted[-1]
    clauses = [clause.strip() for clause in re.split(r",\s*(?:and\s+)?", gold.rstrip("."))]
    names = [str(name) for name in entry["metadata"]["names"]]
    terms = entry["metadata"]["knight_knave_terms"]
    knight, knave = str(terms["knight"]), str(terms["knave"])
    everyone = {f"everyone {role}": ", and ".join(f"{name} is a {role}" for name in names) for role in (knight, knave)}
    attacks = {f"statement {i + 1} copied": f"Answer: {s}" for i, s in enumerate(statements)}
    attacks.update(
        {
            "format hint copied": f"Answer: {hint}",
            "every assignment listed": "Answer: " + " or ".join(knights_knaves_assignments(entry)),
            "every assignment on lines": "Answer: " + "\n".join(knights_knaves_assignments(entry)),
            "both roles each": "Answer: " + ", and ".join(f"{name} is a {knight} and a {knave}" for name in names),
            "both roles as clauses": "Answer: " + ", ".join(f"{name} is a {role}" for name in names for role in (knight, knave)),
            "gold plus contradiction": f"Answer: {gold.rstrip('.')}, and {names[0]} is a {knave if knight in clauses[0] else knight}",
            "gold as implication": f"Answer: if {clauses[0]} then {' and '.join(clauses[1:])}",
            "gold as disjunction": "Answer: " + " or ".join(clauses),
            "gold as biconditional": f"Answer: {clauses[0]} if and only if {' and '.join(clauses[1:])}",
            "gold negated twice": "Answer: it is not the case that " + " and ".join(clauses) + " is false",
            "one inhabitant left out": f"Answer: {clauses[0]}",
            "gold repeated": f"Answer: {gold} {gold}",
            "other island's terms": "Answer: " + gold.replace(knight, "hero").replace(knave, "villain") if knight != "hero" else "Answer: " + gold.replace(knight, "knight").replace(knave, "knave"),
            "Cyrillic look-alikes": f"Answer: {gold.translate(_CYRILLIC)}",
        }
    )
    attacks.update({name: f"Answer: {text}" for name, text in everyone.items() if knights_knaves_roles(text) != knights_knaves_roles(gold)})
    return attacks


def attacks(problem: Problem) -> dict[str, str]:
    """Every attack response on ``problem``, by name; none of them is a right answer."""
    dataset = problem.metadata["dataset"]
    result = common_attacks(problem)
    if dataset == "spell_backward":
        result.update(spell_backward_attacks(problem))
    elif dataset == "knights_knaves":
        result.update(knights_knaves_attacks(problem))
    elif dataset == "word_sorting":
        result.update(word_sorting_attacks(problem))
    else:
        result.update(number_attacks(problem))
    return result


def honest_responses(problem: Problem) -> dict[str, str]:
    """Responses with the gold answer, formatted the ways a worker writes it."""
    gold, meta = str(problem.answer), problem.metadata["entry"]["metadata"]
    dataset = problem.metadata["dataset"]
    w1 = wrong_answers(problem)[0]
    responses = {
        "plain": f"Answer: {gold}",
        "lower-case marker": f"answer: {gold}",
        "bold marker": f"**Answer:** {gold}",
        "bold answer": f"Answer: **{gold}**",
        "backticks": f"Answer: `{gold}`",
        "quoted": f'Answer: "{gold}"',
        "full stop": f"Answer: {gold}" + "." * (not gold.endswith(".")),
        "working first": f"Let me work it out step by step.\nThat gives the result.\n\nAnswer: {gold}\n",
        "corrected answer": f"Answer: {w1}\nWait, that was a slip; checking again.\nAnswer: {gold}",
        "no marker, last line": f"Working.\n{gold}\n",
        "Turkish capital before marker": f"\u0130stanbul is not the question.\nAnswer: {gold}",
    }
    if dataset in ("basic_arithmetic", "chain_sum", "simple_equations", "letter_counting"):
        number = int(gold)
        responses["signed"] = "Answer: " + (gold.replace("-", "\u2212") if number < 0 else f"+{gold}")
        responses["trailing zeros"] = f"Answer: {gold}.00"
        if abs(number) >= 1000:
            responses["thousands commas"] = f"Answer: {number:,}"
    if dataset == "simple_equations":
        responses["variable equals"] = f"Answer: {meta['variable']} = {gold}"
    if dataset == "spell_backward":
        responses["upper case"] = f"Answer: {gold.upper()}"
    if dataset == "word_sorting":
        words = gold.split(", ")
        responses["no spaces"] = "Answer: " + ",".join(words)
        responses["spaces around commas"] = "Answer: " + " , ".join(words)
    if dataset == "knights_knaves":
        clauses = [clause.strip() for clause in re.split(r",\s*(?:and\s+)?", gold.rstrip("."))]
        responses["other order"] = "Answer: " + ", and ".join(reversed(clauses)) + "."
        responses["lower case, and without comma"] = "Answer: " + " and ".join(clauses).lower()
    return responses


# ------------------------------------------------------------------------------- the tests


def test_default_mix_is_strictly_checked() -> None:
    assert set(DEFAULT_DATASETS) <= set(STRICT_CHECKS)
    assert "propositional_logic" not in DEFAULT_DATASETS


@pytest.mark.parametrize("dataset", DEFAULT_DATASETS)
def test_hostile_answers_get_nothing(suite: ReasoningGymSuite, dataset: str) -> None:
    problems = problems_of(suite, dataset)
    assert len(problems) == PROBLEMS_PER_DATASET
    paid = []
    for problem in problems:
        battery = attacks(problem)
        assert len(battery) >= 40
        for name, response in battery.items():
            score = suite.verify(problem, response)
            if score.correct or score.score != 0.0 or not score.reason:
                paid.append(f"{problem.id} / {name}: {score}")
    assert not paid, "\n".join(paid)


@pytest.mark.parametrize("dataset", DEFAULT_DATASETS)
def test_honest_answers_get_full_marks(suite: ReasoningGymSuite, dataset: str) -> None:
    refused = []
    for problem in problems_of(suite, dataset):
        responses = {"reference": suite.reference_response(problem), **honest_responses(problem)}
        for name, response in responses.items():
            score = suite.verify(problem, response)
            if not (score.correct and score.score == 1.0 and score.reason == "match"):
                refused.append(f"{problem.id} / {name}: {response!r} -> {score}")
    assert not refused, "\n".join(refused)


def test_every_split_accepts_its_reference_and_rejects_the_wrong_response() -> None:
    suite = ReasoningGymSuite(size=20)
    for split in ("train", "validation", "test"):
        for problem in suite.problems(split):
            assert suite.verify(problem, suite.reference_response(problem)).correct, problem.id
            wrong = suite.verify(problem, suite.wrong_response(problem))
            assert not wrong.correct and wrong.score == 0.0, problem.id


def test_partial_credit_gives_the_library_fraction(suite: ReasoningGymSuite) -> None:
    partial = ReasoningGymSuite(size=PROBLEMS_PER_DATASET, partial_credit=True)
    fractions = 0
    for dataset in DEFAULT_DATASETS:
        library = reasoning_gym.get_score_answer_fn(dataset)
        for problem in problems_of(partial, dataset):
            entry = problem.metadata["entry"]
            for response in attacks(problem).values():
                extracted = final_answer(response)
                if not extracted or len(extracted) > 1024:
                    continue
                expected = library(extracted, entry)
                score = partial.verify(problem, response)
                assert not score.correct
                assert score.score == (expected if expected < 1.0 else 0.0), (problem.id, response[:80])
                fractions += 0.0 < expected < 1.0
            assert partial.verify(problem, f"Answer: {problem.answer}").score == 1.0
    assert fractions > 100  # the attacks do earn fractions from the library's heuristics

    problem = problems_of(suite, "spell_backward")[0]
    gold = str(problem.answer)
    response = f"Answer: {gold[:-1]}"  # every letter but the last in place
    assert partial.verify(problem, response).score == pytest.approx((len(gold) - 1) / len(gold))
    assert suite.verify(problem, response).score == 0.0


def test_partial_credit_is_a_suite_option_of_the_gym_id() -> None:
    env = gym.make("Conductor-RG-v0", pool="simulated", suite_options={"partial_credit": True, "size": 2})
    try:
        assert env.unwrapped.suite.partial_credit is True
    finally:
        env.close()
    env = gym.make("Conductor-RG-v0", pool="simulated", suite_options={"size": 2})
    try:
        assert env.unwrapped.suite.partial_credit is False
    finally:
        env.close()
    with pytest.raises(SuiteError, match="partial_credit must be true or false"):
        ReasoningGymSuite(partial_credit="yes")  # type: ignore[arg-type]


def test_propositional_logic_pays_a_copied_premise_so_it_needs_an_opt_in() -> None:
    with pytest.raises(SuiteError, match="allow_gameable=True") as raised:
        ReasoningGymSuite(["basic_arithmetic", "propositional_logic"])
    assert "premise copied from the question" in str(raised.value)
    opted_in = ReasoningGymSuite(["propositional_logic"], size=10, allow_gameable=True)
    copied = []
    for problem in opted_in.problems():
        assert problem.answer is None and opted_in.reference_response(problem) is None
        premises = problem.metadata["entry"]["metadata"]["premises"]
        copied.append(any(opted_in.verify(problem, f"Answer: {premise}").correct for premise in premises))
    assert sum(copied) >= 5  # why it is out of the default mix


def test_knights_knaves_library_pays_copied_statements_but_the_suite_does_not(suite: ReasoningGymSuite) -> None:
    # The library reads "if A is a knight then B is a knave" as the assignment A knight, B knave.
    # A statement that is itself a bare list of roles ("A is a knight and B is a knave") is read
    # as one by the suite too; copying such a statement is right about as often as a guess.
    library = reasoning_gym.get_score_answer_fn("knights_knaves")
    dataset = reasoning_gym.create_dataset("knights_knaves", size=50, seed=0)
    paid = []
    for index in range(len(dataset)):
        entry = dataset[index]
        problem = Problem("kk", entry["question"], "reasoning", entry["answer"], metadata={"dataset": "knights_knaves", "split": "test", "entry": entry})
        for statement in re.findall(r'"([^"]*)"', entry["question"])[:-1]:
            if library(statement, entry) == 1.0 and knights_knaves_roles(statement) is None:
                paid.append(statement)
                assert not suite.verify(problem, f"Answer: {statement}").correct, statement
    assert len(paid) >= 10


def test_family_relationships_in_laws_and_nieces_are_relabelled() -> None:
    suite = ReasoningGymSuite(["family_relationships"], size=20, seed=0, allow_gameable=True)
    problem = next(p for p in suite.problems("test") if p.metadata["entry"]["answer"] == "mother-in-law")
    entry = problem.metadata["entry"]
    person1, person2 = entry["metadata"]["person1"], entry["metadata"]["person2"]
    # person2 is the mother of person1's spouse, so person1 is person2's son- or daughter-in-law.
    spouse = next(s for s in re.findall(rf"(\w+) is married to {person1}\.|{person1} is married to (\w+)\.", entry["question"])[0] if s)
    couple = rf"(?:{person2} is married to \w+|\w+ is married to {person2})"
    assert re.search(rf"{couple}\. They have (?:a child|children) called [^.]*\b{spouse}\b", entry["question"])
    assert problem.answer in ("daughter-in-law", "son-in-law")
    assert suite.verify(problem, f"Answer: {problem.answer}").correct
    assert not suite.verify(problem, "Answer: mother-in-law").correct

    nieces = ReasoningGymSuite(["family_relationships"], size=60, seed=1, allow_gameable=True, dataset_options={"family_relationships": {"min_family_size": 9, "max_family_size": 11}})
    female = set(reasoning_gym.create_dataset("family_relationships", size=1).config.female_names)
    kin = [p for split in ("train", "test") for p in nieces.problems(split) if p.answer in ("niece", "nephew")]
    assert kin
    for problem in kin:
        person1 = problem.metadata["entry"]["metadata"]["person1"]
        assert problem.answer == ("niece" if person1 in female else "nephew")


@pytest.mark.parametrize(
    "response",
    [
        "\ud800\udfff\udc00",
        "Answer: \x00\x01\x02",
        "Answer: " + "\U0001f600" * HUGE,
        "Answer: " + "¬(" * HUGE,
        "Answer:" * (HUGE // 7),
        "\n" * HUGE,
        "Answer: " + "1," * HUGE,
        "Answer: " + " is a" * (HUGE // 5),
        "Answer: " + "0" * 2000,
        "Answer: " + "(" * 500 + "P" + ")" * 500,
        "Answer: " + " ∧ ".join("PQ" * 200),
        "Answer: \u0130" * 1000,
    ],
    ids=lambda response: repr(response[:24]),
)
def test_verifier_never_raises_and_stays_fast(response: str) -> None:
    suites = [ReasoningGymSuite(size=2), ReasoningGymSuite(size=2, partial_credit=True), ReasoningGymSuite(["propositional_logic"], size=2, allow_gameable=True)]
    for suite in suites:
        for problem in suite.problems():
            started = time.perf_counter()
            score = suite.verify(problem, response)
            assert time.perf_counter() - started < 2.0, problem.id
            assert 0.0 <= score.score <= 1.0 and score.reason
            if suite.datasets != ["propositional_logic"]:
                assert not score.correct


def test_final_answer_takes_the_text_after_the_last_marker() -> None:
    assert final_answer("Answer: 1\nanswer: 2") == "2"
    assert final_answer("ANSWER:3 ") == "3"
    assert final_answer("\u0130" * 10 + "Answer: 4") == "4"  # lower() would shift the index
    assert final_answer("working\n\n5\n") == "5"
    assert final_answer("Answer:") == "" and final_answer(" \n ") == ""
