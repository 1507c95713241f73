"""The workflow language: the three lists a Conductor writes, parsed leniently and validated.

A workflow is written as three Python lists of equal length, after any amount of free text::

    model_id = [2, 0, 2]
    subtasks = ["Plan the algorithm", "Implement it", "Check the code"]
    access_list = [[], "all", "all"]

Parsing follows the paper's code: ``<think>`` blocks are removed, backticks and bullets are
stripped, labels are matched case-insensitively (``model_id``/``model id``/``model ids``,
``subtasks``/``subtask``, ``access_list``/``access list``/``access``) followed by ``:`` or ``=``,
and the balanced ``[...]`` after a label is read with :func:`ast.literal_eval`, then JSON, then a
comma split. When the lists appear more than once, the last complete set wins.

Failures raise :class:`WorkflowError` with a :attr:`~WorkflowError.reason` from
:data:`REASON_CODES`.

The action is untrusted text, so parsing takes time linear in its length whatever it holds
(unclosed think blocks, thousands of unclosed ``model_id = [`` labels, deep brackets, strings full
of escapes), and an action longer than :data:`MAX_ACTION_CHARS` (64 Ki characters) is refused with reason
``too_long`` before it is scanned. Lists longer than :data:`MAX_LITERAL_CHARS` skip
:func:`ast.literal_eval` (JSON and the comma split still read them).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from conductor_env.thinking import drop_think_blocks

AccessMode = Literal["binary", "indices"]

#: Reason codes of :class:`WorkflowError`, with their meaning.
REASON_CODES: dict[str, str] = {
    "no_lists": "the three lists (model_id, subtasks, access_list) were not all found",
    "length_mismatch": "the three lists have different lengths",
    "bad_worker_id": "a model id is not an integer id of the shown pool",
    "bad_subtask": "a subtask is not text",
    "bad_access": "an access entry is malformed or refers to the current or a later step",
    "too_many_steps": "more steps than the limit",
    "empty": "all three lists are empty where an empty workflow is not allowed",
    "too_long": "the action is longer than the length limit and was not read",
}

#: Longest action :func:`parse_workflow` reads by default, in characters: 64 Ki, 16 times what a
#: Conductor writes in the paper's 1,024-token budget. Longer actions get reason ``too_long``.
MAX_ACTION_CHARS = 64 * 1024

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
_DIGITS = re.compile(r"\s*\d{1,9}\s*")


class WorkflowError(ValueError):
    """A workflow text that cannot be executed.

    Args:
        reason: One of :data:`REASON_CODES`.
        detail: A human-readable explanation.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASON_CODES, reason
        super().__init__(f"{reason}: {detail or REASON_CODES[reason]}")
        self.reason = reason
        self.detail = detail or REASON_CODES[reason]


@dataclass(frozen=True)
class Step:
    """One step of a workflow.

    Attributes:
        worker: The worker id as shown to the Conductor.
        subtask: The instruction for that worker.
        access: Indices of the earlier steps whose subtask and response the worker sees.
        access_all: True when written as ``"all"``: in a later round such a step also sees the
            previous round's steps (even step 0, whose ``access`` is empty).
    """

    worker: int
    subtask: str
    access: tuple[int, ...] = ()
    access_all: bool = False


@dataclass(frozen=True)
class Workflow:
    """A parsed, validated workflow.

    Attributes:
        steps: The steps in order; empty means "keep the previous round's answer".
        access_mode: ``"binary"`` (``"all"`` or nothing) or ``"indices"`` (lists of indices).
    """

    steps: tuple[Step, ...]
    access_mode: AccessMode = "binary"

    @property
    def is_empty(self) -> bool:
        """True for the three-empty-lists stop signal."""
        return not self.steps

    def render(self) -> str:
        """Returns canonical text that :func:`parse_workflow` reads back to this workflow."""
        ids = ", ".join(str(step.worker) for step in self.steps)
        subtasks = ", ".join(_render_string(step.subtask) for step in self.steps)
        access = ", ".join('"all"' if step.access_all else _render_access(step.access) for step in self.steps)
        return f"model_id = [{ids}]\nsubtasks = [{subtasks}]\naccess_list = [{access}]"

    def to_dict(self) -> dict[str, Any]:
        """Returns a JSON-friendly form (for ``info`` and results files)."""
        return {
            "access_mode": self.access_mode,
            "steps": [
                {"worker": s.worker, "subtask": s.subtask, "access": "all" if s.access_all else list(s.access)}
                for s in self.steps
            ],
        }


def _render_string(text: str) -> str:
    # JSON escapes are valid Python escapes; backticks and "<" are escaped too so the lenient
    # clean-up (backtick stripping, think-block removal) cannot alter a rendered subtask.
    return json.dumps(text, ensure_ascii=False).replace("`", "\\u0060").replace("<", "\\u003c")


def _render_access(access: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(a) for a in access) + "]"


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
    n, relevant = len(text), _RELEVANT
    outside: _Walk | None = None  # the walk outside strings, and those inside "..." and '...'
    double: _Walk | None = None
    single: _Walk | None = None
    skip = -1
    later, count = 0, len(openings)  # the next opening to meet is openings[later]
    upcoming = openings[0] if openings else -1
    start = openings[0] if openings else n
    while start < n:
        flat = _FLAT_LIST.match(text, start)
        if flat is not None:  # nothing is open and this list holds no brackets or quotes
            ends[start] = flat.end()
            later += 1
            upcoming = openings[later] if later < count else -1
            start = upcoming if upcoming >= 0 else n
            continue
        resume = n
        for i in range(start, n):
            char = text[i]
            if char not in relevant or i == skip:
                continue
            if char == "[":
                if i == upcoming:
                    later += 1
                    upcoming = openings[later] if later < count else -1
                    if outside is None:
                        outside = _Walk()
                    outside.waiting.setdefault(outside.depth, []).append(i)
                    outside.size += 1
                if outside is not None:
                    outside.depth += 1
            elif char == "]":
                if outside is not None:
                    outside = _close_bracket(outside, ends, i + 1)
                    if outside is None and double is None and single is None:  # nothing open: next list
                        resume = upcoming if upcoming >= 0 else n
                        break
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
                    escaped = text[skip]
                    if escaped == '"':
                        double, outside = _merge(double, outside), None
                    elif escaped == "'":
                        single, outside = _merge(single, outside), None
                    elif escaped == "[":  # never an opening: those follow a label
                        outside.depth += 1
                    elif escaped == "]":
                        outside = _close_bracket(outside, ends, skip + 1)
        start = resume
    in_string = sorted(o for walk in (double, single) if walk is not None for group in walk.waiting.values() for o in group)
    if in_string:
        ends.update(_plain_ends(text, in_string))
    return ends


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
        opening = _LIST_START.match(text, match.end())
        labels.append((match.start(), match.end(), match.lastgroup or "", opening.end() - 1 if opening else -1))
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


def _worker_id(value: Any, num_workers: int, index: int) -> int:
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < num_workers:
        raise WorkflowError(
            "bad_worker_id", f"step {index}: model id {value!r} is not one of 0..{num_workers - 1}"
        )
    return value


def _subtask(value: Any, index: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise WorkflowError("bad_subtask", f"step {index}: subtask {value!r} is not text")


def _is_all(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "all"


def _access(value: Any, index: int, mode: AccessMode) -> tuple[int, ...] | None:
    """Returns the earlier indices a step reads, or ``None`` for "all"."""
    if _is_all(value) or (isinstance(value, (list, tuple)) and len(value) == 1 and _is_all(value[0])):
        return None
    if isinstance(value, (list, tuple)):
        if not value:
            return ()
        if mode == "indices" and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            if all(0 <= v < index for v in value):
                return tuple(sorted(set(value)))
            raise WorkflowError("bad_access", f"step {index}: {list(value)} must name earlier steps only")
    allowed = '"all", ["all"], [] or a list of earlier step indices' if mode == "indices" else '"all", ["all"] or []'
    raise WorkflowError("bad_access", f"step {index}: access {value!r} is not one of {allowed}")


def parse_workflow(
    text: str,
    *,
    num_workers: int,
    max_steps: int = 5,
    access: AccessMode = "binary",
    allow_empty: bool = False,
    max_chars: int | None = MAX_ACTION_CHARS,
) -> Workflow:
    """Parses and validates a Conductor's workflow text, in time linear in its length.

    Args:
        text: The Conductor's whole output (free reasoning may precede the lists).
        num_workers: Number of worker ids shown; valid ids are ``0..num_workers-1``.
        max_steps: Largest number of steps allowed.
        access: ``"binary"`` accepts ``"all"``, ``["all"]`` and ``[]``; ``"indices"`` also
            accepts lists of earlier step indices.
        allow_empty: Accept three empty lists (the "keep the previous answer" signal of a
            later round) and return an empty workflow.
        max_chars: Longest text read; a longer one is refused unread (``None``: no limit).

    Returns:
        The workflow, with each step's access resolved to a tuple of earlier step indices.

    Raises:
        WorkflowError: With ``reason`` in :data:`REASON_CODES`.
    """
    if not isinstance(text, str):
        raise WorkflowError("no_lists", f"the action must be text, got {type(text).__name__}")
    if max_chars is not None and len(text) > max_chars:
        raise WorkflowError("too_long", f"{len(text)} characters, at most {max_chars} are read")
    lists = _last_complete_set(_scan(_clean(text)))
    if lists is None:
        raise WorkflowError("no_lists")
    ids, subtasks, accesses = lists["model"], lists["subtasks"], lists["access"]
    if not ids and not subtasks and not accesses:
        if allow_empty:
            return Workflow(steps=(), access_mode=access)
        raise WorkflowError("empty")
    if not len(ids) == len(subtasks) == len(accesses):
        raise WorkflowError(
            "length_mismatch", f"model_id has {len(ids)}, subtasks {len(subtasks)}, access_list {len(accesses)}"
        )
    if len(ids) > max_steps:
        raise WorkflowError("too_many_steps", f"{len(ids)} steps, at most {max_steps} allowed")
    steps = []
    for i, (w, s, a) in enumerate(zip(ids, subtasks, accesses)):
        resolved = _access(a, i, access)
        steps.append(
            Step(
                _worker_id(w, num_workers, i),
                _subtask(s, i),
                tuple(range(i)) if resolved is None else resolved,
                access_all=resolved is None,
            )
        )
    return Workflow(steps=tuple(steps), access_mode=access)
