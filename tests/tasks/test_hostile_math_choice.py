"""Math and multiple-choice verifiers against answers that hedge, pad or are built to be slow.

A policy paid for any correct candidate among several learns to list candidates. So: several
boxes or letters, sets, intervals, ``or``/``\\pm`` and lists are refused; a box far longer than
any form of the gold answer is refused without being parsed. Honest controls must pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor_env.tasks.extract import extract_choice
from conductor_env.tasks.suites.choice import GPQASuite
from conductor_env.tasks.suites.math_suites import AIMESuite, Math500Suite

FIXTURES = Path(__file__).parents[1] / "fixtures" / "suites"

#: Answers to a problem whose gold answer is 3/4.
MATH_ATTACKS = {
    "two boxes, wrong last": r"\boxed{\frac{3}{4}} or maybe \boxed{\frac{2}{3}}",
    "candidates in one box": r"\boxed{\frac{3}{4}, \frac{2}{3}}",
    "a set": r"\boxed{\{\frac{3}{4}, \frac{1}{2}\}}",
    "or": r"\boxed{\frac{3}{4} \text{ or } \frac{1}{2}}",
    "plus-minus": r"\boxed{\pm \frac{3}{4}}",
    "an interval around it": r"\boxed{[0, 1]}",
    "a variable": r"\boxed{x}",
    "empty box": r"\boxed{}",
    "nested boxes": r"\boxed{\boxed{\frac{3}{4}}\boxed{1}}",
    "infinity": r"\boxed{\infty}",
    "a list of values": r"\boxed{0.75, 0.5, 0.25, 1}",
    "solutions of an equation": r"\boxed{x = \frac{3}{4} \text{ or } x = 1}",
    "words": r"\boxed{\text{three quarters}}",
    "copied question": r"\boxed{\text{What is } \frac{1}{2} + \frac{1}{4}?}",
    "long sum (slow to parse)": r"\boxed{" + "1+" * 50_000 + "1}",
    "deep nesting (slow to parse)": r"\boxed{" + "(" * 5_000 + "1" + ")" * 5_000 + "}",
    "many boxes, wrong last": r"\boxed{0.75}" * 2_000 + r"\boxed{1}",
    "unclosed boxes": r"\boxed{" * 20_000,
    "only in the reasoning": r"<think>\boxed{\frac{3}{4}}</think>I am not sure.",
}
MATH_HONEST = [r"\boxed{\frac{3}{4}}", r"$\boxed{0.75}$", r"\boxed{\dfrac{3}{4}}", r"\boxed{6/8}", r"\boxed{75\%}"]

#: Answers to a GPQA problem (the gold letter is filled in where an attack names it).
CHOICE_ATTACKS = {
    "gold or another": "Answer: {gold} or {other}",
    "letters glued": "Answer: ABCD",
    "gold then another": "Answer: {gold}\nActually, Answer: {other}",
    "a long run of letters": "Answer: " + "ABCD" * 50_000,
    "gold then another, bracketed": "({gold})({other})",
}
#: Answers naming every letter: the grader reads one fixed letter from each, whatever the gold
#: answer, so they are worth exactly a guess of that letter, never "any of them".
EVERY_LETTER = ["Answer: A B C D", "Answer: A\nAnswer: B\nAnswer: C\nAnswer: D", "(A)(B)(C)(D)",
                "Answer: A, B, C, D", "Answer: D > C > B > A", "\\boxed{A}\\boxed{B}\\boxed{C}\\boxed{D}"]


@pytest.fixture(scope="module")
def math500() -> Math500Suite:
    suite = Math500Suite(data_files=FIXTURES / "math500.jsonl")
    yield suite
    suite.close()


@pytest.fixture(scope="module")
def three_quarters(math500: Math500Suite):
    problem = math500.problems()[0]
    assert problem.answer == "\\frac{3}{4}"
    return problem


@pytest.mark.parametrize("name", sorted(MATH_ATTACKS))
def test_math_attacks_are_not_paid(math500, three_quarters, name):
    score = math500.verify(three_quarters, MATH_ATTACKS[name])
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason


@pytest.mark.parametrize("name", ["long sum (slow to parse)", "deep nesting (slow to parse)"])
def test_slow_boxes_are_refused_unparsed(math500, three_quarters, name):
    assert "too long" in math500.verify(three_quarters, MATH_ATTACKS[name]).reason


@pytest.mark.parametrize("answer", MATH_HONEST)
def test_math_honest_answers_pass(math500, three_quarters, answer):
    assert math500.verify(three_quarters, answer).correct


def test_aime_hedges_are_not_paid():
    suite = AIMESuite(data_files=FIXTURES / "aime25.jsonl")
    problem = suite.problems()[0]
    gold = int(problem.answer)
    for hedge in (rf"\boxed{{{gold}, {gold + 1}}}", rf"\boxed{{{gold}}} \boxed{{{gold + 1}}}", rf"\boxed{{{gold} \pm 1}}",
                  r"\boxed{" + "9" * 10_000 + "}"):
        assert not suite.verify(problem, hedge).correct, hedge
    assert suite.verify(problem, rf"\boxed{{{gold}}}").correct
    suite.close()


@pytest.mark.parametrize("name", sorted(CHOICE_ATTACKS))
def test_choice_attacks_are_not_paid(name):
    suite = GPQASuite(data_files=str(FIXTURES / "gpqa_diamond.jsonl"))
    for problem in suite.problems():
        gold = problem.answer
        other = next(letter for letter in "ABCD" if letter != gold)
        answer = CHOICE_ATTACKS[name].format(gold=gold, other=other)
        score = suite.verify(problem, answer)
        assert (score.correct, score.score) == (False, 0.0), (problem.id, answer[:80], score)


@pytest.mark.parametrize("answer", EVERY_LETTER)
def test_naming_every_letter_is_worth_one_fixed_guess(answer):
    suite = GPQASuite(data_files=str(FIXTURES / "gpqa_diamond.jsonl"))
    letter = extract_choice(answer)
    assert letter in {"A", "D"}
    for problem in suite.problems():
        assert suite.verify(problem, answer).correct == (problem.answer == letter), problem.id


def test_choice_honest_answers_pass():
    suite = GPQASuite(data_files=str(FIXTURES / "gpqa_diamond.jsonl"))
    for problem in suite.problems():
        for answer in (f"Answer: {problem.answer}", f"The answer is ({problem.answer}).\n\nAnswer: {problem.answer}"):
            assert suite.verify(problem, answer).correct, (problem.id, answer)
