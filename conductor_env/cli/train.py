"""``conductor-env train grpo``: GRPO training of a Conductor LLM.

The defaults come from a profile (``gpu``: the paper's hyperparameters with the package's small
model, env and simulated pool; ``cpu``: a short run that fits a CPU) or, with ``--recipe paper``,
from the paper's whole setup (its model, training mix, worker pool and hyperparameters).
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any

from conductor_env.cli.common import UsageError, ray_backend

#: Recipe fields set from same-named command-line flags (``--max-steps`` -> ``max_steps``).
_RECIPE_FLAGS = (
    "model", "env", "pool", "split", "problems", "balance_domains", "prompt", "output_dir", "max_steps", "questions_per_step",
    "num_generations", "per_device_batch_size", "learning_rate", "lr_scheduler_type", "warmup_ratio",
    "epsilon", "beta", "loss_type", "scale_rewards", "max_completion_length", "temperature",
    "round_discount", "reward_draws", "lora_r", "lora_alpha", "lora_top_layers", "format_warmup_steps", "format_warmup_lr",
    "format_warmup_shapes", "format_warmup_shape_word", "format_warmup_plan_order", "format_warmup_all_layers", "format_warmup_id_orders", "heldout_questions", "seed", "logging_steps", "save_steps",
)  # fmt: skip


def _default(name: str) -> str:
    """The help text's defaults of a recipe flag under each profile and under ``--recipe paper``."""
    from conductor_env.agents.training.recipe import DEFAULT_ENV, GRPORecipe
    from conductor_env.agents.training.profiles import CPU_PROFILE, PAPER_RECIPE

    gpu = DEFAULT_ENV[name] if name in DEFAULT_ENV else getattr(GRPORecipe(), name)
    cpu = CPU_PROFILE.settings.get(name, gpu)
    paper = PAPER_RECIPE.settings.get(name, gpu)
    papers = name in PAPER_RECIPE.settings
    same = " (the paper's)" if papers and paper == gpu else ""
    shown = f"default: {gpu}{same}" if cpu == gpu else f"default: gpu {gpu}{same}, cpu {cpu}"
    return shown if paper == gpu else f"{shown}; --recipe paper: {paper} (the paper's)"


def register(subparsers: Any) -> None:
    """Adds ``train`` (with its ``grpo`` and ``export-adapter`` subcommands) to the ``conductor-env`` parser."""
    from conductor_env.agents.training.profiles import PROFILES, RECIPES

    train = subparsers.add_parser("train", help="train a Conductor policy", description="Train a Conductor policy.")
    kinds = train.add_subparsers(dest="trainer", metavar="TRAINER", required=True)
    grpo = kinds.add_parser(
        "grpo",
        help="GRPO with TRL against a Conductor env (a CPU profile without a GPU; --recipe paper for the paper's setup)",
        description=(
            "Train a Conductor LLM with TRL's GRPOTrainer against a Conductor env. A profile sets the defaults. "
            "gpu (chosen when CUDA is present) uses the paper's hyperparameters: 200 steps of 4 questions x 64 samples, "
            "lr 1e-6 cosine, 3 percent warmup, clip 0.2, beta 0, loss bnpo, group reward scaling, 1024 completion "
            "tokens at temperature 1.0, full fine-tuning, vLLM colocated when present; but NOT the paper's model, data "
            "or workers: it trains the local Gemma 3 270M on Conductor-RG-v0 with the simulated pool. cpu (chosen otherwise) trains "
            "the local Gemma 3 270M Conductor to route on Conductor-RG-v0 with one simulated expert per domain in "
            "about 9 minutes on 2 cores within 4 GB: LoRA on the top 6 layers, compact prompt, a 30-step format warm start, "
            "24 steps of 3 questions x 4 samples, 34 completion tokens, lr 2e-4 after a 20 percent warm-up, and a "
            "held-out evaluation before and after (none of these are the paper's). --recipe paper sets the paper's setup: "
            "Qwen/Qwen2.5-7B-Instruct on Conductor-Mix-v0 (suite option recipe=paper) with the paper pool, the paper's "
            "hyperparameters and vLLM; it needs a CUDA GPU, vLLM, the model (on disk or downloadable) and the pool's API "
            "keys, and stops at once when one is missing. Any flag overrides the profile's or recipe's value."
        ),
    )
    grpo.add_argument("--profile", default=None, choices=sorted(PROFILES), help="settings profile (default: gpu when a CUDA GPU is present, else cpu)")
    grpo.add_argument(
        "--recipe", default=None, choices=sorted(RECIPES),
        help="paper: the paper's model, training mix, pool and hyperparameters (needs a CUDA GPU; replaces --profile)",
    )
    _add_recipe_arguments(grpo)
    grpo.add_argument("--ray", default=None, metavar="ADDRESS", help="play the reward's episodes in Ray actors: auto, HOST:PORT or local (needs the ray extra); the model stays here")
    grpo.add_argument("--ray-workers", type=int, default=2, metavar="N", help="episode actors with --ray (default 2)")
    grpo.set_defaults(handler=run_grpo_command)
    _register_export_adapter(kinds)


def _register_export_adapter(kinds: Any) -> None:
    """Adds ``train export-adapter``: a trained model folder as a small LoRA adapter over its base."""
    export = kinds.add_parser(
        "export-adapter",
        help="write a trained Conductor folder as a small LoRA adapter over its base model (loads with --policy llm:DIR)",
        description=(
            "Write a trained model folder (e.g. a GRPO run's final) as a PEFT LoRA adapter over its base model: every "
            "Linear weight that differs from the base is factored with a truncated SVD, and the run's conductor.json "
            "is copied beside it. Any other difference (embeddings, norms, a rank above --max-rank unless --truncate) is refused."
        ),
    )
    export.add_argument("model_dir", metavar="MODEL_DIR", help="the trained model folder")
    export.add_argument("--out", required=True, metavar="DIR", help="the adapter folder to write")
    export.add_argument("--base", default="gemma3-270m", help="local model name or folder the model was trained from (default: gemma3-270m)")
    export.add_argument("--max-rank", type=int, default=64, help="largest rank of a weight difference (default: 64)")
    export.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"], help="storage dtype of the factors (default: float16)")
    export.add_argument(
        "--truncate", action="store_true",
        help="cut a difference of rank above --max-rank to its largest directions instead of refusing it (lossy: evaluate the adapter)",
    )
    export.set_defaults(handler=run_export_adapter_command)


def run_export_adapter_command(args: argparse.Namespace) -> int:
    """Runs ``conductor-env train export-adapter`` and prints its report and the policy to load it with."""
    from conductor_env.workers.local_models import ModelExportError

    try:
        from conductor_env.agents.training.adapter import export_adapter

        report = export_adapter(args.model_dir, args.out, base=args.base, max_rank=args.max_rank, dtype=args.dtype, truncate=args.truncate)
    except ImportError as error:
        raise UsageError(f"export-adapter needs peft and transformers ({error.name} is missing): pip install 'conductor-env[train]'") from error
    except (OSError, ValueError, ModelExportError) as error:
        raise UsageError(str(error).splitlines()[0]) from error
    print(report.summary())
    print(f"use it: --policy llm:{report.out_dir}")
    return 0


def _add_recipe_arguments(grpo: argparse.ArgumentParser) -> None:
    """Adds the ``train grpo`` flags that override the profile's recipe fields."""
    add = grpo.add_argument
    unset = argparse.SUPPRESS  # a flag not given leaves the profile's value
    add("--model", default=unset, help=f"local model name (see `conductor-env models`), model folder, LoRA adapter folder (merged into its base once) or hub id ({_default('model')})")
    add("--env", default=unset, help=f"gym id (Conductor-RG-v0, ...) or suite name ({_default('env')})")
    add("--pool", default=unset, help=f"worker pool preset or .toml path ({_default('pool')})")
    add("--split", default=unset, help=f"training split ({_default('split')})")
    add("--env-option", action="append", default=[], metavar="KEY=VALUE", help="ConductorEnv option, e.g. max_rounds=2 (repeatable; JSON values; added to the profile's)")
    add("--suite-option", action="append", default=[], metavar="KEY=VALUE", help="task-suite option, e.g. size=20 (repeatable; JSON values; added to the profile's)")
    add("--problems", type=int, default=unset, help="use at most this many problems of the split")
    add(
        "--balance-domains", action=argparse.BooleanOptionalAction, default=unset,
        help=f"give every step each domain equally (round-robin order, no shuffle; not in the paper; {_default('balance_domains')})",
    )
    add(
        "--domain-weight", action="append", default=[], metavar="DOMAIN=N",
        help="with --balance-domains, N questions of DOMAIN per round-robin round instead of 1 (repeatable; make --questions-per-step the round's size; not in the paper)",
    )
    add("--conductor-template", default=None, metavar="NAME|FILE", help="Conductor prompt template: a shipped name (default, chat) or a .toml file (docs/PROMPTS.md); no prefill in training")
    add("--worker-template", default=None, metavar="NAME|FILE", help="worker message template: a shipped name (default, prefill) or a .toml file")
    add("--prompt", default=unset, choices=["full", "compact", "roster"], help=f"the env's Conductor prompt, a compact one (question + workers) for small models after a format warm start, or roster (compact + each worker's id after its name) ({_default('prompt')})")
    add("--output-dir", default=unset, help=f"checkpoints, final model, rewards.json, episodes.jsonl and reward_curve.png ({_default('output_dir')})")
    add("--max-steps", type=int, default=unset, help=f"optimizer steps ({_default('max_steps')})")
    add("--questions-per-step", type=int, default=unset, help=f"distinct questions per step ({_default('questions_per_step')})")
    add("--num-generations", type=int, default=unset, help=f"samples per question, the GRPO group ({_default('num_generations')})")
    add("--per-device-batch-size", type=int, default=unset, help="completions per pass (default: <= 8, dividing the step's batch)")
    add("--learning-rate", type=float, default=unset, help=_default("learning_rate"))
    add("--lr-scheduler-type", default=unset, help=_default("lr_scheduler_type"))
    add("--warmup-ratio", type=float, default=unset, help=_default("warmup_ratio"))
    add("--epsilon", type=float, default=unset, help=f"clip range ({_default('epsilon')})")
    add("--beta", type=float, default=unset, help=f"KL coefficient ({_default('beta')})")
    add("--loss-type", default=unset, help=_default("loss_type"))
    add("--scale-rewards", default=unset, choices=["group", "batch", "none"], help=_default("scale_rewards"))
    add("--max-completion-length", type=int, default=unset, help=_default("max_completion_length"))
    add("--temperature", type=float, default=unset, help=_default("temperature"))
    add("--reward-draws", type=int, default=unset, help=f"episodes per completion with independent worker samples, rewarded with their mean; cheap only on simulated pools ({_default('reward_draws')})")
    add("--round-discount", type=float, default=unset, help=f"round credit discount, with max_rounds > 1 ({_default('round_discount')})")
    add("--lora-r", type=int, default=unset, help=f"LoRA rank, 0: full fine-tuning ({_default('lora_r')})")
    add("--lora-alpha", type=int, default=unset, help=_default("lora_alpha"))
    add("--lora-top-layers", type=int, default=unset, help=f"adapt only the top N layers, cheaper on a CPU ({_default('lora_top_layers')})")
    vllm = grpo.add_mutually_exclusive_group()
    vllm.add_argument("--vllm", dest="use_vllm", action="store_const", const=True, default=None, help="generate with vLLM (colocated; needs CUDA)")
    vllm.add_argument("--no-vllm", dest="use_vllm", action="store_const", const=False, help="generate with transformers")
    _add_warm_start_arguments(grpo)
    add("--heldout-questions", type=int, default=unset, help=f"validation questions scored before and after GRPO, 0: none ({_default('heldout_questions')})")
    add("--seed", type=int, default=unset, help=_default("seed"))
    add("--logging-steps", type=int, default=unset, help=_default("logging_steps"))
    add("--save-steps", type=int, default=unset, help=f"checkpoint every N steps, 0: final model only ({_default('save_steps')})")
    add("--trainer-option", action="append", default=[], metavar="KEY=VALUE", help="extra trl.GRPOConfig field (repeatable; JSON values)")
    grpo.add_argument(
        "--warm-start-only", action="store_true",
        help="run only the format warm start and save it to OUTPUT_DIR/warm_start (GRPO runs then start from it with --model DIR --format-warmup-steps 0)",
    )


def _add_warm_start_arguments(grpo: argparse.ArgumentParser) -> None:
    """Adds the ``train grpo`` flags of the format warm start's recipe fields."""
    from conductor_env.agents.workflow_shapes import PLAN_ORDERS, WARM_START_SHAPES

    add = grpo.add_argument
    unset = argparse.SUPPRESS
    add("--format-warmup-steps", type=int, default=unset, help=f"supervised format warm start steps before GRPO, not in the paper ({_default('format_warmup_steps')})")
    add("--format-warmup-lr", type=float, default=unset, help=_default("format_warmup_lr"))
    add(
        "--format-warmup-shape-word", action=argparse.BooleanOptionalAction, default=unset,
        help=f"warm start targets name their workflow's shape (Shape: single|judge|verify.) before the plan ({_default('format_warmup_shape_word')})",
    )
    add(
        "--format-warmup-shapes", default=unset, choices=sorted(WARM_START_SHAPES),
        help=f"warm start targets of several workflow shapes (a named set) instead of one call to each worker ({_default('format_warmup_shapes')})",
    )
    add(
        "--format-warmup-plan-order", default=unset, choices=list(PLAN_ORDERS),
        help=f"warm start plans name the workers in step order, or the answering worker first and then the steps it reads ({_default('format_warmup_plan_order')})",
    )
    add(
        "--format-warmup-all-layers", action=argparse.BooleanOptionalAction, default=unset,
        help=f"the warm start adapts every layer, whatever --lora-top-layers says; it then copies the answering worker's id (a slower step on a CPU; {_default('format_warmup_all_layers')})",
    )
    add(
        "--format-warmup-id-orders", type=int, default=unset,
        help=f"warm start episodes per question, each under its own random sub-pool order, so one batch shows a plan under several ids ({_default('format_warmup_id_orders')})",
    )


def _options(pairs: list[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` flags with the eval command's parser (JSON values when they parse)."""
    from conductor_env.evaluation.setup import EvalConfigError, parse_option_values

    try:
        return parse_option_values(pairs, flag)
    except EvalConfigError as error:
        raise UsageError(str(error)) from error


def _cuda() -> bool:
    """Whether torch sees a CUDA GPU."""
    import torch

    return torch.cuda.is_available()


def _base_settings(args: argparse.Namespace, cuda: bool) -> Any:
    """Returns the profile (or ``--recipe``) whose settings the flags override.

    Raises:
        UsageError: For ``--recipe`` with ``--profile``, or an unknown profile.
    """
    from conductor_env.agents.training.profiles import RECIPES, choose_profile

    recipe = getattr(args, "recipe", None)
    if recipe is not None:
        if getattr(args, "profile", None) is not None:
            raise UsageError(f"--recipe {recipe} sets every default itself: drop --profile")
        return RECIPES[recipe]
    try:
        return choose_profile(getattr(args, "profile", None), cuda=cuda)[0]
    except ValueError as error:
        raise UsageError(str(error)) from error


def _env_options(args: argparse.Namespace) -> dict[str, Any]:
    """Returns the ``--env-option`` values with ``--conductor-template``/``--worker-template``, checked.

    Raises:
        UsageError: For a malformed, unknown or bad option (a template that does not load).
    """
    from conductor_env.evaluation.setup import EvalConfigError, env_options_of

    env_options = _options(args.env_option, "--env-option")
    for name in ("conductor_template", "worker_template"):
        if getattr(args, name, None):
            env_options[name] = getattr(args, name)
    try:
        env_options_of(env_options)
    except EvalConfigError as error:
        raise UsageError(str(error)) from error
    return env_options


def recipe_from_args(args: argparse.Namespace, *, cuda: bool | None = None) -> Any:
    """Returns the :class:`~conductor_env.agents.training.recipe.GRPORecipe` that parsed arguments describe.

    ``--recipe paper`` (:data:`~conductor_env.agents.training.profiles.PAPER_RECIPE`), else the profile
    (``--profile``, else :func:`~conductor_env.agents.training.profiles.choose_profile` by ``cuda``),
    gives the defaults; every flag given overrides its value. ``--recipe paper`` is checked
    against this machine at once (:func:`~conductor_env.agents.training.profiles.check_paper_requirements`).

    Args:
        args: The parsed ``train grpo`` arguments.
        cuda: Whether a CUDA GPU is available (``None``: ask torch).

    Raises:
        UsageError: For malformed ``KEY=VALUE`` options, an unknown env option or profile, or a
            ``--recipe paper`` this machine cannot run (no CUDA GPU, no vLLM, no model).
    """
    from conductor_env.agents.training.recipe import DEFAULT_ENV, ENV_SETTINGS, GRPORecipe, recipe_from_settings
    from conductor_env.agents.training.preflight import RecipeError, check_env
    from conductor_env.agents.training.profiles import RequirementError, check_paper_requirements, recipe_settings
    from conductor_env.envs.setup import SetupError

    env_options = _env_options(args)
    cuda = _cuda() if cuda is None else cuda
    base = _base_settings(args, cuda)
    known = {f.name for f in fields(GRPORecipe)} | set(ENV_SETTINGS)
    given = {name: getattr(args, name) for name in _RECIPE_FLAGS if name in known and hasattr(args, name)}
    if args.use_vllm is not None:
        given["use_vllm"] = args.use_vllm
    given["env_options"] = env_options
    given["suite_options"] = _options(args.suite_option, "--suite-option")
    given["trainer_options"] = _options(args.trainer_option, "--trainer-option")
    if args.domain_weight:
        given["domain_weights"] = _options(args.domain_weight, "--domain-weight")
    settings = recipe_settings(base, given)
    try:
        if getattr(args, "recipe", None) == "paper":
            check_paper_requirements(str(settings["model"]), cuda=cuda, use_vllm=settings.get("use_vllm"))
        check_env(settings.get("env", DEFAULT_ENV["env"]))
        return recipe_from_settings(settings)
    except (RecipeError, RequirementError, SetupError, ValueError) as error:
        raise UsageError(str(error)) from error


def eval_command(recipe: Any, final_dir: str) -> str:
    """Returns the ``conductor-env eval`` line that scores the saved Conductor on held-out questions."""
    import json
    import shlex

    setup = recipe.setup
    parts = ["conductor-env", "eval", "--env", setup.env_id, "--pool", str(setup.pool), "--split", recipe.heldout_split]
    for flag, options in (("--env-option", setup.options.changed()), ("--suite-option", setup.suite_options)):
        for key, value in options.items():
            parts += [flag, f"{key}={json.dumps(value, separators=(',', ':'))}"]
    parts += ["--policy", f"llm:{final_dir}", "--n", "24", "--out", str(Path(recipe.output_dir) / "eval")]
    return " ".join(shlex.quote(p) for p in parts)


def _env_factory(args: argparse.Namespace) -> Any:
    """The reward's env factory: local, or Ray actors with ``--ray`` (``None``: the default)."""
    address = getattr(args, "ray", None)
    if address is None:
        return None
    workers = args.ray_workers
    factory = ray_backend(address, workers).RayEnvFactory
    return lambda setup: factory(setup, address=address, workers=workers)


def _run_warm_start_only(recipe: Any) -> int:
    """``train grpo --warm-start-only``: the recipe's format warm start, saved as a Conductor folder."""
    from conductor_env.agents.training.trainer import save_warm_start

    try:
        out = save_warm_start(recipe, progress=True, say=lambda text: print(text, flush=True))
    except ValueError as error:
        raise UsageError(str(error).splitlines()[0]) from error
    print(f"GRPO from it: conductor-env train grpo --model {out} --format-warmup-steps 0 ...")
    return 0


def run_grpo_command(args: argparse.Namespace) -> int:
    """Runs ``conductor-env train grpo``: says which profile and why, checks the recipe before any
    model loads, trains with a progress bar, and prints the held-out figures and the eval line."""
    from conductor_env.agents.training.trainer import train_grpo
    from conductor_env.agents.training.preflight import RecipeError, check_recipe
    from conductor_env.agents.training.profiles import choose_profile

    cuda = _cuda()
    if getattr(args, "recipe", None) is None:
        try:
            _, line = choose_profile(args.profile, cuda=cuda)
        except ValueError as error:
            raise UsageError(str(error)) from error
        print(line, flush=True)
    recipe = recipe_from_args(args, cuda=cuda)
    if getattr(args, "recipe", None) is not None:
        from conductor_env.agents.training.profiles import RECIPES

        print(f"recipe {args.recipe} ({RECIPES[args.recipe].summary}): chosen with --recipe", flush=True)
    try:
        check_recipe(recipe)
    except RecipeError as error:
        raise UsageError(str(error)) from error
    if getattr(args, "warm_start_only", False):
        return _run_warm_start_only(recipe)
    print(
        f"training {recipe.model} on {recipe.setup.env_id} (pool {recipe.setup.pool}): {recipe.max_steps} steps of "
        f"{recipe.questions_per_step} questions x {recipe.num_generations} samples -> {recipe.output_dir}",
        flush=True,
    )
    try:
        run = train_grpo(recipe, progress=True, say=lambda text: print(text, flush=True), env_factory=_env_factory(args))
    except (ValueError, KeyError) as error:
        raise UsageError(str(error).splitlines()[0]) from error
    if run.rewards:
        print(f"mean env reward: first step {run.rewards[0]:.3f}, last step {run.rewards[-1]:.3f} over {len(run.rewards)} logged steps")
    if run.heldout_before is not None and run.heldout_after is not None:
        print(f"held-out reward: {run.heldout_before.mean_reward:.3f} before GRPO -> {run.heldout_after.mean_reward:.3f} after")
    if run.curve_path:
        print(f"reward curve: {run.curve_path}")
    print(f"final model: {run.final_dir}\nrewards and episodes: {recipe.output_dir}/rewards.json")
    print(f"evaluate it: {eval_command(recipe, run.final_dir)}")
    return 0
