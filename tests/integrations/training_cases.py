"""The training opt-ins every row builder enforces, as cases the per-path tests share.

Each case is a small local suite holding what training must not use without an opt-in: the test
split, unverified BigCodeBench tasks (their libraries need the real ctypes), LiveCodeBench rows
graded only on public tests, and a gameable reasoning-gym dataset. A case's ``refused`` kwargs
lack the opt-in; its ``allowed`` kwargs name it. Data files are written under the test's own
folder and the reasoning-gym seed is the test's own, so a process-wide shared suite
(``shared_env``) built by another test is never reused and the one warning is this test's.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

FIXTURES = Path(__file__).parents[1] / "fixtures"
#: Two LiveCodeBench rows without private tests.
LCB_PUBLIC_ONLY = FIXTURES / "lcb" / "lcb_public_only.jsonl"


def _bcb_row(task_id: str, module: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "complete_prompt": f"import {module}\ndef task_func(x):\n    '''Returns x.'''\n",
        "instruct_prompt": "Return x.",
        "code_prompt": f"import {module}\ndef task_func(x):\n",
        "canonical_solution": "    return x\n",
        "test": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_x(self):\n        self.assertEqual(task_func(1), 1)\n",
        "entry_point": "task_func",
        "libs": f"['{module.split('.')[0]}']",
    }


def bigcodebench_rows(folder: Path) -> str:
    """Writes two BigCodeBench rows: ``T/0`` unverified (scipy needs the real ctypes), ``T/1`` verified."""
    path = folder / "bigcodebench.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in (_bcb_row("T/0", "scipy.stats"), _bcb_row("T/1", "os"))), encoding="utf-8")
    return str(path)


@dataclass(frozen=True)
class OptInCase:
    """One thing training refuses without an opt-in.

    Attributes:
        name: The case.
        env_id: The Conductor gym id.
        refused: ``gym.make``-style kwargs without the opt-in.
        allowed: The same kwargs with the opt-in named.
        says: What the refusal's message must name (the opt-in).
        warning: The category of the one warning the opt-in gives.
        split: The split the rows come from.
    """

    name: str
    env_id: str
    refused: dict[str, Any]
    allowed: dict[str, Any]
    says: str
    warning: type[Warning]
    split: str = field(default="test")


def opt_in_cases(folder: Path, tag: int) -> dict[str, OptInCase]:
    """The cases, their files under ``folder``; ``tag`` makes this test's suites its own."""
    from conductor_env.envs.training import TestSplitWarning
    from conductor_env.tasks.public_tests import PublicOnlyWarning
    from conductor_env.tasks.suites.rg_audit import GameableDatasetWarning

    folder.mkdir(parents=True, exist_ok=True)
    lcb = folder / "lcb_public_only.jsonl"
    shutil.copyfile(LCB_PUBLIC_ONLY, lcb)
    rg = {"size": 2, "seed": tag}
    bcb = {"data_files": bigcodebench_rows(folder), "sandbox": "local"}
    on_test = {"split": "test", "allow_test_split": True}
    return {
        "test_split": OptInCase("test_split", "Conductor-RG-v0", {"split": "test", "suite_options": rg}, {**on_test, "suite_options": rg}, "allow_test_split", TestSplitWarning),
        "unverified": OptInCase(
            "unverified", "Conductor-BigCodeBench-v0", {**on_test, "suite_options": bcb}, {**on_test, "suite_options": {**bcb, "allow_unverified": True}}, "allow_unverified", PublicOnlyWarning
        ),
        "public_only": OptInCase(
            "public_only",
            "Conductor-LCB-v0",
            {**on_test, "suite_options": {"data_files": str(lcb), "sandbox": "local"}},
            {**on_test, "suite_options": {"data_files": str(lcb), "sandbox": "local", "allow_public_only": True}},
            "allow_public_only",
            PublicOnlyWarning,
        ),
        "gameable": OptInCase(
            "gameable",
            "Conductor-RG-v0",
            {"suite_options": {**rg, "datasets": ["propositional_logic"]}},
            {"suite_options": {**rg, "datasets": ["propositional_logic"], "allow_gameable": True}},
            "allow_gameable",
            GameableDatasetWarning,
            split="train",
        ),
    }


def training_warnings(build: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    """Runs ``build`` and returns its result and the warnings training gave (those naming what is trained on)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build()
    return result, [w for w in caught if "training on" in str(w.message)]
