"""Building envs: one picklable :class:`EnvSetup` per env, the gym entry point, the vector env.

This layer sits above the suites, workers and sandboxes it assembles, and below every consumer
(``gym.make``, vector envs, evaluation, GRPO, SB3, remote workers).
"""

from conductor_env.envs.setup import ENTRY_POINT, EnvParts, EnvSetup, SetupError, conductor_env_ids, make_env

__all__ = ["ENTRY_POINT", "EnvParts", "EnvSetup", "SetupError", "conductor_env_ids", "make_env"]
