"""MASRouter keyed by description: trained with REINFORCE on the generated training family (a new
pool every episode), it plays held-out draws it never saw (other names, phrasings and skill
profiles) with valid workflows of each episode's own workers, chooses by description (not by
name or position), and refuses a worker without a description instead of guessing. It does not
give the work to a worker described strong everywhere and cheap (a measured negative result,
kept as a strict xfail)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import run

from conductor_env.agents.routers import UNROUTABLE, load_router
from conductor_env.agents.routers.checkpoint import CONFIG_NAME, WEIGHTS_NAME, CheckpointError
from conductor_env.cli import main
from conductor_env.evaluation.expected import read_rows, summary
from conductor_env.workflow import parse_workflow

pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # training on the family embeds a few hundred new descriptions (about a minute on 2 cores)

#: The orchestrate recipes' env (docs/ORCHESTRATION.md), with names (and so descriptions) shown.
ENV = ("--env-option", "reward=cost_aware", "--env-option", "price_weight=1.0", "--env-option", "max_steps=3", "--env-option", "show_names=true")
#: Two problems per dataset: the first 12 questions of a split cover the six datasets (three domains).
SUITE = ("--suite-option", "size=2")
HELDOUT = "generated-heldout#0"
#: A pool of held-out phrasings: ``star`` is described strong at every domain and cheap, the rest
#: weak or middling (and mostly pricey). Descriptions and traits state the hidden numbers.
STRONG_POOL = {
    "onyx": ("poor on mathematics, words and letters and deduction; premium-priced", {"math": "weak", "language": "weak", "reasoning": "weak"}, 0.2, 0.08),
    "flint": ("middling on calculation; struggles with text tasks and puzzles of logic; pricey", {"math": "fair", "language": "weak", "reasoning": "weak"}, 0.3, 0.07),
    "star": ("nearly always right on mathematics, words and letters and deduction; inexpensive", {"math": "strong", "language": "strong", "reasoning": "strong"}, 0.93, 0.012),
    "mica": ("so-so on words and letters; poor on mathematics and deduction; budget-priced", {"math": "weak", "language": "fair", "reasoning": "weak"}, 0.3, 0.015),
}


@pytest.fixture(scope="module")
def family_masrouter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mas-family") / "router"
    run(
        "train",
        "router",
        "--kind",
        "masrouter",
        "--workers",
        "description",
        "--env",
        "Conductor-RG-v0",
        "--pool",
        "generated",
        "--split",
        "train",
        "--episodes",
        "320",
        "--price-weight",
        "1",
        "--out",
        str(out),
        *SUITE,
        *ENV,
    )
    return out


def write_pool(path: Path, workers: dict[str, tuple[str, dict[str, str], float, float]]) -> str:
    """Writes a simulated pool file (in the given order) whose descriptions and traits say each worker's levels and price."""
    lines = ['name = "described"', "[defaults]", 'backend = "simulated"', "latency_s = 0.0", "max_concurrency = 64", "price_in_per_m = 0.0", "price_out_per_m = 0.0"]
    for name, (description, levels, skill, price) in workers.items():
        tier = "cheap" if price < 0.03 else "costly"
        solve = ", ".join(f'{domain} = "{level}"' for domain, level in levels.items())
        lines += ["[[workers]]", f'id = "{name}"', f'description = "{description}"', f"skill = {{ default = {skill} }}", f"price_per_call = {price}"]
        lines.append(f'traits = {{ solve = {{ {solve} }}, judge = [], price = "{tier}" }}')
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def evaluate(pool: str, out: Path, *policies: str, n: int = 12) -> list[dict]:
    args = ["eval", "--env", "Conductor-RG-v0", "--pool", pool, "--split", "test", "--n", str(n), "--concurrency", "8", "--out", str(out), *SUITE, *ENV]
    run(*args, *[arg for policy in policies for arg in ("--policy", policy)])
    return read_rows(out / "results.jsonl")


def staffed(rows: list[dict]) -> list[str]:
    """The worker names of every step the rows' workflows ran."""
    return [step["worker_name"] for row in rows for step in row["trace"]]


def test_it_plays_a_held_out_draw_with_valid_workflows_of_its_workers(family_masrouter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"router:masrouter:{family_masrouter}"
    rows = evaluate(HELDOUT, tmp_path / "eval", spec, "random")
    mine = [r for r in rows if r["policy"] == spec]
    assert len(mine) == 12
    for row in mine:
        assert not str(row["action"]).startswith(UNROUTABLE) and row["parse_error"] is None and row["infra_error"] is None, row["action"]
        workflow = parse_workflow(row["action"], num_workers=len(row["worker_map"]))  # raises on a worker id outside the episode
        assert {step.worker for step in workflow.steps} <= {int(k) for k in row["worker_map"]}  # only this episode's workers
        assert {step["worker_name"] for step in row["trace"]} <= set(row["worker_map"].values())
    figures = summary(rows, pool=HELDOUT)
    expected = figures[spec]["expected_reward"]
    assert math.isfinite(expected) and -1.0 <= expected <= 1.0
    with capsys.disabled():
        print(f"\n{HELDOUT}, 12 test questions, exact expected reward: masrouter {expected:.3f}, random {figures['random']['expected_reward']:.3f}")


def test_the_checkpoint_is_keyed_by_description(family_masrouter: Path, tmp_path: Path) -> None:
    config = json.loads((family_masrouter / CONFIG_NAME).read_text())
    assert config["worker_key"] == "description" and config["trained_on"]["pool"] == "generated"
    assert config["workers"] and all(w.startswith("generated/") for w in config["workers"]) and all(config["descriptions"])
    from safetensors.numpy import load_file

    assert "worker_text" not in load_file(str(family_masrouter / WEIGHTS_NAME))  # no worker rows: each episode embeds its own
    # Hostile: the same folder told it is keyed by name has no worker rows to play by name.
    folder = tmp_path / "renamed"
    folder.mkdir()
    (folder / WEIGHTS_NAME).write_bytes((family_masrouter / WEIGHTS_NAME).read_bytes())
    (folder / CONFIG_NAME).write_text(json.dumps({**config, "worker_key": "name"}))
    with pytest.raises(CheckpointError, match="no array 'worker_text'"):
        load_router("masrouter", folder)


def test_its_choices_follow_the_descriptions_not_the_names_or_positions(family_masrouter: Path, tmp_path: Path) -> None:
    spec = f"router:masrouter:{family_masrouter}"
    rows = evaluate(write_pool(tmp_path / "strong.toml", STRONG_POOL), tmp_path / "strong", spec)
    # Hostile: the same workers under other names, listed in reverse order.
    renamed = {f"w{i}-{name[::-1]}": worker for i, (name, worker) in enumerate(reversed(STRONG_POOL.items()))}
    moved = evaluate(write_pool(tmp_path / "renamed.toml", renamed), tmp_path / "renamed", spec)
    described = lambda rs, pool: sorted((r["problem_id"], tuple(pool[s["worker_name"]][0] for s in r["trace"])) for r in rs)  # noqa: E731
    assert described(rows, STRONG_POOL) == described(moved, renamed)


@pytest.mark.xfail(
    strict=True,
    reason="measured negative result (docs/ROUTERS.md, 'Routers on unseen pools'): trained on the training family, "
    "MASRouter sends every question of a pool to one worker; after 320 (and 1,600) episodes it is 'mica' (so-so, budget-priced), not 'star' "
    "(4,800 episodes do pick 'star')",
)
def test_it_gives_the_work_to_the_worker_described_strong_and_cheap(family_masrouter: Path, tmp_path: Path) -> None:
    steps = staffed(evaluate(write_pool(tmp_path / "strong.toml", STRONG_POOL), tmp_path / "strong", f"router:masrouter:{family_masrouter}"))
    assert steps.count("star") / len(steps) > 1 / len(STRONG_POOL), steps


def test_a_worker_without_a_description_is_refused_not_guessed(family_masrouter: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.toml"
    bare.write_text(
        'name = "bare"\n[defaults]\nbackend = "simulated"\nlatency_s = 0.0\nprice_per_call = 0.01\n' + "".join(f'[[workers]]\nid = "w{i}"\nskill = {{ default = 0.5 }}\n' for i in range(3))
    )
    with pytest.raises(CheckpointError, match="no description"):
        load_router("masrouter", family_masrouter, pool=str(bare))
    router = load_router("masrouter", family_masrouter)  # no pool given: each observation is checked
    refused = router._actions([gym.make("Conductor-RG-v0", pool=str(bare), show_names=True, suite_options={"size": 2}).reset(seed=0)[0]])[0]
    hidden = router._actions([gym.make("Conductor-RG-v0", pool=HELDOUT, suite_options={"size": 2}).reset(seed=0)[0]])[0]
    routed = router._actions([gym.make("Conductor-RG-v0", pool=HELDOUT, show_names=True, suite_options={"size": 2}).reset(seed=0)[0]])[0]
    assert refused.startswith(UNROUTABLE) and "has no description" in refused
    assert hidden.startswith(UNROUTABLE) and "show_names=true" in hidden
    assert not routed.startswith(UNROUTABLE)  # control: the same router, a pool with descriptions shown


@pytest.mark.parametrize(
    ("workers", "pool", "env", "message"),
    [
        ("name", "generated", ENV, "train with --workers description"),
        ("description", "generated", ENV[:6], "add --env-option show_names=true"),
        ("description", "BARE", ENV, "have no description"),
    ],
)
def test_training_arguments_that_cannot_key_workers_are_refused(workers: str, pool: str, env: tuple[str, ...], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if pool == "BARE":
        pool = str(tmp_path / "bare.toml")
        Path(pool).write_text('name = "bare"\n[defaults]\nbackend = "simulated"\nlatency_s = 0.0\nprice_per_call = 0.01\n[[workers]]\nid = "w0"\nskill = { default = 0.5 }\n')
    args = ["train", "router", "--kind", "masrouter", "--workers", workers, "--env", "Conductor-RG-v0", "--pool", pool, "--episodes", "32", "--out", str(tmp_path / "r"), *SUITE, *env]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
