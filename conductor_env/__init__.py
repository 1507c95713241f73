"""conductor-env: LLM orchestration as a Gymnasium environment.

Importing the package registers the ``Conductor-*-v0`` environment ids::

    import gymnasium as gym
    import conductor_env  # noqa: F401
    env = gym.make("Conductor-RG-v0", pool="simulated")
"""

from conductor_env.tasks import register_builtin_suites

__version__ = "0.1.0"

register_builtin_suites()

__all__ = ["__version__"]
