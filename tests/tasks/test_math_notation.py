"""The unit and base pre-check against generated families of spellings, hostile and honest.

math-verify drops units and base subscripts, so the pre-check (``notation_mismatch``) is all
that stands between ``5\\text{ m}`` and a reward for ``5\\text{ cm}``. It was bypassed by
spelling: another text-like command (``\\mathit``, ``\\textbf``, ``\\operatorname``), nested
braces (``\\text{{m}}``), a thin space before a subscript (``1011\\,_{10}``), junk in a text
group (``\\text{ m2}``), a bare unit (``5 kg``), a base named in words (``\\text{ in base 3}``).
So the families below cross commands x braces x spacing x units or bases: every spelling of a
different unit or base must be refused, every spelling of the same one (or none) must not be,
and answers built to be slow must return.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_env.suite import Problem
from conductor_env.tasks.math_notation import normalise, notation_mismatch
from conductor_env.tasks.suites.math_suites import Math500Suite

FIXTURES = Path(__file__).parents[1] / "fixtures" / "suites"

#: Text-like commands with a braced argument.
COMMANDS = [
    "text", "textrm", "textnormal", "textit", "textbf", "textsf", "texttt", "textup", "textsl", "emph", "mbox", "hbox",
    "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathnormal", "operatorname", "operatorname*", "boldsymbol",
]  # fmt: skip
#: Spacing between the number and the unit, or before a subscript.
SPACES = ["", " ", "\\,", "\\;", "\\:", "\\!", "~", "\\ ", "\\quad", "\\qquad", " \\, ", "\\hspace{1em}", "\\kern2pt ", "\\thinspace "]
#: Spacing inside a group, before its content.
INNER = ["", " ", "~", "\\,", "\\ "]


def text_spellings(word: str) -> list[str]:
    """``word`` as the argument of every text-like command, nested in 0-2 extra braces, with inner spacing, and as declarations."""
    spellings = []
    for command, depth, inner in itertools.product(COMMANDS, range(3), INNER):
        spellings.append(f"\\{command}{{" + "{" * depth + inner + word + "}" * depth + "}")
    spellings += [f"{{\\rm {word}}}", f"\\rm {word}", f"{{\\bf {word}}}", f"\\mbox{{\\rm {word}}}", f"\\text{{\\textbf{{{word}}}}}", f"\\text {{{word}}}"]
    spellings += [f"\\text{{ }}\\text{{{word}}}", f"\\text{{{word}}}\\text{{ }}", f"\\mathrm{{ {word}}}\\,"]
    return spellings


def spelled_units(word: str) -> list[str]:
    """``5`` then ``word`` in every text spelling after every spacing."""
    return [f"5{space}{spelling}" for space, spelling in itertools.product(SPACES, text_spellings(word))]


#: Subscript spellings of a base (``@``).
SUBSCRIPTS = [
    "_{@}", "_{{@}}", "_{{{@}}}", "_{ @ }", "_{\\,@}", "_{(@)}", "_{\\text{@}}", "_{\\text{{@}}}", "_{\\mathrm{@}}", "_{\\rm @}",
    "_{\\textit{@}}", "_{\\operatorname{@}}", "_{\\mbox{@}}", "_\\text{@}", "_\\mathrm{@}", "_{\\text{base }@}", "_{\\text{base-@}}",
    "_ {@}", "_\\,{@}",
]  # fmt: skip
#: How a numeral is written before its subscript.
NUMERALS = ["{n}", "({n})", "{{{n}}}", "\\text{{{n}}}", "{n}{{}}"]
BASE_WORDS = {"2": ["2", "two", "binary"], "3": ["3", "three"], "8": ["8", "eight", "octal"], "10": ["10", "ten", "decimal"], "16": ["16", "sixteen", "hex"]}


def spelled_bases(numeral: str, base: str) -> list[str]:
    """``numeral`` with base ``base`` in every numeral x spacing x subscript x base-word spelling, and named in a text group."""
    spellings = [form.format(n=numeral) + space + subscript.replace("@", word) for form, space, subscript, word in itertools.product(NUMERALS, SPACES, SUBSCRIPTS, BASE_WORDS[base])]
    spellings += [f"{numeral}\\text{{ in base {word}}}" for word in BASE_WORDS[base]] + [f"{numeral}\\text{{ (base {word})}}" for word in BASE_WORDS[base]]
    spellings += [f"{numeral}\\ \\text{{base}}\\ {word}" for word in BASE_WORDS[base] if word.isdigit()]
    return spellings


# --------------------------------------------------------------------------------- units

#: Gold units and units that must not pass for them.
UNIT_CASES = [
    (r"5\text{ cm}", ["cm", "centimeters", "centimetre", "CM"], ["m", "kg", "inches", "mm", "km", "m2", "(m)", "m, really", "cm cm"]),
    (r"5\mbox{ inches}", ["inches", "inch", "in"], ["feet", "cm", "yards", "inches2"]),
    (r"5^\circ", ["degrees", "degree", "deg"], ["radians", "rad", "minutes"]),
]


@pytest.mark.parametrize(("gold", "same", "other"), UNIT_CASES, ids=[case[0] for case in UNIT_CASES])
def test_every_spelling_of_another_unit_is_refused(gold: str, same: list[str], other: list[str]) -> None:
    answers = [answer for word in other for answer in spelled_units(word)]
    assert len(answers) > 2_000
    paid = [answer for answer in answers if notation_mismatch(gold, answer) is None]
    assert paid == []


@pytest.mark.parametrize(("gold", "same", "other"), UNIT_CASES, ids=[case[0] for case in UNIT_CASES])
def test_every_spelling_of_the_same_unit_is_accepted(gold: str, same: list[str], other: list[str]) -> None:
    answers = [answer for word in same for answer in spelled_units(word)]
    refused = [(answer, notation_mismatch(gold, answer)) for answer in answers if notation_mismatch(gold, answer) is not None]
    assert refused == []


def test_bare_units_after_a_number_are_read_when_the_gold_has_one() -> None:
    for answer in ["5 kg", "5 m", "5 meters", "5\\, m", "5 cm^2", "5 cm^{2}", "5\\;\\;kg", "\\frac{10}{2} kg", "5 м", "5 см"]:
        assert notation_mismatch(r"5\text{ cm}", answer) is not None, answer
    for answer in ["5 cm", "5 centimeters", "5\\,cm", "5~cm", "\\frac{10}{2} cm", "5", "5 ", "\\frac{10}{2}"]:
        assert notation_mismatch(r"5\text{ cm}", answer) is None, answer
    for answer in ["15 cm^2", "15\\,\\text{cm}^{2}", "15 square cm", "15\\text{ sq. cm}"]:
        assert notation_mismatch(r"15\mbox{ cm}^2", answer) is None, answer


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(COMMANDS),
    st.lists(st.sampled_from(SPACES), max_size=3),
    st.lists(st.sampled_from(INNER), max_size=3),
    st.integers(0, 6),
    st.sampled_from(["m", "kg", "inches", "mm", "s", "g", "cm", "centimeters"]),
    st.sampled_from(["", "^2", "^{2}", "^{\\!2}", "^{{2}}"]),
)
def test_random_spellings_are_judged_by_the_unit_they_name(command: str, spaces: list[str], inner: list[str], depth: int, word: str, power: str) -> None:
    answer = "5" + "".join(spaces) + f"\\{command}{{" + "{" * depth + "".join(inner) + word + "}" * depth + "}" + power
    same = word in ("cm", "centimeters") and power == ""
    assert (notation_mismatch(r"5\text{ cm}", answer) is None) == same, answer


#: Tokens around a unit that math-verify drops or reads through (found by fuzzing math-verify).
JUNK = ["", " ", "\\,", "\\!", "~", "{}", "\\text{ }", "\\text{\\,}", "\\mathrm{}", "\\displaystyle", "\\displaystyle ", "\\left.", "\\right.", "\\hspace{2pt}",
        "\\phantom{x}", "\\cdot ", "\\times{}", ".", ",", "\\approx", "\\{", "\\}", "\\left(", "\\right)"]  # fmt: skip
WRAPS = ["%s", "{%s}", "\\text{%s}", "\\mathrm{%s}", "{\\rm %s}", "\\rm %s", "\\text{\\textbf{%s}}", "\\mathrm{\\,%s}", "\\text{ %s }", "\\operatorname{%s}", "\\text{{%s}}"]


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(JUNK), max_size=3),
    st.sampled_from(WRAPS),
    st.lists(st.sampled_from(JUNK), max_size=3),
    st.sampled_from(["m", "kg", "mm", "km", "feet", "g", "s", "min", "liters", "cm", "centimeters"]),
)
def test_units_among_tokens_math_verify_drops_are_read(before: list[str], wrap: str, after: list[str], word: str) -> None:
    answer = "5" + "".join(before) + wrap % word + "".join(after)
    assert (notation_mismatch(r"5\text{ cm}", answer) is None) == (word in ("cm", "centimeters")), answer


def test_answers_without_units_and_golds_without_units_are_left_to_math_verify() -> None:
    for answer in ["5", "5.0", "\\frac{10}{2}", "5\\,", "\\text{5}", "{5}", "5~"]:
        assert notation_mismatch(r"5\text{ cm}", answer) is None, answer
    for gold, answer in [("3", r"3\mathit{ apples}"), ("3", "3 kg"), (r"\text{Evelyn}", r"\textbf{Navin}"), (r"\frac{3}{4}", r"\frac{3}{4}\,\mathrm{cm}"), ("6-5i", "6-5j")]:
        assert notation_mismatch(gold, answer) is None, (gold, answer)


# --------------------------------------------------------------------------------- bases


@pytest.mark.parametrize(("numeral", "base"), [("1011", "2"), ("2101", "3"), ("2516", "8"), ("A1F", "16")])
def test_every_spelling_of_another_base_is_refused(numeral: str, base: str) -> None:
    gold = f"{numeral}_{{{base}}}"
    answers = [answer for other in BASE_WORDS if other != base for answer in spelled_bases(numeral, other)]
    assert len(answers) > 1_000
    paid = [answer for answer in answers if notation_mismatch(gold, answer) is None]
    assert paid == []


@pytest.mark.parametrize(("numeral", "base"), [("1011", "2"), ("2101", "3"), ("2516", "8"), ("A1F", "16")])
def test_every_spelling_of_the_same_base_is_accepted(numeral: str, base: str) -> None:
    for gold in (f"{numeral}_{base}" if len(base) == 1 else f"{numeral}_{{{base}}}", f"{numeral}_{{{base}}}", f"{numeral}\\,_{{\\text{{{base}}}}}"):
        refused = [(answer, notation_mismatch(gold, answer)) for answer in spelled_bases(numeral, base) if notation_mismatch(gold, answer) is not None]
        assert refused == [], gold
        assert notation_mismatch(gold, numeral) is None  # the base left out


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(NUMERALS), st.lists(st.sampled_from(SPACES), max_size=3), st.sampled_from(SUBSCRIPTS), st.sampled_from(sorted(BASE_WORDS)), st.data())
def test_random_base_spellings_are_judged_by_the_base_they_name(form: str, spaces: list[str], subscript: str, base: str, data: st.DataObject) -> None:
    word = data.draw(st.sampled_from(BASE_WORDS[base]))
    answer = form.format(n="1011") + "".join(spaces) + subscript.replace("@", word)
    assert (notation_mismatch("1011_2", answer) is None) == (base == "2"), answer


# --------------------------------------------------------------------------------- bounded work

SLOW = [
    "{" * 10_000 + "5" + "}" * 10_000 + r"\text{cm}",
    "5" + r"\text{" + "{" * 10_000 + "m" + "}" * 10_000 + "}",
    "1011_" + "{" * 10_000 + "3" + "}" * 10_000,
    "5" + r"\text{" * 10_000,
    "5" + "{" * 100_000,
    "5" + "}" * 100_000,
    "5" + r"\hspace{" * 10_000 + "m",
    "5" + r"\rm " * 20_000,
    "5" + r"\text" * 50_000,
    "5" + "_{" * 100_000,
    "1a" + " " * 100_000 + "!",
    "5" + " a" * 50_000 + "!",
    "5" + "1a" * 50_000,
    "5" + r"\,\;" * 50_000 + "_3",
    r"5\text{ cm}" * 20_000,
    "1" + "_1" * 100_000,
    r"\kern" * 50_000,
    "^" * 100_000,
]


@pytest.mark.parametrize("index", range(len(SLOW)))
def test_answers_built_to_be_slow_return(index: int) -> None:
    """Linear, with no recursion: 10,000 nested braces neither recurse nor hang (pytest-timeout ends a hang)."""
    answer = SLOW[index]
    for gold in (r"5\text{ cm}", "1011_2", r"30^\circ"):
        assert notation_mismatch(gold, answer) is None or "differs" in str(notation_mismatch(gold, answer))
        assert notation_mismatch(answer, gold) is None or "differs" in str(notation_mismatch(answer, gold))
    assert len(normalise(answer)) <= 2 * len(answer) + 16


def test_the_normal_form() -> None:
    assert normalise(r"5\,\mathrm{{cm}}") == r"5 \text{cm}"
    assert normalise(r"1011\;_{\text{ten}}") == "1011_{ten}"
    assert normalise(r"5\mbox{\rm m}") == r"5\text{m}"
    assert normalise(r"\frac{3}{4}") == r"\frac{3}{4}"
    assert normalise(r"30^{{\circ}}") == r"30^{\circ}"


# --------------------------------------------------------------------------------- through the suite


@pytest.fixture(scope="module")
def math500() -> Math500Suite:
    suite = Math500Suite(data_files=FIXTURES / "math500.jsonl")
    yield suite
    suite.close()


def problem(gold: str) -> Problem:
    return Problem(id=f"notation:{gold}", question="?", domain="math", answer=gold)


#: Spellings of another unit or base that math-verify alone pays (each was paid before the normal form).
PAID_BY_MATH_VERIFY = [
    (r"5\text{ cm}", r"5\textit{ m}"), (r"5\text{ cm}", r"5\mathit{m}"), (r"5\text{ cm}", r"5\textbf{ m}"), (r"5\text{ cm}", r"5\text{{m}}"),
    (r"5\text{ cm}", r"5\text{{{m}}}"), (r"5\text{ cm}", r"5\mathbf{m}"), (r"5\text{ cm}", r"5\text{\textbf{m}}"), (r"5\text{ cm}", r"5\mbox{\rm m}"),
    (r"5\text{ cm}", r"5\text{ m2}"), (r"5\text{ cm}", r"5\text{ (m)}"), (r"5\text{ cm}", "5 kg"), (r"5\text{ cm}", "5 meters"),
    (r"5\text{ cm}", r"5\text{ }\text{m}"), (r"5\text{ cm}", r"5\text{m}^{2}"), (r"5\text{ cm}", r"5\text{ m}^{\!2}"),
    ("1011_2", "1011 _{10}"), ("1011_2", r"1011\,_2".replace("_2", "_3")), ("1011_2", r"1011\;_{10}"), ("1011_2", r"1011\!_3"),
    ("1011_2", r"1011\quad_3"), ("1011_2", "1011_{{10}}"), ("1011_2", r"1011_{\,10}"), ("1011_2", r"1011 \, _ {10}"), ("1011_2", r"1011\ _3"),
    ("1011_2", r"1011\text{ in base 3}"), ("1011_2", r"1011\text{ (base ten)}"), ("1011_2", r"1011_{\!\!3}"), ("1011_2", "1011_{ 3 }"),
    (r"5\text{ cm}", r"5\text{ м}"), (r"5\text{ cm}", r"5\displaystyle\text{m}"), (r"5\text{ cm}", r"5\text{\ m}"), (r"5\text{ cm}", r"5\text{ }m"),
    ("1011_2", r"1011_{\{3\}}"), ("1011_2", r"1011_{\left(3\right)}"), ("1011_2", "1011_{[3]}"), ("1011_2", "1011_{+3}"), ("1011_2", "1011_{3.0}"),
    ("1011_2", r"1011_{\displaystyle 3}"), ("1011_2", r"1011_{3\,}"),
    (r"5\text{ cm}", r"5\mathrm{}{m}"), (r"5\text{ cm}", r"5km\text{\,}\text{ }"), (r"5\text{ cm}", r"5\text{\,}{mm}\times{}"), (r"5\text{ cm}", r"5\text{ }\displaystylemin"),
    (r"5\text{ cm}", r"5\text{\,}\left.{yd}"), (r"5\text{ cm}", r"5\approxm"), (r"5\text{ cm}", r"5\text{\textbf{meters}}x=\phantom{x}"),
]  # fmt: skip
#: The same unit or base, spelled oddly: paid.
HONEST = [
    (r"5\text{ cm}", r"5\textit{ cm}"), (r"5\text{ cm}", r"5\mathrm{cm}"), (r"5\text{ cm}", r"5\text{{cm}}"), (r"5\text{ cm}", r"5\,\mathrm{cm}"),
    (r"5\text{ cm}", r"5\text{\textbf{centimeters}}"), (r"5\text{ cm}", "5 cm"), (r"5\text{ cm}", "5"), (r"5\text{ cm}", r"5\text{ }\text{cm}"),
    ("1011_2", "1011 _{2}"), ("1011_2", r"1011\,_2"), ("1011_2", "1011_{{2}}"), ("1011_2", r"1011_{\,2}"), ("1011_2", r"1011\text{ in base 2}"),
    (r"5\text{ cm}", "x = 5 cm"), (r"5\text{ cm}", r"AB = 5\text{ cm}"), (r"5\text{ cm}", r"5\,\mathrm{cm}\text{ }"),
    ("1011_2", "1011"), ("1011_2", r"1011\!_2"), ("1011_2", r"1011_{\{2\}}"), ("1011_2", r"1011_{\displaystyle 2}"), ("1011_2", r"1011_{2\,}"),
]  # fmt: skip


@pytest.mark.parametrize(("gold", "answer"), PAID_BY_MATH_VERIFY)
def test_spellings_math_verify_pays_are_refused_by_the_suite(math500: Math500Suite, gold: str, answer: str) -> None:
    score = math500.verify(problem(gold), f"\\boxed{{{answer}}}")
    assert (score.correct, score.score) == (False, 0.0), score
    assert "differs" in score.reason, score


@pytest.mark.parametrize(("gold", "answer"), HONEST)
def test_the_same_unit_or_base_spelled_oddly_is_paid_by_the_suite(math500: Math500Suite, gold: str, answer: str) -> None:
    assert math500.verify(problem(gold), f"\\boxed{{{answer}}}").correct, (gold, answer)
