"""``conductor-env train grpo``: GRPO training of a Conductor LLM.

A recipe (``--recipe NAME|FILE``, a TOML file; docs/TRAINING.md) gives every setting; with none,
``gpu`` is picked when CUDA is present and ``cpu`` otherwise. Every recipe setting has a flag
generated from its field (:mod:`conductor_env.agents.training.flags`) that overrides it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path
from typing import Any

from conductor_env.cli.common import UsageError, ray_backend
from conductor_env.cli.routers import register_train_router
from conductor_env.cli.train_traits import register_train_traits_ppo

_DESCRIPTION = (
    "Train a Conductor LLM with TRL's GRPOTrainer against a Conductor env. A recipe sets every default: cpu "
    "(picked without a CUDA GPU) trains the local Gemma 3 270M to route with one simulated expert per domain in "
    "minutes on 2 cores (LoRA, the compact prompt after a format warm start); gpu (picked when CUDA is present) is the "
    "cpu recipe made bigger (60 steps of 6 questions x 16 samples, vLLM when present); "
    "paper-hparams has the paper's hyperparameters (200 steps of 4 questions x 64 samples, lr 1e-6 cosine, 1024 "
    "completion tokens, full fine-tuning, the full prompt, no warm start) but NOT the paper's model, data or workers; "
    "paper is the paper's whole setup (needs a CUDA GPU, vLLM, the model and the pool's API keys); "
    "orchestrate and orchestrate-judge train on pools where the best workflow differs per domain; generated draws a new pool per episode. A recipe is a "
    "TOML file (conductor_env/recipes/, docs/TRAINING.md); --recipe also takes your own. Any flag overrides the "
    "recipe's value; the help shows the gpu and cpu values."
)


@functools.lru_cache(maxsize=None)
def _recipe_settings(name: str) -> Any:
    from conductor_env.agents.training.recipes import load_recipe

    return load_recipe(name).settings


def _defaults_text(flag: Any) -> str:
    """The help text's values of a flag under the gpu and cpu recipes (``none``: a section the recipe has not)."""
    from conductor_env.agents.training.recipe import OPTIONAL_SECTIONS

    field = flag.field
    default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    values = []
    for name in ("gpu", "cpu"):
        settings = _recipe_settings(name)
        section = settings.get(flag.section, None if flag.section in OPTIONAL_SECTIONS else {}) if flag.section else settings
        values.append(section.get(flag.name, default) if isinstance(section, dict) else None)
    gpu, cpu = (_shown(value) for value in values)
    return f"default: {gpu}" if gpu == cpu else f"gpu: {gpu}, cpu: {cpu}"


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    return "none" if value is None else str(value)


def register(subparsers: Any) -> None:
    """Adds ``train`` (with its ``grpo``, ``export-adapter``, ``router`` and ``traits-ppo`` subcommands) to the ``conductor-env`` parser."""
    from conductor_env.agents.training.flags import add_recipe_flags
    from conductor_env.agents.training.recipes import recipe_names

    train = subparsers.add_parser("train", help="train a Conductor policy", description="Train a Conductor policy.")
    kinds = train.add_subparsers(dest="trainer", metavar="TRAINER", required=True)
    grpo = kinds.add_parser(
        "grpo",
        help="GRPO with TRL against a Conductor env (the cpu recipe without a GPU; --recipe paper for the paper's setup)",
        description=_DESCRIPTION,
    )
    grpo.add_argument(
        "--recipe",
        default=None,
        metavar="NAME|FILE",
        help=f"a shipped recipe ({', '.join(recipe_names())}) or a recipe .toml file (default: gpu when a CUDA GPU is present, else cpu)",
    )
    add_recipe_flags(grpo, _defaults_text)
    grpo.add_argument(
        "--warm-start-only",
        action="store_true",
        help="run only the format warm start and save it to OUTPUT_DIR/warm_start (GRPO runs then start from it with --model DIR --format-warmup-steps 0)",
    )
    grpo.add_argument("--ray", default=None, metavar="ADDRESS", help="play the reward's episodes in Ray actors: auto, HOST:PORT or local (needs the ray extra); the model stays here")
    grpo.add_argument("--ray-workers", type=int, default=2, metavar="N", help="episode actors with --ray (default 2)")
    grpo.set_defaults(handler=run_grpo_command)
    _register_export_adapter(kinds)
    register_train_router(kinds)
    register_train_traits_ppo(kinds)


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
        "--truncate",
        action="store_true",
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


def _cuda() -> bool:
    """Whether torch sees a CUDA GPU."""
    from conductor_env.agents.training.trl_config import cuda_available

    return cuda_available()


def recipe_file_from_args(args: argparse.Namespace, *, cuda: bool) -> tuple[Any, str]:
    """Returns the recipe file ``--recipe`` names (else ``gpu`` or ``cpu`` by ``cuda``) and why it was picked.

    Raises:
        UsageError: For an unknown recipe or a bad recipe file.
    """
    from conductor_env.agents.training.recipe import RecipeError
    from conductor_env.agents.training.recipes import default_recipe_name, load_recipe

    name, why = (args.recipe, "chosen with --recipe") if args.recipe else default_recipe_name(cuda=cuda)
    try:
        return load_recipe(name), why
    except RecipeError as error:
        raise UsageError(str(error).splitlines()[0]) from error


def build_recipe(recipe_file: Any, args: argparse.Namespace) -> Any:
    """Returns the :class:`~conductor_env.agents.training.recipe.GRPORecipe` of ``recipe_file``
    with every flag given on top.

    Raises:
        UsageError: For a malformed ``KEY=VALUE`` flag or a setting the recipe's validation refuses.
    """
    from conductor_env.agents.training.flags import changes_from_args
    from conductor_env.envs.setup import SetupError
    from conductor_env.options import EnvOptionError

    try:
        return recipe_file.build(changes_from_args(args, recipe_file.settings))
    except (EnvOptionError, SetupError, ValueError) as error:
        raise UsageError(str(error).splitlines()[0]) from error


def recipe_from_args(args: argparse.Namespace, *, cuda: bool | None = None) -> tuple[Any, Any]:
    """Returns the recipe file and the recipe that parsed arguments describe (see
    :func:`recipe_file_from_args` and :func:`build_recipe`)."""
    recipe_file, _ = recipe_file_from_args(args, cuda=_cuda() if cuda is None else cuda)
    return recipe_file, build_recipe(recipe_file, args)


def eval_command(recipe: Any, final_dir: str) -> str:
    """Returns the ``conductor-env eval`` line that scores the saved Conductor on held-out questions."""
    import json
    import shlex

    setup = recipe.setup
    split = recipe.heldout.split if recipe.heldout is not None else "validation"
    parts = ["conductor-env", "eval", "--env", setup.env_id, "--pool", str(setup.pool), "--split", split]
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
    """Runs ``conductor-env train grpo``: says which recipe and why, checks it against this machine
    before any model loads, trains with a progress bar, and prints the held-out figures and the eval line."""
    from conductor_env.agents.training.preflight import check_recipe
    from conductor_env.agents.training.recipe import RecipeError
    from conductor_env.agents.training.trainer import train_grpo

    cuda = _cuda()
    recipe_file, why = recipe_file_from_args(args, cuda=cuda)
    print(f"recipe {recipe_file.name} ({recipe_file.summary}): {why}", flush=True)
    recipe = build_recipe(recipe_file, args)
    try:
        check_recipe(recipe, cuda=cuda, requires=recipe_file.requires)
    except RecipeError as error:
        raise UsageError(str(error)) from error
    if args.warm_start_only:
        return _run_warm_start_only(recipe)
    grpo = recipe.grpo
    print(
        f"training {recipe.model.name} on {recipe.env.id} (pool {recipe.env.pool}): {grpo.max_steps} steps of "
        f"{grpo.questions_per_step} questions x {grpo.num_generations} samples -> {recipe.output_dir}",
        flush=True,
    )
    try:
        run = train_grpo(recipe, progress=True, say=lambda text: print(text, flush=True), env_factory=_env_factory(args))
    except (ValueError, KeyError) as error:
        raise UsageError(str(error).splitlines()[0]) from error
    _print_run(run, recipe)
    return 0


def _print_run(run: Any, recipe: Any) -> None:
    if run.rewards:
        print(f"mean env reward: first step {run.rewards[0]:.3f}, last step {run.rewards[-1]:.3f} over {len(run.rewards)} logged steps")
    if run.heldout_before is not None and run.heldout_after is not None:
        print(f"held-out reward: {run.heldout_before.mean_reward:.3f} before GRPO -> {run.heldout_after.mean_reward:.3f} after")
    if run.curve_path:
        print(f"reward curve: {run.curve_path}")
    print(f"final model: {run.final_dir}\nrewards and episodes: {recipe.output_dir}/rewards.json")
    print(f"evaluate it: {eval_command(recipe, run.final_dir)}")
