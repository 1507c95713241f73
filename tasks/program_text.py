"""Candidate program text on the host: bounded before it is read, never an exception.

The code suites read a candidate's program on the host before any sandbox runs it (HumanEval and
BigCodeBench parse it to find the entry point), and ship it to the sandbox. The text is the
policy's, so it is built to hurt: ``ast.parse`` of a 1 MB program takes seconds and hundreds of MB
of host memory (4 s and 390 MB measured on CPython 3.11), and parse errors other than
``SyntaxError`` exist (``RecursionError`` for long chains of calls or attributes, ``MemoryError``
for deep unary operators, ``UnicodeEncodeError`` for lone surrogates, ``ValueError`` for null bytes
on some versions). Every code suite therefore checks the text with :func:`program_text_problem`
first and parses it only through :func:`parse_candidate`, which turns each of those into a reason.

Bounds (:data:`MAX_PROGRAM_BYTES`): 64 KiB of UTF-8 is over 30 times the longest BigCodeBench
reference program (``code_prompt`` + canonical solution: 1.9 KB, 55 lines) and far above any
HumanEval or LiveCodeBench solution, yet keeps the worst host parse measured at about a second (a
single f-string of thousands of nested replacement fields; typical 64 KiB programs parse in under
0.2 s). No separate line or nesting limit is needed: the size bounds the line count, and the
parser's own limits (200 nested brackets, 100 indentation levels, recursion and stack checks)
refuse deep nesting in milliseconds, as errors that :func:`parse_candidate` reports.
"""

from __future__ import annotations

import ast

__all__ = ["MAX_PROGRAM_BYTES", "SYNTAX_ERROR", "parse_candidate", "program_text_problem"]

#: Longest candidate program (UTF-8 bytes) the host reads or ships to a sandbox.
MAX_PROGRAM_BYTES = 64 * 1024

#: How :func:`parse_candidate`'s reason starts for a plain ``SyntaxError``.
SYNTAX_ERROR = "syntax error"


def program_text_problem(source: str) -> str | None:
    """Says why a candidate program is refused unread, or ``None`` when it may be read.

    Refused: text that is not a ``str``, text over :data:`MAX_PROGRAM_BYTES` (checked on the
    character count first, so an oversized text is never encoded), text that is not valid
    Unicode (lone surrogates cannot be encoded, so no file or pipe can carry them), and null
    bytes (no Python source holds one).

    Args:
        source: The candidate's program text.

    Returns:
        A reason for a wrong answer, or ``None``.
    """
    if not isinstance(source, str):
        return f"the program is not text ({type(source).__name__})"
    if len(source) > MAX_PROGRAM_BYTES:
        return f"the program is too long ({len(source)} characters; at most {MAX_PROGRAM_BYTES} bytes)"
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError as error:
        return f"the program is not valid Unicode text (character {error.start} is a lone surrogate)"
    if size > MAX_PROGRAM_BYTES:
        return f"the program is too long ({size} bytes; at most {MAX_PROGRAM_BYTES})"
    if "\0" in source:
        return "the program contains a null byte"
    return None


def parse_candidate(source: str) -> ast.Module | str:
    """Parses a candidate program on the host, bounded, never raising.

    Args:
        source: The candidate's program text.

    Returns:
        The module's syntax tree, or a reason it cannot be read: the refusal of
        :func:`program_text_problem`, or ``"the program cannot be parsed: ..."``. A reason that
        starts with :data:`SYNTAX_ERROR` is a plain ``SyntaxError`` (an ``IndentationError`` among
        them), which a caller may read as a fragment (HumanEval's completions are indented
        bodies); any other reason means no Python can compile the text.
    """
    problem = program_text_problem(source)
    if problem is not None:
        return problem
    try:
        return ast.parse(source)
    except SyntaxError as error:
        return f"{SYNTAX_ERROR}: {type(error).__name__}: {error.msg} (line {error.lineno})"[:300]
    except (RecursionError, MemoryError) as error:
        return f"the program cannot be parsed: {type(error).__name__} (nested too deeply)"
    except Exception as error:  # noqa: BLE001 - ValueError, UnicodeError, OverflowError: all wrong answers
        return f"the program cannot be parsed: {type(error).__name__}: {error}"[:300]
