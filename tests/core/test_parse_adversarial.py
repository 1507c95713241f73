"""Untrusted text in linear time: the workflow parser and the answer extractors.

Actions and worker responses are parsed on the env's event loop, so a super-linear parse of one
degenerate output (thousands of unclosed labels or think tags, nested boxes, long fence lines)
stalls every episode sharing the loop. No test here times anything (timeouts are hang guards
only); linearity is checked structurally instead:

- every regular expression applied to untrusted text is in a reviewed allow-list and free of the
  shapes that backtrack super-linearly (nested unbounded repeats, adjacent unbounded repeats that
  share characters, a leading unbounded repeat under a search);
- the parser's own scans read a bounded number of characters per input character, counted;
- the linear implementations give the same results as the straightforward (quadratic) ones they
  replace, on generated inputs;
- 256 KiB adversarial inputs of every family complete.
"""

from __future__ import annotations

import inspect
import math
import re
from typing import Any, Callable

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env import thinking
from conductor_env import workflow as wf
from conductor_env import workflow_lists as wl
from conductor_env.tasks import extract, math_equivalence
from conductor_env.tasks.extract import extract_boxed, extract_choice, extract_code, strip_think
from conductor_env.tasks.suites import procedural, rlpr
from conductor_env.workflow import MAX_ACTION_CHARS, WorkflowError, parse_workflow
from conductor_env.workflow_lists import MAX_LITERAL_CHARS

try:  # Python 3.11+
    from re import _compiler as sre_compile
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile  # type: ignore[no-redef]
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

KIB = 1024
WORKFLOW = 'model_id = [1, 0]\nsubtasks = ["Solve it.", "Check it."]\naccess_list = [[], "all"]'


def repeat(unit: str, size: int, tail: str = "") -> str:
    """``unit`` repeated to ``size`` characters, ending with ``tail``."""
    body = size - len(tail)
    return (unit * (body // len(unit) + 1))[:body] + tail


# ------------------------------------------------------------------ adversarial families

ACTIONS: dict[str, Callable[[int], str]] = {
    "unclosed labels": lambda n: repeat("model_id = [", n),
    "unclosed think tags, then a workflow": lambda n: repeat("<think> hmm ", n, "\n" + WORKFLOW),
    "labels inside an unclosed string": lambda n: repeat("subtasks = ['", n),
    "strings full of escapes": lambda n: repeat('subtasks = ["\\"\\\\ ', n),
    "deep brackets": lambda n: "model_id = " + "[" * (n // 2) + "]" * (n // 2),
    "deep unclosed brackets": lambda n: "model_id = " + "[" * n,
    "thousands of lists": lambda n: repeat("model_id=[0]\n", n),
    "a list of commas": lambda n: "model_id = [" + "," * n + "]",
    "quotes and escapes across labels": lambda n: repeat("x' model_id = [ \"a\\' ", n),
    "fences and bullets": lambda n: repeat("```\n- * `` ", n),
    "a label, then whitespace": lambda n: "model_id" + " " * n + "x",
    "many backslashes": lambda n: "subtasks = ['" + "\\" * n,
}

RESPONSES: dict[str, Callable[[int], str]] = {
    "unclosed think tags": lambda n: repeat("<think> hmm ", n),
    "boxes nested in boxes": lambda n: "\\boxed{" * (n // 8) + "A" + "}" * (n // 8),
    "boxes wrapping text nested in boxes": lambda n: "\\boxed{\\text{" * (n // 14) + "C." + "}" * (n // 7),
    "unclosed boxes": lambda n: repeat("\\boxed{", n),
    "answer markers": lambda n: repeat("Answer: ", n),
    "unclosed answer tags": lambda n: repeat("<answer>", n),
    "a fence line of spaces": lambda n: "```" + " " * n + "`",
    "a fence line of tildes": lambda n: "~" * n + "`",
    "fences of growing length": lambda n: repeat("".join("`" * k + "\n" for k in range(3, 200)), n),
    "thousands of fences": lambda n: repeat("```python\n", n),
    "a digit run in answer tags": lambda n: "<answer>" + "1" * n + "!</answer>",
    "a digit run then spaces": lambda n: "<answer>1" + " " * n + "!</answer>",
    "articles and spaces": lambda n: repeat("A" + " " * 50, n),
    "open parentheses": lambda n: "(" * n,
    "newlines": lambda n: "\n" * n,
}


def extract_everything(text: str) -> list[Any]:
    return [
        strip_think(text),
        extract_boxed(text),
        extract_choice(text),
        extract_code(text),
        procedural.final_answer(text),
        rlpr.extract_tagged_answer(text),
        rlpr.rlpr_match(rlpr.extract_tagged_answer(text) or "", "42"),
    ]


@pytest.mark.timeout(30)  # a hang guard: these took minutes before; no speed is asserted
@pytest.mark.parametrize("family", sorted(ACTIONS))
def test_adversarial_actions_of_256_kib_parse(family: str) -> None:
    text = ACTIONS[family](256 * KIB)
    try:
        parse_workflow(text, num_workers=3, max_chars=None)
    except WorkflowError as error:
        assert error.reason in wf.REASON_CODES
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(text, num_workers=3)
    assert refused.value.reason == "too_long"


@pytest.mark.timeout(30)  # a hang guard, as above
@pytest.mark.parametrize("family", sorted(RESPONSES))
def test_adversarial_responses_of_256_kib_extract(family: str) -> None:
    extract_everything(RESPONSES[family](256 * KIB))


def test_adversarial_results_are_still_right() -> None:
    n = 32 * KIB
    think = ACTIONS["unclosed think tags, then a workflow"](n)
    assert [s.worker for s in parse_workflow(think, num_workers=3).steps] == [1, 0]
    for family in ("unclosed labels", "labels inside an unclosed string", "deep unclosed brackets"):
        with pytest.raises(WorkflowError) as caught:
            parse_workflow(ACTIONS[family](n), num_workers=3)
        assert caught.value.reason == "no_lists"
    assert extract_boxed(RESPONSES["boxes nested in boxes"](n)) == "A"
    assert extract_choice(RESPONSES["boxes wrapping text nested in boxes"](n)) == "C"
    assert extract_boxed(RESPONSES["unclosed boxes"](n)) is None
    assert rlpr.extract_tagged_answer(RESPONSES["unclosed answer tags"](n)) is None
    assert rlpr.rlpr_match(rlpr.extract_tagged_answer(RESPONSES["a digit run in answer tags"](n)) or "", "42") is False
    assert extract_code(RESPONSES["a fence line of tildes"](n)) is None


# ------------------------------------------------------------------ the length limit


def test_an_action_over_the_limit_is_refused_unread() -> None:
    at_limit = repeat(" ", MAX_ACTION_CHARS, WORKFLOW)
    assert len(parse_workflow(at_limit, num_workers=3).steps) == 2
    with pytest.raises(WorkflowError) as caught:
        parse_workflow(" " + at_limit, num_workers=3)
    assert caught.value.reason == "too_long" and str(MAX_ACTION_CHARS) in caught.value.detail
    assert len(parse_workflow(" " + at_limit, num_workers=3, max_chars=None).steps) == 2


def test_too_long_reaches_info_with_reward_zero() -> None:
    env = gym.make("Conductor-RG-v0", pool="simulated")
    env.reset(seed=0)
    action = repeat("Thinking it over. ", MAX_ACTION_CHARS + 1, WORKFLOW)
    assert env.action_space.contains(action)
    _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["parse_error"]) == (0.0, True, False, "too_long")
    env.close()


def test_literal_eval_is_not_handed_huge_lists() -> None:
    # Python syntax only (a single-quoted string with a backslash): small lists use literal_eval,
    # longer ones fall back to the comma split.
    small = "[" + "'a\\'b', " * 10 + "]"
    assert wl._read_list(small) == ["a'b"] * 10
    big = "[" + "'x\\'y', " * (MAX_LITERAL_CHARS // 8 + 1) + "]"
    assert len(big) > MAX_LITERAL_CHARS
    assert wl._read_list(big)[0] == "x\\'y"


# ------------------------------------------------------------------ work counted, not timed


class CountingText(str):
    """A ``str`` that counts the characters and slices read through indexing."""

    reads = 0

    def __getitem__(self, key: Any) -> str:  # type: ignore[override]
        CountingText.reads += 1
        return str.__getitem__(self, key)


def reads_of(function: Callable[[str], Any], text: str) -> int:
    CountingText.reads = 0
    function(CountingText(text))
    return CountingText.reads


@pytest.mark.parametrize("family", sorted(ACTIONS))
def test_the_list_scan_reads_each_character_a_bounded_number_of_times(family: str) -> None:
    for n in (4 * KIB, 16 * KIB):
        text = wl._clean(ACTIONS[family](n))
        assert reads_of(wl._scan, text) <= 3 * len(text) + 16


@pytest.mark.parametrize("family", sorted(RESPONSES))
def test_box_and_letter_extraction_read_a_bounded_number_of_characters(family: str) -> None:
    for n in (4 * KIB, 16 * KIB):
        text = RESPONSES[family](n)
        assert reads_of(lambda t: extract._explicit_statements(t, "ABCD"), text) <= 2 * len(text) + 16


# ------------------------------------------------------------------ same results as before


def _old_balanced_span(text: str, start: int) -> int | None:
    depth, quote, i = 0, None, start
    while i < len(text):
        char = text[i]
        if quote is not None:
            if char == "\\":
                i += 2
                continue
            if char == quote or char == "\n":
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    if quote is None:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "[]":
            depth += 1 if text[i] == "[" else -1
            if depth == 0:
                return i + 1
    return None


_OLD_LABELS = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?P<model>model[ _]?ids?)|(?P<subtasks>sub[ _]?tasks?)|(?P<access>access(?:[ _]?lists?)?))\s*[:=]",
    re.IGNORECASE,
)
_OLD_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


def _old_scan(text: str) -> list[tuple[str, list[Any]]]:
    """The scan as it was: from each label, a fresh walk to the end (quadratic)."""
    text = _OLD_THINK_BLOCK.sub("", text)
    closing = text.lower().rfind("</think>")
    if closing != -1:
        text = text[closing + len("</think>") :]
    text = wl._BULLET.sub("", text.replace("`", ""))
    found: list[tuple[str, list[Any]]] = []
    position = 0
    while (match := _OLD_LABELS.search(text, position)) is not None:
        cursor = match.end()
        while cursor < len(text) and text[cursor] in " \t\r\n":
            cursor += 1
        position = match.end()
        if cursor < len(text) and text[cursor] == "[":
            end = _old_balanced_span(text, cursor)
            if end is not None:
                found.append((match.lastgroup or "", wl._read_list(text[cursor:end])))
                position = end
    return found


_LISTY = st.lists(
    st.sampled_from(
        [
            "model_id = ",
            "subtasks: ",
            "access_list=",
            "Access :",
            "model ids:",
            "[",
            "]",
            "[[",
            "]]",
            "[]",
            '"',
            "'",
            "\\",
            "\\\\",
            '\\"',
            "\\'",
            "\n",
            "\r\n",
            "\t",
            " ",
            ",",
            "x",
            "1",
            '"all"',
            "'a]'",
            '"b["',
            "<think>",
            "</think>",
            "<THINK>",
            "`",
            "\n- ",
            "\n* ",
        ]
    ),
    max_size=50,
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_LISTY)
def test_the_linear_scan_finds_what_the_quadratic_one_found(text: str) -> None:
    assert wl._scan(wl._clean(text)) == _old_scan(text)


def _old_strip_think(text: str) -> str:
    text = _OLD_THINK_BLOCK.sub("", text)
    closes = list(re.finditer(r"</think>", text, re.IGNORECASE))
    if closes:
        text = text[closes[-1].end() :]
    opened = re.search(r"<think>", text, re.IGNORECASE)
    return (text[: opened.start()] if opened else text).strip()


def _old_box_contents(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    opening_of: dict[int, int] = {}
    for match in re.finditer(r"\\(?:boxed|fbox|framebox)(?![A-Za-z])", text):
        rest = match.end()
        while rest < len(text) and text[rest] in " \t":
            rest += 1
        if rest < len(text) and text[rest] == "{":
            opening_of[rest] = match.start()
        elif rest > match.end():
            bare = re.match(r"[^\s${}]+", text[rest:])
            if bare:
                found.append((match.start(), bare.group(0)))
    stack: list[int] = []
    for token in re.finditer(r"\\.|[{}]", text, re.DOTALL):
        if token.group() == "{":
            stack.append(token.start())
        elif token.group() == "}" and stack:
            start = stack.pop()
            if start in opening_of:
                found.append((opening_of[start], text[start + 1 : token.start()]))
    return sorted((position, content.strip()) for position, content in found if content.strip())


def _old_letter_in_box(content: str, choices: str) -> str | None:
    inner = content
    for _ in range(3):
        unwrapped = re.fullmatch(r"\\(?:text|textbf|mathrm|mathbf)\{(.*)\}", inner.strip(), re.DOTALL)
        if not unwrapped:
            break
        inner = unwrapped.group(1)
    match = re.fullmatch(rf"\s*\(?([{choices}])\)?(?:[.):]\s*.*)?\s*", inner, re.DOTALL)
    return match.group(1) if match else None


_BOXY = st.lists(
    st.sampled_from(
        [
            "\\boxed",
            "\\boxed{",
            "\\fbox ",
            "\\framebox{",
            "{",
            "}",
            "\\{",
            "\\}",
            "\\\\",
            "\\",
            "\\text{",
            "\\textbf{",
            "\\mathrm{",
            "\\mathbf{",
            "\\mathrm {",
            " ",
            "\t",
            "\n",
            "\u00a0",
            "A",
            "B",
            "C",
            "a",
            "(",
            ")",
            ".",
            ":",
            "x",
            "1",
            "$",
            "<think>",
            "</think>",
            "<Think>",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_BOXY)
def test_boxes_and_think_blocks_as_before(text: str) -> None:
    assert strip_think(text) == _old_strip_think(text)
    boxes = extract._boxes(text)
    assert [(position, text[start:end].strip()) for position, start, end in boxes] == _old_box_contents(text)
    pattern = extract._box_letter_pattern("ABCD")
    for _, start, end in boxes:
        assert extract._letter_in_box(text, start, end, pattern) == _old_letter_in_box(text[start:end].strip(), "ABCD")


def _old_code_blocks(text: str) -> list[tuple[str, str]]:
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        opening = re.match(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$", lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group("fence")
        tag = opening.group("info").strip().split()[0].lower() if opening.group("info").strip() else ""
        close = re.compile(r"^[ \t]{0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        body, i = [], i + 1
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        code = "\n".join(body).strip("\n")
        if code.strip():
            blocks.append((tag, code + "\n"))
    return blocks


_FENCY = st.lists(
    st.sampled_from(
        ["```", "````", "```python", "``` py  x", "  ```", "    ```", "~~~", "~~~~ c++", "~~~~~x", "~~~~`", "``` `", "```\t", "~~~ `x`", "code", "", " ", "print(1)", "```~~~", "\t```", "   ~~~~   "]
    ),
    max_size=12,
).map("\n".join)


@settings(max_examples=1000, deadline=None)
@given(_FENCY)
def test_code_blocks_as_before(text: str) -> None:
    assert [(b.tag, b.code) for b in extract._code_blocks(text)] == _old_code_blocks(text)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="0123456789.+-e kmµ°/^*·x!%\t\nE,${}\\", max_size=16))
def test_rlpr_numbers_are_finite_or_not_read(text: str) -> None:
    # The reading changed on purpose (powers of ten, fractions, units that start with a letter):
    # what stays is that it never raises, reads plain decimals as float() does, and gives only
    # finite values.
    value = rlpr._number(text)
    assert value is None or math.isfinite(value)
    if re.fullmatch(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*", text):
        assert value == float(text)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(["<answer>", "</answer>", "<ANSWER>", "x", " ", "1", "\\boxed{2}", "<think>", "</think>"]), max_size=14).map("".join))
def test_rlpr_tagged_answers_as_before(text: str) -> None:
    tagged = re.findall(r"<answer>(.*?)</answer>", strip_think(text), re.DOTALL | re.IGNORECASE)
    assert rlpr.extract_tagged_answer(text) == (tagged[-1].strip() if tagged else extract_boxed(text))


# ------------------------------------------------------------------ adversarial generators

_UNITS = st.sampled_from(
    [
        "model_id = [",
        "subtasks: ['",
        'access_list=["\\"',
        "<think>",
        "</think>",
        "[",
        "]",
        "'",
        '"',
        "\\",
        "\n",
        "`",
        "\\boxed{",
        "}",
        "{",
        "Answer: ",
        "<answer>",
        "```",
        "~~~",
        " ",
        "1",
        "A",
        "(",
        "\\text{",
    ]
)
_ADVERSARIAL = st.lists(st.tuples(_UNITS, st.integers(1, 600)), min_size=1, max_size=8).map(lambda runs: "".join(unit * count for unit, count in runs))


@pytest.mark.timeout(120)  # a hang guard over all examples; no speed is asserted
@settings(max_examples=150, deadline=None)
@given(_ADVERSARIAL)
def test_adversarial_runs_parse_with_bounded_reads(text: str) -> None:
    try:
        parse_workflow(text, num_workers=4, max_chars=None)
    except WorkflowError:
        pass
    extract_everything(text)
    cleaned = wl._clean(text)
    assert reads_of(wl._scan, cleaned) <= 3 * len(cleaned) + 16
    assert reads_of(lambda t: extract._explicit_statements(t, "ABCD"), text) <= 2 * len(text) + 16


# ------------------------------------------------------------------ the regular expressions

#: Every pattern applied to untrusted text by the parser and the extractors, with why it runs in
#: linear time. A new or changed pattern fails ``test_every_pattern_is_reviewed`` until added.
REVIEWED: dict[str, str] = {
    # conductor_env.workflow_lists and conductor_env.workflow
    wl._LABELS.pattern: "bounded alternatives; one \\s* run, scanned once per label",
    r"[ \t\r\n]*\[": "match at one position",
    r"\[[^\[\]\"']*\]": "match at one position; a failed match is followed by a walk over the same text",
    r"<think>.*?</think>": "searched only up to the last </think>: every <think> there closes",
    r"</think>": "a literal",
    r"^[ \t]*(?:[-*+\u2022])[ \t]+": "anchored at line starts; runs of one line",
    r"-?\d{1,18}": "bounded",
    r"\s*\d{1,9}\s*": "fullmatch; the runs are split by a digit",
    # conductor_env.tasks.extract
    r"<think>": "a literal",
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,}(?!~))(?P<info>[^\n`]*)$": "match per line; fence runs end at a different character",
    r"[ \t]{0,3}(?P<fence>`+|~+)[ \t]*": "fullmatch per line; runs of different characters",
    r"(?P<command>\\(?:boxed|fbox|framebox))(?![A-Za-z])[ \t]*": "a literal, then one run",
    r"\\[\\{}]|[{}]": "single tokens",
    r"[^\s${}]+": "match at one position",
    r"\S": "one character",
    r"\s*(?:(?P<wrapper>\\(?:text|textbf|mathrm|mathbf)\{)|\(?(?P<letter>[ABCD])\)?(?:[.):]|\s*\Z))": "match at a box's start; the trailing \\s* runs once per box",
    r"\b(?i:answer|final\s{1,4}choice|correct\s{1,4}(?:option|choice))\b"
    r"(?:\s{1,8}(?i:is|would\s{1,4}be|should\s{1,4}be|must\s{1,4}be|will\s{1,4}be|then\s{1,4}is))?"
    r"[\s:=*_$]{0,16}"
    r"(?:\\(?:boxed|textbf|text)\{\s{0,4})?"
    r"(?i:(?:option|choice)\s{1,4})?" + extract._letter_pattern("ABCD"): "bounded repetitions only",
    r"(?<![A-Za-z0-9])\(([ABCD])\)": "bounded",
    r"[\*_#>`]": "one character",
    r"(?i:option\s+|choice\s+)?\(?([ABCD])\)?[.!]?": "fullmatch of one line; runs split by a letter",
    r"\(?([ABCD])[).:]\s+\S": "match at one position",
    # conductor_env.tasks.suites.rlpr
    r"<answer>(.*?)</answer>": "searched only up to the last </answer>",
    r"</answer>": "a literal",
    rlpr._MANTISSA.pattern: "match at one position; each run ends where the next part starts",
    rlpr._E_EXPONENT.pattern: "match at one position, one run",
    rlpr._TIMES_TEN.pattern: "match at one position; runs split by literals",
    rlpr._BARE_TEN.pattern: "match at one position; runs split by literals",
    rlpr._DENOMINATOR.pattern: "match at one position; runs split by literals",
    rlpr._UNIT.pattern: "fullmatch, one run",
    rlpr._LATEX_WRAPPER.pattern: "a literal, then runs each ended by a brace",
    rlpr._LATEX_SPACE.pattern: "single tokens",
    rlpr._DEGREES.pattern: "a literal, then runs split by literals",
    r"\s+": "a run, consumed whole",
}

_SEARCHING = {"search", "finditer", "findall", "sub", "subn", "split"}
_SINGLE = {sre_constants.LITERAL, sre_constants.NOT_LITERAL, sre_constants.ANY, sre_constants.IN}
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT} | ({sre_constants.POSSESSIVE_REPEAT} if hasattr(sre_constants, "POSSESSIVE_REPEAT") else set())
# ASCII and the non-ASCII characters the patterns name or that case folding maps onto ASCII.
_SAMPLE = [chr(c) for c in range(128)] + list("\u00a0\u00b5\u00b0\u00b7\u00e9\u2022\u212a\u017f\u0131\u0130\u2028\u3000")


def backtracking_risks(source: str, flags: int = 0, searched: bool = True) -> list[str]:
    """Shapes of ``source`` that can backtrack super-linearly (an empty list: none found).

    Flagged: an unbounded repeat inside an unbounded repeat; two unbounded repeats of
    characters with one in common, separated only by optional parts or by characters both take
    (``\\s*\\s*``, ``[ \\t]*[^\\n]*``, ``\\d+\\.?\\d*``); and, when the pattern is searched, a
    leading unbounded repeat followed by more (retried from every position of a long run).
    """
    root = sre_parse.parse(source, flags)
    problems: list[str] = []

    def chars(item: tuple[Any, Any], flags: int) -> frozenset[str]:
        compiled = sre_compile.compile(sre_parse.SubPattern(root.state, [item]), flags)
        return frozenset(c for c in _SAMPLE if compiled.fullmatch(c))

    def unbounded_inside(sub: Any) -> bool:
        for op, av in sub:
            if op in _REPEATS and (av[1] == sre_constants.MAXREPEAT or unbounded_inside(av[2])):
                return True
            if op is sre_constants.SUBPATTERN and unbounded_inside(av[-1]):
                return True
            if op is sre_constants.BRANCH and any(unbounded_inside(alt) for alt in av[1]):
                return True
        return False

    def walk(sub: Any, open_runs: list[frozenset[str]], flags: int) -> list[frozenset[str]]:
        """Returns the runs of characters an unbounded repeat may still be taking after ``sub``."""
        for op, av in sub:
            if op in _REPEATS:
                low, high, body = av
                single = len(body) == 1 and body[0][0] in _SINGLE
                if high == sre_constants.MAXREPEAT and single:
                    run = chars(body[0], flags)
                    if any(run & other for other in open_runs):
                        problems.append(f"adjacent unbounded repeats share characters in {source!r}")
                    open_runs = [run] + (open_runs if low == 0 else [])
                elif high == sre_constants.MAXREPEAT:
                    if unbounded_inside(body):
                        problems.append(f"nested unbounded repeats in {source!r}")
                    open_runs = walk(body, open_runs, flags) + (open_runs if low == 0 else [])
                elif single:
                    run = chars(body[0], flags)
                    open_runs = open_runs if low == 0 else [other for other in open_runs if other & run]
                else:
                    open_runs = walk(body, open_runs, flags) + (open_runs if low == 0 else [])
            elif op in _SINGLE:
                run = chars((op, av), flags)
                open_runs = [other for other in open_runs if other & run]
            elif op is sre_constants.SUBPATTERN:
                _, add, remove, inner = av
                open_runs = walk(inner, open_runs, (flags | add) & ~remove)
            elif op is sre_constants.BRANCH:
                open_runs = [run for alternative in av[1] for run in walk(alternative, open_runs, flags)]
            elif op is sre_constants.ASSERT_NOT and av[0] == 1 and len(av[1]) == 1 and av[1][0][0] in _SINGLE:
                stop = chars(av[1][0], flags)  # (?!x) after x* makes the run whole: no backtracking into it
                open_runs = [other for other in open_runs if not other <= stop]
        return open_runs

    walk(root, [], flags | root.state.flags)
    if searched:
        consuming = [(op, av) for op, av in root if op not in (sre_constants.ASSERT, sre_constants.ASSERT_NOT)]
        if consuming and consuming[0][0] in _REPEATS and consuming[0][1][1] == sre_constants.MAXREPEAT and len(consuming) > 1:
            problems.append(f"a searched pattern starts with an unbounded repeat: {source!r}")
    return problems


@pytest.mark.parametrize(
    "source",
    [
        r"(a+)+$",  # nested
        r"(?:\w+\s?)*$",  # nested through a group
        r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$",  # the old fence line
        r"([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*(?:[a-zµ°/^.*·\s\d-]*)",  # the old RLPR number
        r"\s*\s{1,8}\s*x",  # runs joined by characters both take
    ],
)
def test_the_checker_flags_known_backtracking_shapes(source: str) -> None:
    assert backtracking_risks(source, searched=False)


def test_the_checker_flags_searched_leading_runs() -> None:
    assert backtracking_risks(r"\s+x") and not backtracking_risks(r"\s+x", searched=False)
    assert not backtracking_risks(r"\s+")


class _Recorder:
    """Stands for ``re`` or a compiled pattern and records (pattern, flags, method) of each use."""

    _FUNCTIONS = ("compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")

    def __init__(self, target: Any, uses: set[tuple[str, int, str]]) -> None:
        self._target, self._uses = target, uses

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if isinstance(self._target, re.Pattern):
            if callable(attribute):
                self._uses.add((self._target.pattern, self._target.flags, name))
            return attribute
        if name not in self._FUNCTIONS:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = inspect.signature(attribute).bind(*args, **kwargs)
            compiled = re.compile(bound.arguments["pattern"], bound.arguments.get("flags", 0))
            if name == "compile":
                return _Recorder(compiled, self._uses)
            self._uses.add((compiled.pattern, compiled.flags, name))
            return attribute(*args, **kwargs)

        return call


CORPUS = [
    "",
    "plain words",
    "<think>draft</think>The answer is (B).\n\nAnswer: B",
    "We get \\boxed{\\text{C}} and \\fbox 3; so Answer: \\boxed{C}. <answer> 1,200 km </answer>",
    "```python\nprint(1)\n```\n~~~ c\nint x;\n~~~",
    "Final choice is option D\n**D**",
    "A) because the others fail\nC",
    "<think>x" + WORKFLOW + "\n- model id: [0]",
    "model ids: [0, 1]\nsubtask: [a, b]\naccess: [[], all]",
    "model_id = [0]\nsubtasks = ['it\\'s']\naccess_list = [[]]",
    'model_id = [" 1 "]\nsubtasks = ["a"]\naccess_list = ["all"]',
]


def test_every_pattern_is_reviewed(monkeypatch: pytest.MonkeyPatch) -> None:
    uses: set[tuple[str, int, str]] = set()
    for module in (wf, wl, thinking, extract, rlpr):
        monkeypatch.setattr(module, "re", _Recorder(re, uses))
        for name, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, name, _Recorder(value, uses))
    for text in CORPUS:
        try:
            parse_workflow(text, num_workers=3, access="indices")
        except WorkflowError:
            pass
        extract_everything(text)
    used = {pattern for pattern, _, _ in uses}
    unreviewed = sorted(used - set(REVIEWED))
    assert not unreviewed, f"patterns on untrusted text that need a linearity review: {unreviewed}"
    assert not set(REVIEWED) - used, "the corpus no longer exercises a reviewed pattern (or it is gone)"
    for pattern, flags, method in sorted(uses):
        assert backtracking_risks(pattern, flags, searched=method in _SEARCHING) == [], (pattern, method)


def test_module_patterns_have_no_backtracking_shapes() -> None:
    # Also the reasoning-gym suite's patterns, which final_answer and its checks apply to responses.
    for module in (wf, wl, thinking, extract, rlpr, procedural, math_equivalence):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                assert backtracking_risks(value.pattern, value.flags, searched=False) == [], (module.__name__, name)
