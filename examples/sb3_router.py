"""Train a PPO router with Stable-Baselines3 through the Conductor env's routing wrapper.

The wrapper turns the env into Discrete(template x worker) actions with a numeric observation
(a hashed bag of words of the question plus its domain); PPO learns which worker and which
workflow template suit which question::

    python examples/sb3_router.py --pool simulated --timesteps 4096
"""

from __future__ import annotations

import argparse
import statistics

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env

import conductor_env  # noqa: F401  (registers the Conductor-*-v0 ids)
from conductor_env.agents.training.sb3 import RoutingEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Conductor-RG-v0")
    parser.add_argument("--pool", default="simulated")
    parser.add_argument("--timesteps", type=int, default=4096)
    parser.add_argument("--n-envs", type=int, default=8)
    args = parser.parse_args()

    def make() -> RoutingEnv:
        return RoutingEnv(gym.make(args.env, pool=args.pool, split="train"))

    check_env(make())  # SB3's own checks
    model = PPO("MlpPolicy", make_vec_env(make, n_envs=args.n_envs, seed=0), n_steps=64, batch_size=128, learning_rate=3e-3, device="cpu", verbose=1)
    model.learn(total_timesteps=args.timesteps)

    evaluation = RoutingEnv(gym.make(args.env, pool=args.pool, split="validation"))
    rewards, chosen = [], []
    for i in range(50):
        observation, info = evaluation.reset(seed=i, options={"problem_index": i})
        action = int(model.predict(observation, deterministic=True)[0])
        rewards.append(evaluation.step(action)[1])
        chosen.append((info["domain"], *evaluation.describe_action(action)))
    print(f"held-out mean reward: {statistics.mean(rewards):.3f}")
    for domain in sorted({c[0] for c in chosen}):
        picks = [f"{t}@{w}" for d, t, w in chosen if d == domain]
        print(f"  {domain}: most chosen {max(set(picks), key=picks.count)}")


if __name__ == "__main__":
    main()
