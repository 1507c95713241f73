"""Loads the conductor-env-vf taskset for each training opt-in case and prints what happened, as JSON.

Run by test_verifiers_taskset.py with .venv-verifiers' python (verifiers pins openai<3), from the
repository root with ``tests`` on the path: ``python tests/integrations/verifiers_rows_probe.py FOLDER``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conductor_env.integrations.verifiers import load_environment
from integrations.training_cases import opt_in_cases, training_warnings


def taskset_fields(env_id: str, kwargs: dict) -> dict:
    """The taskset fields (``--env.taskset.*``) that stand for ``gym.make`` kwargs."""
    fields = {"env_id": env_id, "limit": 2, **{key: kwargs[key] for key in ("split", "allow_test_split") if key in kwargs}}
    return {**fields, "env_options": {"suite_options": kwargs["suite_options"]}} if "suite_options" in kwargs else fields


def load_twice(fields: dict) -> list[str]:
    """The rows' split labels of two loads of the taskset (a trainer reloads it; it warns once)."""
    return [task.data.info["split"] for _ in range(2) for task in load_environment(**fields).taskset.load()]


def main(folder: str) -> None:
    cases = opt_in_cases(Path(folder), 700)
    report: dict = {"default": load_twice(taskset_fields("Conductor-RG-v0", {"suite_options": {"size": 2, "seed": 799}}))}
    for name, case in cases.items():
        try:
            load_twice(taskset_fields(case.env_id, case.refused))
            refused = ""
        except Exception as error:  # noqa: BLE001 - the refusal is what is reported
            refused = f"{type(error).__name__}: {error}"
        splits, warned = training_warnings(lambda: load_twice(taskset_fields(case.env_id, case.allowed)))
        report[name] = {"refused": refused, "splits": splits, "warned": [w.category.__name__ for w in warned], "says": case.says, "warning": case.warning.__name__, "split": case.split}
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
