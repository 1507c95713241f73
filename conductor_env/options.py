"""The env's options as one typed, frozen value (:class:`EnvOptions`).

Everything that shapes an episode apart from the suite, the pool and the split: the workflow
language's limits, rounds, self-calls, the prompt's examples, worker call settings and the reward.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from conductor_env.calls import RetryPolicy
from conductor_env.executor import AnswerFrom
from conductor_env.prompts import ExampleSelection
from conductor_env.rewards import REWARD_SCHEMES
from conductor_env.subpools import ExcludedSubpools, SubpoolSize
from conductor_env.templates import PromptTemplate, TemplateError, load_template
from conductor_env.workflow import MAX_ACTION_CHARS, AccessMode

#: Default longest question (UTF-8 bytes) the observation space holds; the questions of the shipped
#: suites we measured (LiveCodeBench, MATH-500, AIME, GPQA, MMLU) stay under 6 KB.
MAX_QUESTION_BYTES = 32 * 1024
#: Longest action (UTF-8 bytes) in the action space: four times the parser's limit of
#: :data:`~conductor_env.workflow.MAX_ACTION_CHARS` characters (a character takes at most 4 bytes),
#: so every action the parser reads is in the space; longer ones get the ``too_long`` parse error.
MAX_ACTION_BYTES = 4 * MAX_ACTION_CHARS


class EnvOptionError(ValueError, TypeError):
    """An env option is unknown (a ``TypeError``, as for any unknown keyword) or has a bad value
    (a ``ValueError``); the message names it and the fix.

    Attributes:
        unknown: The unknown option's name (``""`` for a bad value).
        closest: The known option closest to it (``""`` when none is close).
    """

    def __init__(self, message: str, *, unknown: str = "", closest: str = "") -> None:
        super().__init__(message)
        self.unknown = unknown
        self.closest = closest


@dataclass(frozen=True)
class EnvOptions:
    """How a :class:`~conductor_env.env.ConductorEnv` runs its episodes.

    Attributes:
        reward: ``"paper"``, ``"paper_code"``, ``"correctness"`` or ``"cost_aware"``.
        price_weight: Reward lost per USD (``cost_aware``).
        max_steps: Most steps per workflow.
        access: ``"binary"`` (the paper) or ``"indices"`` (fine-grained lists).
        max_rounds: Rounds per episode (the original code's recursion; 1 = single round).
        round_discount: Base discount of the round credit (0.25 in the paper's checkpoints).
        subpool_size: ``None`` (whole pool, canonical order), an int, or ``(min, max)``: a random
            sub-pool per episode with renumbered ids.
        exclude_subpools: Worker-name sets an episode never shows (with ``subpool_size``): a drawn
            sub-pool made of exactly those workers, in any order, is drawn again. Hold a sub-pool
            out of training this way, then evaluate on it alone by excluding every other one.
        show_names: Reveal worker names and descriptions (hidden by default, as in the paper).
        worker_traits: Add the structured view of the shown workers' declared traits to the
            observation (``worker_traits``, see :mod:`conductor_env.traits`, and the question's
            domain as ``question_domain``), for policies that do not read text; the pool's workers must declare traits (generated pools do).
        self_call: Offer the Conductor itself as the last worker id.
        max_depth: Deepest self-call frame (0 when ``self_call`` is off).
        examples: Which worked examples the prompt shows (``"out_of_domain"`` by default).
        num_examples: How many worked examples.
        worker_max_tokens: Output-token limit per worker call (``None``: each worker's default).
        worker_temperature: Temperature per worker call (``None``: each worker's default).
        prefill: Prefill the worker's answer with "Let me solve this step by step." as the
            released code does, when the worker template has no prefill of its own (only for
            backends that accept an assistant prefill). The same as ``worker_template="prefill"``.
        conductor_template: The Conductor prompt: a shipped template's name (``"default"``, the
            package's prompt; ``"chat"``), a ``.toml`` path, or a
            :class:`~conductor_env.templates.PromptTemplate`. Its system message and prefill
            reach the policy as the observation's ``system`` and ``prefill`` (see docs/PROMPTS.md).
        worker_template: The message each worker receives: a name (``"default"``, ``"prefill"``),
            a ``.toml`` path or a template, with an optional system message and prefill.
        answer_from: ``"last"`` step's response (the paper) or ``"last_nonempty"``.
        retry: Retry policy for worker calls.
        max_question_bytes: Longest question (UTF-8 bytes) the observation space holds;
            ``reset`` on a longer problem raises ``ValueError``.

    Raises:
        EnvOptionError: From the constructor, for a value out of range.
    """

    reward: str = "paper"
    price_weight: float = 0.0
    max_steps: int = 5
    access: AccessMode = "binary"
    max_rounds: int = 1
    round_discount: float = 0.25
    subpool_size: SubpoolSize = None
    exclude_subpools: ExcludedSubpools = ()
    show_names: bool = False
    worker_traits: bool = False
    self_call: bool = False
    max_depth: int = 1
    examples: ExampleSelection = "out_of_domain"
    num_examples: int = 4
    worker_max_tokens: int | None = None
    worker_temperature: float | None = None
    prefill: bool = False
    conductor_template: str | PromptTemplate = "default"
    worker_template: str | PromptTemplate = "default"
    answer_from: AnswerFrom = "last"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_question_bytes: int = MAX_QUESTION_BYTES

    def __post_init__(self) -> None:
        if self.access not in ("binary", "indices"):
            raise EnvOptionError(f"access must be 'binary' or 'indices', got {self.access!r}")
        if self.reward not in REWARD_SCHEMES:
            raise EnvOptionError(f"unknown reward scheme {self.reward!r}; use one of {REWARD_SCHEMES}")
        if self.max_rounds < 1 or self.max_steps < 1 or self.max_depth < 0:
            raise EnvOptionError("max_rounds and max_steps must be >= 1 and max_depth >= 0")
        if self.max_question_bytes < 1:
            raise EnvOptionError(f"max_question_bytes must be >= 1, got {self.max_question_bytes!r}")
        for name, kind in (("conductor_template", "conductor"), ("worker_template", "worker")):
            self._check_template(name, kind)
        if isinstance(self.subpool_size, list):  # from JSON (the CLI, a manifest): keep it hashable
            object.__setattr__(self, "subpool_size", tuple(self.subpool_size))
        object.__setattr__(self, "exclude_subpools", _excluded_subpools(self.exclude_subpools))
        if isinstance(self.retry, Mapping):
            object.__setattr__(self, "retry", RetryPolicy(**self.retry))
        elif self.retry is None:
            object.__setattr__(self, "retry", RetryPolicy())

    def _check_template(self, name: str, kind: str) -> None:
        """Loads a template option once, so a bad one fails here; a mapping (a recorded run) becomes the template."""
        value = getattr(self, name)
        try:
            loaded = load_template(value, kind)
        except TemplateError as error:
            raise EnvOptionError(f"{name}: {error}") from None
        if isinstance(value, Mapping):
            object.__setattr__(self, name, loaded)

    @property
    def depth_limit(self) -> int:
        """The deepest self-call frame an episode can open (0 without self-calls)."""
        return self.max_depth if self.self_call else 0

    @classmethod
    def names(cls) -> list[str]:
        """Returns the option names, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | EnvOptions | None = None, **more: Any) -> EnvOptions:
        """Builds options from keyword values (``gym.make`` kwargs, a CLI's ``--env-option``).

        Args:
            values: Options by name, or an :class:`EnvOptions` to start from.
            **more: More options by name (they win over ``values``).

        Returns:
            The options.

        Raises:
            EnvOptionError: For an unknown name (naming the closest option) or a bad value.
        """
        base = values if isinstance(values, EnvOptions) else cls()
        given = {**({} if isinstance(values, EnvOptions) or values is None else dict(values)), **more}
        known = cls.names()
        for key in given:
            if key not in known:
                closest = next(iter(difflib.get_close_matches(key, known, n=1)), "")
                hint = f"did you mean {closest!r}? " if closest else ""
                raise EnvOptionError(f"unknown env option {key!r}; {hint}env options: {', '.join(known)}", unknown=key, closest=closest)
        return dataclasses.replace(base, **given)

    def changed(self) -> dict[str, Any]:
        """Returns the options that differ from the defaults, as JSON-friendly values."""
        default = EnvOptions()
        out: dict[str, Any] = {}
        for name in self.names():
            value = getattr(self, name)
            if value != getattr(default, name):
                out[name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value
        return out


def _excluded_subpools(value: Any) -> ExcludedSubpools:
    """Normalises ``exclude_subpools`` (lists from JSON, any order) to sorted, de-duplicated name tuples.

    Raises:
        EnvOptionError: Unless it is a list of non-empty lists of worker names.
    """
    bad = EnvOptionError(f"exclude_subpools must be a list of worker-name lists, e.g. [['checker', 'flash']], got {value!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise bad
    subpools = set()
    for names in value:
        if not isinstance(names, (list, tuple)) or not names or len(set(names)) != len(names):
            raise bad
        if not all(isinstance(name, str) for name in names):
            raise bad
        subpools.add(tuple(sorted(names)))
    return tuple(sorted(subpools))


def parse_key_values(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` command-line options (``--env-option``, ``--suite-option``, ...); a
    value is JSON when it parses as JSON, else the string (``max_rounds=2`` gives an int,
    ``data_files=a.jsonl`` a string). The one parser of such flags, for every command.

    Raises:
        ValueError: For an item without ``=`` or with an empty key, naming ``flag``.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        options[key.strip()] = value
    return options
