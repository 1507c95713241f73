"""Answer extraction on model outputs written out by hand in the shapes real models produce."""

from __future__ import annotations

import pytest

from conductor_env.tasks.extract import extract_boxed, extract_choice, extract_code, strip_think

# --------------------------------------------------------------------------------------------
# strip_think
# --------------------------------------------------------------------------------------------


def test_strip_think_removes_closed_block() -> None:
    text = "<think>\nLet me try 3... no, 4.\n</think>\n\nThe answer is $\\boxed{4}$."
    assert strip_think(text) == "The answer is $\\boxed{4}$."


def test_strip_think_handles_prefilled_open_tag() -> None:
    # Chat templates that prefill "<think>" leave only the closing tag in the completion.
    text = "Okay, so the user wants x. Maybe \\boxed{3}?\n</think>\n\nFinal: \\boxed{5}"
    assert strip_think(text) == "Final: \\boxed{5}"


def test_strip_think_drops_unterminated_reasoning() -> None:
    text = "Quick note first.\n<think>\nLet me compute 17*3 = 51, so \\boxed{51"
    assert strip_think(text) == "Quick note first."


def test_strip_think_leaves_plain_text() -> None:
    assert strip_think("  just an answer  ") == "just an answer"


# --------------------------------------------------------------------------------------------
# extract_boxed
# --------------------------------------------------------------------------------------------

BOXED_CASES = [
    # (response, expected)
    ("The sum is $2+3=5$, so the answer is $\\boxed{5}$.", "5"),
    ("Thus $x = \\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
    (
        "First I guessed $\\boxed{12}$ but that double counts.\n\nCorrecting: $\\boxed{10}$.",
        "10",
    ),
    ("$$\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$$", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("The set is $\\boxed{\\{1, 2, 3\\}}$.", "\\{1, 2, 3\\}"),
    ("so the result is \\boxed{\\sqrt{\\frac{a^{2}+b^{2}}{2}}} as required", "\\sqrt{\\frac{a^{2}+b^{2}}{2}}"),
    ("Therefore the number of minutes is $\\framebox{204}$.", "204"),
    ("Answer: \\fbox{7}", "7"),
    ("The answer is $\\boxed 5$.", "5"),
    ("\\boxed{ \\text{(C)} }", "\\text{(C)}"),
    # A box cut off by the token limit does not count; the earlier complete box does.
    ("Partial: \\boxed{42}. Re-checking, the final is \\boxed{\\frac{3}{", "42"),
    # Empty boxes are not answers.
    ("I'll fill in \\boxed{} later. Final: \\boxed{9}", "9"),
    ("<think>maybe \\boxed{1}</think>\nIt is \\boxed{2}.", "2"),
]


@pytest.mark.parametrize(("response", "expected"), BOXED_CASES)
def test_extract_boxed(response: str, expected: str) -> None:
    assert extract_boxed(response) == expected


@pytest.mark.parametrize(
    "response",
    [
        "The answer is 5.",
        "",
        "\\boxed{\\frac{1}{2}",  # unbalanced only
        "\\boxedanswer{3}",  # not the \\boxed command
        "<think>so \\boxed{3}</think>I could not finish.",
    ],
)
def test_extract_boxed_none(response: str) -> None:
    assert extract_boxed(response) is None


# --------------------------------------------------------------------------------------------
# extract_choice
# --------------------------------------------------------------------------------------------

CHOICE_CASES = [
    ("The answer is (C).", "C"),
    ("After comparing the options, the correct option is B.", "B"),
    ("Answer: D", "D"),
    ("**Answer:** A", "A"),
    ("Final answer: **C**", "C"),
    ("So the final answer is $\\boxed{B}$.", "B"),
    ("$\\boxed{\\text{D}}$", "D"),
    ("\\boxed{(A)}", "A"),
    ("\\boxed{C) 12 m/s}", "C"),
    ("Answer:\nB", "B"),
    ("the answer is (c)", "C"),
    ("The Answer is B because the others violate conservation of charge.", "B"),
    # The last explicit statement wins, even after an earlier one.
    ("Answer: A\n\nWait, I mis-read the sign. Recomputing gives 4 J.\n\nAnswer: C", "C"),
    ("I first thought \\boxed{A}, but the answer is D.", "D"),
    # The article "A" is not a choice.
    ("Answer: A careful look at (B) shows the flux is constant.\n\nAnswer: B", "B"),
    # Without an explicit statement: the last standalone (X) ...
    ("Option (A) fails at x=0 and (B) diverges, so we are left with (D).", "D"),
    # ... then a last line holding only a letter.
    ("Reasoning through each option, only one is consistent.\n\n**C**", "C"),
    ("Let me check.\nC", "C"),
    ("Comparing the values:\nB) 3.2 eV", "B"),
    ("<think>Answer: A? no.</think>\nAnswer: B", "B"),
]


@pytest.mark.parametrize(("response", "expected"), CHOICE_CASES)
def test_extract_choice(response: str, expected: str) -> None:
    assert extract_choice(response) == expected


@pytest.mark.parametrize(
    "response",
    [
        "",
        "Because the Boltzmann factor dominates, nothing else matters.",  # capitals inside words
        "Answer: A careful analysis is needed here.",  # article, no letter committed
        "The function f(A) is continuous and BCD is a triangle.",
        "Answer: E",  # outside the choices
        "I cannot determine the answer from the given information.",
    ],
)
def test_extract_choice_none(response: str) -> None:
    assert extract_choice(response) is None


def test_extract_choice_other_letter_sets() -> None:
    assert extract_choice("Answer: F", choices="ABCDEFGHIJ") == "F"
    assert extract_choice("Answer: F") is None


# --------------------------------------------------------------------------------------------
# extract_code
# --------------------------------------------------------------------------------------------


def test_extract_code_last_python_block() -> None:
    text = "Here's a first attempt:\n```python\nprint(1)\n```\nThat's slow. Improved version:\n\n```python\nimport sys\nprint(sum(map(int, sys.stdin.read().split())))\n```\nThis runs in O(n)."
    assert extract_code(text) == "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def test_extract_code_prefers_python_over_later_untagged_output() -> None:
    text = "```python\ndef f(x):\n    return x * 2\n```\n\nExample run:\n```\n>>> f(2)\n4\n```"
    assert extract_code(text) == "def f(x):\n    return x * 2\n"


def test_extract_code_prefers_python_over_other_languages() -> None:
    text = "```py\nprint('py')\n```\nIn C++ it would be:\n```cpp\nint main() { return 0; }\n```"
    assert extract_code(text) == "print('py')\n"


def test_extract_code_untagged_when_no_python_tag() -> None:
    text = "Solution:\n```\nn = int(input())\nprint(n * n)\n```\nOutput format:\n```text\n9\n```"
    assert extract_code(text) == "n = int(input())\nprint(n * n)\n"


def test_extract_code_unterminated_final_fence() -> None:
    text = "```python\ndef solve():\n    return 42\n\nprint(solve())"
    assert extract_code(text) == "def solve():\n    return 42\n\nprint(solve())\n"


def test_extract_code_keeps_inner_backticks_and_longer_fences() -> None:
    text = "````python\ns = '```'\nprint(s)\n```\nstill code\n````\n"
    assert extract_code(text) == "s = '```'\nprint(s)\n```\nstill code\n"


def test_extract_code_tilde_fence_and_info_string() -> None:
    text = "~~~python title=solution.py\nprint('hi')\n~~~"
    assert extract_code(text) == "print('hi')\n"


def test_extract_code_ignores_code_in_reasoning() -> None:
    text = "<think>\n```python\nprint('draft')\n```\n</think>\n```python\nprint('final')\n```"
    assert extract_code(text) == "print('final')\n"


@pytest.mark.parametrize("text", ["", "def f(): pass", "Use `print(x)` inline.", "```python\n```"])
def test_extract_code_none(text: str) -> None:
    assert extract_code(text) is None


def test_extract_code_other_language() -> None:
    text = "```python\nprint(1)\n```\n```c++\nint main() {}\n```"
    assert extract_code(text, language="cpp") == "int main() {}\n"


# --------------------------------------------------------------------------------------------
# Hostile inputs: a worker's output is untrusted and may be huge or degenerate
# --------------------------------------------------------------------------------------------

HOSTILE = {
    "spaces after a keyword": "answer" + " " * 20000 + "x",
    "keyword repeated": "answer: " * 5000,
    "unclosed boxes": "\\boxed{" * 5000,
    "stray closing braces": "\\boxed{1}" + "}" * 30000,
    "bare boxes": "\\boxed 1 " * 5000,
    "article runs": ("A" + " " * 50) * 2000,
    "open parentheses": "(" * 20000,
    "fences": "```\n" * 5000,
    "deep nesting": "\\boxed{" + "{" * 10000 + "}" * 10000 + "}",
}


@pytest.mark.timeout(60)  # a hang guard: these took minutes with backtracking-prone patterns
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_extractors_survive_hostile_inputs(name: str) -> None:
    text = HOSTILE[name]
    extract_choice(text)
    extract_boxed(text)
    extract_code(text)
    assert extract_boxed(HOSTILE["stray closing braces"]) == "1"
    assert extract_boxed(HOSTILE["bare boxes"]) == "1"
