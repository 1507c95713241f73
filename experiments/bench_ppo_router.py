"""PPO learning run: does Stable-Baselines3 PPO learn to route through the SB3 wrapper?

Same setup as bench_grpo_learning.py: Conductor-RG-v0 with math, language and reasoning
datasets and one simulated expert per domain (the packaged ``experts`` pool). The policy sees
the hashed bag of words of the question plus its domain and picks (template x worker); reward
1 needs the right expert. Reports the held-out (validation) mean reward of a uniformly random
action, of the ``random`` workflow baseline, of PPO before and after training, and of the best
fixed routing in hindsight (the oracle). Writes OUT.json and OUT.png (``--out``, default under the system's temporary
folder; the recorded figures are benchmarks/results/ppo_router.json)::

    python experiments/bench_ppo_router.py --out /tmp/ppo_router
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.baselines import RandomWorkflow
from conductor_env.agents.training.sb3 import RoutingEnv
from conductor_env.envs import EnvSetup

POOL = Path(str(importlib.resources.files("conductor_env.pools") / "experts.toml"))  # one simulated expert per domain
DATASETS = ["basic_arithmetic", "chain_sum", "letter_counting", "spell_backward", "syllogism", "family_relationships"]


def make_env(split: str, size: int) -> RoutingEnv:
    return RoutingEnv(EnvSetup.from_kwargs(suite="rg", pool=str(POOL), split=split, suite_options={"datasets": DATASETS, "size": size, "allow_gameable": True}).make())


def held_out_reward(env: RoutingEnv, choose, episodes: int) -> float:
    """Mean reward of ``choose(observation, index) -> action`` over the first ``episodes`` problems."""
    rewards = []
    for i in range(episodes):
        observation, _ = env.reset(seed=i, options={"problem_index": i})
        rewards.append(env.step(choose(observation, i))[1])
    return statistics.mean(rewards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=6144)
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "conductor-env-experiments" / "ppo_router"), help="writes OUT.json and OUT.png")
    args = parser.parse_args()

    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    class RolloutRewards(BaseCallback):
        """Records the mean episode reward of each PPO rollout."""

        def __init__(self) -> None:
            super().__init__()
            self.means: list[float] = []
            self._current: list[float] = []

        def _on_step(self) -> bool:
            self._current.extend(float(r) for r, d in zip(self.locals["rewards"], self.locals["dones"]) if d)
            return True

        def _on_rollout_end(self) -> None:
            if self._current:
                self.means.append(statistics.mean(self._current))
            self._current = []

    evaluation = make_env("validation", 10)  # 60 held-out problems
    episodes = len(evaluation.conductor.problems)
    rng = np.random.default_rng(args.seed)
    uniform = held_out_reward(evaluation, lambda o, i: int(rng.integers(evaluation.action_space.n)), episodes)
    random_policy = RandomWorkflow(seed=args.seed)

    def random_workflow_reward() -> float:
        rewards = []
        for i in range(episodes):
            observation, _ = evaluation.conductor.reset(seed=i, options={"problem_index": i})
            rewards.append(evaluation.conductor.step(random_policy.act([observation])[0])[1])
        return statistics.mean(rewards)

    random_workflow = random_workflow_reward()
    # Oracle: for each domain, the best single action in hindsight on the held-out set.
    domains = [evaluation.conductor.problems[i].domain for i in range(episodes)]
    oracle_actions = {}
    for domain in sorted(set(domains)):
        indices = [i for i, d in enumerate(domains) if d == domain]
        scores = []
        for action in range(evaluation.action_space.n):
            scores.append(statistics.mean(held_out_reward_one(evaluation, i, action) for i in indices))
        oracle_actions[domain] = int(np.argmax(scores))
    oracle = held_out_reward(evaluation, lambda o, i: oracle_actions[domains[i]], episodes)

    train = make_vec_env(lambda: make_env("train", 50), n_envs=args.n_envs, seed=args.seed)
    model = PPO("MlpPolicy", train, n_steps=64, batch_size=128, n_epochs=4, learning_rate=3e-3, ent_coef=0.01, seed=args.seed, device="cpu", verbose=0)
    greedy = lambda o, i: int(model.predict(o, deterministic=True)[0])  # noqa: E731
    before = held_out_reward(evaluation, greedy, episodes)
    callback = RolloutRewards()
    started = time.perf_counter()
    model.learn(total_timesteps=args.timesteps, callback=callback)
    seconds = time.perf_counter() - started
    after = held_out_reward(evaluation, greedy, episodes)

    figures = {
        "settings": vars(args),
        "held_out_episodes": episodes,
        "held_out_reward": {
            "uniform_random_action": round(uniform, 4),
            "random_workflow_baseline": round(random_workflow, 4),
            "ppo_before_training": round(before, 4),
            "ppo_after_training": round(after, 4),
            "oracle_routing": round(oracle, 4),
        },
        "train_reward_per_rollout": [round(m, 4) for m in callback.means],
        "train_seconds": round(seconds, 1),
        "env_steps_per_second": round(args.timesteps / seconds, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    plot(callback.means, figures["held_out_reward"], args.n_envs * 64, out.with_suffix(".png"))
    print(json.dumps({k: v for k, v in figures.items() if k != "train_reward_per_rollout"}, indent=1))


def held_out_reward_one(env: RoutingEnv, index: int, action: int) -> float:
    env.reset(seed=index, options={"problem_index": index})
    return env.step(action)[1]


def plot(means: list[float], held_out: dict, per_rollout: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [(i + 1) * per_rollout for i in range(len(means))]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, means, color="#136", lw=2, marker="o", ms=3, label="PPO rollout mean reward (train)")
    ax.axhline(held_out["random_workflow_baseline"], color="#c44", ls="--", label=f"random baseline (held-out) {held_out['random_workflow_baseline']:.2f}")
    ax.axhline(held_out["ppo_after_training"], color="#2a2", ls="-.", label=f"PPO after training (held-out) {held_out['ppo_after_training']:.2f}")
    ax.axhline(held_out["oracle_routing"], color="#888", ls=":", label=f"oracle routing (held-out) {held_out['oracle_routing']:.2f}")
    ax.set_xlabel("env steps (episodes)")
    ax.set_ylabel("env reward (paper scheme)")
    ax.set_ylim(0, 1.05)
    ax.set_title("PPO router through the SB3 wrapper, one expert per domain")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
