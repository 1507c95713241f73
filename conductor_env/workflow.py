"""The workflow language: the three lists a Conductor writes, parsed leniently and validated.

A workflow is written as three Python lists of equal length, after any amount of free text::

    model_id = [2, 0, 2]
    subtasks = ["Plan the algorithm", "Implement it", "Check the code"]
    access_list = [[], "all", "all"]

The JSON object of :mod:`conductor_env.workflow_json` (what structured tool calls produce) is
read too, and validated the same way. Parsing the text form follows the paper's code: ``<think>`` blocks are removed, labels are matched leniently
and the balanced ``[...]`` after each is read as a list; when the lists appear more than once, the
last complete set wins (:mod:`conductor_env.workflow_lists` finds them). This module holds the
parsed form (:class:`Workflow`, :class:`Step`, canonical rendering) and validates the lists.

Failures raise :class:`WorkflowError` with a :attr:`~WorkflowError.reason` from
:data:`REASON_CODES`.

The action is untrusted text, so parsing takes time linear in its length whatever it holds, and
an action longer than :data:`MAX_ACTION_CHARS` (64 Ki characters) is refused with reason
``too_long`` before it is scanned.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from conductor_env.workflow_json import read_json_lists
from conductor_env.workflow_lists import read_lists

if TYPE_CHECKING:
    from conductor_env.info import WorkflowInfo

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

    def to_dict(self) -> WorkflowInfo:
        """Returns a JSON-friendly form (for ``info`` and results files)."""
        return {
            "access_mode": self.access_mode,
            "steps": [{"worker": s.worker, "subtask": s.subtask, "access": "all" if s.access_all else list(s.access)} for s in self.steps],
        }


def _render_string(text: str) -> str:
    # JSON escapes are valid Python escapes; backticks and "<" are escaped too so the lenient
    # clean-up (backtick stripping, think-block removal) cannot alter a rendered subtask.
    return json.dumps(text, ensure_ascii=False).replace("`", "\\u0060").replace("<", "\\u003c")


def _render_access(access: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(a) for a in access) + "]"


def _worker_id(value: Any, num_workers: int, index: int) -> int:
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < num_workers:
        raise WorkflowError("bad_worker_id", f"step {index}: model id {value!r} is not one of 0..{num_workers - 1}")
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
        text: The Conductor's whole output (free reasoning may precede the lists), or the
            workflow as one JSON object (:data:`~conductor_env.workflow_json.WORKFLOW_SCHEMA`).
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
    lists = read_json_lists(text) or read_lists(text)
    if lists is None:
        raise WorkflowError("no_lists")
    ids, subtasks, accesses = lists["model"], lists["subtasks"], lists["access"]
    if not ids and not subtasks and not accesses:
        if allow_empty:
            return Workflow(steps=(), access_mode=access)
        raise WorkflowError("empty")
    if not len(ids) == len(subtasks) == len(accesses):
        raise WorkflowError("length_mismatch", f"model_id has {len(ids)}, subtasks {len(subtasks)}, access_list {len(accesses)}")
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
