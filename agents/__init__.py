"""Reference Conductor policies (``import conductor_env.agents``).

Policies are built from spec strings, the same in Python and on the command line::

    from conductor_env.agents import make_policy
    policy = make_policy("template:parallel-judge:3")
    actions = policy.act([observation])

See :data:`SPEC_GRAMMAR` for the forms. The GRPO trainer lives in
:mod:`conductor_env.agents.training` and the SB3 routing wrapper in :mod:`conductor_env.agents.training.sb3`
(imported on demand: they pull in TRL and Stable-Baselines3).
"""

from conductor_env.agents.base import Observation, Policy, num_shown_workers
from conductor_env.agents.specs import KNOWN_OPTIONS, SPEC_GRAMMAR, make_policy

__all__ = ["KNOWN_OPTIONS", "Observation", "Policy", "SPEC_GRAMMAR", "make_policy", "num_shown_workers"]
