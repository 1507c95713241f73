"""A numeric RL learner on the structured view: Stable-Baselines3's PPO choosing a workflow plan.

:class:`TraitPlanEnv` wraps a Conductor env made with ``worker_traits=True`` and one round:

- the observation is a ``float32`` vector, per pool slot the shown worker's stated level in the
  question's domain (one-hot over weak, fair, strong), whether it judges that domain, and its price
  tier (one-hot); an empty slot is all zeros. It is the structured view (``worker_traits`` and
  ``question_domain``) read at the question's column, nothing else: no text, no hidden number;
- the action is ``Discrete(len(plans))``: every binary-access plan over the pool's slots with up to
  ``max_steps`` steps that wastes no call (:func:`conductor_env.agents.trait_plans.plan_table`); a plan that names an
  empty slot is sent to the env like any other workflow, which refuses it (reward 0);
- one episode is one round: the workflow runs, the env's own reward comes back, the episode ends.

:func:`train_trait_ppo` trains PPO on the generated family's training part; checkpoints are scored
by exact expected reward on held-out pools (:func:`heldout_value`), which reads the hidden numbers
for scoring only. :class:`~conductor_env.agents.traits_ppo.TraitPPOPolicy` plays a saved model as
``traits-ppo:<folder>``.
See docs/ROUTERS.md ("A numeric learner on the structured view").
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from conductor_env.agents.trait_plans import plan_table, plan_workflow, structured_view
from conductor_env.agents.traits_ppo import CONFIG_FILE, MODEL_FILE, SLOT_FEATURES, slot_features
from conductor_env.env import ConductorEnv
from conductor_env.envs.training import check_opt_ins
from conductor_env.traits import ABSENT, trait_row
from conductor_env.workers.closed_form import Plan, expected_reward, worker_rows
from conductor_env.workers.pool import load_pool


class TraitPlanEnv(gym.Wrapper):
    """Plan actions and structured-view features over a one-round Conductor env.

    Args:
        env: A Conductor env made with ``worker_traits=True`` and ``max_rounds=1``.

    Raises:
        ValueError: Without the structured view, with more than one round, or with self-calls.
        PublicOnlyError: When the env's problems need an opt-in its suite was not given (this wrapper
            exists to train; :func:`conductor_env.envs.training.check_opt_ins`).
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        conductor = env.unwrapped
        if not isinstance(conductor, ConductorEnv):
            raise ValueError(f"TraitPlanEnv wraps a ConductorEnv, got {type(conductor).__name__}")
        options = conductor.options
        if not options.worker_traits:
            raise ValueError("TraitPlanEnv reads the structured view: make the env with worker_traits=True")
        if options.max_rounds != 1 or options.self_call:
            raise ValueError("TraitPlanEnv plays one round without self-calls: make the env with max_rounds=1 and self_call=False")
        check_opt_ins(conductor.suite, conductor.problems, what=f"training on TraitPlanEnv over {conductor.suite.name} split {conductor.split!r}")
        self.conductor = conductor
        traits_space = cast(spaces.Box, cast(spaces.Dict, conductor.observation_space)["worker_traits"])
        self.slots = int(traits_space.shape[0])
        self.plans = plan_table(self.slots, options.max_steps)
        self.action_space = spaces.Discrete(len(self.plans))
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.slots * SLOT_FEATURES,), dtype=np.float32)
        self._features: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Starts an episode and returns its features."""
        observation, info = self.env.reset(seed=seed, options=options)
        traits, column = structured_view(observation)
        self._features = slot_features(traits, column)
        return self._features.copy(), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Runs the plan ``action`` names; the episode then ends."""
        if self._features is None:
            raise RuntimeError("call reset() before step()")
        plan = self.plans[int(action)]
        _, reward, terminated, truncated, info = self.env.step(plan_workflow(plan).render())
        return self._features.copy(), float(reward), bool(terminated), bool(truncated), {**info, "plan": plan}


@dataclass(frozen=True)
class TraitPPOConfig:
    """A training run of :func:`train_trait_ppo`; the defaults are the run recorded in docs/lab/generated-pools.md.

    Attributes:
        recipe: The GRPO recipe whose env the learner trains in (``generated``: a new pool of the
            generated family's training part per episode, in a random order, on the train split).
        timesteps: PPO's total environment steps (episodes).
        seed: Seeds PPO, the envs and their episodes.
        n_envs: Envs stepped together.
        n_steps: Steps per env between updates.
        learning_rate: Adam's step size.
        ent_coef: Entropy bonus.
        hidden: Widths of the policy and value MLPs.
        max_steps: The env's most steps per workflow (the unseen protocol's 3).
        price_weight: The ``cost_aware`` reward's weight on USD.
        heldout: Pools on which checkpoints are scored by exact expected reward.
        eval_every: Timesteps between checkpoint scores.
    """

    recipe: str = "generated"
    timesteps: int = 120_000
    seed: int = 0
    n_envs: int = 16
    n_steps: int = 128
    learning_rate: float = 1e-3
    ent_coef: float = 0.0
    hidden: tuple[int, ...] = (128, 128)
    max_steps: int = 3
    price_weight: float = 1.0
    heldout: tuple[str, ...] = tuple(f"generated-heldout#{k}" for k in range(6))
    eval_every: int = 20_000


def make_training_env(config: TraitPPOConfig, rank: int) -> TraitPlanEnv:
    """Returns env ``rank`` of a run: the recipe's env with the structured view, the run's steps and price weight."""
    from conductor_env.agents.training.recipes import load_recipe

    settings = load_recipe(config.recipe).settings["env"]
    options = {**settings.get("options", {}), "worker_traits": True, "max_steps": config.max_steps, "price_weight": config.price_weight}
    env = gym.make(settings["id"], pool=settings["pool"], split=settings.get("split", "train"), training=True, suite_options=settings.get("suite_options", {}), **options)
    env.reset(seed=config.seed * 1000 + rank)
    return TraitPlanEnv(env)


def heldout_value(choose: Callable[[np.ndarray], int], plans: Sequence[Plan], slots: int, pools: Sequence[str], *, max_steps: int = 3, price_weight: float = 1.0) -> dict[str, float]:
    """Returns the exact expected reward of a deterministic chooser on each pool, averaged over its domains.

    The unseen protocol plays as many questions of each domain, so a pool's mean over questions is
    its mean over domains. Hidden numbers are read here to score, never to choose.

    Args:
        choose: Maps a feature vector to an action index into ``plans``.
        plans: The action table.
        slots: Pool slots of the features (rows beyond a pool's workers are absent).
        pools: Fixed pools (``generated-heldout#k``, a pool file's name).
    """
    values: dict[str, float] = {}
    for pool in pools:
        loaded = load_pool(pool)
        specs, domains = loaded.specs, loaded.trait_domains
        rows = worker_rows(specs)
        traits = np.full((slots, 2 * len(domains) + 1), ABSENT, dtype=np.int8)
        for slot, spec in enumerate(specs):
            traits[slot] = trait_row(spec.traits, domains)
        total = 0.0
        for column, domain in enumerate(domains):
            plan = plans[choose(slot_features(traits, column))]
            valid = all(worker < len(rows) for worker, _ in plan) and len(plan) <= max_steps
            total += expected_reward(plan, rows, domain, price_weight) if valid else 0.0
        values[pool] = round(total / len(domains), 4)
    return values


def train_trait_ppo(config: TraitPPOConfig, out: str | Path, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Trains PPO on the structured view and saves the model, its config and its checkpoint scores in ``out``.

    Returns:
        ``checkpoints``: per evaluation, the timesteps, the held-out values and their mean; ``seconds``.
    """
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vec = DummyVecEnv([functools.partial(make_training_env, config, rank) for rank in range(config.n_envs)])
    first = cast(TraitPlanEnv, vec.envs[0])
    plans, slots = first.plans, first.slots
    model = PPO(
        "MlpPolicy",
        vec,
        n_steps=config.n_steps,
        batch_size=min(512, config.n_steps * config.n_envs),
        gamma=0.0,
        gae_lambda=1.0,
        learning_rate=config.learning_rate,
        ent_coef=config.ent_coef,
        policy_kwargs={"net_arch": list(config.hidden)},
        seed=config.seed,
        verbose=0,
    )
    checkpoints: list[dict[str, Any]] = []

    def score() -> None:
        def choose(features: np.ndarray) -> int:
            action, _ = model.predict(features, deterministic=True)
            return int(action)

        values = heldout_value(choose, plans, slots, config.heldout, max_steps=config.max_steps, price_weight=config.price_weight)
        mean = round(sum(values.values()) / len(values), 4)
        checkpoints.append({"timesteps": int(model.num_timesteps), "heldout": values, "mean": mean})
        log(f"timesteps {model.num_timesteps}: held-out exact expected reward {mean:.4f}")

    class Checkpoints(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next = config.eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next += config.eval_every
                score()
            return True

    started = time.monotonic()
    score()
    model.learn(total_timesteps=config.timesteps, callback=Checkpoints())
    if checkpoints[-1]["timesteps"] != model.num_timesteps:
        score()
    seconds = round(time.monotonic() - started, 1)
    model.save(out / MODEL_FILE)
    (out / CONFIG_FILE).write_text(json.dumps({"config": asdict(config), "slots": slots, "checkpoints": checkpoints, "seconds": seconds}, indent=1), encoding="utf-8")
    vec.close()
    return {"checkpoints": checkpoints, "seconds": seconds}
