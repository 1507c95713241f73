"""Answer extraction shared by the suites: code blocks, ``\\boxed{}`` answers and choice letters.

Every extractor first drops reasoning with :func:`strip_think`, so only the final answer of a
reasoning model counts (an unterminated ``<think>`` means the answer was never written).

Responses are untrusted text: every extractor takes time linear in the response's length, with
no regular expression that can backtrack over it more than a bounded number of times (thousands
of unclosed ``<think>`` tags or ``\\boxed{`` openings, nested boxes, long fence lines, repeated
``Answer:`` markers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conductor_env.thinking import THINK_CLOSE, THINK_OPEN, drop_think_blocks

__all__ = ["extract_boxed", "extract_choice", "extract_code", "strip_think"]


def strip_think(text: str) -> str:
    """Removes reasoning enclosed in ``<think>...</think>``.

    Also handles the two broken shapes models produce: a closing tag without an opening one
    (chat templates that prefill ``<think>``), where everything before it is reasoning, and an
    opening tag that is never closed (output cut mid-thought), where everything after it is.

    Args:
        text: A model response.

    Returns:
        The response without its reasoning, stripped of surrounding whitespace.
    """
    text = drop_think_blocks(text or "")
    closes = list(THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


# ---------------------------------------------------------------------------------------------
# Fenced code blocks
# ---------------------------------------------------------------------------------------------

# A failed match must not backtrack through runs that two parts could share (quadratic on a fence
# line of thousands of spaces or tildes ending in a stray backtick): the info string is stripped
# where it is used instead of after a "[ \t]*", and "(?!~)" keeps a tilde fence whole.
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,}(?!~))(?P<info>[^\n`]*)$")
_FENCE_CLOSE = re.compile(r"[ \t]{0,3}(?P<fence>`+|~+)[ \t]*")

_LANGUAGE_ALIASES = {
    "python": {"python", "python3", "py", "py3", "python2"},
    "cpp": {"cpp", "c++", "cc", "cxx"},
    "javascript": {"javascript", "js", "node"},
}


@dataclass(frozen=True)
class _Block:
    tag: str
    code: str


def _code_blocks(text: str) -> list[_Block]:
    """Splits markdown into fenced blocks; an unterminated last fence runs to the end."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group("fence")
        tag = opening.group("info").strip().split()[0].lower() if opening.group("info").strip() else ""
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i])
            i += 1
        i += 1  # skip the closing fence (or run past the end when unterminated)
        code = "\n".join(body).strip("\n")
        if code.strip():
            blocks.append(_Block(tag, code + "\n"))
    return blocks


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence`` (same character, at least as long)."""
    closing = _FENCE_CLOSE.fullmatch(line)
    return closing is not None and closing.group("fence")[0] == fence[0] and len(closing.group("fence")) >= len(fence)


def extract_code(text: str, *, language: str = "python") -> str | None:
    """Returns the last fenced code block of a response, preferring blocks tagged ``language``.

    Order of preference: the last block tagged with the language (``python``, ``py``,
    ``python3`` for Python), else the last untagged block, else the last block of any tag. A
    final fence left open (truncated output) counts as a block running to the end of the text.

    Args:
        text: A model response (markdown).
        language: The wanted language.

    Returns:
        The code (ending with a newline), or ``None`` when the response has no fenced block.
    """
    blocks = _code_blocks(strip_think(text))
    if not blocks:
        return None
    wanted = _LANGUAGE_ALIASES.get(language.lower(), {language.lower()})
    for group in (
        [b for b in blocks if b.tag in wanted],
        [b for b in blocks if not b.tag],
        blocks,
    ):
        if group:
            return group[-1].code
    return None


# ---------------------------------------------------------------------------------------------
# \boxed{...}
# ---------------------------------------------------------------------------------------------

_BOX_COMMAND = re.compile(r"(?P<command>\\(?:boxed|fbox|framebox))(?![A-Za-z])[ \t]*")


# The escapes that matter: \{ and \} are not braces, and \\ escapes the backslash after it.
_BRACE_TOKEN = re.compile(r"\\[\\{}]|[{}]")
_BARE_BOX = re.compile(r"[^\s${}]+")
_NON_SPACE = re.compile(r"\S")


def _boxes(text: str) -> list[tuple[int, int, int]]:
    """All ``\\boxed`` answers as (command position, content start, content end), in order.

    Unbalanced and blank boxes are skipped. One pass over the braces (escaped ones, ``\\{``,
    never count), and contents are spans of ``text``, not copies: a response full of unclosed
    boxes, or of boxes nested in boxes, costs linear time.
    """
    found: list[tuple[int, int, int]] = []
    opening_of: dict[int, int] = {}  # index of a box's "{" -> index of its command
    for match in _BOX_COMMAND.finditer(text):
        rest = match.end()
        if rest < len(text) and text[rest] == "{":
            opening_of[rest] = match.start()
        elif rest > match.end("command"):
            # "\boxed 5" (no braces): the answer runs to the next space or "$".
            bare = _BARE_BOX.match(text, rest)
            if bare:
                found.append((match.start(), bare.start(), bare.end()))
    if opening_of:
        stack: list[int] = []
        for token in _BRACE_TOKEN.finditer(text):
            brace = token.group()
            if brace == "{":
                stack.append(token.start())
            elif brace == "}" and stack:
                start = stack.pop()
                if start in opening_of:
                    found.append((opening_of[start], start + 1, token.start()))
    return sorted(box for box in found if _NON_SPACE.search(text, box[1], box[2]))


def extract_boxed(text: str) -> str | None:
    """Returns the content of the last ``\\boxed{...}`` (or ``\\fbox{}``, ``\\framebox{}``).

    Braces are matched with nesting (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``) and
    escaped braces ``\\{ \\}`` do not count. A last box left unbalanced (truncated output) is
    ignored in favour of the previous complete one; empty boxes are ignored.

    Args:
        text: A model response.

    Returns:
        The boxed text without surrounding whitespace, or ``None`` when there is none.
    """
    text = strip_think(text)
    boxes = _boxes(text)
    if not boxes:
        return None
    _, start, end = boxes[-1]
    return text[start:end].strip()


# ---------------------------------------------------------------------------------------------
# Choice letters
# ---------------------------------------------------------------------------------------------

# Words that can follow the article "A" ("Answer: A careful look...") but not an answer "A".
_AFTER_LETTER_OK = r"(?:because|since|as|which|and|with|is|—|-|–)\b"


def _letter_pattern(choices: str) -> str:
    upper = re.escape(choices.upper())
    lower = re.escape(choices.lower())
    return (
        rf"(?:\((?P<paren>[{upper}{lower}])\)"  # (C) or (c)
        rf"|\[(?P<bracket>[{upper}])\]"  # [C]
        rf"|(?P<bare>[{upper}])(?![A-Za-z0-9'])(?!\s{{1,8}}(?!{_AFTER_LETTER_OK})[a-z]))"
    )


def _explicit_statements(text: str, choices: str) -> list[tuple[int, str]]:
    """``Answer: X``-style statements and boxed letters, with their positions."""
    letter = _letter_pattern(choices)
    # Bounded repetitions only: nested unbounded runs of the same characters backtrack
    # catastrophically on inputs such as "answer" followed by thousands of spaces.
    phrase = re.compile(
        r"\b(?i:answer|final\s{1,4}choice|correct\s{1,4}(?:option|choice))\b"
        r"(?:\s{1,8}(?i:is|would\s{1,4}be|should\s{1,4}be|must\s{1,4}be|will\s{1,4}be|then\s{1,4}is))?"
        r"[\s:=*_$]{0,16}"
        r"(?:\\(?:boxed|textbf|text)\{\s{0,4})?"
        r"(?i:(?:option|choice)\s{1,4})?" + letter
    )
    statements: list[tuple[int, str]] = []
    for match in phrase.finditer(text):
        chosen = match.group("paren") or match.group("bracket") or match.group("bare")
        statements.append((match.start(), chosen.upper()))
    boxed = _box_letter_pattern(choices)
    for position, start, end in _boxes(text):
        chosen = _letter_in_box(text, start, end, boxed)
        if chosen:
            statements.append((position, chosen))
    return statements


def _box_letter_pattern(choices: str) -> re.Pattern[str]:
    """After spaces: a wrapper's opening (``\\text{``, ``\\textbf{``, ``\\mathrm{``,
    ``\\mathbf{``), or a letter with an optional ``(...)``, then the end or one of ``.):``."""
    letters = re.escape(choices.upper())
    return re.compile(rf"\s*(?:(?P<wrapper>\\(?:text|textbf|mathrm|mathbf)\{{)|\(?(?P<letter>[{letters}])\)?(?:[.):]|\s*\Z))")


def _letter_in_box(text: str, start: int, end: int, pattern: re.Pattern[str]) -> str | None:
    """The letter a boxed answer ``text[start:end]`` names: ``C``, ``\\text{C}``, ``(C)``, ``C) 42``.

    Up to three wrappers are unwrapped (a wrapper must run to the end of the box). The span is
    read in place and only at its ends, so boxes nested in boxes cost linear time in all.

    Args:
        text: The response.
        start: Where the box's content starts.
        end: Where it ends.
        pattern: :func:`_box_letter_pattern` of the choices.

    Returns:
        The letter, or ``None`` when the box names none.
    """
    for unwrapped in range(4):
        match = pattern.match(text, start, end)
        if match is None:
            return None
        if match.group("letter"):
            return match.group("letter")
        right = end
        while right > match.end() and text[right - 1].isspace():
            right -= 1
        if unwrapped == 3 or right == match.end() or text[right - 1] != "}":
            return None
        start, end = match.end(), right - 1
    return None


def _lone_final_letter(text: str, choices: str) -> str | None:
    """A last line that is only a letter (``C``, ``**C**``, ``(C).``) or ``C) option text``."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = re.sub(r"[\*_#>`]", "", lines[-1]).strip()
    upper = re.escape(choices.upper())
    match = re.fullmatch(rf"(?i:option\s+|choice\s+)?\(?([{upper}])\)?[.!]?", last)
    if not match:
        match = re.match(rf"\(?([{upper}])[).:]\s+\S", last)
    return match.group(1) if match else None


def extract_choice(text: str, choices: str = "ABCD") -> str | None:
    """Returns the choice letter a response commits to.

    Explicit statements are ``Answer: X``, ``The answer is (X)``, ``answer: **X**``,
    ``\\boxed{X}`` (also ``\\boxed{\\text{X}}``); the last one in the text wins. Without one,
    the last standalone ``(X)`` counts, then a last line that is only a letter. Letters inside
    words never match, nor does the article in ``Answer: A careful analysis``.

    Args:
        text: A model response.
        choices: The valid letters, e.g. ``"ABCD"``.

    Returns:
        The upper-case letter, or ``None`` when the response names no choice.
    """
    text = strip_think(text)
    statements = _explicit_statements(text, choices)
    if statements:
        return max(statements)[1]
    upper = re.escape(choices.upper())
    parenthesised = re.findall(rf"(?<![A-Za-z0-9])\(([{upper}])\)", text)
    if parenthesised:
        return parenthesised[-1]
    return _lone_final_letter(text, choices)
