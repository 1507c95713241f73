"""What a framework sends the Conductor in a later round: the whole prompt again, or the chat view's update.

Frameworks that keep the conversation (TRL, verifiers, OpenEnv, SkyRL, GEM) append each round's
observation to it. Resending the whole prompt repeats the instructions, examples, pool and
question every round; :func:`conductor_env.chat.chat_turn` sends only the observation's
``update`` (the previous answer and the instruction to revise or keep it). This plays the first
round of ``--episodes`` two-round episodes with one worker and reports the mean UTF-8 bytes of
round 2's prompt and of its update, and their ratio.

Usage: python benchmarks/bench_chat_view.py [--env-id Conductor-RG-v0] [--pool orchestra-judge] [--episodes 40] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import gymnasium as gym

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.chat import chat_turn

SOLVE = {"model_id": [0], "subtasks": ["Solve the task and give the final answer."], "access_list": [[]]}


def measure(env_id: str, pool: str, episodes: int) -> dict[str, float]:
    """Mean round-2 prompt and update bytes over ``episodes`` episodes."""
    full, update = [], []
    with gym.make(env_id, pool=pool, max_rounds=2) as env:
        for seed in range(episodes):
            env.reset(seed=seed)
            observation, _, terminated, _, _ = env.step(SOLVE)
            if terminated:
                continue
            full.append(len(observation["prompt"].encode()))
            update.append(sum(len(m["content"].encode()) for m in chat_turn(observation)))
    return {"episodes": len(full), "round2_prompt_bytes": statistics.mean(full), "round2_update_bytes": statistics.mean(update), "ratio": statistics.mean(full) / statistics.mean(update)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", default="Conductor-RG-v0")
    parser.add_argument("--pool", default="orchestra-judge")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    figures = {"env_id": args.env_id, "pool": args.pool, **measure(args.env_id, args.pool, args.episodes)}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
