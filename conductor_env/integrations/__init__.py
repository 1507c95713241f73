"""Adapters to LLM-RL frameworks; each module imports its framework lazily, so ``import conductor_env`` never does.

- :mod:`conductor_env.integrations.trl` (and ``trl_env``): TRL's ``GRPOTrainer``, by reward function or by ``environment_factory``.
"""
