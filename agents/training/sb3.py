"""A routing view of a Conductor env for Stable-Baselines3 (and any numeric RL library).

:class:`RoutingEnv` wraps a :class:`~conductor_env.env.ConductorEnv` so that:

- the action is ``Discrete(len(templates) * num_workers)``: action ``a`` runs template
  ``a // num_workers`` with every step on worker ``a % num_workers`` (a shown id);
- the observation is a ``float32`` vector: a hashed bag of words of the question
  (``hash_dim`` buckets, L2-normalised) followed by a one-hot of the problem's domain (the
  suite's domains, plus one slot for any other domain).

One episode is one round: the workflow runs, the env's reward comes back, the episode ends.
It passes Stable-Baselines3's ``check_env``. An infra error (a worker failing after retries)
ends the episode as ``truncated`` with reward 0, as the env reports it; RL libraries that bootstrap
on truncation treat it as a cut-off rather than a failure.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from conductor_env.agents.baselines import plan_solve_verify_workflow, reflect_workflow, single_workflow
from conductor_env.env import ConductorEnv
from conductor_env.envs.training import check_opt_ins
from conductor_env.workflow import Workflow

#: Workflow templates the router chooses from; each puts every step on the chosen worker.
ROUTING_TEMPLATES: dict[str, Callable[[int], Workflow]] = {
    "single": single_workflow,
    "reflect-2": lambda worker: reflect_workflow(worker, 2),
    "plan-solve-verify": lambda worker: plan_solve_verify_workflow(worker, worker, worker),
}

_WORD = re.compile(r"[a-z0-9]+")


def hashed_bag_of_words(text: str, dim: int) -> np.ndarray:
    """Returns the L2-normalised counts of ``text``'s lower-cased words hashed into ``dim`` buckets.

    The hash is BLAKE2b, so vectors are identical across processes (unlike Python's ``hash``).
    """
    vector = np.zeros(dim, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little") % dim
        vector[bucket] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _fixed_pool_size(env: ConductorEnv) -> int:
    size = env.options.subpool_size
    if size is None:
        return len(env.pool.specs)
    if isinstance(size, int):
        return min(size, len(env.pool.specs))
    low, high = size
    if low != high:
        raise ValueError(f"RoutingEnv needs a fixed number of shown workers, but subpool_size={size!r} varies it; use subpool_size=None or an int")
    return min(low, len(env.pool.specs))


class RoutingEnv(gym.Wrapper):
    """Discrete (template x worker) actions and numeric observations over a Conductor env.

    Args:
        env: A Conductor env (``gym.make("Conductor-RG-v0", ...)`` or a :class:`ConductorEnv`)
            with ``max_rounds=1`` and a fixed number of shown workers.
        templates: Names from :data:`ROUTING_TEMPLATES`, in action order.
        hash_dim: Buckets of the hashed bag of words.
        domains: The domains given one-hot slots (default: the suite's domains, sorted).

    Raises:
        ValueError: For ``max_rounds > 1``, a varying sub-pool size, or an unknown template.
        PublicOnlyError: When the env's problems need a suite opt-in it was not given:
            graded only on public tests (``allow_public_only``), unverified (``allow_unverified``)
            or of a gameable dataset (``allow_gameable``); this wrapper exists to train
            (:func:`conductor_env.envs.training.check_opt_ins`). The split is the env's own:
            build it with ``split="train"`` to train.
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        templates: tuple[str, ...] = ("single", "reflect-2", "plan-solve-verify"),
        hash_dim: int = 256,
        domains: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(env)
        conductor = env.unwrapped
        if not isinstance(conductor, ConductorEnv):
            raise ValueError(f"RoutingEnv wraps a ConductorEnv, got {type(conductor).__name__}")
        if conductor.options.max_rounds != 1:
            raise ValueError("RoutingEnv plays one round per episode; build the env with max_rounds=1")
        unknown = [t for t in templates if t not in ROUTING_TEMPLATES]
        if unknown or not templates:
            raise ValueError(f"unknown routing templates {unknown}; choose from {sorted(ROUTING_TEMPLATES)}")
        if hash_dim < 1:
            raise ValueError(f"hash_dim must be >= 1, got {hash_dim}")
        check_opt_ins(conductor.suite, conductor.problems, what=f"training on RoutingEnv over {conductor.suite.name} split {conductor.split!r}")
        self.conductor = conductor
        self.templates = tuple(templates)
        self.num_workers = _fixed_pool_size(conductor)
        self.hash_dim = hash_dim
        self.domains = tuple(domains) if domains is not None else tuple(sorted({p.domain for p in conductor.problems}))
        self.action_space = spaces.Discrete(len(self.templates) * self.num_workers)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(hash_dim + len(self.domains) + 1,), dtype=np.float32)
        self._features: np.ndarray | None = None

    def describe_action(self, action: int) -> tuple[str, int]:
        """Returns ``(template name, shown worker id)`` of an action."""
        action, n = int(action), cast(spaces.Discrete, self.action_space).n
        if not 0 <= action < n:
            raise ValueError(f"action {action} is outside Discrete({n})")
        return self.templates[action // self.num_workers], action % self.num_workers

    def workflow_text(self, action: int) -> str:
        """Returns the workflow text an action sends to the Conductor env."""
        template, worker = self.describe_action(action)
        return ROUTING_TEMPLATES[template](worker).render()

    def features(self, question: str, domain: str) -> np.ndarray:
        """Returns the observation vector of a question and its domain."""
        onehot = np.zeros(len(self.domains) + 1, dtype=np.float32)
        onehot[self.domains.index(domain) if domain in self.domains else len(self.domains)] = 1.0
        return np.concatenate([hashed_bag_of_words(question, self.hash_dim), onehot])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Starts an episode on the wrapped env and returns the question's feature vector."""
        observation, info = self.env.reset(seed=seed, options=options)
        self._features = self.features(observation["question"], info["domain"])
        return self._features.copy(), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Runs the workflow chosen by ``action``; the episode then ends."""
        if self._features is None:
            raise RuntimeError("call reset() before step()")
        template, worker = self.describe_action(action)
        _, reward, terminated, truncated, info = self.env.step(self.workflow_text(action))
        info = {**info, "template": template, "routed_worker": worker}
        return self._features.copy(), float(reward), bool(terminated), bool(truncated), info
