"""RLPR's number comparison against answers paid without solving, and inputs built to hang it.

References below 1 were compared with an absolute tolerance of 1e-6, so ``0`` (or any value off
by orders of magnitude) matched every small physical constant. The tolerance is now relative
(1e-3) at every magnitude. Numbers are read in the forms graders see (``6.626e-34``,
``6.626 \\times 10^{-34}``, ``6.626×10^-34``, ``6.626*10**-34``), with bounded exponents, so
``1e999999`` or ``10^{99999999}`` is refused at once, never computed. Honest controls must pass.
"""

from __future__ import annotations

import pytest

from conductor_env.suite import Problem
from conductor_env.tasks.suites.rlpr import RLPRSuite, numbers_match, rlpr_match

#: Physical constants as references (each under the suite's 30-character limit).
CONSTANTS = {
    "planck": "6.626e-34",
    "elementary charge": "1.602 \\times 10^{-19}",
    "electron mass": "9.109×10^-31",
    "boltzmann": "1.381*10**-23",
    "gravitational": "6.674e-11",
    "avogadro": "6.022e23",
}

#: Answers that are not the reference (``{ref}`` is its value in e-notation).
HOSTILE = {
    "zero": lambda ref: "0",
    "zero point zero": lambda ref: "0.0",
    "negative zero": lambda ref: "-0",
    "off by 10x": lambda ref: f"{ref * 10:.4g}",
    "off by 0.1x": lambda ref: f"{ref / 10:.4g}",
    "off by 1e4": lambda ref: f"{ref * 1e4:.4g}",
    "1e-30": lambda ref: "1e-30",
    "wrong sign": lambda ref: f"{-ref:.4g}",
    "off by 0.2%": lambda ref: f"{ref * 1.002:.6g}",
    "mantissa only": lambda ref: f"{ref:.4e}".split("e")[0],
    "inf": lambda ref: "inf",
    "nan": lambda ref: "nan",
    "1e999999": lambda ref: "1e999999",
    "10^{99999999}": lambda ref: "10^{99999999}",
    "1e-999999": lambda ref: "1e-999999",
    "huge digit string": lambda ref: "9" * 100_000,
    "huge exponent digits": lambda ref: "1e" + "9" * 100_000,
    "long fraction": lambda ref: "0." + "0" * 100_000 + "1",
    "a range": lambda ref: f"{ref:.4g}-{ref * 10:.4g}",
    "two numbers": lambda ref: f"0 {ref:.4g}",
}

#: Answers that are the reference, written as graders see them.
HONEST = {
    "e-notation": lambda ref: f"{ref:.4e}",
    "times ten, LaTeX": lambda ref: "{} \\times 10^{{{}}}".format(*f"{ref:.4e}".split("e")),
    "times sign": lambda ref: "{}×10^{}".format(*f"{ref:.4e}".split("e")),
    "python power": lambda ref: "{}*10**{}".format(*f"{ref:.4e}".split("e")),
    "x 10^( )": lambda ref: "{} x 10^({})".format(*f"{ref:.4e}".split("e")),
    "with a unit": lambda ref: f"{ref:.4e} J",
    "within 0.05%": lambda ref: f"{ref * 1.0005:.6e}",
    "within -0.05%": lambda ref: f"{ref * 0.9995:.6e}",
    "capital E": lambda ref: f"{ref:.4E}",
}


def reference_value(reference: str) -> float:
    mantissa, exponent = {"planck": (6.626, -34), "elementary charge": (1.602, -19), "electron mass": (9.109, -31), "boltzmann": (1.381, -23), "gravitational": (6.674, -11), "avogadro": (6.022, 23)}[
        reference
    ]
    return float(f"{mantissa}e{exponent}")


@pytest.mark.parametrize("constant", sorted(CONSTANTS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_numbers_are_not_paid(constant, name):
    answer = HOSTILE[name](reference_value(constant))
    assert rlpr_match(answer, CONSTANTS[constant]) is False, (answer[:40], CONSTANTS[constant])


@pytest.mark.parametrize("constant", sorted(CONSTANTS))
@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_numbers_are_paid(constant, name):
    answer = HONEST[name](reference_value(constant))
    assert rlpr_match(answer, CONSTANTS[constant]) is True, (answer, CONSTANTS[constant])


@pytest.mark.parametrize(
    ("prediction", "reference", "match"),
    [
        ("0", "0", True),
        ("0.0", "0", True),
        ("1e-13", "0", True),  # the absolute floor where the reference is exactly zero
        ("1e-6", "0", False),
        ("0.2502", "0.25", True),  # 0.08%: relative below 1 too
        ("0.251", "0.25", False),  # 0.4%
        ("0.0009", "0.001", False),  # off by 10%
        ("0", "0.0000005", False),  # was paid under the absolute 1e-6
        ("0.0000015", "0.0000005", False),  # 3x: so was this
        ("10^{-3}", "0.001", True),
        ("3/4", "0.75", True),
        ("3", "3/4", False),  # the reference is read as a fraction, not 3 with a unit "/4"
        ("6.626", "6.626*10^-34", False),  # nor as 6.626 with a unit "*10^-34"
        ("2", "2^10", False),
        ("5", "5-6", False),
        ("30^\\circ", "30", True),
        ("5\\text{ cm}", "5", True),
        ("\u22125", "-5", True),  # the Unicode minus sign
        ("1{,}200", "1200", True),
    ],
)
def test_number_reading(prediction, reference, match):
    assert rlpr_match(prediction, reference) is match


def test_the_tolerance_is_relative_at_every_magnitude():
    for exponent in range(-300, 301, 7):
        reference = 1.2345 * 10.0**exponent
        assert numbers_match(reference * (1 + 9e-4), reference)
        assert not numbers_match(reference * (1 + 1.1e-3), reference)
        assert not numbers_match(0.0, reference) and not numbers_match(reference * 10, reference)


def test_the_suite_pays_constants_only_when_right():
    suite = RLPRSuite.__new__(RLPRSuite)  # verify reads only the problem, not the data
    problem = Problem(id="h", question="Planck's constant in J s?", domain="reasoning", answer="6.626e-34")
    assert suite.verify(problem, "<answer>6.626 \\times 10^{-34} J s</answer>").correct
    for answer in ("<answer>0</answer>", "<answer>6.626</answer>", "<answer>1e999999</answer>", "<answer>nan</answer>"):
        score = suite.verify(problem, answer)
        assert (score.correct, score.score) == (False, 0.0) and score.reason, answer


@pytest.mark.parametrize(
    "answer",
    [
        "1" * (1 << 20),
        "1e" + "9" * (1 << 20),
        "10^{" + "9" * (1 << 20) + "}",
        "1 " + "m" * (1 << 20),
        "\\text{" * (1 << 18),
        "1" + " \\times 10^" * (1 << 17),
        "1/" * (1 << 19),
    ],
)
def test_megabyte_answers_are_read_in_linear_time(answer):
    assert rlpr_match(answer, "6.626e-34") is False
