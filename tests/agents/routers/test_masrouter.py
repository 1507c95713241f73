"""MASRouter: trained with REINFORCE on real episodes it routes each domain's questions to the
domain's expert alone, and learns parallel attempts and a judge where they beat any one worker;
it plays from ``conductor-env eval``, identically at any concurrency; its workflows are the
modes' shapes; bad checkpoints and bad training arguments get clear errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import EXPERT_OF, EXPERTS, POOLS, SUITE, run
from safetensors.numpy import load_file, save_file
from test_routers import evaluate_cli, jittered, routed_to

from conductor_env.agents.routers import load_router
from conductor_env.agents.routers.checkpoint import WEIGHTS_NAME, CheckpointError
from conductor_env.agents.routers.masrouter import MODES, ROLES, allowed_counts, build_mode_workflow, roles_of
from conductor_env.cli import main
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workflow import parse_workflow
from fixtures.results_rows import rows_without_clock

torch = pytest.importorskip("torch")

JUDGE_WINS = str(POOLS / "judge-wins.toml")
PRICED = ("--env-option", "reward=cost_aware", "--env-option", "price_weight=1")


def train_masrouter(pool: str, out: Path, episodes: int, *extra: str) -> Path:
    run("train", "router", "--kind", "masrouter", "--env", "Conductor-RG-v0", "--pool", pool, "--split", "train", "--episodes", str(episodes), "--out", str(out), *SUITE, *extra)
    return out


@pytest.fixture(scope="module")
def experts_masrouter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # At 0.01 USD a call and λ = 10, one call to the expert (0.95 right) beats its two attempts and a third reading them (0.9975 right).
    return train_masrouter(EXPERTS, tmp_path_factory.mktemp("mas") / "experts", 1920, "--price-weight", "10")


@pytest.fixture(scope="module")
def judge_masrouter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_masrouter(JUDGE_WINS, tmp_path_factory.mktemp("mas") / "judge", 960, "--price-weight", "1")


def test_masrouter_sends_each_domain_to_its_expert_alone(experts_masrouter: Path, tmp_path: Path) -> None:
    spec = f"router:masrouter:{experts_masrouter}"
    records = evaluate_cli(tmp_path / "eval", EXPERTS, spec, "single:0", extra=PRICED)
    mine = [r for r in records if r["policy"] == spec]
    assert len(mine) == 60 and {r["domain"] for r in mine} == set(EXPERT_OF)
    assert [routed_to(r) for r in mine] == [[EXPERT_OF[r["domain"]]] for r in mine]
    assert sum(r["correct"] for r in mine) >= 50
    control = [r for r in records if r["policy"] == "single:0"]
    assert sum(r["correct"] for r in control) < 35
    config = json.loads((experts_masrouter / "router.json").read_text())
    assert config["kind"] == "masrouter" and config["price_weight"] == 10.0 and config["trained_on"]["episodes"] == 1920


def test_masrouter_learns_a_multi_agent_mode_where_one_worker_loses(judge_masrouter: Path, tmp_path: Path) -> None:
    spec = f"router:masrouter:{judge_masrouter}"
    records = evaluate_cli(tmp_path / "eval", JUDGE_WINS, spec, "single:0", extra=PRICED)
    mine = [r for r in records if r["policy"] == spec]
    shapes = Counter(tuple(routed_to(r)) for r in mine)
    assert sum(n for shape, n in shapes.items() if len(shape) >= 2) >= 50, shapes  # not one worker alone
    control = [r for r in records if r["policy"] == "single:0"]
    assert np.mean([r["reward"] for r in mine]) > np.mean([r["reward"] for r in control])


def test_results_are_identical_at_any_concurrency(experts_masrouter: Path, judge_masrouter: Path, tmp_path: Path) -> None:
    for pool, folder in ((EXPERTS, experts_masrouter), (JUDGE_WINS, judge_masrouter)):
        rows = []
        for concurrency in (1, 16):
            out = tmp_path / f"{Path(pool).stem}-{concurrency}"
            config = EvalConfig.for_id("Conductor-RG-v0", pool=jittered(pool), split="test", suite_options={"size": 10}, n=30, concurrency=concurrency, seed=3)
            evaluate(config, build_policies([f"router:masrouter:{folder}"], pool=config.setup.pool), str(out))
            rows.append(rows_without_clock(out))
        assert len(rows[0]) == 30 and rows[0] == rows[1]


@pytest.mark.parametrize("mode", range(len(MODES)))
def test_each_mode_is_the_workflow_of_its_shape(mode: int) -> None:
    for count in [c for c in allowed_counts(mode) if c <= 5]:
        workers = list(range(count))
        workflow = build_mode_workflow(mode, workers)
        parsed = parse_workflow(workflow.render(), num_workers=5)
        assert [s.worker for s in parsed.steps] == workers
        name = MODES[mode][0]
        reads = [s.access for s in parsed.steps]
        expected = {
            "single": [()],
            "chain": [(), *[tuple(range(i)) for i in range(1, count)]],
            "parallel": [*[()] * (count - 1), tuple(range(count - 1))],
            "reflection": [(), (0,), (0, 1)],
        }[name]
        assert reads == expected, name
        assert [s.subtask for s in parsed.steps] == [ROLES[r][2] for r in roles_of(mode, count)]


def test_training_samples_every_mode_and_evaluation_is_greedy(experts_masrouter: Path) -> None:
    from conductor_env.agents.routers.masrouter_net import Texts

    router = load_router("masrouter", experts_masrouter)
    texts = Texts(modes=router._texts["mode"], roles=router._texts["role"], workers=router._texts["worker"])
    questions = torch.nn.functional.normalize(torch.randn(200, 384, generator=torch.Generator().manual_seed(0)), dim=-1)
    allowed = [[0, 1, 2]] * 200
    untrained = type(router.net)(384, 64, 5, temps=(0.5, 1.0, 1.0))
    decisions, log_probs, _ = untrained.decide(questions, texts, allowed, allowed_counts, roles_of, [5] * 200, torch.Generator().manual_seed(1))
    assert {d.mode for d in decisions} == set(range(len(MODES)))
    assert all(d.count in allowed_counts(d.mode) and len(d.workers) == d.count for d in decisions)
    assert torch.all(log_probs < 0) and log_probs.requires_grad
    # Episodes that allow two steps are never offered parallel (three or more) or reflection (three).
    short, _, _ = untrained.decide(questions, texts, allowed, allowed_counts, roles_of, [2] * 200, torch.Generator().manual_seed(1))
    assert {MODES[d.mode][0] for d in short} <= {"single", "chain"} and all(d.count <= 2 for d in short)
    greedy = [untrained.decide(questions, texts, allowed, allowed_counts, roles_of, [5] * 200)[0] for _ in range(2)]
    assert greedy[0] == greedy[1]


def _broken_copy(source: Path, target: Path, change: dict) -> Path:
    import shutil

    shutil.copytree(source, target)
    arrays = load_file(str(target / WEIGHTS_NAME))
    for name, value in change.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value
    save_file(arrays, str(target / WEIGHTS_NAME))
    return target


def test_bad_checkpoints_and_options_get_clear_errors(experts_masrouter: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no array 'worker_text'"):
        load_router("masrouter", _broken_copy(experts_masrouter, tmp_path / "a", {"worker_text": None}))
    with pytest.raises(CheckpointError, match="missing \\['mode_vae.fc1.weight'\\]"):
        load_router("masrouter", _broken_copy(experts_masrouter, tmp_path / "b", {"net.mode_vae.fc1.weight": None}))
    with pytest.raises(CheckpointError, match="num_head.weight' has shape \\(3, 128\\)"):
        load_router("masrouter", _broken_copy(experts_masrouter, tmp_path / "c", {"net.num_head.weight": np.zeros((3, 128), np.float32)}))
    config = json.loads((experts_masrouter / "router.json").read_text())
    (tmp_path / "d").mkdir()
    _broken_copy(experts_masrouter, tmp_path / "d" / "x", {})
    (tmp_path / "d" / "x" / "router.json").write_text(json.dumps({**config, "params": {**config["params"], "temps": [0.5, 0]}}))
    with pytest.raises(CheckpointError, match="temps must be three positive numbers"):
        load_router("masrouter", tmp_path / "d" / "x")
    with pytest.raises(CheckpointError, match="is a 'masrouter' router, not 'knn'"):
        load_router("knn", experts_masrouter)
    with pytest.raises(ValueError, match="learned its price weight \\(10\\)"):
        load_router("masrouter", experts_masrouter, price_weight=0.5)
    assert load_router("masrouter", experts_masrouter, price_weight=10.0).price_weight == 10.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--data", "somewhere"), "trains on episodes: give --env and --pool"),
        (("--env-option", "max_rounds=2"), "max_rounds=1 and no self_call"),
        (("--price-weight", "1", "--env-option", "reward=correctness"), "trains on the cost_aware reward"),
        (("--param", "depth=3"), "unknown masrouter parameter"),
        (("--episodes", "0"), "episodes must be a positive integer"),
    ],
)
def test_bad_training_arguments_are_refused_before_training(extra: tuple[str, ...], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train", "router", "--kind", "masrouter", "--env", "Conductor-RG-v0", "--pool", EXPERTS, "--out", str(tmp_path / "r"), *SUITE, *extra]
    assert main(args) != 0
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    # table kinds still need a table
    assert main(["train", "router", "--kind", "knn", "--out", str(tmp_path / "k")]) != 0
    assert "give --data" in capsys.readouterr().err
