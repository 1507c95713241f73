"""Next-word probabilities of a warm-started Conductor at the answer-first plan's branch points.

For each of the first ``--n`` training prompts of a recipe, the model's probability of the
plan's first worker name after ``Plan:``, of ``.`` against `` reads`` after ``Plan:
checker=<id>``, and of each attempt worker after ``reads``, averaged per domain. The warm
start's targets are a uniform mix of ``WARM_START_SHAPES["orchestrate"]``, so these show how far
the sampled distribution is from that mix (BENCHMARKS.md, run J).

    python benchmarks/probe_warm_start.py W/warm_start [--recipe orchestrate-judge] [--n 60]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from typing import Any, Sequence


def probe(model_path: str, recipe_name: str = "orchestrate-judge", n: int = 60) -> dict[str, dict[str, float]]:
    """Returns, per domain, the mean next-word probability at each branch point.

    Args:
        model_path: A saved Conductor (e.g. ``train grpo --warm-start-only``'s ``warm_start``).
        recipe_name: The recipe whose env and prompt the prompts come from.
        n: Training prompts to read (in split order).

    Returns:
        ``{domain: {"<prefix> -> <word>": probability}}``.
    """
    import torch
    from transformers import AutoModelForCausalLM

    from conductor_env.agents.grpo.model import load_tokenizer
    from conductor_env.agents.grpo.prompts import prompt_builder_of
    from conductor_env.agents.grpo.recipe import recipe_from_settings
    from conductor_env.agents.grpo.reward import EnvFactory
    from conductor_env.agents.profiles import RECIPES

    tokenizer = load_tokenizer(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    recipe = recipe_from_settings(dict(RECIPES[recipe_name].settings))
    factory = EnvFactory(recipe.setup)
    env, build = factory.local(), prompt_builder_of(recipe.prompt)
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    try:
        for i, problem in enumerate(env.problems[:n]):
            observation, info = env.reset(seed=i, options={"problem_id": problem.id})
            shown = {name: worker_id for worker_id, name in info["worker_map"].items() if name != "conductor"}
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": build(observation)}], tokenize=False, add_generation_prompt=True)
            lead = f"Domain: {info['domain']}. Plan:"
            branches: dict[str, Sequence[str]] = {lead: [" flash", " solver", " checker"]}
            if "checker" in shown:
                branches[f"{lead} checker={shown['checker']}"] = [".", " reads"]
                branches[f"{lead} checker={shown['checker']} reads"] = [" flash", " solver"]
            for prefix, words in branches.items():
                ids = tokenizer(prompt + prefix, add_special_tokens=False, return_tensors="pt")["input_ids"]
                with torch.no_grad():
                    probs = model(ids).logits[0, -1].softmax(-1)
                for word in words:
                    first_token = tokenizer(word, add_special_tokens=False)["input_ids"][0]
                    branch = prefix.replace(lead, "Plan:").replace(f"checker={shown.get('checker')}", "checker=N")
                    key = f"{branch} -> {word.strip()}"
                    sums[info["domain"]][key].append(probs[first_token].item())
    finally:
        factory.close()
    return {domain: {key: round(sum(v) / len(v), 3) for key, v in keys.items()} for domain, keys in sums.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a saved Conductor folder")
    parser.add_argument("--recipe", default="orchestrate-judge")
    parser.add_argument("--n", type=int, default=60, help="training prompts to read")
    args = parser.parse_args(argv)
    report: Any = probe(args.model, args.recipe, args.n)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
