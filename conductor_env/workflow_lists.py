"""Finding a workflow's three lists in a Conductor's free text, leniently and in linear time.

Reading follows the paper's code: ``<think>`` blocks are removed, backticks and bullets are
stripped, labels are matched case-insensitively (``model_id``/``model id``/``model ids``,
``subtasks``/``subtask``, ``access_list``/``access list``/``access``) followed by ``:`` or ``=``,
and the balanced ``[...]`` after a label is read with :func:`ast.literal_eval`, then JSON, then a
comma split. When the lists appear more than once, the last complete set wins.

The text is untrusted, so reading it takes time linear in its length whatever it holds (unclosed
think blocks, thousands of unclosed ``model_id = [`` labels, deep brackets, strings full of
escapes). Lists longer than :data:`MAX_LITERAL_CHARS` skip :func:`ast.literal_eval` (JSON and
the comma split still read them). :mod:`conductor_env.workflow` validates what is found here.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from conductor_env.thinking import drop_think_blocks

#: Longest ``[...]`` handed to :func:`ast.literal_eval` (whose cost per character is high).
MAX_LITERAL_CHARS = 32 * 1024

_LABELS = re.compile(
    # The lookahead lets the regex engine skip to candidate first letters (a 3x faster search).
    r"(?=[msa])(?<![A-Za-z0-9_])"
    r"(?:(?P<model>model[ _]?ids?)|(?P<subtasks>sub[ _]?tasks?)|(?P<access>access(?:[ _]?lists?)?))"
    r"\s*[:=]",
    re.IGNORECASE,
)
_LIST_START = re.compile(r"[ \t\r\n]*\[")
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022])[ \t]+", re.MULTILINE)
_SMALL_INT = re.compile(r"-?\d{1,18}")


def read_lists(text: str) -> dict[str, list[Any]] | None:
    """Returns the last complete set of the three lists in ``text``.

    Args:
        text: The Conductor's whole output (free reasoning may precede the lists).

    Returns:
        ``{"model": [...], "subtasks": [...], "access": [...]}`` as written (not validated), or
        ``None`` when the three lists are not all found.
    """
    return _last_complete_set(_scan(_clean(text)))


def _clean(text: str) -> str:
    text = drop_think_blocks(text)
    closing = text.lower().rfind("</think>")
    if closing != -1:  # an opening tag outside the response, e.g. prefilled by the template
        text = text[closing + len("</think>") :]
    text = text.replace("`", "")
    return _BULLET.sub("", text)


def _close_bracket(walk: "_Walk", ends: dict, end: int) -> "_Walk | None":
    """Applies a ``]`` ending at ``end`` to ``walk``: lists opened at this depth end there.

    Returns:
        The walk, or ``None`` once no list it carries is still open.
    """
    walk.depth -= 1
    closed = walk.waiting.pop(walk.depth, None)
    if closed is None:
        return walk
    for opening in closed:
        ends[opening] = end
    walk.size -= len(closed)
    return walk if walk.size else None


class _Walk:
    """Scans for the ``]`` closing list openings that follow one path through the text.

    A scan from an opening ``[`` tracks its bracket depth outside strings and whether it is
    inside a string. Scans that reach the same position in the same state go on identically,
    their depths differing by a constant, so they are merged into one walk: ``waiting`` maps a
    depth of this walk to the openings that close when a ``]`` brings the walk back to it.
    """

    __slots__ = ("depth", "size", "waiting")

    def __init__(self) -> None:
        self.depth = 0
        self.size = 0  # openings in ``waiting``
        self.waiting: dict[int, list[int]] = {}


def _open(walk: _Walk | None, opening: int) -> _Walk:
    """Starts a scan from the list opening at ``opening`` on the walk outside strings."""
    if walk is None:
        walk = _Walk()
    walk.waiting.setdefault(walk.depth, []).append(opening)
    walk.size += 1
    return walk


def _merge(a: _Walk | None, b: _Walk | None) -> _Walk | None:
    """Joins two walks now in the same state at the same position (the smaller into the larger)."""
    if a is None:
        return b
    if b is None:
        return a
    if a.size < b.size:
        a, b = b, a
    shift = a.depth - b.depth
    for depth, openings in b.waiting.items():
        joined = a.waiting.get(depth + shift)
        if joined is None:
            a.waiting[depth + shift] = openings
        else:
            joined.extend(openings)
    a.size += b.size
    return a


def _escape(escaped: str, at: int, outside: _Walk, double: _Walk | None, single: _Walk | None, ends: dict[int, int]) -> tuple[_Walk | None, _Walk | None, _Walk | None]:
    """Applies the character ``escaped`` (at ``at``, after a backslash) to the walk outside strings.

    The walks inside strings skip it; the walk outside reads it: a quote opens a string there.

    Returns:
        The walks outside strings, inside ``"..."`` and inside ``'...'``.
    """
    if escaped == '"':
        return None, _merge(double, outside), single
    if escaped == "'":
        return None, double, _merge(single, outside)
    if escaped == "[":  # never an opening: those follow a label
        outside.depth += 1
    elif escaped == "]":
        return _close_bracket(outside, ends, at + 1), double, single
    return outside, double, single


_RELEVANT = frozenset("[]\"'\\\n")
_FLAT_LIST = re.compile(r"\[[^\[\]\"']*\]")


def _list_ends(text: str, openings: list[int]) -> dict[int, int]:
    """Maps each opening ``[`` (sorted positions) to the index just past its closing ``]``.

    The ``]`` is the one a scan from that opening alone finds: brackets inside a quoted string
    do not count (a string ends at its quote or a newline; inside it a backslash escapes the next
    character), and when the text ends inside a string, brackets are matched ignoring quotes.
    One pass serves all openings, with at most one walk per quote state alive at a time and the
    text between lists skipped, so the time is linear in the text. Unclosed openings are absent.
    """
    ends: dict[int, int] = {}
    n, count = len(text), len(openings)
    later = 0  # the next opening to meet is openings[later]
    in_string: list[int] = []
    start = openings[0] if openings else n
    while start < n:
        flat = _FLAT_LIST.match(text, start)
        if flat is not None:  # nothing is open and this list holds no brackets or quotes
            ends[start] = flat.end()
            later += 1
            start = openings[later] if later < count else n
            continue
        start, later, in_string = _walk(text, start, openings, later, ends)
    if in_string:
        ends.update(_plain_ends(text, in_string))
    return ends


def _walk(text: str, start: int, openings: list[int], later: int, ends: dict[int, int]) -> tuple[int, int, list[int]]:
    """Scans from the opening at ``start`` until no list is open, recording ends in ``ends``.

    Args:
        text: The cleaned text.
        start: The position of ``openings[later]``.
        openings: All list openings, sorted.
        later: The index in ``openings`` of the next opening to meet.
        ends: Opening -> end of its list, filled in.

    Returns:
        Where to go on (the next opening, or the end of the text), the index of that opening in
        ``openings``, and the openings still inside a string where the text ends.
    """
    n, relevant, count = len(text), _RELEVANT, len(openings)
    upcoming = openings[later] if later < count else -1
    outside: _Walk | None = None  # the walk outside strings, and those inside "..." and '...'
    double: _Walk | None = None
    single: _Walk | None = None
    skip = -1
    for i in range(start, n):
        char = text[i]
        if char not in relevant or i == skip:
            continue
        if char == "[":
            if i == upcoming:
                later += 1
                upcoming = openings[later] if later < count else -1
                outside = _open(outside, i)
            if outside is not None:
                outside.depth += 1
        elif char == "]":
            if outside is not None:
                outside = _close_bracket(outside, ends, i + 1)
                if outside is None and double is None and single is None:  # nothing open: next list
                    return (upcoming if upcoming >= 0 else n), later, []
        elif char == '"':
            outside, double = double, outside
        elif char == "'":
            outside, single = single, outside
        elif double is None and single is None:
            continue  # a newline or backslash outside strings changes nothing
        elif char == "\n":
            outside = _merge(_merge(outside, double), single)
            double = single = None
        else:  # a backslash: walks inside strings skip the next character, the walk outside reads it
            skip = i + 1
            if outside is not None and skip < n:
                outside, double, single = _escape(text[skip], skip, outside, double, single, ends)
    in_string = sorted(o for walk in (double, single) if walk is not None for group in walk.waiting.values() for o in group)
    return n, later, in_string


def _plain_ends(text: str, openings: list[int]) -> dict[int, int]:
    """Like :func:`_list_ends`, with every bracket counted (quotes ignored)."""
    ends: dict[int, int] = {}
    pending = set(openings)
    waiting: dict[int, list[int]] = {}
    depth = 0
    for i in range(openings[0], len(text)):
        char = text[i]
        if char == "[":
            if i in pending:
                waiting.setdefault(depth, []).append(i)
            depth += 1
        elif char == "]":
            depth -= 1
            closed = waiting.pop(depth, None)
            if closed is not None:
                for opening in closed:
                    ends[opening] = i + 1
    return ends


def _read_list(source: str) -> list[Any]:
    """Reads ``[...]`` text as a list: literal_eval, then JSON, then a comma split."""
    # Without backslashes, any text both readers accept means the same list to both, and any text
    # only JSON accepts would reach JSON anyway; so JSON (C-speed) may go first there.
    readers = (json.loads, ast.literal_eval) if "\\" not in source else (ast.literal_eval, json.loads)
    for reader in readers:
        if reader is ast.literal_eval and len(source) > MAX_LITERAL_CHARS:
            continue
        try:
            value = reader(source)
        except Exception:  # noqa: BLE001 - any failure (syntax, recursion, memory) falls through
            continue
        if isinstance(value, (list, tuple)):
            return list(value)
    inner = source.strip()[1:-1].strip()
    if not inner:
        return []
    items = [raw.strip().strip("\"'").strip() for raw in inner.split(",")]
    return [int(item) if _SMALL_INT.fullmatch(item) else item for item in items]


def _scan(text: str) -> list[tuple[str, list[Any]]]:
    """Returns the (kind, list) pairs found in order; a parsed list's span is consumed."""
    labels: list[tuple[int, int, str, int]] = []  # label start, label end, kind, its "[" or -1
    for match in _LABELS.finditer(text):
        list_start = _LIST_START.match(text, match.end())
        labels.append((match.start(), match.end(), match.lastgroup or "", list_start.end() - 1 if list_start else -1))
    ends = _list_ends(text, [label[3] for label in labels if label[3] >= 0])
    found: list[tuple[str, list[Any]]] = []
    position = 0
    for start, end, kind, opening in labels:
        if start < position:  # inside a list already read
            continue
        position = end
        close = ends.get(opening)
        if close is not None:
            found.append((kind, _read_list(text[opening:close])))
            position = close
    return found


def _last_complete_set(found: list[tuple[str, list[Any]]]) -> dict[str, list[Any]] | None:
    sets: list[dict[str, list[Any]]] = []
    for kind, value in found:
        if kind == "model":
            sets.append({"model": value})
        elif sets and kind not in sets[-1]:
            sets[-1][kind] = value
    for candidate in reversed(sets):
        if len(candidate) == 3:
            return candidate
    last = {kind: value for kind, value in found}  # any order: the last of each kind
    return last if len(last) == 3 else None
