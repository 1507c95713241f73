"""The warm start's ``oracle`` targets: the best workflow of the episode's shown workers.

On a simulated pool the closed form (:mod:`conductor_env.workers.closed_form`) knows every
workflow's expected reward, so a warm start can imitate the best one instead of a uniform mix of
shapes: on a generated pool (docs/GENERATED_POOLS.md) the best workflow follows from what the
workers' descriptions state, so imitating it teaches the model to read them, and what it learns
on the training part can be scored on the held-out part. The numbers behind the descriptions are
read here, at training time, and never shown to the model.
"""

from __future__ import annotations

from conductor_env.agents.baselines import build_workflow
from conductor_env.agents.workflow_shapes import WARM_START_TARGETS, Shape
from conductor_env.env import ConductorEnv
from conductor_env.workers.closed_form import best_plan, worker_rows

#: The ``shapes`` value of a warm start whose one target per prompt is the oracle's plan.
ORACLE_TARGETS = WARM_START_TARGETS[-1]
#: The subtask of the step that reads earlier steps, as the named shapes word it.
JUDGE_SUBTASK = "Pick the correct answer."


def oracle_target(env: ConductorEnv, domain: str, subtask: str) -> tuple[Shape, list[str], list[int], str]:
    """Returns the best workflow of the current episode's shown workers for ``domain``.

    Args:
        env: An env just reset (its episode's pool and shown workers are read).
        domain: The episode's domain.
        subtask: The instruction of steps that read nothing.

    Returns:
        The plan as a shape, its workers' names and shown ids, and the rendered workflow.

    Raises:
        ValueError: When the pool is not simulated (the closed form needs declared skills).
    """
    by_name = {spec.name: spec for spec in env.episode_pool.specs}
    shown = {worker_id: name for worker_id, name in env.worker_map().items() if name != "conductor"}
    shown_specs = [by_name[shown[worker_id]] for worker_id in sorted(shown)]
    rows = worker_rows(shown_specs)  # type: ignore[arg-type]  # simulated pools hold WorkerSpec
    _, plan = best_plan(rows, domain, env.options.max_steps, env.options.price_weight)
    shape: Shape = tuple((worker, JUDGE_SUBTASK if reads else None, reads) for worker, reads in plan)
    workflow = build_workflow([(worker, JUDGE_SUBTASK if reads else subtask, reads) for worker, reads in plan])
    return shape, [rows[worker]["name"] for worker, _ in plan], [worker for worker, _ in plan], workflow.render()
