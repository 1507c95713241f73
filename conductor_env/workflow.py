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
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

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
}

_LABELS = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?P<model>model[ _]?ids?)|(?P<subtasks>sub[ _]?tasks?)|(?P<access>access(?:[ _]?lists?)?))"
    r"\s*[:=]",
    re.IGNORECASE,
)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022])[ \t]+", re.MULTILINE)
_MAX_LIST_CHARS = 200_000


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
    text = _THINK_BLOCK.sub("", text)
    closing = text.lower().rfind("</think>")
    if closing != -1:  # an opening tag outside the response, e.g. prefilled by the template
        text = text[closing + len("</think>") :]
    text = text.replace("`", "")
    return _BULLET.sub("", text)


def _balanced_span(text: str, start: int) -> int | None:
    """Returns the index just past the ``]`` closing the ``[`` at ``start``, honouring quotes."""
    depth = 0
    quote: str | None = None
    i = start
    end = min(len(text), start + _MAX_LIST_CHARS)
    while i < end:
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
    return _plain_balanced_span(text, start, end) if quote is not None else None


def _plain_balanced_span(text: str, start: int, end: int) -> int | None:
    depth = 0
    for i in range(start, end):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _read_list(source: str) -> list[Any] | None:
    """Reads ``[...]`` text as a list: literal_eval, then JSON, then a comma split."""
    # Without backslashes, any text both readers accept means the same list to both, and any text
    # only JSON accepts would reach JSON anyway; so JSON (C-speed) may go first there.
    readers = (json.loads, ast.literal_eval) if "\\" not in source else (ast.literal_eval, json.loads)
    for reader in readers:
        try:
            value = reader(source)
        except Exception:  # noqa: BLE001 - any failure (syntax, recursion, memory) falls through
            continue
        if isinstance(value, (list, tuple)):
            return list(value)
    inner = source.strip()[1:-1].strip()
    if not inner:
        return []
    items: list[Any] = []
    for raw in inner.split(","):
        item = raw.strip().strip("\"'").strip()
        items.append(int(item) if re.fullmatch(r"-?\d{1,18}", item) else item)
    return items


def _scan(text: str) -> list[tuple[str, list[Any]]]:
    """Returns the (kind, list) pairs found in order; a parsed list's span is consumed."""
    found: list[tuple[str, list[Any]]] = []
    position = 0
    while True:
        match = _LABELS.search(text, position)
        if match is None:
            return found
        kind = match.lastgroup or ""
        cursor = match.end()
        while cursor < len(text) and text[cursor] in " \t\r\n":
            cursor += 1
        position = match.end()
        if cursor < len(text) and text[cursor] == "[":
            end = _balanced_span(text, cursor)
            if end is not None:
                parsed = _read_list(text[cursor:end])
                if parsed is not None:
                    found.append((kind, parsed))
                    position = end


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
    if isinstance(value, str) and re.fullmatch(r"\s*\d{1,9}\s*", value):
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
) -> Workflow:
    """Parses and validates a Conductor's workflow text.

    Args:
        text: The Conductor's whole output (free reasoning may precede the lists).
        num_workers: Number of worker ids shown; valid ids are ``0..num_workers-1``.
        max_steps: Largest number of steps allowed.
        access: ``"binary"`` accepts ``"all"``, ``["all"]`` and ``[]``; ``"indices"`` also
            accepts lists of earlier step indices.
        allow_empty: Accept three empty lists (the "keep the previous answer" signal of a
            later round) and return an empty workflow.

    Returns:
        The workflow, with each step's access resolved to a tuple of earlier step indices.

    Raises:
        WorkflowError: With ``reason`` in :data:`REASON_CODES`.
    """
    if not isinstance(text, str):
        raise WorkflowError("no_lists", f"the action must be text, got {type(text).__name__}")
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
