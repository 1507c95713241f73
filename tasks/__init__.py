"""Verifiable task suites (``import conductor_env.tasks``).

Each suite registers a gym id ``Conductor-<Name>-v0``; suite modules are imported only when a
suite is built, so ``import conductor_env`` stays fast.
"""

from conductor_env.suite import Problem, Score, TaskSuite, VerifierError, find_problem
from conductor_env.tasks.registry import (
    SuiteError,
    discover_entry_points,
    env_id_for,
    get_suite,
    register_suite,
    suite_names,
)

#: name -> (factory, gym id middle part) of the suites shipped with the package.
BUILTIN_SUITES = {
    "rg": ("conductor_env.tasks.suites.procedural:ReasoningGymSuite", "RG"),
    "lcb": ("conductor_env.tasks.suites.livecodebench:LiveCodeBenchSuite", "LCB"),
    "humaneval": ("conductor_env.tasks.suites.humaneval:HumanEvalSuite", "HumanEval"),
    "bigcodebench": ("conductor_env.tasks.suites.bigcodebench:BigCodeBenchSuite", "BigCodeBench"),
    "math500": ("conductor_env.tasks.suites.math_suites:Math500Suite", "MATH500"),
    "aime": ("conductor_env.tasks.suites.math_suites:AIMESuite", "AIME"),
    "gpqa": ("conductor_env.tasks.suites.choice:GPQASuite", "GPQA"),
    "mmlu": ("conductor_env.tasks.suites.choice:MMLUSuite", "MMLU"),
    "rlpr": ("conductor_env.tasks.suites.rlpr:RLPRSuite", "RLPR"),
    "mix": ("conductor_env.tasks.suites.mix:MixSuite", "Mix"),
}


def register_builtin_suites() -> None:
    """Registers the shipped suites and any installed through entry points."""
    for name, (factory, env_name) in BUILTIN_SUITES.items():
        register_suite(name, factory, env_name=env_name, override=True)
    discover_entry_points()


__all__ = [
    "BUILTIN_SUITES",
    "Problem",
    "Score",
    "SuiteError",
    "TaskSuite",
    "VerifierError",
    "discover_entry_points",
    "env_id_for",
    "find_problem",
    "get_suite",
    "register_builtin_suites",
    "register_suite",
    "suite_names",
]
