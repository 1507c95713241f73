"""The Conductor prompt and the message each worker receives.

The Conductor prompt follows the paper's structure: a task description, the three lists, worked
examples, the question and the numbered worker pool. Worked examples are taken from domains other
than the question's by default, which the paper found best.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

ExampleSelection = Literal["out_of_domain", "in_domain", "all", "none"]


@dataclass(frozen=True)
class WorkedExample:
    """A worked example for the Conductor prompt: a question and a good workflow for it."""

    domain: str
    question: str
    workflow: str


WORKED_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        domain="math",
        question="Let S be the set of positive integers n < 1000 such that n^2 + 1 is divisible by 13. "
        "How many elements does S have?",
        workflow='model_id = [1, 0]\n'
        'subtasks = ["Find all residues r mod 13 with r^2 = -1 (mod 13), then count the integers '
        '1 <= n < 1000 in those residue classes. Show the count for each class and give the total '
        'in \\\\boxed{}.", "Re-derive the residues independently, recount, and compare with the previous '
        'solution. If they disagree, find the error. Give the final total in \\\\boxed{}."]\n'
        'access_list = [[], "all"]',
    ),
    WorkedExample(
        domain="code",
        question="Given an array of n integers (n <= 2*10^5) read from standard input, print the length of "
        "the longest strictly increasing contiguous subarray.",
        workflow='model_id = [2, 0, 2]\n'
        'subtasks = ["Describe an O(n) algorithm for the problem and list the edge cases (n = 1, all '
        'equal values, strictly decreasing input).", "Implement the algorithm in Python reading from '
        'stdin and printing the answer. Return one complete program in a ```python block.", "Review the '
        'program against the edge cases above, trace it on two small inputs, fix any bug, and return '
        'the final complete program in a ```python block."]\n'
        'access_list = [[], "all", "all"]',
    ),
    WorkedExample(
        domain="choice",
        question="Which gas makes up the largest share of Earth's atmosphere by volume?\n"
        "A) Oxygen\nB) Nitrogen\nC) Argon\nD) Carbon dioxide",
        workflow='model_id = [3]\n'
        'subtasks = ["Answer the multiple-choice question. Explain briefly, then end with a line '
        '\'Answer: X\' where X is the letter."]\n'
        'access_list = [[]]',
    ),
    WorkedExample(
        domain="reasoning",
        question="Alice, Bob and Carol each own one pet: a cat, a dog or a fish. Alice is allergic to fur, "
        "and Bob's pet barks. Who owns the cat?",
        workflow='model_id = [0, 3, 1]\n'
        'subtasks = ["Solve the puzzle step by step and state who owns the cat.", "Solve the puzzle '
        'independently, step by step, and state who owns the cat.", "Two solutions to the puzzle are '
        'given. Check each constraint against both, decide which is right, and give the final answer."]\n'
        'access_list = [[], [], "all"]',
    ),
    WorkedExample(
        domain="writing",
        question="Summarise the trade-offs between optimistic and pessimistic locking in two sentences.",
        workflow='model_id = [1]\n'
        'subtasks = ["Write the two-sentence summary: name one strength and one weakness of each approach."]\n'
        'access_list = [[]]',
    ),
)

_TASK_DESCRIPTION = """You are the Conductor. You coordinate a pool of language models (workers) to solve a hard task.
You do not solve the task yourself: you write a workflow of at most {max_steps} steps. Each step gives one
worker one subtask in natural language; the worker's response becomes visible to later steps that are
allowed to read it. The response of the LAST step is the final answer, so the last step must produce the
answer in the format the task asks for.

Write your reasoning first if you like, then end with exactly three Python lists of equal length:
model_id = [...]     # the worker id for each step, from the ids listed below
subtasks = [...]     # the instruction for each step's worker, as a string
access_list = [...]  # what each step may read: {access_help}

Good workflows plan before solving, use strong workers for hard steps, let a later step check or
combine earlier work, and stay short for easy tasks."""

_ACCESS_HELP = {
    "binary": '"all" (every earlier step\'s subtask and response) or [] (nothing)',
    "indices": '"all", [] or a list of earlier step indices such as [0, 2]',
}


def select_examples(domain: str, selection: ExampleSelection = "out_of_domain", k: int = 4) -> list[WorkedExample]:
    """Returns the worked examples to show for a question of ``domain``.

    Args:
        domain: The question's domain.
        selection: ``out_of_domain`` (the paper's best), ``in_domain``, ``all`` or ``none``.
        k: Most examples returned.

    Returns:
        Up to ``k`` examples in a fixed order.
    """
    if selection == "none":
        return []
    if selection == "out_of_domain":
        chosen = [e for e in WORKED_EXAMPLES if e.domain != domain]
    elif selection == "in_domain":
        chosen = [e for e in WORKED_EXAMPLES if e.domain == domain] or list(WORKED_EXAMPLES)
    else:
        chosen = list(WORKED_EXAMPLES)
    return chosen[:k]


def render_pool(worker_lines: Sequence[str]) -> str:
    """Returns the numbered pool block, one line per shown worker id."""
    return "\n".join(worker_lines)


def conductor_prompt(
    question: str,
    workers: str,
    *,
    examples: Sequence[WorkedExample],
    max_steps: int = 5,
    access: str = "binary",
    history: str = "",
) -> str:
    """Builds the full Conductor prompt.

    Args:
        question: The task.
        workers: The numbered pool (see :func:`render_pool`).
        examples: Worked examples to include.
        max_steps: The step limit stated in the prompt.
        access: ``binary`` or ``indices`` (explained accordingly).
        history: Earlier rounds (workflow and answer); when present the prompt explains that three
            empty lists keep the previous answer.

    Returns:
        The prompt text, ready to send as one user message.
    """
    parts = [_TASK_DESCRIPTION.format(max_steps=max_steps, access_help=_ACCESS_HELP[access])]
    if examples:
        shown = "\n\n".join(
            f"Example {i + 1}\nTask: {e.question}\nWorkflow:\n{e.workflow}" for i, e in enumerate(examples)
        )
        parts.append(f"Here are example workflows for other tasks (the ids refer to their own pools):\n\n{shown}")
    parts.append(f"Available workers:\n{workers}")
    if history:
        parts.append(
            "Your earlier round(s) on this task:\n"
            f"{history}\n\n"
            "Write a new workflow to improve the answer (workers with \"all\" access also see the previous "
            "round's steps), or write three empty lists (model_id = [], subtasks = [], access_list = []) "
            "to keep the previous answer."
        )
    parts.append(f"<task>\n{question}\n</task>\n\nNow write the workflow.")
    return "\n\n".join(parts)


WORKER_PREAMBLE = (
    "You are one agent in a team solving a larger task. You are given the overall task for context, "
    "the work of earlier agents that you may use, and your own subtask. Solve only your subtask, "
    "completely and carefully."
)

PREFILL = "Let me solve this step by step."


@dataclass(frozen=True)
class VisibleStep:
    """An earlier step a worker may read: who did it, what they were asked, what they said."""

    agent: int
    subtask: str
    response: str


def worker_message(question: str, subtask: str, visible: Sequence[VisibleStep]) -> str:
    """Builds the single user message a worker receives.

    Args:
        question: The overall task (inside ``<overall_task>`` tags).
        subtask: This step's instruction.
        visible: Earlier steps this worker may read; empty responses are left out.

    Returns:
        The message text.
    """
    parts = [WORKER_PREAMBLE, f"<overall_task>\n{question}\n</overall_task>"]
    shown = [v for v in visible if v.response.strip()]
    if shown:
        blocks = "\n\n".join(
            f"Agent {v.agent} was asked: {v.subtask}\nAgent {v.agent} responded:\n{v.response}" for v in shown
        )
        parts.append(f"Work of earlier agents:\n{blocks}")
    parts.append(f"Your assigned subtask: {subtask}")
    return "\n\n".join(parts)
