"""The RouterDC router: its losses equal the released code's, trained on one expert per domain it
routes to the experts from ``conductor-env eval``, training is repeatable, results are identical at
any concurrency, and bad settings are refused clearly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import EXPERT_OF, EXPERTS, train
from test_routers import evaluate_cli, jittered, routed_to

from conductor_env.agents.routers.checkpoint import CheckpointError, RouterCheckpoint
from conductor_env.agents.routers.routerdc import RouterDCRouter
from conductor_env.agents.training.routers.routerdc import sample_llm_loss, sample_sample_loss
from conductor_env.cli import main
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from fixtures.results_rows import rows_without_clock


@pytest.fixture(scope="module")
def routerdc(experts_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train("routerdc", experts_data, tmp_path_factory.mktemp("routerdc") / "router")


def released_sample_llm_loss(x: torch.Tensor, index_true: torch.Tensor, top_k: int, last_k: int, *, row_mask: bool = True) -> torch.Tensor:
    """shuhao02/RouterDC train_router_mdeberta.py RouterModule.compute_sample_llm_loss (the reference).

    As released (``row_mask=False``) the ``(B, 1)`` mask broadcasts against the ``(B,)`` log-likelihoods
    into a ``(B, B)`` matrix, so a question whose positive scored 0 is not skipped, as the comment
    says it should be, but weighs in scaled by the batch's share of masked rows; ``row_mask=True``
    masks each row, as intended (and as the package does; docs/ROUTERS.md).
    """
    loss = 0
    top_index_true, top_index = index_true.sort(dim=-1, descending=True)
    last_index_true, negtive_index = index_true.topk(k=last_k, largest=False, dim=-1)
    for i in range(top_k):
        positive_index = top_index[:, i].view(-1, 1)
        mask = torch.where(top_index_true[:, i].view(-1, 1) > 0, 1, 0)
        mask = mask.view(-1) if row_mask else mask
        top_x = torch.gather(x, 1, positive_index)
        last_x = torch.gather(x, 1, negtive_index)
        last_x = torch.where(last_index_true > 0.5, float("-inf"), last_x)
        temp_x = torch.concat([top_x, last_x], dim=-1)
        softmax_x = torch.nn.Softmax(dim=-1)(temp_x)
        log_x = torch.log(softmax_x[:, 0])
        log_x = log_x * mask
        loss += torch.mean(-log_x)
    return loss


@pytest.mark.parametrize(("workers", "top_k", "last_k"), [(3, 3, 3), (7, 3, 3), (5, 2, 4)])
def test_the_sample_llm_loss_matches_the_released_code(workers: int, top_k: int, last_k: int) -> None:
    generator = torch.Generator().manual_seed(workers)
    x = torch.randn(32, workers, generator=generator)
    scores = (torch.rand(32, workers, generator=generator) * 1.2 - 0.1).clamp(0, 1).round(decimals=1)  # ties, zeros, ones
    ours, theirs = sample_llm_loss(x, scores, top_k, last_k), released_sample_llm_loss(x, scores, top_k, last_k)
    assert torch.isfinite(ours) and torch.allclose(ours, theirs, atol=1e-5)
    # Where no positive scored 0 the two agree; where some did, only the released broadcast differs.
    as_released = released_sample_llm_loss(x, scores, top_k, last_k, row_mask=False)
    masked = bool((scores.sort(dim=-1, descending=True).values[:, :top_k] <= 0).any())
    assert torch.allclose(ours, as_released, atol=1e-5) != masked
    assert torch.allclose(sample_llm_loss(x, scores + 0.05, top_k, last_k), released_sample_llm_loss(x, scores + 0.05, top_k, last_k, row_mask=False), atol=1e-5)


def test_the_sample_sample_loss_rewards_same_cluster_neighbours() -> None:
    generator = torch.Generator().manual_seed(0)
    clusters = torch.arange(40) % 4
    centres = torch.randn(4, 16, generator=generator)
    tight = centres[clusters] + 0.05 * torch.randn(40, 16, generator=generator)
    loose = torch.randn(40, 16, generator=generator)
    # Cosine similarities without a temperature (as released): at best -log(e / (e + 3 e^cos)) for
    # negatives at cos; about log 4 = 1.386 when the clusters mean nothing.
    assert float(sample_sample_loss(tight, clusters, 3, generator)) < 0.85
    assert float(sample_sample_loss(loose, clusters, 3, generator)) > 1.2
    # One cluster: no negatives for anyone, the original leaves every question out.
    assert float(sample_sample_loss(loose, torch.zeros(40, dtype=torch.long), 3, generator)) == 0.0


def test_routerdc_routes_each_question_to_its_domains_expert(routerdc: Path, tmp_path: Path) -> None:
    records = evaluate_cli(tmp_path / "eval", EXPERTS, f"router:routerdc:{routerdc}", "single:0")
    mine = [r for r in records if r["policy"].startswith("router:")]
    assert len(mine) == 60
    assert sum(routed_to(r) == [EXPERT_OF[r["domain"]]] for r in mine) >= 57
    assert sum(r["correct"] for r in mine) >= 50
    control = [r for r in records if r["policy"] == "single:0"]
    assert sum(r["correct"] for r in control) < 35
    params = RouterCheckpoint.load(routerdc).params
    assert (params["top_k"], params["last_k"], params["temperature"], params["cluster_loss_weight"], params["clusters"], params["H"]) == (3, 3, 1.0, 1.0, 8, 3)


def test_training_is_repeatable_and_the_seed_matters(experts_data: Path, routerdc: Path, tmp_path: Path) -> None:
    again = train("routerdc", experts_data, tmp_path / "again")
    assert (again / "weights.safetensors").read_bytes() == (routerdc / "weights.safetensors").read_bytes()
    other = train("routerdc", experts_data, tmp_path / "seed1", "--seed", "1", "--param", "steps=50")
    assert (other / "weights.safetensors").read_bytes() != (routerdc / "weights.safetensors").read_bytes()


def test_routerdc_results_are_identical_at_any_concurrency(routerdc: Path, tmp_path: Path) -> None:
    rows = []
    for concurrency in (1, 16):
        config = EvalConfig.for_id("Conductor-RG-v0", pool=jittered(EXPERTS), split="test", suite_options={"size": 10}, n=30, concurrency=concurrency, seed=3)
        evaluate(config, build_policies([f"router:routerdc:{routerdc}"], pool=config.setup.pool), str(tmp_path / str(concurrency)))
        rows.append(rows_without_clock(tmp_path / str(concurrency)))
    assert len(rows[0]) == 30 and rows[0] == rows[1]


def test_bad_settings_are_refused_clearly(experts_data: Path, routerdc: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for param, message in (("tau=2", "takes no parameter tau"), ("top_k=0", "top_k must be a positive integer"), ("lr=-1", "lr must be a number > 0")):
        assert main(["train", "router", "--kind", "routerdc", "--data", str(experts_data), "--out", str(tmp_path / "x"), "--param", param]) != 0
        assert message in capsys.readouterr().err
    checkpoint = RouterCheckpoint.load(routerdc)
    with pytest.raises(CheckpointError, match="temperature"):
        RouterDCRouter(dataclasses.replace(checkpoint, params={**checkpoint.params, "temperature": 0}))
    arrays = dict(checkpoint.arrays)
    arrays["workers"] = np.zeros((2, checkpoint.encoder_dim), np.float32)
    with pytest.raises(CheckpointError, match="workers"):
        RouterDCRouter(dataclasses.replace(checkpoint, arrays=arrays))
