"""conductor-env-vf: the Conductor env as a verifiers v1 taskset (``vf-eval conductor-env-vf``)."""

from conductor_env.integrations.verifiers import (
    ConductorData,
    ConductorTask,
    ConductorTaskset,
    ConductorTasksetConfig,
    ConductorVfEnv,
    ConductorVfEnvConfig,
    load_environment,
)

__all__ = ["ConductorData", "ConductorTask", "ConductorTaskset", "ConductorTasksetConfig", "ConductorVfEnv", "ConductorVfEnvConfig", "load_environment"]
