"""GRPO's generation without vLLM: TRL's regular path (one padded ``generate()``) against continuous batching.

Runs, in one process and one run, on the local Gemma 3 270M and the ``gpu`` recipe's prompts
(the compact prompt of Conductor-RG-v0 with the experts pool, ``--questions`` questions, each
repeated ``--samples`` times as a GRPO group is):
  (a) ``generate``: the prompts left-padded into one batch, sampled at temperature 1 to
      ``--tokens`` new tokens, as TRL's GRPOTrainer generates without vLLM;
  (b) ``generate_batch``: the same prompts through transformers' continuous batching, as
      ``use_transformers_continuous_batching`` makes TRL generate, with the trainer's fix for
      Accelerate's mixed precision (``conductor_env.agents.training.continuous_batching``).
Both stop a sequence at the end-of-turn token, so each reports the tokens it really generated
per second, and the ratio (b)/(a). The two alternate ``--repeats`` times after a warm-up and the
best of each is kept (the machine may be shared). The model is held as the ``gpu`` recipe's
trainer holds it on this machine (float32 on a CPU and, since that recipe turns mixed precision
off, on a GPU too); ``--precision bf16`` holds it in bfloat16 under Accelerate's bf16 mixed
precision, as a recipe with ``bf16`` trains.

Usage: python benchmarks/bench_grpo_generation.py [--questions 6] [--samples 8] [--tokens 48]
       [--repeats 2] [--precision bf16|fp32] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from conductor_env.agents.prompts import prompt_builder_of
from conductor_env.agents.training.continuous_batching import generate_batch_without_output_conversion
from conductor_env.agents.training.data import build_dataset
from conductor_env.agents.training.model import load_tokenizer, resolve_model_path
from conductor_env.agents.training.recipes import load_recipe
from conductor_env.agents.training.reward import EnvFactory
from conductor_env.agents.training.trl_config import grpo_options


def prompt_ids(tokenizer: Any, questions: int, samples: int) -> list[list[int]]:
    """The gpu recipe's first ``questions`` training prompts, each ``samples`` times, as token ids."""
    recipe = load_recipe("gpu").build()
    rows = build_dataset(EnvFactory(recipe.env.setup()), limit=questions, prompt_builder=prompt_builder_of(recipe.model.prompt), balance_domains=True)
    ids = [tokenizer.apply_chat_template(row, add_generation_prompt=True, tokenize=True, return_dict=False) for row in rows["prompt"]]
    return [list(prompt) for prompt in ids for _ in range(samples)]


def load_model(cuda: bool, bf16: bool) -> Any:
    """The model as the trainer holds it: bf16 under Accelerate's bf16 mixed precision, or float32."""
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(resolve_model_path("gemma3-270m"), dtype=torch.bfloat16 if bf16 else torch.float32)
    model = Accelerator(mixed_precision="bf16" if bf16 else "no", cpu=not cuda).prepare(model)
    generate_batch_without_output_conversion(model)
    return model.eval()


def padded_generate(model: Any, tokenizer: Any, prompts: list[list[int]], config: Any) -> int:
    """TRL's regular path: left-pad, one ``generate()``; returns the tokens generated before each end."""
    width = max(map(len, prompts))
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in prompts], device=model.device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
    completions = out[:, width:]
    ended = set(config.eos_token_id) if isinstance(config.eos_token_id, list) else {config.eos_token_id}
    total = 0
    for row in completions.tolist():
        stop = next((i + 1 for i, token in enumerate(row) if token in ended), len(row))
        total += stop
    return total


def continuous_batching(model: Any, prompts: list[list[int]], config: Any) -> int:
    """Continuous batching; returns the tokens generated."""
    with torch.no_grad():
        outputs = model.generate_batch(prompts, generation_config=config, progress_bar=False)
    failed = [o.error for o in outputs.values() if o.error]
    if failed:
        raise RuntimeError(f"continuous batching failed: {failed[0]}")
    return sum(len(o.generated_tokens) for o in outputs.values())


def timed(run: Any) -> tuple[float, int]:
    started = time.perf_counter()
    tokens = run()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - started, tokens


def main() -> None:
    from transformers import GenerationConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--precision", choices=["bf16", "fp32"], default=None, help="default: the gpu recipe's on this machine")
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    precision = args.precision or ("bf16" if grpo_options(load_recipe("gpu").build(), cuda=cuda, vllm=False)["bf16"] else "fp32")
    tokenizer = load_tokenizer(resolve_model_path("gemma3-270m"))
    model = load_model(cuda, bf16=precision == "bf16")
    prompts = prompt_ids(tokenizer, args.questions, args.samples)
    config = GenerationConfig(
        max_new_tokens=args.tokens, do_sample=True, temperature=1.0, top_p=1.0, top_k=0, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, disable_compile=True
    )
    runs = {"generate": lambda: padded_generate(model, tokenizer, prompts, config), "generate_batch": lambda: continuous_batching(model, prompts, config)}
    for run in runs.values():
        run()  # warm-up
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeats):
        for name, run in runs.items():
            seconds, tokens = timed(run)
            rate = tokens / seconds
            if name not in best or rate > best[name]["tokens_per_s"]:
                best[name] = {"seconds": round(seconds, 3), "tokens": tokens, "tokens_per_s": round(rate, 1)}
    result = {
        "device": torch.cuda.get_device_name(0) if cuda else f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
        "precision": precision,
        "prompts": len(prompts),
        "max_new_tokens": args.tokens,
        "mean_prompt_tokens": round(sum(map(len, prompts)) / len(prompts), 1),
        **best,
        "ratio_generate_batch_over_generate": round(best["generate_batch"]["tokens_per_s"] / best["generate"]["tokens_per_s"], 2),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
