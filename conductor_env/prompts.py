"""The Conductor prompt and the message each worker receives.

Both are templates (:mod:`conductor_env.templates`) a user can replace by name or file; this
module computes the values the templates' placeholders take. The default Conductor prompt follows
the paper's structure: a task description, the three lists, worked examples, the question and the
numbered worker pool. Worked examples are taken from domains other than the question's by
default, which the paper found best. docs/PROMPTS.md compares the defaults with the paper's
released prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from conductor_env.templates import PromptTemplate, load_template

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
        question="Let S be the set of positive integers n < 1000 such that n^2 + 1 is divisible by 13. How many elements does S have?",
        workflow="model_id = [1, 0]\n"
        'subtasks = ["Find all residues r mod 13 with r^2 = -1 (mod 13), then count the integers '
        "1 <= n < 1000 in those residue classes. Show the count for each class and give the total "
        'in \\\\boxed{}.", "Re-derive the residues independently, recount, and compare with the previous '
        'solution. If they disagree, find the error. Give the final total in \\\\boxed{}."]\n'
        'access_list = [[], "all"]',
    ),
    WorkedExample(
        domain="code",
        question="Given an array of n integers (n <= 2*10^5) read from standard input, print the length of the longest strictly increasing contiguous subarray.",
        workflow="model_id = [2, 0, 2]\n"
        'subtasks = ["Describe an O(n) algorithm for the problem and list the edge cases (n = 1, all '
        'equal values, strictly decreasing input).", "Implement the algorithm in Python reading from '
        'stdin and printing the answer. Return one complete program in a ```python block.", "Review the '
        "program against the edge cases above, trace it on two small inputs, fix any bug, and return "
        'the final complete program in a ```python block."]\n'
        'access_list = [[], "all", "all"]',
    ),
    WorkedExample(
        domain="choice",
        question="Which gas makes up the largest share of Earth's atmosphere by volume?\nA) Oxygen\nB) Nitrogen\nC) Argon\nD) Carbon dioxide",
        workflow="model_id = [3]\nsubtasks = [\"Answer the multiple-choice question. Explain briefly, then end with a line 'Answer: X' where X is the letter.\"]\naccess_list = [[]]",
    ),
    WorkedExample(
        domain="reasoning",
        question="Alice, Bob and Carol each own one pet: a cat, a dog or a fish. Alice is allergic to fur, and Bob's pet barks. Who owns the cat?",
        workflow="model_id = [0, 3, 1]\n"
        'subtasks = ["Solve the puzzle step by step and state who owns the cat.", "Solve the puzzle '
        'independently, step by step, and state who owns the cat.", "Two solutions to the puzzle are '
        'given. Check each constraint against both, decide which is right, and give the final answer."]\n'
        'access_list = [[], [], "all"]',
    ),
    WorkedExample(
        domain="writing",
        question="Summarise the trade-offs between optimistic and pessimistic locking in two sentences.",
        workflow='model_id = [1]\nsubtasks = ["Write the two-sentence summary: name one strength and one weakness of each approach."]\naccess_list = [[]]',
    ),
)

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


#: What a later round asks of the Conductor (in the prompt's history section and in the chat view's update).
REVISE_INSTRUCTION = (
    'Write a new workflow to improve the answer (workers with "all" access also see the previous '
    "round's steps), or write three empty lists (model_id = [], subtasks = [], access_list = []) "
    "to keep the previous answer."
)


def render_pool(worker_lines: Sequence[str]) -> str:
    """Returns the numbered pool block, one line per shown worker id."""
    return "\n".join(worker_lines)


def _conductor_values(question: str, workers: str, examples: Sequence[WorkedExample], max_steps: int, access: str, history: str) -> dict[str, str | int]:
    """Returns the values of every Conductor placeholder (see :data:`~conductor_env.templates.PLACEHOLDERS`)."""
    shown = "\n\n".join(f"Example {i + 1}\nTask: {e.question}\nWorkflow:\n{e.workflow}" for i, e in enumerate(examples))
    examples_section = f"Here are example workflows for other tasks (the ids refer to their own pools):\n\n{shown}\n\n" if examples else ""
    history_section = f"Your earlier round(s) on this task:\n{history}\n\n{REVISE_INSTRUCTION}\n\n" if history else ""
    return {
        "question": question,
        "workers": workers,
        "max_steps": max_steps,
        "access_help": _ACCESS_HELP[access],
        "examples": shown,
        "examples_section": examples_section,
        "history": history,
        "history_section": history_section,
    }


def conductor_prompt(
    question: str,
    workers: str,
    *,
    examples: Sequence[WorkedExample],
    max_steps: int = 5,
    access: str = "binary",
    history: str = "",
    template: str | PromptTemplate = "default",
) -> str:
    """Builds the Conductor's user message.

    Args:
        question: The task.
        workers: The numbered pool (see :func:`render_pool`).
        examples: Worked examples to include.
        max_steps: The step limit stated in the prompt.
        access: ``binary`` or ``indices`` (explained accordingly).
        history: Earlier rounds (workflow and answer); when present the default prompt explains
            that three empty lists keep the previous answer.
        template: A Conductor template's name or path, or the template (see
            :mod:`conductor_env.templates`); ``"default"`` is the package's prompt.

    Returns:
        The prompt text, ready to send as the user message (after :func:`conductor_system`'s
        system message, when the template has one).

    Raises:
        TemplateError: For a template that cannot be loaded.
    """
    chosen = load_template(template, "conductor")
    return chosen.render_user(_conductor_values(question, workers, examples, max_steps, access, history))


def conductor_system(template: str | PromptTemplate = "default", *, max_steps: int = 5, access: str = "binary") -> str:
    """Returns a Conductor template's system message (``""`` when it has none)."""
    return load_template(template, "conductor").render_system({"max_steps": max_steps, "access_help": _ACCESS_HELP[access]})


def conductor_prompt_bound(template: str | PromptTemplate, *, max_steps: int, access: str, question_bytes: int, workers_bytes: int, history_bytes: int) -> int:
    """Returns the most UTF-8 bytes :func:`conductor_prompt` can produce under these bounds.

    Every worked example (a superset of any selection) and the text that comes with a history
    are counted once, and each bounded value once per time the template uses it.
    """
    chosen = load_template(template, "conductor")
    values = _conductor_values("", "", WORKED_EXAMPLES, max_steps, access, "-")
    values["history"] = ""
    fixed = len(chosen.render_user(values).encode("utf-8"))
    uses = chosen.placeholders()
    history_uses = uses.get("history", 0) + uses.get("history_section", 0)
    return fixed + uses.get("question", 0) * question_bytes + uses.get("workers", 0) * workers_bytes + history_uses * history_bytes


#: The released code's worker prefill (the ``prefill`` worker template; ``prefill=True``).
PREFILL = "Let me solve this step by step."


@dataclass(frozen=True)
class VisibleStep:
    """An earlier step a worker may read: who did it, what they were asked, what they said."""

    agent: int
    subtask: str
    response: str


def worker_message(question: str, subtask: str, visible: Sequence[VisibleStep], template: str | PromptTemplate = "default") -> str:
    """Builds the user message a worker receives.

    Args:
        question: The overall task (inside ``<overall_task>`` tags in the default template).
        subtask: This step's instruction.
        visible: Earlier steps this worker may read; empty responses are left out.
        template: A worker template's name or path, or the template.

    Returns:
        The message text.

    Raises:
        TemplateError: For a template that cannot be loaded.
    """
    shown = [v for v in visible if v.response.strip()]
    blocks = "\n\n".join(f"Agent {v.agent} was asked: {v.subtask}\nAgent {v.agent} responded:\n{v.response}" for v in shown)
    values = {
        "question": question,
        "subtask": subtask,
        "previous": blocks,
        "previous_section": f"Work of earlier agents:\n{blocks}\n\n" if shown else "",
    }
    return load_template(template, "worker").render_user(values)


def worker_chat(message: str, template: str | PromptTemplate = "default", *, prefill: bool = False) -> list[dict[str, str]]:
    """Returns the chat messages of one worker call: the template's system message, the user
    message, and the assistant prefill.

    Args:
        message: The user message (from :func:`worker_message`).
        template: The worker template (its system message and prefill).
        prefill: Send :data:`PREFILL` when the template has no prefill of its own (the env
            option ``prefill=True``).
    """
    chosen = load_template(template, "worker")
    messages = [{"role": "system", "content": chosen.render_system({})}] if chosen.system else []
    messages.append({"role": "user", "content": message})
    start = chosen.render_prefill() or (PREFILL if prefill else "")
    if start:
        messages.append({"role": "assistant", "content": start})
    return messages
