"""Adapters to LLM-RL frameworks; each module imports its framework lazily, so ``import conductor_env`` never does.

- :mod:`conductor_env.integrations.trl` (and ``trl_env``): TRL's ``GRPOTrainer``, by reward function or by ``environment_factory``.
- :mod:`conductor_env.integrations.text_episode`: one episode as text in, text out, shared by the four below.
- :mod:`conductor_env.integrations.skyrl`: SkyRL-gym's ``BaseTextEnv`` (``env_class`` ``conductor``) and its dataset rows.
- :mod:`conductor_env.integrations.gem`: GEM envs with text observations (``conductor:<Name>-v0``).
- :mod:`conductor_env.integrations.verifiers`: the verifiers v1 taskset and env (``environments/conductor_env_vf``).
- :mod:`conductor_env.integrations.verl`: verl's parquet rows and ``compute_score`` reward functions.
- :mod:`conductor_env.integrations.openenv`: an OpenEnv server (WebSocket sessions, one-shot HTTP steps), its typed client, ``openenv.yaml`` and the offline image.
"""
