"""The settings of a GRPO run (:class:`GRPORecipe`) and their TRL config.

The recipe's hyperparameter defaults are the paper's; its model, env and pool defaults are not
(Gemma 3 270M on Conductor-RG-v0 with simulated workers, which run anywhere). The paper's model,
training mix and pool are the ``paper`` recipe of :mod:`conductor_env.agents.training.profiles`
(``conductor-env train grpo --recipe paper``).

:func:`grpo_config` picks the CPU or CUDA settings (float32 on a CPU; bfloat16, activation
checkpointing and colocated vLLM on a GPU) and splits a step's batch into passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, Mapping

from conductor_env.agents.training.data import check_domain_weights
from conductor_env.agents.workflow_shapes import PLAN_ORDERS, WARM_START_SHAPES
from conductor_env.envs.setup import EnvSetup
from conductor_env.templates import load_template

#: The settings that describe the env (flat, as profiles and the command line give them).
ENV_SETTINGS = ("env", "pool", "split", "env_options", "suite_options")
#: The default env of a recipe, as flat settings.
DEFAULT_ENV = {"env": "Conductor-RG-v0", "pool": "simulated", "split": "train"}


def _default_setup() -> EnvSetup:
    return EnvSetup.from_id(DEFAULT_ENV["env"], pool=DEFAULT_ENV["pool"], split=DEFAULT_ENV["split"])


@dataclass
class GRPORecipe:
    """Everything a GRPO run needs.

    The optimisation defaults (``max_steps`` to ``temperature``, full fine-tuning, no warm start,
    no held-out evaluation) are the paper's. ``model`` and ``setup`` are not: they default to the
    local Gemma 3 270M on Conductor-RG-v0 with the ``simulated`` pool, where the paper trained
    Qwen2.5-7B-Instruct on its MATH/MMLU/RLPR/LiveCodeBench mix with seven API and vLLM workers
    (``PAPER_RECIPE`` in :mod:`conductor_env.agents.training.profiles` sets those).

    Attributes:
        model: A local model name (``gemma3-270m``, the default; not the paper's), a model folder
            or a hub id (the paper's: ``Qwen/Qwen2.5-7B-Instruct``).
        setup: The env to train on (id, pool, training split, suite and env options); the
            held-out evaluation uses the same setup on ``heldout_split``. Its Conductor template
            may have a system message but no prefill (see :meth:`__post_init__`).
        problems: Use at most this many problems (``None``: the whole split).
        balance_domains: Feed the questions in a fixed round-robin order over the domains instead
            of TRL's shuffle, so each step (``questions_per_step`` a multiple of the number of
            domains) holds every domain equally. Not in the paper; on a small mixed-domain
            suite it steadied the CPU learning runs in BENCHMARKS.md.
        domain_weights: With ``balance_domains``, questions of each named domain per
            round-robin round (others 1), so a step of ``questions_per_step = sum of the
            weights`` sees a domain that often; see :func:`~conductor_env.agents.training.data.build_dataset`.
            Not in the paper.
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
        reward_draws: Episodes played per completion with independent worker samples, whose
            mean is the reward (1, the paper's: one episode). Not in the paper; on a simulated
            pool it takes most of the workers' luck out of the group advantage for free, with
            real workers it multiplies the calls.
        lora_r: LoRA rank (0: full fine-tuning).
        lora_alpha: LoRA alpha.
        lora_top_layers: Adapt only the top N transformer layers (``None``: all; a cheaper
            backward pass on a CPU). Also used by the format warm start, unless
            ``format_warmup_all_layers``.
        use_vllm: ``None``: vLLM (colocated) when CUDA and vLLM are available.
        format_warmup_steps: Steps of supervised warm start on rendered valid workflows before
            GRPO (0: none, as in the paper); see :mod:`conductor_env.agents.training.warmstart`.
        format_warmup_lr: Learning rate of that warm start.
        format_warmup_subtask: The warm start targets' one instruction (``None``: the warm
            start's default; a shorter one means shorter, cheaper completions).
        format_warmup_preamble: Write ``Domain: <domain>.`` before the warm start targets' lists
            (it teaches the format and to name the domain, not the routing).
        format_warmup_shapes: A named set of warm-start target shapes
            (:data:`conductor_env.agents.training.warmstart.WARM_START_SHAPES`; ``None``: one single-step
            workflow per worker).
        format_warmup_plan: Write ``Plan: <worker names>.`` before the warm start targets' lists,
            so the model chooses workers by name and learns to write their shown ids (sub-pools
            renumber them); see :func:`conductor_env.agents.training.warmstart.warm_start_rows`.
        format_warmup_shape_word: Write ``Shape: <single|judge|verify>.`` before the plan, so
            the model chooses the workflow's shape in one word right after the domain line,
            before it names any worker.
        format_warmup_plan_order: The plan's order of workers: ``steps``, or ``answer-first``
            (the worker whose answer is the workflow's, then ``reads`` and the steps it reads),
            so the plan's first word chooses the shape with the answering worker
            (:func:`conductor_env.agents.training.warmstart.plan_text`).
        format_warmup_all_layers: The format warm start adapts every layer whatever
            ``lora_top_layers`` says. LoRA on the top 6 of Gemma 3 270M's 18 layers cannot learn
            to copy the answering worker's id from the front of an answer-first plan to the end
            of ``model_id``; on all 18 it does (BENCHMARKS.md, "The judge's id"). Each step is
            slower on a CPU: the backward pass runs through every layer.
        format_warmup_id_orders: Episodes per warm-start problem, each under its own random
            sub-pool order, so the targets show one question under several id orders
            (:func:`conductor_env.agents.training.warmstart.warm_start_rows`); each step then costs that
            many times as much.
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
    setup: EnvSetup = field(default_factory=_default_setup)
    problems: int | None = None
    balance_domains: bool = False
    domain_weights: dict[str, int] = field(default_factory=dict)
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
    reward_draws: int = 1
    lora_r: int = 0
    lora_alpha: int = 32
    lora_top_layers: int | None = None
    use_vllm: bool | None = None
    format_warmup_steps: int = 0
    format_warmup_lr: float = 1e-3
    format_warmup_subtask: str | None = None
    format_warmup_preamble: bool = False
    format_warmup_shapes: str | None = None
    format_warmup_plan: bool = False
    format_warmup_shape_word: bool = False
    format_warmup_plan_order: str = "steps"
    format_warmup_all_layers: bool = False
    format_warmup_id_orders: int = 1
    heldout_questions: int = 0
    heldout_split: str = "validation"
    heldout_samples: int = 2
    seed: int = 0
    logging_steps: int = 1
    save_steps: int = 0
    trainer_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuses an unknown warm-start plan order or shape set, fewer than one id order, bad domain weights, and a Conductor template with a prefill.

        TRL's GRPOTrainer renders a conversational prompt with a fresh generation prompt, so a
        final assistant message would be closed instead of continued; and the completion it
        scores would lack the prefill the env must parse. Train with a template without one.

        Raises:
            ValueError: For an unknown ``format_warmup_plan_order`` or ``format_warmup_shapes``,
                a ``format_warmup_id_orders`` below 1, ``domain_weights`` without ``balance_domains``
                or below 1, or a Conductor template with a prefill.
        """
        if self.format_warmup_plan_order not in PLAN_ORDERS:
            raise ValueError(f"unknown format_warmup_plan_order {self.format_warmup_plan_order!r}; use one of {list(PLAN_ORDERS)}")
        if self.format_warmup_shapes is not None and self.format_warmup_shapes not in WARM_START_SHAPES:
            raise ValueError(f"unknown format_warmup_shapes {self.format_warmup_shapes!r}; use one of {sorted(WARM_START_SHAPES)}")
        if self.format_warmup_id_orders < 1:
            raise ValueError(f"format_warmup_id_orders must be at least 1, got {self.format_warmup_id_orders}")
        if self.domain_weights and not self.balance_domains:
            raise ValueError("domain_weights weigh the balance_domains order: set balance_domains too")
        check_domain_weights(self.domain_weights)
        template = load_template(self.setup.options.conductor_template, "conductor")
        if template.prefill:
            raise ValueError(
                f"conductor template {template.name!r} has a prefill, which GRPO training does not support "
                "(TRL starts a new assistant turn after the prompt); train with a template without one, e.g. 'default'"
            )


def recipe_from_settings(settings: Mapping[str, Any]) -> GRPORecipe:
    """Builds a recipe from flat settings (a profile merged with command-line flags).

    The env settings (``env``, ``pool``, ``split``, ``env_options``, ``suite_options``) become
    the recipe's :class:`EnvSetup`; the rest are recipe fields.

    Raises:
        EnvOptionError: For an unknown or bad env option.
        SetupError: For an env id that is not a Conductor env.
    """
    rest = {k: v for k, v in settings.items() if k not in ENV_SETTINGS}
    env = settings.get("env", DEFAULT_ENV["env"])
    build = EnvSetup.from_id if env.startswith("Conductor-") else partial(EnvSetup.from_kwargs, suite=env)
    setup = build(
        pool=settings.get("pool", DEFAULT_ENV["pool"]),
        split=settings.get("split", DEFAULT_ENV["split"]),
        suite_options=dict(settings.get("suite_options") or {}),
        options=dict(settings.get("env_options") or {}),
        **({"env_id": env} if env.startswith("Conductor-") else {}),
    )
    known = {f.name for f in fields(GRPORecipe)}
    return GRPORecipe(setup=setup, **{k: v for k, v in rest.items() if k in known})


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
