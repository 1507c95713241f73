"""GRPO with TRL: train a Conductor LLM against any Conductor env.

The adapter is a TRL *reward function over completions*:

- the dataset has one row per problem: the chat prompt is the env's observation ``prompt`` after
  ``reset(seed=episode_seed, options={"problem_id": ...})``, and the row keeps ``problem_id`` and
  ``episode_seed``, so every completion of a GRPO group sees the same question, sub-pool and
  worker sampling seeds;
- the completion is the action: :class:`ConductorReward` resets one env per completion to that
  row, steps them concurrently (``astep`` under ``asyncio.gather`` on the package's event loop),
  and returns the env's reward;
- a completion whose episode hit an infra error (a worker failing after retries) gets ``None``:
  TRL (>= 1.x) treats a row where every reward function returned ``None`` as unscorable, leaves
  it out of the group baseline and of the logged reward, and gives it advantage 0, so an outage
  never punishes the policy;
- with ``max_rounds > 1`` (or ``self_call=True``) the later actions of the episode (next rounds,
  self-call frames) come from a follow-up policy, by default the model being trained, sampled
  with ``transformers.generate``; the first completion is rewarded with the paper's discounted
  credit ``info["round_credit"][0]`` (discount ``round_discount``, 0.25 by default). Only the
  first-round completion is trained on; later rounds act as the environment's continuation.

The paper's hyperparameters are the defaults of :class:`GRPORecipe` (and of
``conductor-env train grpo``): 200 steps of 4 questions x 64 samples, lr 1e-6 cosine, 3% warmup,
clip 0.2, beta 0, loss ``bnpo``, group reward scaling, 1024 completion tokens at temperature 1.0,
vLLM colocated when a CUDA GPU and vLLM are present. On a CPU it runs with ``use_cpu=True`` in
float32, e.g. with the local Gemma 3 270M as the Conductor; there TRL's loss is made to project
only the completion tokens through the LM head, as it does on a GPU
(:func:`score_only_completions_on_cpu`). A tiny base model rarely writes the three lists on its
own, so :class:`GRPORecipe` offers an optional supervised format warm start
(:mod:`conductor_env.agents.warmstart`; off by default, not in the paper).

Typical use::

    from conductor_env.agents.grpo import GRPORecipe, train_grpo
    run = train_grpo(GRPORecipe(env="Conductor-RG-v0", pool="simulated", max_steps=50))
    print(run.rewards)  # the env's mean reward per step, as TRL logged it
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import gymnasium as gym

from conductor_env.agents.base import Observation, Policy
from conductor_env.env import ConductorEnv
from conductor_env.event_loop import run_sync
from conductor_env.suite import TaskSuite
from conductor_env.tasks.public_tests import check_training_use
from conductor_env.tasks.registry import get_suite
from conductor_env.workers.pool import WorkerPool, load_pool

logger = logging.getLogger(__name__)

#: The name TRL logs the env's reward under (``rewards/conductor_env/mean``).
REWARD_NAME = "conductor_env"


# ------------------------------------------------------------------------------------ environments


class EnvFactory:
    """Builds Conductor envs that share one task suite and one worker pool.

    One env per completion lets a whole GRPO batch step concurrently; sharing the suite and the
    pool means one loaded dataset, one set of worker clients and one local model, however many
    envs there are.

    Args:
        env: A gym id (``"Conductor-RG-v0"``) or a suite name (``"rg"``).
        pool: A pool preset name, a ``.toml`` path or a :class:`WorkerPool`.
        split: The problem split (default: the suite's default split).
        suite_options: Options for the suite's factory (``datasets=...``, ``size=...``).
        **env_options: Other :class:`ConductorEnv` options (``max_rounds``, ``reward``, ...).

    Every env it builds is for training, so a split holding problems graded only on public
    tests (LiveCodeBench rows without private tests) is refused unless the suite was given
    ``allow_public_only=True`` (then it warns once).

    Raises:
        ValueError: For a gym id that is not a Conductor env.
        PublicOnlyError: For public-only problems without the opt-in (a ``SuiteError``).
    """

    def __init__(
        self,
        env: str = "Conductor-RG-v0",
        pool: str | WorkerPool = "simulated",
        *,
        split: str | None = None,
        suite_options: dict[str, Any] | None = None,
        **env_options: Any,
    ) -> None:
        suite_name = env
        if env in gym.registry:
            spec = gym.registry[env]
            if spec.entry_point != "conductor_env.env:ConductorEnv":
                raise ValueError(f"{env!r} is not a Conductor env (entry point {spec.entry_point})")
            suite_name = spec.kwargs["suite"]
            env_options = {**{k: v for k, v in spec.kwargs.items() if k != "suite"}, **env_options}
        options = dict(suite_options or {})
        if "sandbox" in env_options:
            options["sandbox"] = env_options.pop("sandbox")
        self.env_id = env
        self.suite: TaskSuite = get_suite(suite_name, **options)
        try:
            shown_split = split or self.suite.default_split
            check_training_use(self.suite, self.suite.problems(split), what=f"training on {env} split {shown_split!r}")
        except BaseException:
            self.suite.close()
            raise
        self.pool: WorkerPool = load_pool(pool)
        self.split = split
        self.env_options = env_options

    def __call__(self) -> ConductorEnv:
        """Returns a new env over the shared suite and pool (do not ``close()`` it: call :meth:`close`)."""
        return ConductorEnv(self.suite, self.pool, split=self.split, **self.env_options)

    def close(self) -> None:
        """Closes the shared pool and suite."""
        run_sync(self.pool.aclose())
        self.suite.close()


PromptBuilder = Callable[[Observation], str]


def full_prompt(observation: Observation) -> str:
    """The env's own Conductor prompt (the default: instructions, examples, pool, task)."""
    return observation["prompt"]


def compact_prompt(observation: Observation) -> str:
    """A short Conductor prompt: the shown workers, earlier rounds, the task and one instruction.

    About a fifth of the env's prompt without examples, for small models on a CPU that learned
    the action format from a warm start (:mod:`conductor_env.agents.warmstart`) and need not
    read the full instructions every step.
    """
    parts = [f"Workers:\n{observation['workers']}"]
    if observation.get("history"):
        parts.append(f"Earlier rounds:\n{observation['history']}")
    parts.append(f"<task>\n{observation['question']}\n</task>")
    parts.append("Write the workflow as three lists: model_id, subtasks, access_list.")
    return "\n\n".join(parts)


#: Prompt builders by name (``GRPORecipe.prompt``, ``--prompt``).
PROMPTS: dict[str, PromptBuilder] = {"full": full_prompt, "compact": compact_prompt}


def build_dataset(
    factory: EnvFactory,
    *,
    limit: int | None = None,
    seed: int = 0,
    problem_ids: Sequence[str] | None = None,
    prompt_builder: PromptBuilder = full_prompt,
    balance_domains: bool = False,
) -> Any:
    """Builds the GRPO training dataset: one conversational row per problem.

    Args:
        factory: The env factory (its split chooses the problems).
        limit: Keep at most this many problems, spread evenly over the split (``None``: all).
        seed: Base of each row's ``episode_seed`` (row ``i`` gets ``seed + i``).
        problem_ids: Use exactly these problems instead.
        prompt_builder: Turns the observation into the user message (default: the env's prompt).
        balance_domains: Order the rows round-robin over the domains (each domain's problems
            shuffled with ``seed``), so that, read in order, every window of ``k`` rows per
            domain holds ``k`` of each while they last. Train on it unshuffled
            (``GRPORecipe.balance_domains``) and every step sees each domain equally.

    Returns:
        A :class:`datasets.Dataset` with ``prompt`` (one user message), ``problem_id``,
        ``episode_seed`` and ``domain``.
    """
    from datasets import Dataset

    env = factory()
    if problem_ids is None:
        problems = list(env.problems)
        if limit is not None and limit < len(problems):
            stride = len(problems) / limit
            problems = [problems[int(i * stride)] for i in range(limit)]
        problem_ids = [p.id for p in problems]
    if balance_domains:
        problem_ids = _round_robin_by_domain(env, problem_ids, seed)
    rows: dict[str, list[Any]] = {"prompt": [], "problem_id": [], "episode_seed": [], "domain": []}
    for i, problem_id in enumerate(problem_ids):
        observation, info = env.reset(seed=seed + i, options={"problem_id": problem_id})
        rows["prompt"].append([{"role": "user", "content": prompt_builder(observation)}])
        rows["problem_id"].append(problem_id)
        rows["episode_seed"].append(seed + i)
        rows["domain"].append(info["domain"])
    return Dataset.from_dict(rows)


def _round_robin_by_domain(env: ConductorEnv, problem_ids: Sequence[str], seed: int) -> list[str]:
    """Interleaves the problems' domains (each domain's order shuffled with ``seed``)."""
    domain_of = {p.id: p.domain for p in env.problems}
    by_domain: dict[str, list[str]] = {}
    for problem_id in problem_ids:
        by_domain.setdefault(domain_of[problem_id], []).append(problem_id)
    order = random.Random(seed)
    queues = [order.sample(ids, len(ids)) for _, ids in sorted(by_domain.items())]
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


# ------------------------------------------------------------------------------------ the reward


def completion_text(completion: Any) -> str:
    """Returns the text of a TRL completion (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant")
    return str(completion)


@dataclass
class EpisodeRecord:
    """What one rewarded completion did (kept by :class:`ConductorReward` for analysis)."""

    step: int
    problem_id: str
    action: str
    reward: float | None
    raw_reward: float
    parse_error: str | None
    correct: bool
    infra_error: str | None
    cost_usd: float
    turns: int


class ConductorReward:
    """A TRL reward function that plays each completion as the action of a Conductor episode.

    Args:
        factory: Builds the envs (one per completion of a batch, reused across batches).
        followup: The policy writing later actions (next rounds, self-call frames); ``None``
            means the trained model once :meth:`attach` is called. Only needed with
            ``max_rounds > 1`` or ``self_call=True``.
        max_followups: Most follow-up actions per episode before it is given up as unscorable.

    Call signature (TRL's): ``reward(prompts=..., completions=..., problem_id=[...],
    episode_seed=[...], **kwargs) -> list[float | None]``.
    """

    __name__ = REWARD_NAME

    def __init__(self, factory: EnvFactory, *, followup: Policy | None = None, max_followups: int = 16) -> None:
        self.factory = factory
        self.followup = followup
        self.max_followups = max_followups
        self.records: list[EpisodeRecord] = []
        self._envs: list[ConductorEnv] = []
        self._calls = 0

    def attach(self, policy: Policy) -> None:
        """Sets the follow-up policy when none was given (the trainer sets the trained model)."""
        if self.followup is None:
            self.followup = policy

    def _env_batch(self, count: int) -> list[ConductorEnv]:
        while len(self._envs) < count:
            self._envs.append(self.factory())
        return self._envs[:count]

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        problem_id: Sequence[str] = (),
        episode_seed: Sequence[int] = (),
        log_metric: Callable[[str, float], None] | None = None,
        **_: Any,
    ) -> list[float | None]:
        """Returns one reward per completion (``None`` for an infra error)."""
        actions = [completion_text(c) for c in completions]
        if not (len(actions) == len(problem_id) == len(episode_seed)):
            raise ValueError(
                "ConductorReward needs the dataset columns problem_id and episode_seed for every completion; "
                "build the dataset with conductor_env.agents.grpo.build_dataset"
            )
        envs = self._env_batch(len(actions))
        outcomes = self._play(envs, actions, [str(p) for p in problem_id], [int(s) for s in episode_seed])
        step = self._calls
        self._calls += 1
        rewards: list[float | None] = []
        for pid, action, (reward, info, turns) in zip(problem_id, actions, outcomes):
            rewards.append(reward)
            self.records.append(
                EpisodeRecord(
                    step=step,
                    problem_id=str(pid),
                    action=action[:4000],
                    reward=reward,
                    raw_reward=float(info.get("round_rewards", [0.0])[0]) if info.get("round_rewards") else 0.0,
                    parse_error=info.get("parse_error") or None,
                    correct=bool(info.get("correct")),
                    infra_error=info.get("infra_error") or None,
                    cost_usd=float(info.get("cost_usd", 0.0)),
                    turns=turns,
                )
            )
        if log_metric is not None:
            scored = [r for r in self.records[-len(actions) :] if r.reward is not None]
            log_metric("conductor/parse_rate", sum(r.parse_error is None for r in scored) / max(1, len(scored)))
            log_metric("conductor/accuracy", sum(r.correct for r in scored) / max(1, len(scored)))
            log_metric("conductor/infra_errors", float(len(actions) - len(scored)))
            log_metric("conductor/cost_usd", sum(r.cost_usd for r in scored) / max(1, len(scored)))
        return rewards

    def _play(
        self, envs: list[ConductorEnv], actions: list[str], problem_ids: list[str], seeds: list[int]
    ) -> list[tuple[float | None, dict[str, Any], int]]:
        for env, pid, seed in zip(envs, problem_ids, seeds):
            env.reset(seed=seed, options={"problem_id": pid})

        async def step_all(indices: list[int], batch: list[str]) -> list[tuple]:
            return list(await asyncio.gather(*(envs[i].astep(a) for i, a in zip(indices, batch))))

        results: list[tuple | None] = [None] * len(envs)
        turns = [1] * len(envs)
        pending = list(range(len(envs)))
        batch = actions
        while pending:
            for i, result in zip(pending, run_sync(step_all(pending, batch))):
                results[i] = result
            pending = [i for i in pending if not (results[i][2] or results[i][3])]  # type: ignore[index]
            pending = [i for i in pending if turns[i] <= self.max_followups]
            if not pending:
                break
            if self.followup is None:
                raise RuntimeError(
                    "the episode continues (max_rounds > 1 or a self-call) but ConductorReward has no follow-up "
                    "policy; pass followup= or train through build_trainer, which attaches the trained model"
                )
            batch = self.followup.act([results[i][0] for i in pending])  # type: ignore[index]
            for i in pending:
                turns[i] += 1

        outcomes = []
        for result, count in zip(results, turns):
            assert result is not None
            _, reward, terminated, truncated, info = result
            if info.get("infra_error") or not (terminated or truncated):
                outcomes.append((None, info, count))  # an outage or an unfinished episode: not scored
                continue
            credit = info.get("round_credit") or [reward]
            outcomes.append((float(credit[0]), info, count))
        return outcomes

    def close(self) -> None:
        """Closes the shared suite and pool."""
        self._envs.clear()
        self.factory.close()


# -------------------------------------------------------------------------- the trained model as a policy


class ModelPolicy(Policy):
    """A transformers causal LM (with its tokenizer's chat template) as a Conductor policy.

    Used for the later actions of multi-round episodes during training (the model being trained
    writes them), and usable on its own for a checkpoint in memory.

    Args:
        model: The model (a ``PreTrainedModel`` or a PEFT model).
        tokenizer: Its tokenizer, with a chat template.
        max_new_tokens: Output limit per action.
        temperature: Sampling temperature (0: greedy).
        name: The policy's name.
        prompt_builder: Turns an observation into the user message (default: the env's prompt).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = 1024,
        temperature: float = 1.0,
        name: str = "model",
        prompt_builder: PromptBuilder = full_prompt,
    ) -> None:
        self.model = model
        self.prompt_builder = prompt_builder
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name

    def generate(self, observations: Sequence[Observation]) -> list[str]:
        """Generates the actions synchronously (in the calling thread)."""
        import torch

        if not observations:
            return []
        texts = [
            self.tokenizer.apply_chat_template([{"role": "user", "content": self.prompt_builder(o)}], tokenize=False, add_generation_prompt=True)
            for o in observations
        ]
        side = self.tokenizer.padding_side
        self.tokenizer.padding_side = "left"
        try:
            encoded = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            self.tokenizer.padding_side = side
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                output = self.model.generate(
                    input_ids=encoded["input_ids"].to(device),
                    attention_mask=encoded["attention_mask"].to(device),
                    max_new_tokens=self.max_new_tokens,
                    do_sample=self.temperature > 0,
                    temperature=self.temperature if self.temperature > 0 else None,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
        finally:
            if was_training:
                self.model.train()
        width = encoded["input_ids"].shape[1]
        return [self.tokenizer.decode(row[width:], skip_special_tokens=True) for row in output]

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        return await asyncio.to_thread(self.generate, observations)


# ---------------------------------------------------------------------------------- the recipe


@dataclass
class GRPORecipe:
    """Everything a GRPO run needs; the defaults are the paper's.

    Attributes:
        model: A local model name (``gemma3-270m``), a model folder or a hub id.
        env: A gym id or suite name.
        pool: A pool preset, ``.toml`` path or :class:`WorkerPool`.
        split: The training split.
        env_options: Other env options (``max_rounds``, ``subpool_size``, ``examples``, ...).
        suite_options: Options for the suite's factory.
        problems: Use at most this many problems (``None``: the whole split).
        balance_domains: Feed the questions in a fixed round-robin order over the domains instead
            of TRL's shuffle, so each step (``questions_per_step`` a multiple of the number of
            domains) holds every domain equally. Not in the paper; on a small mixed-domain
            suite it steadied the CPU learning runs in BENCHMARKS.md.
        prompt: ``"full"`` (the env's Conductor prompt, the paper's) or ``"compact"`` (see
            :func:`compact_prompt`; cheaper for small models after a format warm start).
        output_dir: Where checkpoints, the final model and ``rewards.json`` go.
        max_steps: Optimizer steps.
        questions_per_step: Distinct questions per step.
        num_generations: Samples per question (the GRPO group).
        per_device_batch_size: Completions per forward/backward pass (default: the largest
            divisor of the step's batch that is at most 8); gradient accumulation covers the rest.
        learning_rate, lr_scheduler_type, warmup_ratio: The optimiser schedule.
        epsilon: PPO-style clip range.
        beta: KL coefficient (0: no reference model).
        loss_type: TRL loss aggregation (``bnpo`` in the paper).
        scale_rewards: ``group`` (on, the paper), ``batch`` or ``none``.
        max_completion_length: Conductor output limit in tokens.
        temperature: Sampling temperature of the Conductor.
        round_discount: Discount of the round credit when ``max_rounds > 1``.
        lora_r: LoRA rank (0: full fine-tuning).
        lora_alpha: LoRA alpha.
        lora_top_layers: Adapt only the top N transformer layers (``None``: all; a cheaper
            backward pass on a CPU). Also used by the format warm start.
        use_vllm: ``None``: vLLM (colocated) when CUDA and vLLM are available.
        format_warmup_steps: Steps of supervised warm start on rendered valid workflows before
            GRPO (0: none, as in the paper); see :mod:`conductor_env.agents.warmstart`.
        format_warmup_lr: Learning rate of that warm start.
        format_warmup_subtask: The warm start targets' one instruction (``None``: the warm
            start's default; a shorter one means shorter, cheaper completions).
        format_warmup_preamble: Write ``Domain: <domain>.`` before the warm start targets' lists
            (it teaches the format and to name the domain, not the routing).
        heldout_questions: Questions of ``heldout_split`` on which the model is evaluated before
            and after GRPO (0: no held-out evaluation, as in the paper).
        heldout_split: The held-out split.
        heldout_samples: Sampled actions per held-out question.
        seed: Seed of the dataset's episode seeds and of the trainer.
        logging_steps: Log every this many steps.
        save_steps: Save a checkpoint every this many steps (0: only the final model).
        trainer_options: Extra :class:`trl.GRPOConfig` fields.
    """

    model: str = "gemma3-270m"
    env: str = "Conductor-RG-v0"
    pool: Any = "simulated"
    split: str | None = "train"
    env_options: dict[str, Any] = field(default_factory=dict)
    suite_options: dict[str, Any] = field(default_factory=dict)
    problems: int | None = None
    balance_domains: bool = False
    prompt: str = "full"
    output_dir: str = "runs/grpo"
    max_steps: int = 200
    questions_per_step: int = 4
    num_generations: int = 64
    per_device_batch_size: int | None = None
    learning_rate: float = 1e-6
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = 0.03
    epsilon: float = 0.2
    beta: float = 0.0
    loss_type: str = "bnpo"
    scale_rewards: str = "group"
    max_completion_length: int = 1024
    temperature: float = 1.0
    round_discount: float = 0.25
    lora_r: int = 0
    lora_alpha: int = 32
    lora_top_layers: int | None = None
    use_vllm: bool | None = None
    format_warmup_steps: int = 0
    format_warmup_lr: float = 1e-3
    format_warmup_subtask: str | None = None
    format_warmup_preamble: bool = False
    heldout_questions: int = 0
    heldout_split: str = "validation"
    heldout_samples: int = 2
    seed: int = 0
    logging_steps: int = 1
    save_steps: int = 0
    trainer_options: dict[str, Any] = field(default_factory=dict)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def _batch_size(total: int, requested: int | None) -> int:
    if requested is not None:
        if total % requested:
            raise ValueError(f"per_device_batch_size {requested} must divide questions_per_step x num_generations = {total}")
        return requested
    return max(d for d in range(1, min(8, total) + 1) if total % d == 0)


def grpo_config(recipe: GRPORecipe) -> Any:
    """Returns the :class:`trl.GRPOConfig` of a recipe (CPU or CUDA settings picked here).

    One optimizer step consumes one generation batch of ``questions_per_step x num_generations``
    completions, split into passes of ``per_device_batch_size`` with gradient accumulation.
    """
    from trl import GRPOConfig

    if recipe.num_generations < 2:
        raise ValueError("GRPO needs num_generations >= 2 (the group baseline)")
    if recipe.questions_per_step < 1 or recipe.max_steps < 1:
        raise ValueError("questions_per_step and max_steps must be >= 1")
    total = recipe.questions_per_step * recipe.num_generations
    batch = _batch_size(total, recipe.per_device_batch_size)
    cuda = _cuda()
    use_vllm = (cuda and _vllm_available()) if recipe.use_vllm is None else recipe.use_vllm
    if use_vllm and not cuda:
        raise ValueError("use_vllm needs a CUDA GPU; leave use_vllm unset to pick it automatically")
    options: dict[str, Any] = dict(
        output_dir=recipe.output_dir,
        max_steps=recipe.max_steps,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=total // batch,
        num_generations=recipe.num_generations,
        learning_rate=recipe.learning_rate,
        lr_scheduler_type=recipe.lr_scheduler_type,
        warmup_steps=recipe.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        epsilon=recipe.epsilon,
        beta=recipe.beta,
        loss_type=recipe.loss_type,
        scale_rewards=recipe.scale_rewards,
        max_completion_length=recipe.max_completion_length,
        temperature=recipe.temperature,
        use_cpu=not cuda,
        bf16=cuda,
        activation_checkpointing=cuda,  # saves GPU memory; on a CPU it only costs time
        use_vllm=use_vllm,
        logging_steps=recipe.logging_steps,
        save_strategy="steps" if recipe.save_steps else "no",
        seed=recipe.seed,
        report_to="none",
    )
    if recipe.save_steps:
        options["save_steps"] = recipe.save_steps
    if recipe.balance_domains:
        options["shuffle_dataset"] = False  # keep build_dataset's round-robin order
    if use_vllm:
        options["vllm_mode"] = "colocate"
    if cuda:
        options["model_init_kwargs"] = {"dtype": "bfloat16"}
    options.update(recipe.trainer_options)
    return GRPOConfig(**options)


def prompt_builder_of(name: str) -> PromptBuilder:
    """Returns the prompt builder called ``name`` (a key of :data:`PROMPTS`)."""
    if name not in PROMPTS:
        raise ValueError(f"unknown prompt {name!r}; use one of {sorted(PROMPTS)}")
    return PROMPTS[name]


def resolve_model_path(model: str) -> str:
    """Returns a loadable model reference: a known local name is exported once to the cache."""
    from conductor_env import models

    if model in models.MODELS:
        return str(models.ensure_model(model))
    return model


def load_tokenizer(model_path: str) -> Any:
    """Loads the tokenizer, padded on the left with a pad token (as GRPO requires)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.chat_template is None:
        raise ValueError(f"the model at {model_path} has no chat template; the Conductor prompt is a chat message")
    return tokenizer


#: Projection names of the common decoder architectures (Gemma, Llama, Qwen, Mistral).
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_config(model_path: str, *, r: int, alpha: int, top_layers: int | None = None) -> Any:
    """Returns a PEFT LoRA config on every linear projection, or on the top ``top_layers`` only.

    Adapting only the top layers stops the backward pass there, which is cheaper on a CPU.
    """
    from peft import LoraConfig

    if not top_layers:
        return LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear", task_type="CAUSAL_LM")
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    total = int(getattr(config, "num_hidden_layers", 0) or getattr(getattr(config, "text_config", None), "num_hidden_layers", 0))
    if not 0 < top_layers <= total:
        raise ValueError(f"lora_top_layers must be in 1..{total} for this model, got {top_layers}")
    return LoraConfig(
        r=r,
        lora_alpha=alpha,
        target_modules=list(_PROJECTIONS),
        layers_to_transform=list(range(total - top_layers, total)),
        task_type="CAUSAL_LM",
    )


def score_only_completions_on_cpu() -> bool:
    """Makes TRL's fused LM head score only the completion positions on a CPU too.

    TRL's GRPO loss projects hidden states through the LM head in tiles. On CUDA/XPU it projects
    only the positions that carry a label (the completion); elsewhere it projects *every*
    position, to keep tile shapes fixed for graph compilers (Neuron). On a CPU that multiplies
    the LM-head work by (prompt + completion) / completion, which for a 300-token prompt, a
    40-token workflow and Gemma's 262k-token vocabulary makes the LM head most of the training
    time. The compact path is plain PyTorch there and gives the same log-probabilities (see
    tests/test_agents_grpo.py), so it is enabled for CPU devices. Returns False (and changes
    nothing) when this TRL version has no such switch.
    """
    try:
        from trl.trainer import utils as trl_utils
    except ImportError:  # pragma: no cover - TRL is an optional dependency
        return False
    original = getattr(trl_utils, "_use_triton", None)
    if original is None:
        return False
    if getattr(original, "compact_on_cpu", False):
        return True

    def compact(device: Any) -> bool:
        return device.type == "cpu" or original(device)

    compact.compact_on_cpu = True  # type: ignore[attr-defined]
    trl_utils._use_triton = compact
    return True


def build_trainer(
    recipe: GRPORecipe,
    *,
    factory: EnvFactory | None = None,
    dataset: Any = None,
    followup: Policy | None = None,
    callbacks: Sequence[Any] = (),
    model: Any = None,
) -> tuple[Any, ConductorReward]:
    """Builds a :class:`trl.GRPOTrainer` wired to a Conductor env.

    Args:
        recipe: The run's settings.
        factory: The env factory (default: built from the recipe).
        dataset: The training dataset (default: :func:`build_dataset` over the recipe's split).
        followup: The policy for later rounds/frames (default: the trained model).
        callbacks: Extra ``transformers`` trainer callbacks.
        model: A loaded model to train instead of ``recipe.model`` (e.g. after a warm start).

    Returns:
        The trainer and its reward function (whose ``records`` hold every rewarded episode).
    """
    from trl import GRPOTrainer

    score_only_completions_on_cpu()
    env_options = dict(recipe.env_options)
    env_options.setdefault("round_discount", recipe.round_discount)
    factory = factory or EnvFactory(recipe.env, recipe.pool, split=recipe.split, suite_options=recipe.suite_options, **env_options)
    prompt_builder = prompt_builder_of(recipe.prompt)
    if dataset is None:
        dataset = build_dataset(
            factory, limit=recipe.problems, seed=recipe.seed, prompt_builder=prompt_builder, balance_domains=recipe.balance_domains
        )
    if recipe.balance_domains:
        domains = len(set(dataset["domain"]))
        if recipe.questions_per_step % domains:
            logger.warning("balance_domains: %d questions per step do not split evenly over %d domains", recipe.questions_per_step, domains)
    model_path = resolve_model_path(recipe.model)
    tokenizer = load_tokenizer(model_path)
    reward = ConductorReward(factory, followup=followup)
    peft_config = None
    if recipe.lora_r > 0:
        peft_config = lora_config(model_path, r=recipe.lora_r, alpha=recipe.lora_alpha, top_layers=recipe.lora_top_layers)
    trainer = GRPOTrainer(
        model=model if model is not None else model_path,
        reward_funcs=reward,
        args=grpo_config(recipe),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=list(callbacks) or None,
    )
    reward.attach(
        ModelPolicy(
            trainer.accelerator.unwrap_model(trainer.model),
            tokenizer,
            max_new_tokens=recipe.max_completion_length,
            temperature=recipe.temperature,
            name="trained-model",
            prompt_builder=prompt_builder,
        )
    )
    return trainer, reward


@dataclass
class GRPORun:
    """The outcome of :func:`train_grpo`.

    Attributes:
        rewards: Mean env reward of each optimizer step (TRL's logged ``reward``).
        log_history: TRL's full log.
        final_dir: Where the final model and tokenizer were saved (with LoRA, the adapter is
            merged in, so the folder loads on its own: ``--policy llm:<final_dir>``).
        records: Every rewarded episode.
        heldout_before: Held-out mean reward before GRPO (after any warm start), when measured.
        heldout_after: Held-out mean reward after GRPO, when measured.
        curve_path: The reward curve PNG, when drawn.
        warnings: The progress warnings printed during the run.
    """

    rewards: list[float]
    log_history: list[dict[str, Any]]
    final_dir: str
    records: list[EpisodeRecord]
    heldout_before: Any = None
    heldout_after: Any = None
    curve_path: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Returns a JSON-friendly summary."""
        return {
            "rewards": self.rewards,
            "final_dir": self.final_dir,
            "heldout_before": asdict(self.heldout_before) if self.heldout_before is not None else None,
            "heldout_after": asdict(self.heldout_after) if self.heldout_after is not None else None,
            "warnings": self.warnings,
            "log_history": self.log_history,
            "episodes": [asdict(r) for r in self.records],
        }


#: The file beside a saved Conductor that tells ``llm:<folder>`` how it was trained.
CONDUCTOR_CONFIG = "conductor.json"


def conductor_config(recipe: GRPORecipe) -> dict[str, Any]:
    """Returns what a saved Conductor needs to act as it was trained: its prompt and output limit,
    and the env it was trained against (for the ``conductor-env eval`` line)."""
    return {
        "prompt": recipe.prompt,
        "max_new_tokens": recipe.max_completion_length,
        "env": recipe.env,
        "pool": recipe.pool if isinstance(recipe.pool, str) else getattr(recipe.pool, "name", None),
        "env_options": dict(recipe.env_options),
        "suite_options": dict(recipe.suite_options),
    }


def save_conductor(trainer: Any, recipe: GRPORecipe, final_dir: Path) -> None:
    """Saves the trained Conductor as a standalone model folder with its :data:`CONDUCTOR_CONFIG`.

    A LoRA run's adapter is merged into its base (which may be a warm-started model that exists
    only in memory), so the folder is a plain ``transformers`` model the ``local`` backend loads.
    """
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload"):
        model.merge_and_unload().save_pretrained(str(final_dir))
    else:
        trainer.save_model(str(final_dir))
    trainer.processing_class.save_pretrained(str(final_dir))
    (final_dir / CONDUCTOR_CONFIG).write_text(json.dumps(conductor_config(recipe), indent=1, default=str), encoding="utf-8")


def logged_rewards(log_history: Sequence[dict[str, Any]]) -> list[float]:
    """Returns the per-step mean env reward TRL logged, skipping steps with no scorable sample."""
    values = []
    for entry in log_history:
        value = entry.get(f"rewards/{REWARD_NAME}/mean", entry.get("reward"))
        if isinstance(value, (int, float)) and not math.isnan(value):
            values.append(float(value))
    return values


def train_grpo(
    recipe: GRPORecipe,
    *,
    callbacks: Sequence[Any] = (),
    followup: Policy | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> GRPORun:
    """Runs a whole GRPO training (optionally after a format warm start) and saves the result.

    Args:
        recipe: The settings (paper defaults).
        callbacks: Extra trainer callbacks.
        followup: The policy for later rounds/frames (default: the trained model).
        progress: Show a rich progress bar per step with the reward, parse rate and share of
            identical-reward groups, and warn when the run stops carrying a learning signal
            (:mod:`conductor_env.agents.progress`), instead of TRL's bar and log lines.
        say: Prints a line at each phase (warm start, held-out evaluation, saving); ``None``: quiet.

    Returns:
        The reward curve, TRL's log, the final model folder, every rewarded episode and the
        held-out figures; the same summary is written to ``<output_dir>/rewards.json`` and the
        curve to ``<output_dir>/reward_curve.png``.
    """
    tell = say or (lambda line: None)
    env_options = dict(recipe.env_options)
    env_options.setdefault("round_discount", recipe.round_discount)
    factory = EnvFactory(recipe.env, recipe.pool, split=recipe.split, suite_options=recipe.suite_options, **env_options)
    heldout_factory = None
    output = Path(recipe.output_dir)
    model = None
    try:
        prompt_builder = prompt_builder_of(recipe.prompt)
        if recipe.format_warmup_steps > 0:
            from conductor_env.agents.warmstart import WARM_START_SUBTASK, format_warm_start

            tell(f"format warm start: {recipe.format_warmup_steps} supervised steps on rendered workflows")
            warm_bar = None
            if progress:
                from conductor_env.agents.progress import StepBar

                warm_bar = StepBar("warm start", recipe.format_warmup_steps)
            try:
                model = format_warm_start(
                    resolve_model_path(recipe.model),
                    factory,
                    steps=recipe.format_warmup_steps,
                    learning_rate=recipe.format_warmup_lr,
                    lora_top_layers=recipe.lora_top_layers,
                    seed=recipe.seed,
                    limit=recipe.problems,
                    prompt_builder=prompt_builder,
                    subtask=recipe.format_warmup_subtask or WARM_START_SUBTASK,
                    preamble=(lambda info: f"Domain: {info['domain']}.") if recipe.format_warmup_preamble else None,
                    on_step=warm_bar.step if warm_bar is not None else None,
                )
            finally:
                if warm_bar is not None:
                    warm_bar.close()
        trainer, reward = build_trainer(recipe, factory=factory, followup=followup, callbacks=callbacks, model=model)
        model = None  # the trainer holds it now
        bar = None
        if progress:
            from transformers.trainer_callback import PrinterCallback, ProgressCallback

            from conductor_env.agents.progress import RichProgress

            trainer.remove_callback(ProgressCallback)
            trainer.remove_callback(PrinterCallback)
            bar = RichProgress(recipe.max_steps)
            trainer.add_callback(bar)
        before = after = None
        if recipe.heldout_questions > 0:
            from conductor_env.agents.heldout import evaluate_heldout, heldout_rows

            heldout_factory = EnvFactory(recipe.env, recipe.pool, split=recipe.heldout_split, suite_options=recipe.suite_options, **env_options)
            rows = heldout_rows(heldout_factory, recipe.heldout_questions, prompt_builder)
            tell(f"held-out reward before GRPO: {len(rows)} {recipe.heldout_split} questions x {recipe.heldout_samples} samples")
            before = evaluate_heldout(
                trainer.model, trainer.processing_class, heldout_factory, rows, samples=recipe.heldout_samples,
                max_new_tokens=recipe.max_completion_length, temperature=recipe.temperature,
            )
            tell(f"held-out before GRPO: mean reward {before.mean_reward:.3f}, parse rate {before.parse_rate:.0%}")
        try:
            trainer.train()
        finally:
            if bar is not None:
                bar.close()
        if heldout_factory is not None:
            after = evaluate_heldout(
                trainer.model, trainer.processing_class, heldout_factory, rows, samples=recipe.heldout_samples,
                max_new_tokens=recipe.max_completion_length, temperature=recipe.temperature,
            )
            tell(f"held-out after GRPO: mean reward {after.mean_reward:.3f}, parse rate {after.parse_rate:.0%}")
        final_dir = output / "final"
        save_conductor(trainer, recipe, final_dir)
        rewards = logged_rewards(trainer.state.log_history)
        curve_path = None
        if rewards:
            from conductor_env.agents.progress import plot_reward_curve

            curve_path = str(
                plot_reward_curve(
                    rewards,
                    output / "reward_curve.png",
                    heldout_before=before.mean_reward if before else None,
                    heldout_after=after.mean_reward if after else None,
                    title=f"GRPO on {recipe.env}: {Path(str(recipe.model)).name}",
                )
            )
        run = GRPORun(
            rewards=rewards,
            log_history=list(trainer.state.log_history),
            final_dir=str(final_dir),
            records=list(reward.records),
            heldout_before=before,
            heldout_after=after,
            curve_path=curve_path,
            warnings=list(bar.warnings) if bar is not None else [],
        )
        (output / "rewards.json").write_text(json.dumps(run.to_json(), indent=1, default=str), encoding="utf-8")
        return run
    finally:
        factory.close()
        if heldout_factory is not None:
            heldout_factory.close()
