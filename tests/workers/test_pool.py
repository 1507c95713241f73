"""Pool files: presets, TOML parsing, and errors that name the problem."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from conductor_env.workers.pool import PoolError, load_pool, preset_names


def test_simulated_preset_loads() -> None:
    pool = load_pool("simulated")
    assert "simulated" in preset_names() and len(pool) == 4
    assert pool.specs[1].options["skill"]["math"] == 0.9 and pool.specs[0].backend == "simulated"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[workers]\nid=", "not valid TOML"),
        ("name = 'x'", "no [[workers]]"),
        ("[[workers]]\nbackend = 'simulated'", "needs an 'id'"),
        ("[[workers]]\nid = 'a'", "needs a 'backend'"),
        ("[[workers]]\nid = 'a'\nbackend = 'telepathy'", "unknown backend"),
        ("[[workers]]\nid = 'a'\nbackend = 'simulated'\nmax_tokens = 'many'", "worker 'a'"),
        ("[[workers]]\nid = 'a'\nbackend = 'simulated'\n[[workers]]\nid = 'a'\nbackend = 'simulated'", "unique"),
    ],
)
def test_pool_errors_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pool.toml"
    path.write_text(text)
    with pytest.raises(PoolError, match=re.escape(message)):
        pool = load_pool(str(path))
        pool.worker(0)


def test_unknown_pool_names_presets() -> None:
    with pytest.raises(PoolError, match="simulated"):
        load_pool("no-such-pool")
    with pytest.raises(PoolError, match="does not exist"):
        load_pool("/nonexistent/pool.toml")


def test_subpools_are_random_subsets() -> None:
    pool = load_pool("simulated")
    rng = random.Random(0)
    draws = [pool.sample_subpool(rng, (2, 3)) for _ in range(50)]
    assert all(2 <= len(d) <= 3 and len(set(d)) == len(d) for d in draws)
    assert len(set(draws)) > 10
    assert pool.sample_subpool(rng, None) == (0, 1, 2, 3)


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "benchmarks" / "pools").glob("*.toml")), ids=lambda p: p.stem)
def test_each_benchmark_pool_file_holds_the_same_workers_as_the_preset_of_its_name(path: Path) -> None:
    assert path.stem in preset_names()
    assert load_pool(str(path)).specs == load_pool(path.stem).specs
